"""Checks a family's tests share: sampled configurations of a problem verified in the CPU
emulator, and on the GPU through the tuner's worker. Each returns the failures, described."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from autoconv.emulator.check import sample_configs, verify_configs
from autoconv.kernels.families import Family
from autoconv.problems.problem import ConvProblem
from tests.emulator.test_families_emulated import CONFIGS_PER_PROBLEM, _describe


def emulated_failures(family: Family, problem: ConvProblem, seed: int) -> list[str]:
    """CONFIGS_PER_PROBLEM configurations (every switch value the problem allows first), each
    run in the emulator against the float64 reference."""
    configs = sample_configs(family, problem, CONFIGS_PER_PROBLEM, np.random.default_rng(seed))
    checks = verify_configs(problem, family, configs, seed)
    return [_describe(problem, check) for check in checks if not check.ok]


def gpu_failures(family: Family, problems: Iterable[ConvProblem], seed: int,
                 per_problem: int = 2) -> tuple[list[str], int]:
    """``per_problem`` configurations of each problem (every switch value first) verified against
    the float64 reference and timed by the tuner's GPU worker; (failures, configurations checked)."""
    from autoconv.backends.base import Status
    from autoconv.gpu.backend import CupyBackend

    failures, checked = [], 0
    with CupyBackend(seed=seed) as backend:
        for problem in problems:
            for config in sample_configs(family, problem, per_problem, np.random.default_rng(seed), backend.device):
                result = backend.evaluate(family.plan(problem, config, backend.device))
                checked += 1
                if result.status is not Status.OK:
                    failures.append(f"{config} on {problem.spec()}: {result.status.value}: {result.reason}")
    return failures, checked
