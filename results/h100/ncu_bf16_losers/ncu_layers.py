"""Kernels to read hardware counters of (under ncu --profile-from-start off): the bf16 ResNet-50
layers where cuDNN's best plan beat the TMA family in the twenty-second session
(../twentysecond/call5/bf16: 1x1 layers of 9-18 us, ~1.2 us behind, a cost that is not the calls'
overlap: ../pdl_probe), each side once inside the profiled range after a warm-up outside it: our
winner as tuned, and cuDNN's best plan (the frontend, the plan the bench found) on the same
operands.
    ncu --clock-control none --profile-from-start off --set full --csv --page raw python3 ncu_layers.py
"""
import json
import sys

import cupy
import numpy

from autoconv.bench.baseline import OperandSets
from autoconv.bench.cudnn import CudnnConv
from autoconv.gpu.compiler import compile_source
from autoconv.gpu.device import read_device
from autoconv.gpu.kernels import LoadedPlan
from autoconv.kernels.families import get_family
from autoconv.problems.config import load_config
from autoconv.verify.reference import random_inputs

LAYERS = ("resnet50.layer4.0.conv3", "resnet50.layer3.1.conv1", "resnet50.layer4.0.conv1",
          "resnet50.layer3.0.conv3", "resnet50.layer2.1.conv2")   # the last: a 3x3 layer we win
config = load_config("examples/resnet50_bf16.yaml")
committed = {p["spec"]: p for p in json.load(open("results/h100/twentysecond/call5/bf16/results.json"))["problems"]}
device, _ = read_device(0)
work = []
for item in config.problems:
    if item.name not in LAYERS:
        continue
    problem = item.problem
    entry = committed[problem.spec()]
    plan = get_family(entry["family"]).plan(problem, dict(entry["params"]), device, config.workspace_limit_bytes)
    compiled = compile_source(plan.source, device.arch, plan.name)
    assert compiled.ok, compiled.reason()
    loaded = LoadedPlan(plan, compiled.cubin)
    operands = OperandSets(problem, random_inputs(problem, numpy.random.default_rng(0)), l2_bytes=device.l2_bytes,
                           seed=1, max_sets=4)
    conv = CudnnConv(problem, entry["cudnn_mode"], entry["cudnn_plan"])
    print(item.name, plan.name, "cudnn", conv.plan_name, "exact", conv.exact, file=sys.stderr, flush=True)

    def ours(loaded=loaded, operands=operands):
        loaded.launch(operands.arrays(1))

    def theirs(conv=conv, operands=operands):
        conv(**operands.pointers(2))

    for _ in range(3):
        ours(), theirs()
    work.append((item.name, ours, theirs))
cupy.cuda.runtime.deviceSynchronize()
profiler = getattr(cupy.cuda.runtime, "profilerStart", None) or cupy.cuda.profiler.start
profiler()
for name, ours, theirs in work:
    ours()
    theirs()
cupy.cuda.runtime.deviceSynchronize()
(getattr(cupy.cuda.runtime, "profilerStop", None) or cupy.cuda.profiler.stop)()
