"""Per-call host cost of autoconv's PyTorch entry points against F.conv2d, in every mode (GPU).

    python examples/host_cost.py [--calls 2000] [--rounds 7] [--modes fp32,tf32_nchw,...]
                                 [--json out.json] [--profile MODE]

Modes: ``fp32`` (PyTorch's convolutions in strict FP32, NCHW), ``tf32_nchw`` (PyTorch's
defaults: TF32, NCHW), ``tf32_nhwc`` (TF32, channels_last tensors and layers), ``bf16_autocast``
and ``fp16_autocast`` (``torch.autocast`` on channels_last). For each mode and shape (tiny, where
the GPU work is negligible and the call's host time is what a loop measures), each way of calling
runs ``--calls`` calls back to back and synchronises once; the ways alternate within a round,
and the median over ``--rounds`` rounds is reported, in microseconds per call, with the excess
over ``F.conv2d`` (the same call to PyTorch, in the same mode). Untuned shapes run autoconv's
default kernel: the host cost does not depend on which kernel runs.

``--profile MODE`` runs the converted layer's calls of that mode under cProfile and prints
where the host time goes (the 25 functions of most own time), after the table.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import pstats
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

#: mode -> (PyTorch's float32 convolution precision, channels_last, autocast dtype)
MODES = {
    "fp32": ("ieee", False, None),
    "tf32_nchw": ("tf32", False, None),
    "tf32_nhwc": ("tf32", True, None),
    "bf16_autocast": ("tf32", True, torch.bfloat16),
    "fp16_autocast": ("tf32", True, torch.float16),
}


def per_call_us(fn, calls: int) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def ways(x, w, padding, channels_last: bool):
    """name -> (call, grad mode): PyTorch's and autoconv's entry points on the same layer."""
    layer = nn.Conv2d(w.shape[1], w.shape[0], w.shape[2], padding=padding, bias=False).cuda()
    layer.weight.data.copy_(w)
    if channels_last:
        layer = layer.to(memory_format=torch.channels_last)
        w = w.contiguous(memory_format=torch.channels_last)
    module, _ = ac.convert(layer)
    pad4 = [padding] * 4
    return {
        "F.conv2d": (lambda: F.conv2d(x, w, None, 1, padding), torch.no_grad),
        "nn.Conv2d": (lambda: layer(x), torch.no_grad),
        "autoconv.torch.conv2d": (lambda: ac.conv2d(x, w, None, 1, padding), torch.no_grad),
        "autoconv.torch.Conv2d": (lambda: module(x), torch.no_grad),
        "torch.ops.autoconv.conv2d": (lambda: torch.ops.autoconv.conv2d(x, w, None, [1, 1], pad4, [1, 1]),
                                      torch.no_grad),
        "nn.Conv2d, grad enabled": (lambda: layer(x), torch.enable_grad),
        "autoconv.torch.Conv2d, grad enabled": (lambda: module(x), torch.enable_grad),
    }


def set_fp32_precision(precision: str) -> None:
    """PyTorch's precision for its float32 cuDNN convolutions ("tf32" or "ieee")."""
    if hasattr(torch.backends.cudnn, "conv") and hasattr(torch.backends.cudnn.conv, "fp32_precision"):
        torch.backends.cudnn.conv.fp32_precision = precision
    else:  # PyTorch before 2.9
        torch.backends.cudnn.allow_tf32 = precision == "tf32"


def measure_mode(mode: str, calls: int, rounds: int, profile: bool) -> dict[str, dict[str, float]]:
    precision, channels_last, autocast_dtype = MODES[mode]
    set_fp32_precision(precision)
    autocast = (torch.autocast("cuda", dtype=autocast_dtype) if autocast_dtype is not None
                else contextlib.nullcontext())
    results = {}
    with autocast:
        for shape_name, (N, C, H, W, K, R, padding) in SHAPES.items():
            x = torch.randn(N, C, H, W, device="cuda")
            if channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            w = torch.randn(K, C, R, R, device="cuda")
            calls_of = ways(x, w, padding, channels_last)
            samples: dict[str, list[float]] = {name: [] for name in calls_of}
            for fn, grad in calls_of.values():  # warm-up: kernels load, cuDNN plans are found
                with grad():
                    per_call_us(fn, 50)
            for _ in range(rounds):
                for name, (fn, grad) in calls_of.items():
                    with grad():
                        samples[name].append(per_call_us(fn, calls))
            medians = {name: statistics.median(values) for name, values in samples.items()}
            results[shape_name] = medians
            base, grad_base = medians["F.conv2d"], medians["nn.Conv2d, grad enabled"]
            print(f"\n{mode}, {shape_name}: median us per call over {rounds} rounds of {calls} calls")
            for name, value in medians.items():
                over = value - (grad_base if "grad enabled" in name else base)
                print(f"  {name:40s} {value:7.2f} us  {over:+7.2f} us over PyTorch's")
            if profile and shape_name == next(iter(SHAPES)):
                fn, grad = calls_of["autoconv.torch.Conv2d"]
                profiler = cProfile.Profile()
                with grad():
                    profiler.runcall(per_call_us, fn, calls)
                text = io.StringIO()
                pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
                print(f"\n{mode}: cProfile of {calls} calls of autoconv.torch.Conv2d\n{text.getvalue()}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--json", help="write the medians here")
    parser.add_argument("--profile", metavar="MODE", help="also profile the converted layer's calls in MODE")
    args = parser.parse_args()
    modes = [mode for mode in args.modes.split(",") if mode]
    unknown = [mode for mode in modes + ([args.profile] if args.profile else []) if mode not in MODES]
    if unknown:
        parser.error(f"unknown mode {', '.join(unknown)}: choose from {', '.join(MODES)}")
    warnings.simplefilter("ignore", UntunedWarning)
    results = {mode: measure_mode(mode, args.calls, args.rounds, mode == args.profile) for mode in modes}
    environment = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
                   "cudnn": torch.backends.cudnn.version(), "calls": args.calls, "rounds": args.rounds}
    print("\n" + json.dumps(environment))
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"environment": environment, "us_per_call": results}, file, indent=2)


if __name__ == "__main__":
    main()
