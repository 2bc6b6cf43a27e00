"""Summary of device call 3's tunes: wall time, trials, compile CPU-s, GPU s, and winners' times
against the other code's runs (geometric mean of ratios, worst layer)."""
import json, math, sys
from pathlib import Path
folder = Path(sys.argv[1])
runs = {}
for path in sorted(folder.glob("tune_*.json")):
    d = json.loads(path.read_text())
    runs[path.stem[5:]] = d
    p = d["problems"]
    print(f"{path.stem[5:]:10s} wall {d['wall_s']:6.1f} s  trials {sum(x['trials_run'] for x in p):5d}  "
          f"compile CPU {sum(x['compile_cpu_s'] for x in p):6.1f} s  GPU {sum(x['gpu_s'] for x in p):5.1f} s  "
          f"wgmma winners {sum(x['family'] == 'implicit_gemm_wgmma' for x in p)}/{len(p)}")
def times(name):
    return {x["name"]: x["time_ms"] for x in runs[name]["problems"]}
for net in ("rn50", "vgg"):
    names = [n for n in runs if n.startswith(net)]
    for a in names:
        for b in names:
            if a < b:
                ta, tb = times(a), times(b)
                r = [ta[k] / tb[k] for k in ta]
                g = math.exp(sum(map(math.log, r)) / len(r))
                print(f"  {a} / {b}: geomean {g:.4f}, max {max(r):.3f}, min {min(r):.3f}")
