import sys, collections
import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage
optuna.logging.set_verbosity(optuna.logging.ERROR)
for path in sys.argv[1:]:
    st = JournalStorage(JournalFileBackend(path))
    tot = slow2 = slow3 = 0.0; n = 0; failed_run = 0.0; per_status = collections.Counter(); runs = []
    for s in st.get_all_studies():
        trials = [t for t in st.get_all_trials(s._study_id, deepcopy=False) if "run_s" in t.user_attrs]
        best = min((t.value for t in trials if t.state.name == "COMPLETE"), default=None)
        for t in trials:
            r = t.user_attrs["run_s"]; tot += r; n += 1; per_status[t.user_attrs.get("status")] += r
            runs.append((r, t.value, best))
            if t.value is not None and best and t.value > 2 * best: slow2 += r
            if t.value is not None and best and t.value > 3 * best: slow3 += r
    runs.sort(key=lambda r: r[0], reverse=True)
    print(path, f"n {n} run total {tot:.1f} s; on >2x best {slow2:.1f} s, >3x {slow3:.1f}; by status", {k: round(v, 1) for k, v in per_status.items()})
    print("  top runs (run_s, time_ms, best):", [(round(a, 3), round(b or 0, 3), round(c or 0, 3)) for a, b, c in runs[:8]])
    import statistics
    print("  run_s quantiles", [round(q, 4) for q in statistics.quantiles([r[0] for r in runs], n=10)])
