"""For each VGG-16 (N=8) study of transfer runs: the winner's lineage back to its start pick, and
each start pick's measured time over the study's best (by family).
    python3 lineage.py JOURNAL.gz [...]"""
import gzip
import re
import shutil
import sys
import tempfile
from collections import defaultdict

import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage

optuna.logging.set_verbosity(optuna.logging.WARNING)
by_family = defaultdict(list)
for path in sys.argv[1:]:
    with tempfile.NamedTemporaryFile(suffix=".journal", delete=False) as out, gzip.open(path) as src:
        shutil.copyfileobj(src, out)
    storage = JournalStorage(JournalFileBackend(out.name))
    for summary in optuna.get_all_study_summaries(storage):
        if "/N=8," not in summary.study_name:
            continue
        trials = optuna.load_study(study_name=summary.study_name, storage=storage).trials
        ok = [t for t in trials if t.state.name == "COMPLETE"]
        best = min(ok, key=lambda t: t.value)
        chain, t = [], best
        while True:
            origin = t.user_attrs.get("origin", "sampler")
            chain.append(f"{t.number}:{t.params.get('family')}")
            m = re.match(r"a variation of the best \(trial (\d+)\)", origin)
            if not m:
                chain.append(origin[:45])
                break
            t = trials[int(m.group(1))]
        print(summary.study_name.split("/")[1][:48], " <- ".join(chain))
        for t in ok:
            origin = t.user_attrs.get("origin", "")
            if origin.startswith("predicted") or origin.startswith("winner") or origin.startswith("family"):
                kind = "neighbour" if origin.startswith("winner") else origin.split(" by")[0].split(" (")[0]
                by_family[kind].append(t.value / best.value)
for kind, ratios in sorted(by_family.items()):
    ratios.sort()
    print(f"{kind:45s} n={len(ratios):3d} min {ratios[0]:.2f} median {ratios[len(ratios)//2]:.2f}")
