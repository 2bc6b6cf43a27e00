import numpy as np
import autoconv
from autoconv.kernels.limits import H100
from autoconv.emulator.check import verify_configs
from autoconv.kernels.families import get_family
from tests.emulator.test_families_emulated import PROBLEMS, _describe
from tests.emulator.test_wgmma_f16_family import problem_16bit
print(autoconv.__file__, flush=True)
F = get_family("implicit_gemm_wgmma_f16")
fails = 0; n = 0
for shape in PROBLEMS:
    p = problem_16bit(shape, 0)
    pts = [c for c in F.space.points(p, H100) if c["COPIES"] == "producer"]
    rng = np.random.default_rng(1)
    cfgs = [pts[i] for i in rng.choice(len(pts), size=min(3, len(pts)), replace=False)]
    for check in verify_configs(p, F, cfgs, 0):
        n += 1
        if not check.ok:
            fails += 1; print(_describe(p, check)[:800], flush=True)
    print(shape, "done", n, fails, flush=True)
print("checked", n, "failed", fails)
