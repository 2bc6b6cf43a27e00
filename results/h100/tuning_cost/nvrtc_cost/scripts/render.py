"""Render the probe's candidates (family defaults for two ResNet-50 layers) into sources/."""
from pathlib import Path
import json
from autoconv.problems.config import load_config, with_precision
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100

HERE = Path(__file__).parent
OUT = HERE / "sources"; OUT.mkdir(exist_ok=True)
LAYERS = ("resnet50.layer3.1.conv2", "resnet50.layer1.0.conv1")
fp32 = load_config("examples/resnet50.yaml")
tf32 = load_config("examples/resnet50_tf32.yaml")
bf16 = load_config("examples/resnet50_bf16.yaml")
index = []
def emit(tag, cfg, layer, family, rts=False):
    item = next(p for p in cfg.problems if p.name == layer)
    fam = get_family(family)
    plan = fam.plan(item.problem, None, H100, cfg.workspace_limit_bytes, run_time_sizes=rts)
    name = f"{family}_{tag}{'_rts' if rts else ''}_{layer.split('.',1)[1].replace('.','_')}"
    (OUT / f"{name}.cu").write_text(plan.source)
    index.append({"file": f"{name}.cu", "kernel": plan.name, "problem": item.problem.spec(), "config": dict(plan.config),
                  "bytes": len(plan.source), "lines": plan.source.count("\n")})
for layer in LAYERS:
    emit("fp32", fp32, layer, "implicit_gemm_wgmma")
    emit("fp32", fp32, layer, "implicit_gemm_wgmma", rts=True)
    emit("tf32", tf32, layer, "implicit_gemm_wgmma")
    emit("tf32", tf32, layer, "implicit_gemm_wgmma", rts=True)
    emit("bf16", bf16, layer, "implicit_gemm_wgmma_tma")
print("arch", H100.arch)
(HERE / "sources.json").write_text(json.dumps(index, indent=1))
for e in index: print(e["file"], e["bytes"], e["lines"], e["config"])
