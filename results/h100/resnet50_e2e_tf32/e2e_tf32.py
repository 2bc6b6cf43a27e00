"""ResNet-50 (torchvision, eval) forward in float32 with PyTorch's default TF32 for convolutions,
batch 32: PyTorch channels_last and PyTorch NCHW against the channels_last model with
autoconv.torch.convert (precision None: PyTorch's setting, tf32; cache: AUTOCONV_CACHE), eager and
CUDA-graph replay. Rounds rotate the order of the variants; the median round; one synchronisation
per 20 forwards. Logits' error against a float64 forward of the same model.
    python3 e2e_tf32.py out.json"""
import copy, json, statistics, sys, time, warnings
import torch, torchvision
import autoconv.torch as ac
import autoconv.runtime

out = sys.argv[1]
torch.backends.cudnn.allow_tf32 = True            # PyTorch's default, stated
torch.backends.cudnn.benchmark = True
torch.manual_seed(0)
model = torchvision.models.resnet50().cuda()
model.train()
with torch.no_grad():
    for _ in range(3):
        model(torch.randn(32, 3, 224, 224, device="cuda"))
model.eval()
nchw = copy.deepcopy(model)
model.to(memory_format=torch.channels_last)
x = torch.randn(32, 3, 224, 224, device="cuda")
x_cl = x.contiguous(memory_format=torch.channels_last)
converted, report = ac.convert(model)
print(report, "pytorch precision:", ac.pytorch_precision(), flush=True)
variants = {"torch_channels_last": (model, x_cl), "torch_nchw": (nchw, x), "autoconv": (converted, x_cl)}

def forward(k):
    m, inp = variants[k]
    with torch.no_grad():
        return m(inp)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    outs = {k: forward(k) for k in variants}
print("warnings:", len(caught), [str(w.message)[:160] for w in caught[:3]], flush=True)
kinds, layouts = {}, {}
for k in autoconv.runtime.loaded_kernels():
    kinds[k["origin"]] = kinds.get(k["origin"], 0) + 1
    layout = "NHWC" if "layout=NHWC" in k["problem"] else "NCHW"
    layouts[layout] = layouts.get(layout, 0) + 1
print("loaded:", kinds, layouts, flush=True)
m64 = copy.deepcopy(nchw).double()
with torch.no_grad():
    ref = m64(x.double())
errors = {k: float((o.double() - ref).norm() / ref.norm()) for k, o in outs.items()}
print("errors vs float64:", errors, flush=True)

graphs = {}
for k in variants:
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            forward(k)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        forward(k)
    graphs[k] = g

def time_eager(k, n=20):
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(n):
        forward(k)
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
    for r in range(12):
        order = names[r % 3:] + names[:r % 3]
        for k in order:
            rounds[k].append(timer(k))
    results[mode] = {k: statistics.median(v) for k, v in rounds.items()}
    print(mode, {k: f"{v:.3f} ms" for k, v in results[mode].items()},
          f"torch_channels_last/autoconv {results[mode]['torch_channels_last'] / results[mode]['autoconv']:.3f}",
          f"torch_nchw/autoconv {results[mode]['torch_nchw'] / results[mode]['autoconv']:.3f}", flush=True)
json.dump({"results_ms": results, "errors": errors, "loaded": kinds, "layouts": layouts,
           "torch": torch.__version__}, open(out, "w"), indent=1)
