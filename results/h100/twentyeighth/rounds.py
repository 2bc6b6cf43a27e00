"""Per transfer study of a journal: where its candidates came from (start, each polish) and where
its best came from.   python3 rounds.py JOURNAL.gz"""
import gzip
import shutil
import sys
import tempfile

import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage

optuna.logging.set_verbosity(optuna.logging.WARNING)
with tempfile.NamedTemporaryFile(suffix=".journal", delete=False) as out, gzip.open(sys.argv[1]) as src:
    shutil.copyfileobj(src, out)
storage = JournalStorage(JournalFileBackend(out.name))
for summary in optuna.get_all_study_summaries(storage):
    study = optuna.load_study(study_name=summary.study_name, storage=storage)
    trials = [t for t in study.trials if t.user_attrs.get("origin")]
    ok = [t for t in study.trials if t.state.name == "COMPLETE"]
    if not ok:
        continue
    best = min(ok, key=lambda t: t.value)
    groups = []
    for t in study.trials:
        origin = t.user_attrs.get("origin", "sampler")
        kind = origin.split(" (trial")[0] + (" " + origin.split("(trial ")[1].split(")")[0] if "(trial" in origin else "")
        kind = "polish of " + kind.split()[-1] if origin.startswith("a variation") else (
            "neighbour" if origin.startswith("winner of") else "model" if origin.startswith("predicted") else
            "default" if origin.startswith("family") else "other")
        if not groups or groups[-1][0] != kind:
            groups.append([kind, 0])
        groups[-1][1] += 1
    start_best = min((t.value for t in ok if not t.user_attrs.get("origin", "").startswith("a variation")), default=None)
    print(summary.study_name.split("/")[1][:60], len(study.trials), "best", round(best.value, 4), "from",
          best.user_attrs.get("origin", "sampler")[:50], "| start best/best", round(start_best / best.value, 3) if start_best else None)
    print("    ", groups)
