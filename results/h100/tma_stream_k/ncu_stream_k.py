"""The TMA family's tile schedule against stream-K on the same tiles (tf32 layer4.1.conv2, BM 64 x
BN 128, 8 stages), one launch each inside the profiled range (counters zeroed by its first
kernel), for ncu --profile-from-start off. Needs stream_k.patch (beside it) applied."""
import cupy
import torch

from autoconv.gpu.device import read_device
from autoconv.kernels.families import get_family
from autoconv.problems.problem import parse_spec
from autoconv.runtime.selection import _loaded_runner, verify_runner

limits, _ = read_device(0)
family = get_family("implicit_gemm_wgmma_tma")
problem = parse_spec("N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1,layout=NHWC,precision=tf32")
x = torch.randn(32, 7, 7, 512, device="cuda")
w = torch.randn(512, 3, 3, 512, device="cuda")
y = torch.empty(32, 7, 7, 512, device="cuda")
runs = []
for schedule in ("cooperative", "stream_k"):
    config = {"BN": 128, "CONSUMERS": 1, "STAGES": 8, "SPLIT_K": 1, "SCHEDULE": schedule, "EPILOGUE": "direct"}
    runner = _loaded_runner(problem, 0, family.plan(problem, config, limits), "ncu", limits)
    assert verify_runner(runner) is None, schedule
    workspace = cupy.zeros(max(runner.workspace_bytes, 4), dtype=cupy.uint8)
    def run(runner=runner, workspace=workspace):
        runner.launcher((x.data_ptr(), w.data_ptr(), 0, y.data_ptr(), workspace.data.ptr),
                        torch.cuda.current_stream().cuda_stream)
    for _ in range(3):
        run()
    runs.append(run)
torch.cuda.synchronize()
torch.cuda.profiler.start()
for run in runs:
    run()
torch.cuda.synchronize()
torch.cuda.profiler.stop()
print("profiled")
