"""ResNet-50 (torchvision, eval, channels_last) forward under torch.autocast(bfloat16), batch 32:
PyTorch as is against the same model with autoconv.torch.convert (cache: AUTOCONV_CACHE), eager and
CUDA-graph replay; rounds alternate (the first variant rotating), median of rounds; logits' error
against a float64 forward of the float32 model."""
import json, statistics, sys, time, warnings
import torch, torchvision
import autoconv.torch as ac
import autoconv.runtime

out = sys.argv[1]
torch.manual_seed(0)
model = torchvision.models.resnet50().cuda()
model.train()
with torch.no_grad():
    for _ in range(3):
        model(torch.randn(32, 3, 224, 224, device="cuda"))
model.eval().to(memory_format=torch.channels_last)
x = torch.randn(32, 3, 224, 224, device="cuda").contiguous(memory_format=torch.channels_last)
converted, report = ac.convert(model)
print(report, flush=True)
variants = {"torch": model, "autoconv": converted}

def forward(m):
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        return m(x)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    outs = {k: forward(m) for k, m in variants.items()}
print("warnings:", len(caught), [str(w.message)[:120] for w in caught[:3]], flush=True)
kinds = {}
for k in autoconv.runtime.loaded_kernels():
    kinds[k["origin"]] = kinds.get(k["origin"], 0) + 1
print("loaded:", kinds, flush=True)
import copy
m64 = copy.deepcopy(model).double().to(memory_format=torch.contiguous_format)
with torch.no_grad():
    ref = m64(x.double().contiguous())
errors = {k: float((o.double() - ref).norm() / ref.norm()) for k, o in outs.items()}
print("errors vs float64:", errors, flush=True)

graphs = {}
for k, m in variants.items():
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            forward(m)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        forward(m)
    graphs[k] = g

def time_eager(k, n=20):
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(n):
        forward(variants[k])
    torch.cuda.synchronize(); return (time.perf_counter() - t) / n * 1e3

def time_graph(k, n=20):
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(n):
        graphs[k].replay()
    torch.cuda.synchronize(); return (time.perf_counter() - t) / n * 1e3

results = {}
names = list(variants)
for mode, timer in (("eager", time_eager), ("cuda_graph", time_graph)):
    rounds = {k: [] for k in names}
    for r in range(11):
        order = names[r % 2:] + names[:r % 2]
        for k in order:
            rounds[k].append(timer(k))
    results[mode] = {k: statistics.median(v) for k, v in rounds.items()}
    print(mode, {k: f"{v:.3f} ms" for k, v in results[mode].items()},
          f"torch/autoconv {results[mode]['torch'] / results[mode]['autoconv']:.3f}", flush=True)
json.dump({"results_ms": results, "errors": errors, "loaded": kinds, "torch": torch.__version__}, open(out, "w"), indent=1)
