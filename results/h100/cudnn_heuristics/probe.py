"""Does the cuDNN baseline miss faster plans, and is the PyTorch column timed like the others?

For each layer of a config, on one set of operands (bench's OperandSets: rotating buffer sets over
twice the L2) and one float64 reference:
  1. cuDNN's plans of heuristics A + FALLBACK (what `autoconv bench` tries) and of heuristics B,
     each plan verified and timed (find_best_plan), the two lists in alternating order per layer;
  2. F.conv2d as bench times it (time_torch: the graph's calls free each output at once, so every
     call writes the same memory), and with every call's output kept alive (distinct memory, as
     the other columns write).
    python3 probe.py CONFIG[,CONFIG...] OUT.json
"""
import json
import statistics
import sys
import time

import numpy

from autoconv.bench.baseline import (OperandSets, _torch_tensors, device_l2_bytes, find_best_plan,
                                     reference_output, time_torch)
from autoconv.bench.cudnn import MODES_OF_PRECISION
from autoconv.problems.config import load_config
from autoconv.verify.reference import random_inputs

SETS = {"A+FALLBACK": ("A", "FALLBACK"), "B": ("B",)}
T0 = time.time()


def torch_kept(problem, operands, target_ms=4.0, samples=5):
    """F.conv2d timed with each call's output alive until the replay ends."""
    import torch
    import torch.nn.functional as F
    xs, ws = _torch_tensors(problem, operands.x), _torch_tensors(problem, operands.w)
    kw = dict(stride=problem.stride, padding=(problem.padding[0], problem.padding[2]), dilation=problem.dilation)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for i in range(operands.count):
            F.conv2d(xs[i], ws[i], None, **kw)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(stream); F.conv2d(xs[0], ws[0], None, **kw); e.record(stream); e.synchronize()
        calls = max(operands.count, min(int(target_ms / max(s.elapsed_time(e), 1e-3)), 2000))
        calls = max(1, round(calls / operands.count)) * operands.count
        graph, outs = torch.cuda.CUDAGraph(), []
        with torch.cuda.graph(graph, stream=stream):
            for c in range(calls):
                outs.append(F.conv2d(xs[c % operands.count], ws[c % operands.count], None, **kw))
        graph.replay(); graph.replay()
        per = []
        for _ in range(samples):
            s.record(stream); graph.replay(); e.record(stream); e.synchronize()
            per.append(s.elapsed_time(e) / calls)
    del graph, outs
    torch.cuda.empty_cache()
    return statistics.median(per)


def main():
    configs, out = sys.argv[1].split(","), sys.argv[2]
    rows = []
    for config_file in configs:
        config = load_config(config_file)
        for n, item in enumerate(config.problems):
            if time.time() - T0 > 480:
                print("time's up", flush=True)
                break
            problem = item.problem
            mode = MODES_OF_PRECISION[problem.precision][0]
            inputs = random_inputs(problem, numpy.random.default_rng(n))
            operands = OperandSets(problem, inputs, l2_bytes=device_l2_bytes(), seed=n + 1)
            reference = reference_output(problem, operands)
            order = list(SETS) if n % 2 == 0 else list(SETS)[::-1]
            row = {"config": config_file, "layer": item.name, "mode": mode, "order": order, "sets": {}}
            for name in order:
                try:
                    r = find_best_plan(problem, mode, operands=operands, reference=reference, samples=5,
                                       workspace_limit=config.workspace_limit_bytes, heuristics=SETS[name])
                    row["sets"][name] = {"best_ms": r.time_ms, "best_plan": r.plan_name, "plans": r.plans_tried,
                                         "ok": {o.name: o.time_ms for o in r.plans if o.status == "ok"}}
                except Exception as err:  # (a set with no working plan)
                    row["sets"][name] = {"error": str(err)[:300]}
            if not problem.bias:
                try:
                    t = time_torch(problem, operands, reference, tf32=(mode == "tf32"))
                    row["torch_bench_ms"] = t.time_ms if t else None
                    row["torch_kept_ms"] = torch_kept(problem, operands)
                except Exception as err:
                    row["torch_error"] = str(err)[:300]
            a, b = row["sets"].get("A+FALLBACK", {}), row["sets"].get("B", {})
            new = {k: v for k, v in b.get("ok", {}).items() if k not in a.get("ok", {})}
            row["b_only_plans"] = len(new)
            row["b_only_best_ms"] = min(new.values()) if new else None
            print(f"{mode:5s} {item.name:30s} A+FB {a.get('best_ms', float('nan')):.4f} ({a.get('plans')})"
                  f"  B {b.get('best_ms', float('nan')):.4f} ({b.get('plans')}) B-only {len(new)}"
                  f" best {row['b_only_best_ms']}  torch bench {row.get('torch_bench_ms')} kept {row.get('torch_kept_ms')}"
                  f"  at {time.time() - T0:.0f}s", flush=True)
            rows.append(row)
            json.dump(rows, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
