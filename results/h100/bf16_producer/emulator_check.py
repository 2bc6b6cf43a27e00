"""Verify COPIES producer configurations of implicit_gemm_wgmma_f16 in the CPU emulator, on the
awkward shapes of tests/emulator/test_families_emulated.py: 3 random producer configurations per
shape, against the float64 reference. Needs emulator_mbarrier.patch and producer.patch applied;
run from the patched tree's root: ``python emulator_check.py``."""

import numpy as np

import autoconv
from autoconv.emulator.check import verify_configs
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from tests.emulator.test_families_emulated import PROBLEMS, _describe
from tests.emulator.test_wgmma_f16_family import problem_16bit

print(autoconv.__file__, flush=True)   # the patched tree's package, not an installed one
family = get_family("implicit_gemm_wgmma_f16")
failed = checked = 0
for shape in PROBLEMS:
    problem = problem_16bit(shape, 0)
    producers = [c for c in family.space.points(problem, H100) if c["COPIES"] == "producer"]
    picks = np.random.default_rng(1).choice(len(producers), size=min(3, len(producers)), replace=False)
    for check in verify_configs(problem, family, [producers[i] for i in picks], 0):
        checked += 1
        if not check.ok:
            failed += 1
            print(_describe(problem, check)[:800], flush=True)
    print(shape, "done", checked, failed, flush=True)
print("checked", checked, "failed", failed)
