"""Per-call host cost of autoconv's PyTorch entry points against F.conv2d (GPU).

    python examples/host_cost.py [--calls 3000] [--rounds 7] [--json out.json]

For each shape (tiny, where the GPU work is negligible and the call's host time is what a
loop measures), each way of calling runs ``--calls`` calls back to back and synchronises
once; the ways alternate within a round, and the median over ``--rounds`` rounds is
reported, in microseconds per call. F.conv2d runs cuDNN strict FP32
(``allow_tf32=False``). Untuned shapes run autoconv's default kernel: the host cost does
not depend on which kernel runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings

import torch
import torch.nn.functional as F
from torch import nn

import autoconv.torch as ac
from autoconv.runtime import UntunedWarning

SHAPES = {
    "N1_C8_8x8_K8_3x3": (1, 8, 8, 8, 8, 3, 1),
    "N1_C256_14x14_K64_1x1": (1, 256, 14, 14, 64, 1, 0),
}


def per_call_us(fn, calls: int) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def ways(x, w, padding):
    layer = nn.Conv2d(w.shape[1], w.shape[0], w.shape[2], padding=padding, bias=False).cuda()
    layer.weight.data.copy_(w)
    module, _ = ac.convert(layer)
    pad4 = [padding] * 4
    return {
        "F.conv2d (cuDNN strict)": (lambda: F.conv2d(x, w, None, 1, padding), torch.no_grad),
        "nn.Conv2d (cuDNN strict)": (lambda: layer(x), torch.no_grad),
        "autoconv.torch.conv2d": (lambda: ac.conv2d(x, w, None, 1, padding), torch.no_grad),
        "autoconv.torch.Conv2d": (lambda: module(x), torch.no_grad),
        "torch.ops.autoconv.conv2d": (lambda: torch.ops.autoconv.conv2d(x, w, None, [1, 1], pad4, [1, 1]),
                                      torch.no_grad),
        "nn.Conv2d, grad enabled": (lambda: layer(x), torch.enable_grad),
        "autoconv.torch.Conv2d, grad enabled": (lambda: module(x), torch.enable_grad),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", help="write the medians here")
    args = parser.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    warnings.simplefilter("ignore", UntunedWarning)
    results = {}
    for shape_name, (N, C, H, W, K, R, padding) in SHAPES.items():
        x = torch.randn(N, C, H, W, device="cuda")
        w = torch.randn(K, C, R, R, device="cuda")
        calls = ways(x, w, padding)
        samples = {name: [] for name in calls}
        for fn, mode in calls.values():  # warm-up: kernels load, cuDNN plans are found
            with mode():
                per_call_us(fn, 50)
        for _ in range(args.rounds):
            for name, (fn, mode) in calls.items():
                with mode():
                    samples[name].append(per_call_us(fn, args.calls))
        medians = {name: statistics.median(values) for name, values in samples.items()}
        results[shape_name] = medians
        base = medians["F.conv2d (cuDNN strict)"]
        print(f"\n{shape_name}: median us per call over {args.rounds} rounds of {args.calls} calls")
        for name, value in medians.items():
            print(f"  {name:40s} {value:7.2f} us  {value / base:5.2f}x F.conv2d")
    environment = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
                   "cudnn": torch.backends.cudnn.version(), "calls": args.calls, "rounds": args.rounds}
    print("\n" + json.dumps(environment))
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"environment": environment, "us_per_call": results}, file, indent=2)


if __name__ == "__main__":
    main()
