"""Where the eager bf16 forward's host time goes: cProfile of 20 forwards of the converted
ResNet-50 (as e2e_bf16.py: batch 32, channels_last, autocast bf16, no_grad; cache AUTOCONV_CACHE),
after a warm-up; the top functions by own time and by cumulative time.

    AUTOCONV_CACHE=<cache of a bf16 tune + bench> python3 profile_eager.py
"""
import cProfile
import pstats
import time

import torch
import torchvision

import autoconv.torch as ac

torch.manual_seed(0)
model = torchvision.models.resnet50().cuda().eval().to(memory_format=torch.channels_last)
x = torch.randn(32, 3, 224, 224, device="cuda").contiguous(memory_format=torch.channels_last)
converted, report = ac.convert(model)


def forward(m):
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        return m(x)


for m in (model, converted):
    for _ in range(5):
        forward(m)
torch.cuda.synchronize()
for name, m in (("torch", model), ("autoconv", converted)):
    start = time.perf_counter()
    for _ in range(20):
        forward(m)
    torch.cuda.synchronize()
    print(f"{name}: {(time.perf_counter() - start) / 20 * 1e3:.3f} ms per forward (eager)", flush=True)
profile = cProfile.Profile()
profile.enable()
for _ in range(20):
    forward(converted)
torch.cuda.synchronize()
profile.disable()
stats = pstats.Stats(profile)
stats.sort_stats("tottime").print_stats(25)
stats.sort_stats("cumulative").print_stats(40)
