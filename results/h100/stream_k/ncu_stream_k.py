"""Kernels to read hardware counters of (under ncu --profile-from-start off): stream-K against the
tuned configuration it was added to, on two tf32 layers where call 1's sweep measured it ~2x
slower (layer4.1.conv2: 100 tiles of 64 x 128, mostly shared; layer2.0.conv2: 392 tiles of 128 x
64, mostly whole). Each plan once inside the profiled range (the GEMM, then the reduction of the
pieces), after a warm-up outside it.
    ncu --clock-control none --profile-from-start off --set full --csv --page raw python3 ncu_stream_k.py
"""
import json
import sys

import cupy
import numpy

from autoconv.bench.baseline import OperandSets
from autoconv.gpu.compiler import compile_source
from autoconv.gpu.device import read_device
from autoconv.gpu.kernels import LoadedPlan
from autoconv.kernels.families import get_family
from autoconv.problems.config import load_config
from autoconv.verify.reference import random_inputs

LAYERS = ("resnet50.layer4.1.conv2", "resnet50.layer2.0.conv2")
config = load_config("examples/resnet50_tf32_nhwc.yaml")
tuned = {p["name"]: p for p in json.load(open(
    "results/h100/resnet50_n32_tf32_nhwc/twentythird_session/results.json"))["problems"]}
device, _ = read_device(0)
family = get_family("implicit_gemm_wgmma_tma")
work = []
for item in config.problems:
    if item.name not in LAYERS:
        continue
    problem = item.problem
    operands = OperandSets(problem, random_inputs(problem, numpy.random.default_rng(0)), l2_bytes=device.l2_bytes,
                           seed=1, max_sets=4)
    for stream_k in (0, 1):
        params = {**tuned[item.name]["params"], "STREAM_K": stream_k}
        if stream_k:
            params["EPILOGUE"] = "direct"
        plan = family.plan(problem, params, device, config.workspace_limit_bytes)
        compiled = compile_source(plan.source, device.arch, plan.name)
        assert compiled.ok, compiled.reason()
        loaded = LoadedPlan(plan, compiled.cubin)
        workspace = cupy.empty(max(plan.workspace_bytes, 4) // 4, dtype=cupy.float32)
        print(item.name, "STREAM_K", stream_k, plan.name, plan.values["GRID"], plan.values["TILES"], file=sys.stderr,
              flush=True)

        def run(loaded=loaded, operands=operands, workspace=workspace):
            loaded.launch({**operands.arrays(1), "workspace": workspace})

        for _ in range(3):
            run()
        work.append(run)
cupy.cuda.runtime.deviceSynchronize()
profiler = getattr(cupy.cuda.runtime, "profilerStart", None) or cupy.cuda.profiler.start
profiler()
for run in work:
    run()
cupy.cuda.runtime.deviceSynchronize()
(getattr(cupy.cuda.runtime, "profilerStop", None) or cupy.cuda.profiler.stop)()
