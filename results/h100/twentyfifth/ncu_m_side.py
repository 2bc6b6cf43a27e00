"""Kernels to read hardware counters of (under ncu --profile-from-start off): the tuned tf32
configuration of the two 3x3 layers at 14 x 14 output (192 pixels x 64 filters per tile, the pixels
on wgmma's M side) against the same tile turned round (M_OPERAND filters: 64 filters x 192 pixels,
one consumer). The shared-memory model (../twentyfourth/smem_model.py) says the first reads 213
bytes of shared memory per clock and the second 171. Each plan once inside the profiled range,
after a warm-up outside it.
    ncu --clock-control none --profile-from-start off --set full --csv --page raw python3 ncu_m_side.py
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

LAYERS = ("resnet50.layer3.0.conv2", "resnet50.layer3.1.conv2")
TURNED_ROUND = {"M_OPERAND": "filters", "BN": 192, "CONSUMERS": 1, "STAGES": 6}
config = load_config("examples/resnet50_tf32_nhwc.yaml")
tuned = {p["name"]: p for p in json.load(open(
    "results/h100/resnet50_n32_tf32_nhwc/twentyfourth_session/results.json"))["problems"]}
device, _ = read_device(0)
family = get_family("implicit_gemm_wgmma_tma")
work = []
for item in config.problems:
    if item.name not in LAYERS:
        continue
    problem = item.problem
    operands = OperandSets(problem, random_inputs(problem, numpy.random.default_rng(0)), l2_bytes=device.l2_bytes,
                           seed=1, max_sets=4)
    for overrides in ({}, TURNED_ROUND):
        params = {"M_OPERAND": "pixels", **tuned[item.name]["params"], **overrides}  # older results lack M_OPERAND
        plan = family.plan(problem, params, device, config.workspace_limit_bytes)
        compiled = compile_source(plan.source, device.arch, plan.name)
        assert compiled.ok, compiled.reason()
        loaded = LoadedPlan(plan, compiled.cubin)
        workspace = cupy.empty(max(plan.workspace_bytes, 4) // 4, dtype=cupy.float32)
        print(item.name, overrides, plan.name, plan.values["GRID"], file=sys.stderr, flush=True)

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
