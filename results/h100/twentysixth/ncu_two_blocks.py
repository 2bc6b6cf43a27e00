"""Kernels to read hardware counters of (under ncu --profile-from-start off): MobileNetV2's 1x1
expansion from 24 to 144 channels at batch 64 (bf16, NHWC), the tuned configuration of call 1
(128 x 192 tiles, one block per SM: 0.57x cuDNN) beside tiles of 64 x 64 and 64 x 128 with two
blocks per SM. Each plan once inside the profiled range, after a warm-up outside it.
    ncu --clock-control none --profile-from-start off --section SpeedOfLight --section Occupancy \\
        --section WarpStateStats --section MemoryWorkloadAnalysis python3 ncu_two_blocks.py
"""
import sys

import cupy
import numpy

from autoconv.bench.baseline import OperandSets
from autoconv.gpu.compiler import compile_source
from autoconv.gpu.device import read_device
from autoconv.gpu.kernels import LoadedPlan
from autoconv.kernels.families import get_family
from autoconv.problems.problem import parse_spec
from autoconv.verify.reference import random_inputs

PROBLEM = parse_spec("N=64,C=24,H=56,W=56,K=144,R=1,S=1,layout=NHWC,precision=bf16")
BASE = {"SPLIT_K": 1, "SCHEDULE": "cooperative", "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16}
CONFIGS = ({**BASE, "BN": 192, "CONSUMERS": 2, "STAGES": 3, "BLOCKS_PER_SM": 1},   # call 1's winner
           {**BASE, "BN": 64, "CONSUMERS": 1, "STAGES": 3, "BLOCKS_PER_SM": 2},
           {**BASE, "BN": 128, "CONSUMERS": 1, "STAGES": 3, "BLOCKS_PER_SM": 2})
device, _ = read_device(0)
family = get_family("implicit_gemm_wgmma_tma")
operands = OperandSets(PROBLEM, random_inputs(PROBLEM, numpy.random.default_rng(0)), l2_bytes=device.l2_bytes,
                       seed=1, max_sets=4)
work = []
for config in CONFIGS:
    plan = family.plan(PROBLEM, config, device)
    compiled = compile_source(plan.source, device.arch, plan.name)
    assert compiled.ok, compiled.reason()
    loaded = LoadedPlan(plan, compiled.cubin)
    workspace = cupy.empty(max(plan.workspace_bytes, 4) // 4, dtype=cupy.float32)
    print(config, plan.name, plan.values["GRID"], plan.values["SMEM_BYTES"], file=sys.stderr, flush=True)

    def run(loaded=loaded, workspace=workspace):
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
