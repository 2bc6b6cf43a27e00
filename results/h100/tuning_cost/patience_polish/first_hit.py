import json, math, sys
sys.path.insert(0, '.probe')
from sim_stop import seqs
for path in sys.argv[1:]:
    S = seqs(path); print(path)
    for k, s in S.items():
        final = min(v for v, _ in s)
        hit = next(i for i, (v, _) in enumerate(s) if v <= final * 1.02)
        hit0 = next(i for i, (v, _) in enumerate(s) if v <= final)
        print(f"  {k[:58]:58s} n={len(s):3d} within2% at {hit:3d} ({s[hit][1][:30]}) best at {hit0:3d} ({s[hit0][1][:40]})")
