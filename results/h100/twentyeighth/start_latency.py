"""How long a transfer study's start took, per VGG-16 (N=8) study: from its first trial's ask to the
last start candidate's tell, and the start candidates' median compile seconds.
    python3 start_latency.py JOURNAL.gz [...]"""
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
    spans, compiles = [], []
    for summary in optuna.get_all_study_summaries(storage):
        if "/N=8," not in summary.study_name:
            continue
        trials = [t for t in optuna.load_study(study_name=summary.study_name, storage=storage).trials
                  if t.datetime_complete is not None and "compile_s" in t.user_attrs]
        start = [t for t in trials if not t.user_attrs.get("origin", "").startswith("a variation")]
        start = start[:next((i for i, t in enumerate(start) if t.number > start[0].number + 40), len(start))]
        first = min(t.datetime_start for t in start)
        spans.append((max(t.datetime_complete for t in start) - first).total_seconds())
        compiles.append(statistics.median(t.user_attrs["compile_s"] for t in start))
    print(f"{path}: start span median {statistics.median(spans):.2f} s (each: {' '.join(f'{s:.1f}' for s in spans)}), "
          f"start compile median {statistics.median(compiles):.2f} s")
