"""The kernel to sample warp stalls of, per SASS instruction (prepared for the next device session):
MobileNetV2's 1x1 expansion from 24 to 144 channels at batch 64 in bf16 NHWC, call 1b's tuned
configuration (128 x 192 tiles, two consumers, three stages: 0.57x cuDNN). Three hypotheses are out
(two blocks per SM, stores in batches, a tiled map of x; NOTES, twenty-sixth session); the question
is which wait takes the ~4 us per tile. Once inside the profiled range, after a warm-up outside it.
    ncu --clock-control none --profile-from-start off --set full --import-source yes \\
        --page source --print-source sass --csv python3 ncu_expansion.py > expansion_sass.csv
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
CONFIG = {"BN": 192, "CONSUMERS": 2, "STAGES": 3, "SPLIT_K": 1, "SCHEDULE": "cooperative", "EPILOGUE": "staged",
          "M_OPERAND": "pixels", "PAD_PITCH": 16}
device, _ = read_device(0)
plan = get_family("implicit_gemm_wgmma_tma").plan(PROBLEM, CONFIG, device)
compiled = compile_source(plan.source, device.arch, plan.name)
assert compiled.ok, compiled.reason()
loaded = LoadedPlan(plan, compiled.cubin)
operands = OperandSets(PROBLEM, random_inputs(PROBLEM, numpy.random.default_rng(0)), l2_bytes=device.l2_bytes,
                       seed=1, max_sets=4)
workspace = cupy.empty(max(plan.workspace_bytes, 4) // 4, dtype=cupy.float32)
print(plan.name, plan.values["GRID"], plan.values["SMEM_BYTES"], file=sys.stderr, flush=True)
for i in range(3):
    loaded.launch({**operands.arrays(i), "workspace": workspace})
cupy.cuda.runtime.deviceSynchronize()
(getattr(cupy.cuda.runtime, "profilerStart", None) or cupy.cuda.profiler.start)()
loaded.launch({**operands.arrays(3), "workspace": workspace})
cupy.cuda.runtime.deviceSynchronize()
(getattr(cupy.cuda.runtime, "profilerStop", None) or cupy.cuda.profiler.stop)()
