"""Where a candidate's time went, from asked to told, per run's VGG-16 studies (N=8): medians
and sums of its wait for a compiler, its compiling, its wait for the GPU, its run.
    python3 latency.py JOURNAL.gz [...]"""
import gzip
import shutil
import statistics
import sys
import tempfile

import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage

optuna.logging.set_verbosity(optuna.logging.WARNING)
for path in sys.argv[1:]:
    with tempfile.NamedTemporaryFile(suffix=".journal", delete=False) as out, gzip.open(path) as src:
        shutil.copyfileobj(src, out)
    storage = JournalStorage(JournalFileBackend(out.name))
    rows = []
    for summary in optuna.get_all_study_summaries(storage):
        if "/N=8," not in summary.study_name:
            continue
        for t in optuna.load_study(study_name=summary.study_name, storage=storage).trials:
            if t.datetime_complete is None or "compile_s" not in t.user_attrs:
                continue
            a = t.user_attrs
            total = (t.datetime_complete - t.datetime_start).total_seconds()
            details = a.get("details", {})  # (the queues are kept there, when not 0)
            rows.append((total, details.get("compile_queue_s", 0), a.get("compile_s", 0),
                         details.get("gpu_queue_s", 0), a.get("run_s", 0)))
    cols = list(zip(*rows))
    names = ("asked->told", "compile queue", "compile", "gpu queue", "run")
    print(path, len(rows), "candidates")
    print("   median " + "  ".join(f"{n} {statistics.median(c):.2f}" for n, c in zip(names, cols)))
    print("   sum    " + "  ".join(f"{n} {sum(c):.1f}" for n, c in zip(names, cols)))
