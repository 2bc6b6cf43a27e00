"""Why the run-time-size searches ran more candidates: per study, evaluated trials and where the
last improvement of more than 2% (which restarts the patience) came, from call 4's journals
(kept on the CPU machine, not committed: a few MB each).

    python patience.py FOLDER rn50_new1 rn50_new2 rn50_old1 rn50_old2 vgg_new1 vgg_old1
"""
import gzip, shutil, sys, tempfile, statistics
from pathlib import Path
import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage
optuna.logging.set_verbosity(optuna.logging.WARNING)

def studies(path):
    with tempfile.TemporaryDirectory() as d:
        plain = Path(d, "j")
        with gzip.open(path, "rb") as a, open(plain, "wb") as b:
            shutil.copyfileobj(a, b)
        st = JournalStorage(JournalFileBackend(str(plain)))
        out = {}
        for s in st.get_all_studies():
            trials = [t for t in st.get_all_trials(s._study_id) if "compile_cpu_s" in t.user_attrs]
            trials.sort(key=lambda t: t.datetime_complete or t.datetime_start)
            best, restarts, last = None, 0, 0
            for i, t in enumerate(trials):
                v = t.user_attrs.get("time_ms")
                if v is None:
                    continue
                if best is None or v < best / 1.02:
                    restarts += 1; last = i
                if best is None or v < best:
                    best = v
            out[s.user_attrs.get("problem", s.study_name)] = (len(trials), last, restarts)
        return out

runs = {name: studies(Path(sys.argv[1]) / f"journal_{name}.gz") for name in sys.argv[2:]}
for name, data in runs.items():
    n = [v[0] for v in data.values()]; last = [v[1] for v in data.values()]; r = [v[2] for v in data.values()]
    print(f"{name}: trials {sum(n)}, median per study {statistics.median(n)}, last >2% gain at median "
          f"trial {statistics.median(last)}, restarts median {statistics.median(r)} (sum {sum(r)})")
