"""Each run's wall, candidates, compile CPU, what it kept busy, and its tuners' phases per candidate
(tune.json's ``phases_s`` summed over problems by search kind, over the candidates they ran).

    python3 phases.py tune_A.json tune_B.json ...
"""

import json
import sys
from pathlib import Path

PHASES = ("start", "ask", "wait", "record", "finish")

for path in sys.argv[1:]:
    run = json.loads(Path(path).read_text())
    load = run["load"]
    print(f"{Path(path).stem}: wall {run['wall_s']:.1f} s, {run['candidates']} candidates, "
          f"compile {sum(p['compile_cpu_s'] for p in run['problems']):.0f} CPU-s, "
          f"cores busy {load['compile_cores_busy']:.1f} of {load['host_cores']}, GPU busy {load['gpu_busy']:.2f}, "
          f"per candidate: compile queue {run['compile_queue_s'] / run['candidates']:.2f} s, "
          f"GPU queue {run['gpu_queue_s'] / run['candidates']:.2f} s")
    for kind in sorted({p.get("search") or "" for p in run["problems"]} - {""}):
        problems = [p for p in run["problems"] if p.get("search") == kind]
        trials = sum(p["trials_run"] for p in problems) or 1
        phases = {phase: sum(p["phases_s"].get(phase, 0.0) for p in problems) for phase in PHASES}
        print(f"  {kind:19s} {len(problems):2d} problems, {trials:4d} candidates; ms per candidate: "
              + ", ".join(f"{phase} {1000 * seconds / trials:.1f}" for phase, seconds in phases.items())
              + f"; wall per problem {sum(p['wall_s'] for p in problems) / max(len(problems), 1):.1f} s")
