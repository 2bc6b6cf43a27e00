"""One layer's TMA-family kernel beside plain store kernels and cuDNN (through PyTorch), in one
process on the GPU, to time them or to profile them with ncu (twenty-seventh session).

Built for MobileNetV2's 1x1 expansion (64 x 24 x 56 x 56 -> 144 filters, bf16 NHWC; 0.57x cuDNN),
whose 57.8 MB of y is most of its traffic: how fast can y be written at all, and how fast do the
family's staged stores write it? Kernels:
  - "new": --config from this tree's template; "old": the same configuration from a source
    rendered before a template change (--old; ab_cases.py renders it), if given;
  - with --stores, plain store kernels writing y's bytes into the same buffers: each block stores
    chunks of one 128-row tile of y (16-byte vectors) in turn, as the persistent kernel's tiles
    do: 132 blocks of 256 threads (the kernel's storing warps), 132 of 1024, 1056 of 256;
  - cuDNN through PyTorch (the problem's dtype, channels_last, cudnn.benchmark; tf32 allowed for
    precision tf32).
`time`: each over rotating buffer sets larger than the L2 (CUDA graph of back-to-back calls,
median of 7; PyTorch by events over 200 calls, median of 7), in the order listed, then reversed;
prints the best of the two and writes --out (JSON). `ncu`: one launch of each inside the profiled
range, after a warm-up outside it:
    ncu --profile-from-start off --set full ... python3 layer_probe.py ncu [options]
"""
import argparse
import dataclasses
import json
import statistics

import cupy
import numpy
import torch

from autoconv.bench.baseline import OperandSets, reference_output
from autoconv.gpu.compiler import compile_source
from autoconv.gpu.device import read_device
from autoconv.gpu.kernels import LoadedPlan
from autoconv.gpu.timing import time_calls
from autoconv.kernels.families import get_family
from autoconv.problems.problem import parse_spec
from autoconv.verify.compare import check_result
from autoconv.verify.reference import random_inputs

EXPANSION = "N=64,C=24,H=56,W=56,K=144,R=1,S=1,layout=NHWC,precision=bf16"
EXPANSION_CONFIG = {"BN": 192, "CONSUMERS": 2, "STAGES": 3, "SPLIT_K": 1, "SCHEDULE": "cooperative",
                    "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16}
TILE_ROWS = 128   # rows of y per chunk of the store kernels

STORE_SOURCE = r"""
extern "C" __global__ void store_chunks(uint4* __restrict__ y, long long vectors, int chunk_vectors)
{
    const long long chunks = (vectors + chunk_vectors - 1) / chunk_vectors;
    const uint4 value = make_uint4(threadIdx.x, blockIdx.x, 0x3f803f80u, 0x3f803f80u);
    for (long long chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
        const long long first = chunk * chunk_vectors;
        for (int i = threadIdx.x; i < chunk_vectors; i += blockDim.x)
            if (first + i < vectors)
                y[first + i] = value;
    }
}
"""
TORCH_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "fp32": torch.float32}

parser = argparse.ArgumentParser()
parser.add_argument("mode", choices=["time", "ncu"])
parser.add_argument("--spec", default=EXPANSION)
parser.add_argument("--config", default=json.dumps(EXPANSION_CONFIG), help="JSON")
parser.add_argument("--old", help="the old template's source of --config (ab_cases.py)")
parser.add_argument("--stores", action="store_true", help="add the plain store kernels")
parser.add_argument("--out")
args = parser.parse_args()

device, _ = read_device(0)
problem = parse_spec(args.spec)
family = get_family("implicit_gemm_wgmma_tma")
new = family.plan(problem, json.loads(args.config), device)
plans = {"new": new}
if args.old:
    plans = {"old": dataclasses.replace(new, source=open(args.old).read()), "new": new}
inputs = random_inputs(problem, numpy.random.default_rng(0))
operands = OperandSets(problem, inputs, l2_bytes=device.l2_bytes, seed=1, max_sets=8)
reference = reference_output(problem, operands)
tolerance = operands.tolerance(problem, reference)
workspace = cupy.empty(max(new.workspace_bytes, 4) // 4, dtype=cupy.float32)
runs = {}
for name, plan in plans.items():
    compiled = compile_source(plan.source, device.arch, plan.name)
    assert compiled.ok, (name, compiled.reason())
    loaded = LoadedPlan(plan, compiled.cubin)
    operands.poison_output(0)
    loaded.launch({**operands.arrays(0), "workspace": workspace})
    cupy.cuda.runtime.deviceSynchronize()
    verdict = check_result(operands.values("y"), reference, tolerance)
    assert verdict.ok, (name, verdict.message)
    runs[name] = lambda i, run=loaded: run.launch({**operands.arrays(i), "workspace": workspace})

if args.stores:
    store = cupy.RawKernel(STORE_SOURCE, "store_chunks")
    y_vectors = operands.y[0].nbytes // 16
    chunk = TILE_ROWS * problem.K * operands.y[0].itemsize // 16
    for blocks, threads in ((132, 256), (132, 1024), (1056, 256)):
        runs[f"store_{blocks}x{threads}"] = (
            lambda i, b=blocks, t=threads: store((b,), (t,), (operands.y[i], numpy.int64(y_vectors), numpy.int32(chunk))))

top, bottom, left, right = problem.padding
assert top == bottom and left == right, "symmetric padding only (PyTorch's conv2d)"
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = problem.precision == "tf32"
dtype = TORCH_DTYPES[problem.precision]
xs = [torch.randn(problem.N, problem.C, problem.H, problem.W, device="cuda").to(dtype)
      .contiguous(memory_format=torch.channels_last) for _ in range(operands.count)]
w_t = torch.randn(problem.K, problem.C, problem.R, problem.S, device="cuda").to(dtype).contiguous(
    memory_format=torch.channels_last)
b_t = torch.randn(problem.K, device="cuda").to(dtype) if problem.bias else None


def torch_conv(i: int):
    return torch.nn.functional.conv2d(xs[i % len(xs)], w_t, b_t, problem.stride, (top, left), problem.dilation)


for i in range(len(xs)):
    torch_conv(i)
torch.cuda.synchronize()


def time_torch(calls: int = 200, samples: int = 7) -> float:
    per_call = []
    for _ in range(samples):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for c in range(calls):
            torch_conv(c)
        end.record()
        end.synchronize()
        per_call.append(start.elapsed_time(end) / calls)
    return statistics.median(per_call)


names = list(runs)
print(problem.describe() if hasattr(problem, "describe") else args.spec, json.loads(args.config),
      "grid", new.values["GRID"], "smem", new.values["SMEM_BYTES"], flush=True)
if args.mode == "ncu":
    for name in names:   # warm-up outside the profiled range
        runs[name](0)
    torch_conv(0)
    torch.cuda.synchronize()
    cupy.cuda.runtime.profilerStart()
    for name in names:
        runs[name](1 % operands.count)
        cupy.cuda.runtime.deviceSynchronize()
    torch_conv(1)
    torch.cuda.synchronize()
    cupy.cuda.runtime.profilerStop()
    print("profiled, in order:", names + ["torch_cudnn"], flush=True)
else:
    times: dict[str, list[float]] = {name: [] for name in names + ["torch_cudnn"]}
    for order in (names, names[::-1]):
        if order is not names:
            times["torch_cudnn"].append(time_torch())
        for name in order:
            times[name].append(time_calls(runs[name], operands.count).median_ms)
        if order is names:
            times["torch_cudnn"].append(time_torch())
    y_bytes = operands.y[0].nbytes
    for name, values in times.items():
        best = min(values)
        print(f"{name:20s} {best * 1e3:7.1f} us  ({', '.join(f'{v * 1e3:.1f}' for v in values)})  "
              f"y alone at {y_bytes / best / 1e9:.2f} TB/s", flush=True)
    if args.out:
        json.dump({"spec": args.spec, "config": json.loads(args.config), "buffer_sets": operands.count,
                   "y_bytes": y_bytes, "times_ms": times}, open(args.out, "w"), indent=1)
