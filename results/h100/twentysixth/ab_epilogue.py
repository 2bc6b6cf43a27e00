"""A/B of the TMA family's staged epilogue in one process: each case's configuration built from
this tree's template (stores in batches of 8 vectors, each read into registers of its own) and
from the source of the template before it (one vector read and stored at a time; rendered on the
CPU into .probe/ab/, listed in .probe/ab/cases.json). Both verified against the float64 reference,
then timed like `autoconv bench` (CUDA graph of back-to-back calls over operand sets larger than
the L2, median of 7), in the order new old old new; the ratio is old/new (above 1: new faster).
    python3 results/h100/twentysixth/ab_epilogue.py .probe/ab/cases.json OUT.json
"""
import dataclasses
import json
import sys

import cupy
import numpy

from autoconv.bench.baseline import OperandSets, reference_output
from autoconv.gpu.compiler import compile_source
from autoconv.gpu.device import read_device
from autoconv.gpu.kernels import LoadedPlan
from autoconv.gpu.timing import FULL, geometric_mean, time_calls
from autoconv.kernels.families import get_family
from autoconv.problems.problem import parse_spec
from autoconv.verify.compare import check_result
from autoconv.verify.reference import random_inputs

cases = json.load(open(sys.argv[1]))
device, _ = read_device(0)
family = get_family("implicit_gemm_wgmma_tma")
rows = []
for case in cases:
    problem = parse_spec(case["spec"])
    new = family.plan(problem, case["config"], device)
    old = dataclasses.replace(new, source=open(case["old_source"]).read())
    inputs = random_inputs(problem, numpy.random.default_rng(0))
    operands = OperandSets(problem, inputs, l2_bytes=device.l2_bytes, seed=1)
    reference = reference_output(problem, operands)
    tolerance = operands.tolerance(problem, reference)
    workspace = cupy.empty(max(new.workspace_bytes, 4) // 4, dtype=cupy.float32)
    loaded = {}
    for name, plan in (("new", new), ("old", old)):
        compiled = compile_source(plan.source, device.arch, plan.name)
        assert compiled.ok, (case["label"], name, compiled.reason())
        loaded[name] = LoadedPlan(plan, compiled.cubin)
        operands.poison_output(0)
        loaded[name].launch({**operands.arrays(0), "workspace": workspace})
        cupy.cuda.runtime.deviceSynchronize()
        verdict = check_result(operands.values("y"), reference, tolerance)
        assert verdict.ok, (case["label"], name, verdict.message)
    times = {"new": [], "old": []}
    for name in ("new", "old", "old", "new"):
        def enqueue(i, run=loaded[name]):
            run.launch({**operands.arrays(i), "workspace": workspace})
        times[name].append(time_calls(enqueue, operands.count, samples=FULL.samples).median_ms)
    new_ms, old_ms = min(times["new"]), min(times["old"])
    rows.append({"label": case["label"], "new_ms": new_ms, "old_ms": old_ms, "old_over_new": old_ms / new_ms,
                 "times": times, "config": case["config"]})
    print(f"{case['label']:45s} new {new_ms:.4f} old {old_ms:.4f} x{old_ms / new_ms:.3f}", flush=True)
    del operands, loaded, workspace
    cupy.get_default_memory_pool().free_all_blocks()
for tag in sorted({r["label"].split(".")[0] for r in rows}):
    mine = [r["old_over_new"] for r in rows if r["label"].startswith(tag + ".")]
    print(f"{tag}: geomean old/new {geometric_mean(mine):.4f} over {len(mine)}")
json.dump(rows, open(sys.argv[2], "w"), indent=1)
