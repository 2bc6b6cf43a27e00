"""Per transfer study of the given journals (thirty-sixth session, offline): measured / predicted time
of the start's model picks (median and min over the picks, and of the fastest measured pick), and
the study's best.
    python3 model_error.py JOURNAL[.gz] [...]
"""
import gzip, os, re, shutil, sys, tempfile, statistics
import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage
optuna.logging.set_verbosity(optuna.logging.WARNING)
PRED = re.compile(r"predicted (\d+) of (\S+) by the tuning history's model \(([\d.e-]+) ms\)")
def load(path):
    if path.endswith(".gz"):
        h, plain = tempfile.mkstemp(suffix=".journal")
        with gzip.open(path) as a, os.fdopen(h, "wb") as b: shutil.copyfileobj(a, b)
        path = plain
    return JournalStorage(JournalFileBackend(path))
for path in sys.argv[1:]:
    st = load(path)
    for s in optuna.get_all_study_summaries(st):
        study = optuna.load_study(study_name=s.study_name, storage=st)
        picks = []
        for t in study.trials:
            m = PRED.match(t.user_attrs.get("origin", "") or "")
            if m and t.value:
                picks.append((t.value / float(m.group(3)), t.value, m.group(2)))
        if not picks: continue
        best = min(t.value for t in study.trials if t.value)
        ratios = [r for r, _, _ in picks]
        fastest = min(picks, key=lambda p: p[1])
        print(f"{os.path.basename(os.path.dirname(path)) or path:14s} {s.study_name.split('/')[1][:62]:62s} n={len(study.trials):3d} "
              f"ratio med {statistics.median(ratios):5.2f} min {min(ratios):5.2f} fastest-pick {fastest[0]:5.2f} best {best:.4f}")
