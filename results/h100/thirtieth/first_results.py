"""When each worker's first results came, from a VGG-16 run's study journal: seconds from the run's
first trial to each worker's first trial, its first result and its fifth (results of candidates
compiled and run: not the search's invalid samples, told at once). (The journals, 0.4-0.9 MB
gzipped each, are not committed; first_results.txt holds this script's output for calls 1-4.)
    python3 first_results.py LABEL=JOURNAL.gz ..."""
import collections
import gzip
import shutil
import sys
import tempfile

import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage

optuna.logging.set_verbosity(optuna.logging.WARNING)
for argument in sys.argv[1:]:
    label, path = argument.split("=", 1)
    with tempfile.NamedTemporaryFile(suffix=".journal") as copy, gzip.open(path) as source:
        shutil.copyfileobj(source, copy)
        copy.flush()
        storage = JournalStorage(JournalFileBackend(copy.name))
        trials = []
        for summary in optuna.get_all_study_summaries(storage):
            if "/N=8," not in summary.study_name:  # (VGG-16's studies, not the history's)
                continue
            for trial in optuna.load_study(study_name=summary.study_name, storage=storage).trials:
                if trial.datetime_start is not None and trial.datetime_complete is not None \
                        and trial.user_attrs.get("compile_s") is not None:
                    trials.append((trial.user_attrs.get("owner"), trial.datetime_start, trial.datetime_complete))
    start = min(begun for _, begun, _ in trials)
    by_worker = collections.defaultdict(list)
    for owner, begun, ended in trials:
        by_worker[owner].append(((begun - start).total_seconds(), (ended - start).total_seconds()))
    cells = []
    for owner, spans in sorted(by_worker.items()):
        ends = sorted(ended for _, ended in spans)
        cells.append(f"{min(begun for begun, _ in spans):4.2f} -> {ends[0]:4.2f} ({ends[4]:4.2f})")
    print(f"{label:9s} " + " | ".join(cells))
