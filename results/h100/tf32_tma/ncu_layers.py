"""Kernels to read hardware counters of (under ncu --profile-from-start off): for a few ResNet-50
layers, the TMA family's configuration that tuning picked (results/h100/resnet50_n32_tf32_nhwc,
../resnet50_n32_tf32_nhwc/call5_fold/bf16) and PyTorch's F.conv2d on the same channels_last
tensors (cuDNN, cudnn.benchmark, TF32 allowed), each launched once inside the profiled range after
a warm-up outside it.
    ncu --clock-control none --profile-from-start off --section SpeedOfLight ... python3 ncu_layers.py
"""
import cupy
import torch
import torch.nn.functional as F

from autoconv.gpu.device import read_device
from autoconv.kernels.families import get_family
from autoconv.problems.problem import parse_spec
from autoconv.runtime.selection import _loaded_runner, verify_runner

LAYERS = [  # (name, spec, config)
    ("tf32 layer3.1.conv2", "N=32,C=256,H=14,W=14,K=256,R=3,S=3,stride=1,pad=1,layout=NHWC,precision=tf32",
     {"BN": 256, "CONSUMERS": 2, "EPILOGUE": "direct", "SCHEDULE": "pingpong", "SPLIT_K": 1, "STAGES": 5}),
    ("tf32 layer3.0.conv2", "N=32,C=256,H=28,W=28,K=256,R=3,S=3,stride=2,pad=1,layout=NHWC,precision=tf32",
     {"BN": 256, "CONSUMERS": 1, "EPILOGUE": "direct", "SCHEDULE": "cooperative", "SPLIT_K": 1, "STAGES": 5}),
    ("tf32 layer4.1.conv1", "N=32,C=2048,H=7,W=7,K=512,R=1,S=1,layout=NHWC,precision=tf32",
     {"BN": 128, "CONSUMERS": 2, "EPILOGUE": "direct", "SCHEDULE": "pingpong", "SPLIT_K": 1, "STAGES": 8}),
    ("bf16 layer4.0.conv1", "N=32,C=1024,H=14,W=14,K=512,R=1,S=1,layout=NHWC,precision=bf16",
     {"BN": 128, "CONSUMERS": 1, "EPILOGUE": "staged", "SCHEDULE": "cooperative", "SPLIT_K": 1, "STAGES": 8}),
    ("bf16 layer3.1.conv2", "N=32,C=256,H=14,W=14,K=256,R=3,S=3,stride=1,pad=1,layout=NHWC,precision=bf16",
     {"BN": 256, "CONSUMERS": 1, "EPILOGUE": "staged", "SCHEDULE": "cooperative", "SPLIT_K": 1, "STAGES": 4}),
]

torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = True
limits, _ = read_device(0)
family = get_family("implicit_gemm_wgmma_tma")
work = []
for name, spec, config in LAYERS:
    problem = parse_spec(spec)
    runner = _loaded_runner(problem, 0, family.plan(problem, config, limits), "ncu", limits)
    assert verify_runner(runner) is None, name
    dtype = torch.float32 if problem.precision == "tf32" else torch.bfloat16
    x = torch.randn(problem.N, problem.C, problem.H, problem.W, device="cuda", dtype=dtype).to(
        memory_format=torch.channels_last)
    w = torch.randn(problem.K, problem.C, problem.R, problem.S, device="cuda", dtype=dtype).to(
        memory_format=torch.channels_last)
    y = torch.empty(problem.N, problem.K, problem.P, problem.Q, device="cuda", dtype=dtype).to(
        memory_format=torch.channels_last)
    workspace = cupy.zeros(max(runner.workspace_bytes, 4), dtype=cupy.uint8)
    pad = (problem.padding[0], problem.padding[2])

    def ours(runner=runner, x=x, w=w, y=y, workspace=workspace):
        runner.launcher((x.data_ptr(), w.data_ptr(), 0, y.data_ptr(), workspace.data.ptr),
                        torch.cuda.current_stream().cuda_stream)

    def theirs(x=x, w=w, stride=problem.stride, pad=pad):
        F.conv2d(x, w, None, stride, pad)

    for _ in range(3):  # warm-up: cudnn.benchmark's search, module loads
        ours(), theirs()
    work.append((name, ours, theirs))
torch.cuda.synchronize()
torch.cuda.profiler.start()
for name, ours, theirs in work:
    torch.cuda.nvtx.range_push(f"autoconv {name}")
    ours()
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push(f"cudnn {name}")
    theirs()
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
torch.cuda.profiler.stop()
print("profiled:", [name for name, _, _ in work])
