"""Each study of a tuning run's journal on a line: its search (from the run's tune.json), the seconds
of its first trial's start and last trial's end from the run's first trial, its trials, the processes
that ran them, and a bar of a character a second (the "Read" of call 1 and call 3 in README.md).

    python3 timeline.py JOURNAL TUNE_JSON     (the journal unzipped; tune.json as the run wrote it)
"""

import json
import sys

import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage

optuna.logging.set_verbosity(optuna.logging.ERROR)
storage = JournalStorage(JournalFileBackend(sys.argv[1]))
problems = {p["study_name"]: p for p in json.load(open(sys.argv[2]))["problems"]}
rows = []
for summary in optuna.get_all_study_summaries(storage):
    trials = [t for t in optuna.load_study(study_name=summary.study_name, storage=storage).get_trials(deepcopy=False)
              if t.datetime_start]
    if trials:
        owners = sorted({t.user_attrs.get("owner", "?").rsplit(":", 1)[-1] for t in trials})
        ends = [t.datetime_complete or t.datetime_start for t in trials]
        rows.append((min(t.datetime_start for t in trials), max(ends), summary.study_name, len(trials), owners))
first = min(row[0] for row in rows)
for start, end, name, count, owners in sorted(rows):
    a, b = (start - first).total_seconds(), (end - first).total_seconds()
    problem = problems.get(name, {})
    print(f"{problem.get('name', name[:32]):32s} {problem.get('search', ''):19s} {a:5.1f}-{b:5.1f} s  "
          f"{count:3d} trials  {','.join(owners):14s} {' ' * int(a)}{'#' * max(1, int(b) - int(a))}")
