"""ResNet-50's first layer (7x7 stride 2, 3 channels, batch 32) in bf16, fp16 and tf32 NHWC: the
TMA family's configurations (x's taps along w folded into its channels by a first kernel) and the
cp.async family's winner, beside PyTorch's F.conv2d (cuDNN, cudnn.benchmark), on the same
channels_last tensors.

    python3 stem_probe.py times          # CUDA-event times over back-to-back launches, one process
    ncu ... --profile-from-start off python3 stem_probe.py ncu   # one launch of each, profiled
"""
import statistics
import sys

import cupy
import torch
import torch.nn.functional as F

from autoconv.gpu.device import read_device
from autoconv.kernels.families import get_family
from autoconv.problems.problem import parse_spec
from autoconv.runtime.selection import _loaded_runner, verify_runner

SPEC = "N=32,C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3,layout=NHWC,precision={}"
TMA = "implicit_gemm_wgmma_tma"
F16 = "implicit_gemm_wgmma_f16"
def tma(epilogue, consumers, stages, pitch):
    return {"BN": 64, "CONSUMERS": consumers, "STAGES": stages, "SPLIT_K": 1, "SCHEDULE": "cooperative",
            "EPILOGUE": epilogue, "PAD_PITCH": pitch}


# (precision, family, config): the TMA family with x' pixels of 16-, 64- and 128-byte pitch
# (PAD_PITCH; tf32's 21 values take 32 channels at both 64 and 128), and the cp.async family's
# winner of the committed bf16 run
CANDIDATES = [(precision, TMA, tma("direct" if precision == "tf32" else "staged", consumers, stages, pitch))
              for precision in ("bf16", "fp16", "tf32") for consumers, stages in ((3, 4), (2, 6))
              for pitch in ((16, 64) if precision == "tf32" else (16, 64, 128))]
CANDIDATES.append(("bf16", F16, {"BK": 64, "BM": 256, "BN": 64, "MIN_BLOCKS": 1, "MMA_PENDING": 0, "SCHEDULE": "tiles",
                                 "PAD_CHANNELS": 1, "SPLIT_K": 1, "STAGES": 2, "WGN": 64}))
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}

torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = True
limits, _ = read_device(0)
tensors = {}
for precision, dtype in DTYPES.items():
    problem = parse_spec(SPEC.format(precision))
    x = torch.randn(32, 3, 224, 224, device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
    w = torch.randn(64, 3, 7, 7, device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
    y = torch.empty(32, 64, 112, 112, device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
    tensors[precision] = (problem, x, w, y)

work = []   # (name, launch)
for precision, family_name, config in CANDIDATES:
    problem, x, w, y = tensors[precision]
    family = get_family(family_name)
    full = {**config}
    plan = family.plan(problem, full, limits)
    runner = _loaded_runner(problem, 0, plan, "probe", limits)
    error = verify_runner(runner)
    assert error is None, (precision, family_name, config, error)
    workspace = cupy.zeros(max(runner.workspace_bytes, 4), dtype=cupy.uint8)

    def ours(runner=runner, x=x, w=w, y=y, workspace=workspace):
        runner.launcher((x.data_ptr(), w.data_ptr(), 0, y.data_ptr(), workspace.data.ptr),
                        torch.cuda.current_stream().cuda_stream)
    pitch = f" PAD_PITCH {config['PAD_PITCH']}" if "PAD_PITCH" in config else ""
    work.append((f"{precision} {plan.name[:70]}{pitch}", ours))
for precision in DTYPES:
    problem, x, w, y = tensors[precision]
    work.append((f"{precision} cuDNN (F.conv2d)", lambda x=x, w=w: F.conv2d(x, w, None, 2, 3)))

for _, launch in work:
    for _ in range(3):
        launch()
torch.cuda.synchronize()

if sys.argv[1:] == ["ncu"]:
    torch.cuda.profiler.start()
    for name, launch in work:
        torch.cuda.nvtx.range_push(name)
        launch()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
else:   # 7 rounds alternating; each round 20 launches between two events; median us per launch
    times = {name: [] for name, _ in work}
    for r in range(7):
        for name, launch in (work if r % 2 == 0 else list(reversed(work))):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(20):
                launch()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end) / 20 * 1e3)
    for name, values in times.items():
        print(f"{statistics.median(values):8.1f} us  {name}", flush=True)
