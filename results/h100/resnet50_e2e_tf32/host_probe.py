"""Host time of the tf32 channels_last forward, with the GPU kept busy so that only the host is
measured: a spin kernel (torch.cuda._sleep) is queued first, then the calls; their host time is
read before synchronising, so no call waits on the GPU.

1. Whole forwards: PyTorch channels_last (model) and the converted model, alternating, 15 rounds;
   host ms per forward (median), beside the eager wall time of 20 forwards.
2. Per conv layer: the layer's own module in the two models (nn.Conv2d / autoconv's Conv2d) on the
   layer's real input, 40 calls a round, alternating, 7 rounds; host us per call (median).
3. cProfile of 5 converted forwards with the GPU busy, by own time.

    AUTOCONV_CACHE=<cache of the tf32 NHWC tune> python3 host_probe.py out.json
"""
import cProfile
import json
import pstats
import statistics
import sys
import time

import torch
import torchvision

import autoconv.torch as ac

out = sys.argv[1]
torch.backends.cudnn.allow_tf32 = True
torch.backends.cudnn.benchmark = True
torch.manual_seed(0)
model = torchvision.models.resnet50().cuda().eval().to(memory_format=torch.channels_last)
x = torch.randn(32, 3, 224, 224, device="cuda").contiguous(memory_format=torch.channels_last)
converted, report = ac.convert(model)
print(report, "pytorch precision:", ac.pytorch_precision(), flush=True)
SPIN = 200_000_000   # cycles: ~0.1 s, longer than any host loop below


def forward(m):
    with torch.no_grad():
        return m(x)


def host_ms(fn, calls: int) -> float:
    """Host ms per call of ``fn`` while the GPU is busy with a spin kernel queued before them."""
    torch.cuda.synchronize()
    torch.cuda._sleep(SPIN)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e3


def wall_ms(fn, calls: int) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e3


for m in (model, converted):
    for _ in range(5):
        forward(m)
torch.cuda.synchronize()

results = {"forward_host_ms": {}, "forward_eager_ms": {}, "layers": []}
variants = {"torch_channels_last": model, "autoconv": converted}
host = {k: [] for k in variants}
eager = {k: [] for k in variants}
for r in range(15):
    order = list(variants) if r % 2 == 0 else list(reversed(variants))
    for k in order:
        host[k].append(host_ms(lambda: forward(variants[k]), 3))
        eager[k].append(wall_ms(lambda: forward(variants[k]), 20))
for k in variants:
    results["forward_host_ms"][k] = statistics.median(host[k])
    results["forward_eager_ms"][k] = statistics.median(eager[k])
print("host ms per forward (GPU busy):", results["forward_host_ms"], flush=True)
print("eager ms per forward:", results["forward_eager_ms"], flush=True)

# Each conv layer's input, recorded by hooks on the PyTorch model.
inputs = {}
hooks = [module.register_forward_pre_hook(lambda mod, args, name=name: inputs.setdefault(name, args[0]))
         for name, module in model.named_modules() if isinstance(module, torch.nn.Conv2d)]
forward(model)
for hook in hooks:
    hook.remove()
theirs = dict(model.named_modules())
ours = dict(converted.named_modules())
for name, layer_input in inputs.items():
    pair = {"torch": theirs[name], "autoconv": ours[name]}
    times = {k: [] for k in pair}
    with torch.no_grad():
        for r in range(7):
            for k in (pair if r % 2 == 0 else reversed(list(pair))):
                times[k].append(host_ms(lambda: pair[k](layer_input), 40) * 1e3)
    row = {"layer": name, "shape": list(layer_input.shape), "kind": type(ours[name]).__name__,
           **{f"{k}_host_us": statistics.median(v) for k, v in times.items()}}
    results["layers"].append(row)
    print(f"{name:28s} {str(tuple(layer_input.shape)):22s} torch {row['torch_host_us']:7.1f} us  "
          f"autoconv {row['autoconv_host_us']:7.1f} us", flush=True)
total = {k: sum(row[f"{k}_host_us"] for row in results["layers"]) for k in ("torch", "autoconv")}
results["conv_host_us_total"] = total
print("sum over the 53 conv calls of a forward, us:", total, flush=True)

profile = cProfile.Profile()
torch.cuda.synchronize()
torch.cuda._sleep(SPIN * 4)
profile.enable()
for _ in range(5):
    forward(converted)
profile.disable()
torch.cuda.synchronize()
stats = pstats.Stats(profile)
stats.sort_stats("tottime").print_stats(30)
stats.sort_stats("cumulative").print_stats(30)
json.dump(results, open(out, "w"), indent=1)
