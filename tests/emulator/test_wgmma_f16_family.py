"""implicit_gemm_wgmma_f16 computes the right convolution for bf16 and fp16 NHWC problems: its
kernel, run in the CPU emulator (whose wgmma_f16.cuh model reads the 16-bit operands exactly and
sums in float32) on the awkward shapes of test_families_emulated.py, against the float64
reference of the same 16-bit inputs, at the formats' tolerance.

The shapes are those of test_families_emulated.PROBLEMS, each in NHWC with a precision and an
output type chosen so that together they take both formats, both output types, channel counts
that are and are not multiples of 8 (16-byte copies of A, or one value at a time) and reductions
that are and are not (B likewise), with and without bias, 1x1 filters at stride 1 without
padding (A's rows are x's pixels) and others: the branches the template takes on the problem
(A_VECTOR, B_VECTOR, FORMAT_F16, OUTPUT_FLOAT32, HAS_BIAS, A_PIXEL_ROWS).
"""

from __future__ import annotations

import numpy as np
import pytest

from autoconv.emulator.check import verify_configs
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.problems.problem import ConvProblem
from tests.emulator.family_checks import emulated_failures, gpu_failures
from tests.emulator.test_families_emulated import PROBLEMS, _describe

FAMILY = get_family("implicit_gemm_wgmma_f16")


def problem_16bit(shape: str, seed: int) -> ConvProblem:
    """The shape's problem in NHWC, in bf16 or fp16, with a 16-bit or float32 output, with or
    without bias, by its place in PROBLEMS (so both of each are taken whatever the seed)."""
    index = list(PROBLEMS).index(shape)
    problem = PROBLEMS[shape](np.random.default_rng(seed))
    precision = ("bf16", "fp16")[index % 2]
    out_dtype = (None, "float32")[index // 2 % 2]
    return problem.in_precision(precision).with_(layout="NHWC", out_dtype=out_dtype, bias=index // 4 % 2 == 0)


def test_the_shapes_take_every_branch_the_problem_decides(seed):
    taken: dict[str, set] = {}
    for shape in PROBLEMS:
        problem = problem_16bit(shape, seed)
        values = FAMILY.space.context(FAMILY.space.default_config(problem, H100), problem, H100)
        for name in ("A_VECTOR", "B_VECTOR", "FORMAT_F16", "OUTPUT_FLOAT32", "HAS_BIAS", "A_PIXEL_ROWS"):
            taken.setdefault(name, set()).add(values[name])
    assert all(values == {0, 1} for values in taken.values()), taken


@pytest.mark.slow
@pytest.mark.parametrize("shape", list(PROBLEMS))
def test_family_matches_reference(shape, seed):
    failures = emulated_failures(FAMILY, problem_16bit(shape, seed), seed)
    assert not failures, "\n\n".join(failures)


@pytest.mark.gpu
def test_family_matches_reference_on_the_gpu(seed):
    """The same shapes on the GPU through the tuner's worker (verified against the float64
    reference at the format's tolerance, then timed): every switch value each shape allows."""
    failures, checked = gpu_failures(FAMILY, [problem_16bit(shape, seed) for shape in PROBLEMS], seed)
    assert not failures, "\n".join(failures)
    assert checked >= 2 * len(PROBLEMS)


def test_padded_channels_run_a_first_kernel_and_read_x_and_w_from_the_workspace(seed):
    """PAD_CHANNELS: conv1-like C = 3 padded to 8 channels by a first kernel (x and w into the
    workspace, split-K's slices after them), so that the GEMM takes the 16-byte copies; right in
    the emulator with and without split-K, and refused where C is a multiple of 8 already."""
    from autoconv.errors import SearchSpaceError
    from autoconv.problems.problem import parse_spec

    problem = parse_spec("N=2,C=3,H=19,W=17,K=24,R=7,S=7,stride=2,pad=3,bias=1,precision=fp16,layout=NHWC")
    config = {"BM": 64, "BN": 32, "WGN": 32, "BK": 64, "STAGES": 3, "MMA_PENDING": 1, "MIN_BLOCKS": 1,
              "SPLIT_K": 1, "SCHEDULE": "tiles", "PAD_CHANNELS": 1}
    plain = FAMILY.plan(problem, {**config, "PAD_CHANNELS": 0})
    assert plain.values["A_VECTOR"] == 0 and plain.values["B_VECTOR"] == 0 and plain.workspace_bytes == 0
    padded_bytes = (2 * 19 * 17 + 24 * 7 * 7) * 8 * 2
    plans = []
    for split_k in (1, 3):
        plan = FAMILY.plan(problem, {**config, "SPLIT_K": split_k})
        values = plan.values
        assert values["X_CHANNELS"] == 8 and values["REDUCTION"] == 7 * 7 * 8
        assert values["A_VECTOR"] == 1 and values["B_VECTOR"] == 1
        slices = 0 if split_k == 1 else split_k * values["GEMM_M"] * values["GEMM_N"] * 4
        assert plan.workspace_bytes == padded_bytes + slices
        kernels = [launch.kernel for launch in plan.launches]
        assert kernels[0].endswith("_pad_channels") and plan.launches[0].args == ("x", "w", "workspace")
        assert plan.launches[1].args[0] == "workspace"
        assert len(kernels) == (2 if split_k == 1 else 3)
        plans.append(plan)
    checks = verify_configs(problem, FAMILY, [plain.config] + [plan.config for plan in plans], seed)
    assert all(check.ok for check in checks), [_describe(problem, check) for check in checks if not check.ok]
    with pytest.raises(SearchSpaceError, match="16-byte copies"):
        FAMILY.plan(problem.with_(C=16), config)
