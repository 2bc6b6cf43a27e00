"""8 candidates of one family and problem (the default + 7 random valid configs, as the tuner samples them):
the realistic PCH case, same header part, different kernel bodies. -> sources_pch/<family>_<i>.cu"""
from pathlib import Path
from autoconv.problems.config import load_config
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.search.points import sample_valid
HERE = Path(__file__).parent; OUT = HERE / "sources_pch"; OUT.mkdir(exist_ok=True)
for yaml, family, tag, rts in (("examples/resnet50.yaml", "implicit_gemm_wgmma", "fp32", False),
                               ("examples/resnet50.yaml", "implicit_gemm_wgmma", "fp32_rts", True),
                               ("examples/resnet50_bf16.yaml", "implicit_gemm_wgmma_tma", "bf16", False)):
    cfg = load_config(yaml)
    item = next(p for p in cfg.problems if p.name == "resnet50.layer3.1.conv2")
    for i, config in enumerate(sample_valid(family, item.problem, H100, cfg.workspace_limit_bytes, 8, cfg.seed)):
        plan = get_family(family).plan(item.problem, config, H100, cfg.workspace_limit_bytes, run_time_sizes=rts)
        (OUT / f"{family}_{tag}_{i}.cu").write_text(plan.source)
        print(family, tag, i, config)
