"""One training step of a torchvision model, PyTorch's against ``autoconv.torch.convert(model)`` (GPU).

    autoconv tune --model torchvision.models:resnet50 --input 32x3x224x224 --precision tf32 --layout NHWC
    python examples/training_step.py [--model resnet50] [--batch 32] [--mode tf32_nhwc]
                                     [--steps 10] [--rounds 7] [--profile]

A step is forward, cross-entropy on random labels, backward and an SGD step, in train mode, on a
random input. Both models start from the same weights; the two sides alternate within each round
(``--steps`` steps between two synchronisations), and the median per step over ``--rounds`` rounds
is printed. ``--profile`` then runs three steps of each side under ``torch.profiler`` and prints,
for each side, the ops and kernels of most CUDA time and the ops of most own host time: where a
converted model's step spends what PyTorch's does not. ``AUTOCONV_NATIVE_AUTOGRAD=on`` runs the
converted layers' autograd in C++ (:mod:`autoconv.torch.native`).

Modes: ``tf32_nhwc`` (channels_last, TF32: PyTorch's default precision), ``tf32_nchw`` (PyTorch's
defaults), ``bf16_nhwc_autocast`` (``torch.autocast`` bf16 on channels_last), ``fp32_nchw_strict``.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import torch
import torchvision
from torch import nn

import autoconv.torch as ac

#: mode -> (channels_last, autocast dtype, cuDNN convolutions may use TF32)
MODES = {
    "tf32_nhwc": (True, None, True),
    "tf32_nchw": (False, None, True),
    "bf16_nhwc_autocast": (True, torch.bfloat16, True),
    "fp32_nchw_strict": (False, None, False),
}


def make_step(model: nn.Module, x: torch.Tensor, labels: torch.Tensor, autocast_dtype):
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step() -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        region = (torch.autocast("cuda", dtype=autocast_dtype) if autocast_dtype is not None
                  else contextlib.nullcontext())
        with region:
            loss = loss_fn(model(x), labels)
        loss.backward()
        optimizer.step()
        return loss
    return step


def per_step_ms(step, steps: int) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--mode", choices=MODES, default="tf32_nhwc")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    channels_last, autocast_dtype, tf32 = MODES[args.mode]
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    memory_format = torch.channels_last if channels_last else torch.contiguous_format

    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)().cuda().train()
    converted, report = ac.convert(model)
    model, converted = model.to(memory_format=memory_format), converted.to(memory_format=memory_format)
    x = torch.randn(args.batch, 3, 224, 224, device="cuda").contiguous(memory_format=memory_format)
    labels = torch.randint(0, 1000, (args.batch,), device="cuda")
    sides = {"pytorch": make_step(model, x, labels, autocast_dtype),
             "autoconv": make_step(converted, x, labels, autocast_dtype)}
    for step in sides.values():  # (warm-up: cuDNN's benchmark, autoconv's first calls)
        for _ in range(3):
            step()
    times: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for round_index in range(args.rounds):
        for name in names[round_index % 2:] + names[:round_index % 2]:
            times[name].append(per_step_ms(sides[name], args.steps))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"{args.model} batch {args.batch} {args.mode}: {len(report.converted)} layers converted; per step "
          f"PyTorch {medians['pytorch']:.3f} ms, autoconv {medians['autoconv']:.3f} ms "
          f"({medians['pytorch'] / medians['autoconv']:.3f}x)")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        for name, step in sides.items():
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(3):
                    step()
                torch.cuda.synchronize()
            averages = prof.key_averages()
            print(f"\n== {name}: ops and CUDA kernels by CUDA time (3 steps)")
            print(averages.table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=70))
            print(f"\n== {name}: ops by own host time (3 steps)")
            print(averages.table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=70))


if __name__ == "__main__":
    main()
