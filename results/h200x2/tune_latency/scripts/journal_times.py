"""Per-candidate latencies (asked to told, split into compiling, waiting for a compiler, waiting
for the GPU, on the GPU, the rest) and per-worker pipelines, from tune journals:
    python journal_times.py JOURNAL...  (journals as the call scripts save them, gunzipped)"""
import sys, statistics as st, collections
import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage
optuna.logging.set_verbosity(optuna.logging.ERROR)

def analyse(path):
    storage = JournalStorage(JournalFileBackend(path))
    rows = []
    studies = storage.get_all_studies()
    t0 = None
    per_study = []
    for s in studies:
        trials = storage.get_all_trials(s._study_id, deepcopy=False)
        ev = [t for t in trials if t.datetime_complete and t.user_attrs.get("details") is not None]
        allt = [t for t in trials if t.datetime_start]
        if not allt: continue
        start = min(t.datetime_start for t in allt); end = max((t.datetime_complete or t.datetime_start) for t in allt)
        per_study.append((start, end, len(ev), s.study_name.split('/')[1][:40]))
        for t in ev:
            d = t.user_attrs["details"]
            rows.append(dict(start=t.datetime_start, end=t.datetime_complete, owner=t.user_attrs.get("owner"),
                             compile_s=t.user_attrs.get("compile_s", 0), run_s=t.user_attrs.get("run_s", 0),
                             cq=d.get("compile_queue_s", 0), gq=d.get("gpu_queue_s", 0), status=t.user_attrs.get("status")))
    t0 = min(r["start"] for r in rows); t1 = max(r["end"] for r in rows)
    wall = (t1 - t0).total_seconds()
    lat = [(r["end"] - r["start"]).total_seconds() for r in rows]
    def med(k): return st.median(r[k] for r in rows)
    def tot(k): return sum(r[k] for r in rows)
    print(f"{path}: {len(rows)} evaluated, first ask -> last tell {wall:.1f} s, studies {len(per_study)}")
    print(f"  latency ask->tell median {st.median(lat):.2f} s mean {st.mean(lat):.2f}; compile median {med('compile_s'):.2f} "
          f"compile-queue median {med('cq'):.2f} gpu-queue median {med('gq'):.2f} run median {med('run_s'):.3f}")
    print(f"  sums: latency {sum(lat):.0f}  compile {tot('compile_s'):.0f}  compile-queue {tot('cq'):.0f}  gpu-queue {tot('gq'):.0f}  run {tot('run_s'):.0f}  other {sum(lat)-tot('compile_s')-tot('cq')-tot('gq')-tot('run_s'):.0f}")
    owners = collections.defaultdict(list)
    for r in rows: owners[r["owner"]].append(r)
    # in flight per worker over time (sampled each 0.5 s)
    import numpy as np
    grid = np.arange(0, wall, 0.5)
    for o, rs in sorted(owners.items()):
        s = np.array([(r["start"] - t0).total_seconds() for r in rs]); e = np.array([(r["end"] - t0).total_seconds() for r in rs])
        inflight = [((s <= g) & (e > g)).sum() for g in grid]
        print(f"  {str(o)[-18:]}: {len(rs)} cand, in flight mean {np.mean(inflight):.1f}, <=3 {np.mean(np.array(inflight)<=3):.0%}, >=20 {np.mean(np.array(inflight)>=20):.0%}, active {s.min():.1f}-{e.max():.1f} s")
    sw = sorted(((b - a).total_seconds(), n, name) for a, b, n, name in per_study)
    print("  study walls (s):", [round(w, 1) for w, _, _ in sw])
    return rows

for p in sys.argv[1:]:
    analyse(p)
