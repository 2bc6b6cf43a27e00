import pstats, glob, os, sys
for f in sorted(glob.glob('prof/*.prof')):
    p = pstats.Stats(f)
    st = p.stats
    def cum(name):
        t = 0.0
        for (file, line, fn), (cc, nc, tt, ct, callers) in st.items():
            if fn == name[1] and file.endswith(name[0]):
                t = max(t, ct)
        return t
    total = max(v[3] for v in st.values())
    kinds = {k: cum(v) for k, v in dict(
        tune_problem=('search/tuner.py', 'tune_problem'), worker_eval=('gpu/worker.py', 'evaluate'),
        set_problem=('gpu/worker.py', 'set_problem'), gpu_lock=('gpu/exclusive.py', '__enter__'),
        next_cand=('search/tuner.py', '_next_candidate'), tell=('search/tuner.py', '_tell'),
        result=('gpu/backend.py', 'result'), finish=('search/tuner.py', '_finish'),
        hist=('search/study.py', 'of'), append=('journal/_file.py', 'append_logs'), fsync=('~', '<built-in method posix.fsync>'),
        compile=('gpu/compiler.py', 'compile_source'), worker_main=('search/fleet.py', 'worker_main')).items()}
    if total < 1: continue
    print(os.path.basename(f), f"total {total:.1f}", " ".join(f"{k}={v:.1f}" for k, v in kinds.items() if v > 0.05))
