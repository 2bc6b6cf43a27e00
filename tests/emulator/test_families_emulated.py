"""Every kernel family computes the right convolution: its kernels, run in the CPU emulator
on seeded random awkward problems, against the float64 reference. Also the reference and
the comparison themselves, and the `autoconv verify --emulate` command.

Problems and configurations change with the run's seed (printed in pytest's header;
reproduce a run with AUTOCONV_TEST_SEED); a failure prints the problem spec and config.
"""

from __future__ import annotations

import dataclasses
import itertools
import re

import numpy as np
import pytest

from autoconv.backends.base import Status
from autoconv.commands.main import main
from autoconv.emulator.check import (
    EmulatedCheck,
    sample_configs,
    switch_pairs,
    switch_values,
    verify_configs,
    verify_plan,
)
from autoconv.errors import SearchSpaceError
from autoconv.kernels.families import FAMILY_NAMES, get_family
from autoconv.kernels.limits import H100
from autoconv.kernels.resources import templates_dir
from autoconv.problems.problem import ConvProblem, make_problem, parse_spec
from autoconv.verify.compare import POISON, check_result, relative_l2_error
from autoconv.verify.reference import conv2d_reference, random_inputs
from tests.helpers import round_mantissa

# ---- awkward problems -----------------------------------------------------------------------
# Together the shapes below cover N = 1..3, C in {1, 3, 13, 64}, odd K (a multiple of no
# tile), H != W, non-square filters (1x7, 7x1, 5x5), strides 1..3 including 2x1, dilations
# 1..3, padding from 0 to R (asymmetric, and `same`), and odd P and Q, so that no output
# size is a multiple of a tile. Each draws its remaining sizes from the test's seed.


def _pad_upto(rng, r, s):
    """Asymmetric padding: top and bottom 0..R, left and right 0..S, not all equal."""
    while True:
        top, bottom = (int(v) for v in rng.integers(0, r + 1, size=2))
        left, right = (int(v) for v in rng.integers(0, s + 1, size=2))
        if top != bottom or left != right:
            return (top, bottom, left, right)


def _shape(rng, *, C, R, S, stride=1, dilation=1, padding=None, bias=None, hw=(5, 14), pq4=False) -> ConvProblem:
    """A problem with the given filter, the rest drawn from rng, resampled until P, Q are
    odd (with ``pq4``: until P*Q is a multiple of 4, which the float4 output path needs) and
    H != W."""
    for _ in range(1000):
        H, W = (int(v) for v in rng.integers(hw[0], hw[1] + 1, size=2))
        pad = _pad_upto(rng, R, S) if padding is None else padding
        try:
            problem = make_problem(N=int(rng.integers(1, 4)), C=C, H=H, W=W, K=2 * int(rng.integers(1, 19)) + 1,
                                   R=R, S=S, stride=stride, dilation=dilation, padding=pad,
                                   bias=bool(rng.integers(0, 2)) if bias is None else bias)
        except ValueError:  # the dilated filter does not fit this H, W and padding
            continue
        rows_fit = problem.P * problem.Q % 4 == 0 if pq4 else problem.P % 2 == 1 and problem.Q % 2 == 1
        if H != W and rows_fit:
            return problem
    raise AssertionError("no awkward problem found; widen the size ranges")


PROBLEMS = {
    "1x7-C1": lambda rng: _shape(rng, C=1, R=1, S=7, hw=(7, 16)),
    "7x1-C3-stride2x1": lambda rng: _shape(rng, C=3, R=7, S=1, stride=(2, 1), hw=(7, 16)),
    "5x5-C13-same": lambda rng: _shape(rng, C=13, R=5, S=5, padding="same", bias=True),
    "3x3-C64-stride3-dilation3": lambda rng: _shape(rng, C=64, R=3, S=3, stride=3, dilation=3, hw=(7, 13)),
    "3x3-C13-dilation2x1-stride1x2": lambda rng: _shape(rng, C=13, R=3, S=3, stride=(1, 2), dilation=(2, 1)),
    "1x1-C3-stride2": lambda rng: _shape(rng, C=3, R=1, S=1, stride=2, padding=0),
    # P*Q % 4 == 0 with bias: the float4 output path (OUT_VEC = 4) and its bias. GEMM_K = 288 is a
    # multiple of BK up to 32 (no tail tile; and C % BK == 0, so GATHER = rsc), not of 64.
    "3x3-C32-bias-PQ4": lambda rng: _shape(rng, C=32, R=3, S=3, padding=1, bias=True, hw=(5, 10), pq4=True),
    # 1x1, stride 1, no padding, P*Q % 4 == 0, bias: im2col_gemm's COLUMNS = input with float4
    # loads, the float4 output path; GEMM_K = 32, a multiple of every BK but wgmma's 64.
    "1x1-C32-bias-PQ4": lambda rng: _shape(rng, C=32, R=1, S=1, padding=0, bias=True, hw=(4, 10), pq4=True),
}

#: Configurations checked per family and problem, at least: the default, configs that take every
#: valid value of every code-path switch (check.SWITCHES; up to 5 more), then random valid ones.
CONFIGS_PER_PROBLEM = 4


def _describe(problem: ConvProblem, check: EmulatedCheck) -> str:
    return (f"{check.family} failed on --problem {problem.spec()}\n  config {dict(check.config)}\n"
            f"  kernel {check.kernel}: {check.label}\n  " + check.message.replace("\n", "\n  ")
            + (f"\n{check.details}" if check.details else ""))


#: The tensor-core families' emulated products take 2 to 8 s a shape here: slow.
FAMILIES_BY_SPEED = [pytest.param(name, marks=pytest.mark.slow) if get_family(name).tensor_cores else name
                     for name in FAMILY_NAMES]


@pytest.mark.parametrize("shape", list(PROBLEMS))
@pytest.mark.parametrize("family_name", FAMILIES_BY_SPEED)
def test_family_matches_reference(family_name, shape, seed):
    rng = np.random.default_rng(seed)
    problem = PROBLEMS[shape](rng)
    family = get_family(family_name)
    reason = family.unsupported_reason(problem)
    if reason is not None:
        pytest.skip(f"{family_name} cannot run {problem.spec()}: {reason}")
    try:
        configs = sample_configs(family, problem, CONFIGS_PER_PROBLEM, rng)
    except SearchSpaceError as err:  # a family made for some shapes only (e.g. 3x3 stride 1)
        pytest.skip(str(err))
    checks = verify_configs(problem, family, configs, seed)
    failures = [_describe(problem, check) for check in checks if not check.ok]
    assert not failures, "\n\n".join(failures)
    for check in checks:
        assert check.error is not None and check.error <= 1e-5


def test_problem_shapes_cover_the_issue_list(seed):
    """The shapes above, for this run's seed, really have the properties they claim."""
    rng = np.random.default_rng(seed)
    problems = [make(rng) for make in PROBLEMS.values()]
    assert {p.C for p in problems} >= {1, 3, 13, 64}
    assert {(p.R, p.S) for p in problems} >= {(1, 7), (7, 1), (5, 5)}
    assert {p.stride for p in problems} >= {(1, 1), (2, 1), (3, 3)}
    assert {d for p in problems for d in p.dilation} == {1, 2, 3}
    # the float4 output path with bias, and not
    assert any(p.P * p.Q % 4 == 0 and p.bias for p in problems)
    assert any(p.P * p.Q % 4 != 0 for p in problems)
    # reductions of whole K tiles (for every BK of every family: 8 to 64) and with a tail tile
    assert any(p.C * p.R * p.S % 64 == 0 for p in problems)
    assert any(p.C * p.R * p.S % 8 != 0 for p in problems)
    for p in problems:
        assert p.K % 2 == 1 and p.H != p.W
        assert p.P * p.Q % 4 == 0 or (p.P % 2 == 1 and p.Q % 2 == 1)
        assert 1 <= p.N <= 3
        assert max(p.padding[:2]) <= p.R and max(p.padding[2:]) <= p.S
    assert any(p.padding[0] != p.padding[1] or p.padding[2] != p.padding[3] for p in problems)


def test_sample_configs_are_distinct_valid_and_start_with_the_default(seed):
    rng = np.random.default_rng(seed)
    problem = PROBLEMS["5x5-C13-same"](rng)
    for name in FAMILY_NAMES:
        family = get_family(name)
        configs = sample_configs(family, problem, 5, rng)
        assert configs[0] == family.space.default_config(problem, H100)
        assert len({tuple(sorted(c.items())) for c in configs}) == len(configs)
        if len(configs) < 5:  # only when the valid space has fewer points (listing it is slow)
            assert len(configs) == len(family.space.points(problem, H100))
        for config in configs:
            assert family.space.is_valid(config, problem, H100)


@pytest.mark.parametrize("shape", list(PROBLEMS))
def test_sample_configs_take_every_valid_value_of_every_switch(shape, seed):
    """Stratified by construction: whatever the seed, the sample takes each value of each
    code-path switch (SWITCHES) that some valid configuration of the problem takes."""
    rng = np.random.default_rng(seed)
    problem = PROBLEMS[shape](rng)
    for name in FAMILY_NAMES:
        family = get_family(name)
        if family.unsupported_reason(problem) is not None:
            continue
        points = family.space.points(problem, H100)
        if not points:
            continue
        feasible = frozenset().union(*(switch_pairs(family, c, problem) for c in points))
        configs = sample_configs(family, problem, 2, np.random.default_rng(seed))
        sampled = frozenset().union(*(switch_pairs(family, c, problem) for c in configs))
        assert sampled == feasible, f"{name} on {problem.spec()}: {sorted(feasible - sampled, key=str)} missing"
        assert len(configs) <= 1 + sum(len(v) for v in switch_values(family).values())
        again = sample_configs(family, problem, 2, np.random.default_rng(seed))
        assert again == configs  # seeded


#: Names a template may branch on that are not SWITCHES: fixed by the problem (the test shapes
#: cover them), or another name for a switch (min_blocks is MIN_BLOCKS, STREAM_K is SCHEDULE).
_PROBLEM_SWITCHES = {"HAS_BIAS", "gemm_adds_bias", "with_bias", "OUT_VEC", "gemm_view", "landed", "min_blocks",
                     "STREAM_K",
                     "PRECISION_TF32",  # (the tf32 tests above take both precisions)
                     # (tests/emulator/test_wgmma_f16_family.py's shapes take both values of each)
                     "FORMAT_F16", "OUTPUT_FLOAT32", "A_VECTOR", "B_VECTOR", "A_PIXEL_ROWS",
                     # (tests/emulator/test_wgmma_tma_family.py's shapes take both values)
                     "FOLD_WIDTH", "FOLD_FILTER", "LAYOUT_NCHW", "COPY_X", "COPY_W", "PAD_FIRST_ROW",
                     "PAD_COPY_BYTES",
                     # the tuner's ranking build (Family.plan's run_time_sizes), not a config's:
                     # tests/emulator/test_run_time_sizes.py takes both builds
                     "RUN_TIME_SIZES"}


def _template_branches(name: str, seen: set[str]) -> set[str]:
    """The names a template and the templates it includes or imports branch on (Jinja ifs)."""
    if name in seen:
        return set()
    seen.add(name)
    text = (templates_dir() / name).read_text()
    names = set(re.findall(r"\{%-?\s*(?:el)?if\s+(?:not\s+)?([A-Za-z_]\w*)", text))
    names |= set(re.findall(r"\bif\s+([A-Za-z_]\w*)[^%}]*\}\}", text))
    for included in re.findall(r"\{%-?\s*(?:include|from)\s+\"([^\"]+)\"", text):
        names |= _template_branches(included, seen)
    return names


@pytest.mark.parametrize("family_name", FAMILY_NAMES)
def test_every_template_branch_is_a_switch_or_fixed_by_the_problem(family_name):
    """A new Jinja branch on a config value must join SWITCHES (and so every sample)."""
    family = get_family(family_name)
    branches = _template_branches(f"{family_name}.cu.j2", set())
    assert branches, "no branch found: the pattern above is stale"
    switches = set(switch_values(family))
    assert switches <= set(family.space.params) | set(family.space.derived)
    unknown = branches - switches - _PROBLEM_SWITCHES
    assert not unknown, f"not in SWITCHES[{family_name!r}]: {unknown}"


# ---- broken kernels must be caught ---------------------------------------------------------------

NEGATIVE_PROBLEM = make_problem(N=2, C=5, H=9, W=7, K=11, R=3, S=3, padding=(1, 1, 0, 2))  # GEMM_M = 126
# A single warp, so the run is quick; the family's defaults for any other parameter.
NEGATIVE_TILES = {"BM": 32, "BN": 32, "BK": 8, "WM": 32, "WN": 32, "TM": 4, "TN": 8, "SPLIT_K": 1}


def _negative_plan():
    family = get_family("implicit_gemm")
    return family.plan(NEGATIVE_PROBLEM, {**family.space.default, **NEGATIVE_TILES})


def _broken_plan(old: str, new: str):
    """The negative plan with every `old` (which must occur) replaced by `new`."""
    plan = _negative_plan()
    assert old in plan.source, (
        f"templates/implicit_gemm.cu.j2 changed: {old!r} no longer occurs; update this negative test")
    return dataclasses.replace(plan, source=plan.source.replace(old, new))


def test_unbroken_kernel_passes(seed):
    check = verify_plan(_negative_plan(), np.random.default_rng(seed))
    assert check.ok, check.message


def test_off_by_one_in_the_gather_is_caught(seed):
    # every filter row r reads input row r + 1 instead
    plan = _broken_plan(" + r * DILATION_H;", " + (r + 1) * DILATION_H;")
    check = verify_plan(plan, np.random.default_rng(seed))
    assert check.status is Status.WRONG_RESULT, check.message
    assert check.error > 1e-2


def test_missing_barrier_in_the_main_loop_is_caught(seed):
    # GEMM_K = 45 spans 6 K tiles of 8: the loop's barrier guards 5 tile swaps.
    plan = _broken_plan("            store_tile(stage ^ 1);\n        __syncthreads();\n",
                        "            store_tile(stage ^ 1);\n")
    check = verify_plan(plan, np.random.default_rng(seed))
    assert check.status is Status.WRONG_RESULT, check.message
    assert "NaN" in check.message


def test_out_of_bounds_store_is_a_fault(seed):
    plan = _broken_plan("if (m >= GEMM_M)\n            continue;", "if (m > GEMM_M)\n            continue;")
    check = verify_plan(plan, np.random.default_rng(seed))
    assert check.status is Status.RUNTIME_FAILED, check.message
    assert "heap-buffer-overflow" in check.details


# ---- the reference ------------------------------------------------------------------------------

def naive_conv2d(problem: ConvProblem, x, w, bias):
    """The definition, loop by loop (only for tiny shapes)."""
    y = np.zeros(problem.output_shape)
    top, _, left, _ = problem.padding
    for n, k, p, q in itertools.product(*(range(d) for d in problem.output_shape)):
        total = float(bias[k]) if bias is not None else 0.0
        for c, r, s in itertools.product(range(problem.C), range(problem.R), range(problem.S)):
            h = p * problem.stride[0] - top + r * problem.dilation[0]
            v = q * problem.stride[1] - left + s * problem.dilation[1]
            if 0 <= h < problem.H and 0 <= v < problem.W:
                total += float(x[n, c, h, v]) * float(w[k, c, r, s])
        y[n, k, p, q] = total
    return y


def test_reference_matches_the_definition_on_random_tiny_problems(seed):
    rng = np.random.default_rng(seed)
    for _ in range(12):
        R, S = (int(v) for v in rng.integers(1, 4, size=2))
        dilation = tuple(int(v) for v in rng.integers(1, 3, size=2))
        padding = _pad_upto(rng, R, S)
        H = int(rng.integers((R - 1) * dilation[0] + 1, 9))
        W = int(rng.integers((S - 1) * dilation[1] + 1, 9))
        problem = make_problem(N=int(rng.integers(1, 3)), C=int(rng.integers(1, 4)), H=H, W=W,
                               K=int(rng.integers(1, 4)), R=R, S=S,
                               stride=tuple(int(v) for v in rng.integers(1, 4, size=2)), dilation=dilation,
                               padding=padding, bias=bool(rng.integers(0, 2)))
        x, w, bias = random_inputs(problem, rng)
        np.testing.assert_allclose(conv2d_reference(problem, x, w, bias), naive_conv2d(problem, x, w, bias),
                                   rtol=1e-12, atol=1e-12, err_msg=problem.spec())


def test_reference_identity_1x1():
    problem = make_problem(N=2, C=3, H=4, W=5, K=3, R=1, S=1)
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(problem.input_shape)
    w = np.eye(3, dtype=np.float32).reshape(3, 3, 1, 1)
    np.testing.assert_array_equal(conv2d_reference(problem, x, w), x)


def test_reference_box_filter_with_padding():
    problem = make_problem(N=1, C=1, H=3, W=3, K=1, R=3, S=3, padding=1)
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    w = np.ones((1, 1, 3, 3), dtype=np.float32)
    expected = [[12, 21, 16], [27, 45, 33], [24, 39, 28]]  # sums of each 3x3 neighbourhood
    np.testing.assert_array_equal(conv2d_reference(problem, x, w)[0, 0], expected)


def test_reference_dilation_and_stride():
    problem = make_problem(N=1, C=1, H=5, W=5, K=1, R=2, S=2, dilation=2, stride=(1, 2))
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    w = np.array([1, 10, 100, 1000], dtype=np.float32).reshape(1, 1, 2, 2)
    # y[p, q] = x[p, 2q] + 10 x[p, 2q+2] + 100 x[p+2, 2q] + 1000 x[p+2, 2q+2]
    expected = [[x[0, 0, p, 2 * q] + 10 * x[0, 0, p, 2 * q + 2] + 100 * x[0, 0, p + 2, 2 * q]
                 + 1000 * x[0, 0, p + 2, 2 * q + 2] for q in range(2)] for p in range(3)]
    assert problem.output_shape == (1, 1, 3, 2)
    np.testing.assert_array_equal(conv2d_reference(problem, x, w)[0, 0], expected)


def test_reference_asymmetric_padding_and_bias():
    # top 1, bottom 0, left 0, right 2: a 1x2 filter [1, 1] adds each pixel to its right neighbour.
    problem = make_problem(N=1, C=1, H=2, W=3, K=1, R=1, S=2, padding=(1, 0, 0, 2), bias=True)
    x = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32).reshape(1, 1, 2, 3)
    w = np.ones((1, 1, 1, 2), dtype=np.float32)
    expected = np.array([[0, 0, 0, 0], [3, 5, 3, 0], [9, 11, 6, 0]]) + 0.5
    np.testing.assert_array_equal(conv2d_reference(problem, x, w, np.array([0.5], np.float32))[0, 0], expected)


def test_reference_same_padding_keeps_the_size():
    problem = make_problem(N=1, C=2, H=7, W=6, K=3, R=4, S=3, padding="same")
    assert problem.padding == (1, 2, 1, 1)  # the odd pixel goes to the bottom, as in TensorFlow
    x, w, _ = random_inputs(problem, np.random.default_rng(0))
    y = conv2d_reference(problem, x, w)
    assert y.shape == (1, 3, 7, 6)
    np.testing.assert_allclose(y, naive_conv2d(problem, x, w, None), rtol=1e-12, atol=1e-12)


def test_reference_rejects_wrong_shapes():
    problem = make_problem(N=1, C=2, H=5, W=5, K=3, R=3, S=3)
    with pytest.raises(ValueError, match=r"w has shape \(3, 2, 3, 2\); the problem needs \(3, 2, 3, 3\)"):
        conv2d_reference(problem, np.zeros((1, 2, 5, 5)), np.zeros((3, 2, 3, 2)))


@pytest.mark.gpu
def test_reference_and_comparison_run_on_cupy(seed):
    """The GPU tuner reuses the reference and the comparison on CuPy arrays."""
    import cupy

    rng = np.random.default_rng(seed)
    problem = PROBLEMS["3x3-C13-dilation2x1-stride1x2"](rng).with_(bias=True)
    x, w, bias = random_inputs(problem, rng)
    ref = conv2d_reference(problem, x, w, bias)
    ref_gpu = conv2d_reference(problem, cupy.asarray(x), cupy.asarray(w), cupy.asarray(bias), xp=cupy)
    assert isinstance(ref_gpu, cupy.ndarray) and ref_gpu.dtype == cupy.float64
    np.testing.assert_allclose(cupy.asnumpy(ref_gpu), ref, rtol=1e-12, atol=1e-12)
    out = cupy.asarray(ref.astype(np.float32))
    outcome = check_result(out, ref_gpu)
    assert outcome.ok and outcome.error < 1e-7
    out[0, 1, 0, 0] = POISON
    outcome = check_result(out, ref_gpu)
    assert not outcome.ok and "first at [0, 1, 0, 0]" in outcome.message
    out[0, 1, 0, 0] = float(ref[0, 1, 0, 0]) + 1.0
    outcome = check_result(out, ref_gpu)
    assert not outcome.ok and "largest difference at [0, 1, 0, 0]" in outcome.message


def test_random_inputs_are_float32_and_nonzero():
    problem = make_problem(N=2, C=3, H=5, W=4, K=6, R=3, S=1, bias=True)
    x, w, bias = random_inputs(problem, np.random.default_rng(1))
    for array, shape in ((x, problem.input_shape), (w, problem.weight_shape), (bias, (6,))):
        assert array.dtype == np.float32 and array.shape == shape
        assert np.all(array != 0) and np.all(np.abs(array) <= 1) and array.min() < 0 < array.max()
    assert random_inputs(problem.with_(bias=False), np.random.default_rng(1))[2] is None


# ---- the comparison -----------------------------------------------------------------------------

def test_check_result_accepts_float32_rounding():
    ref = np.random.default_rng(3).uniform(-1, 1, (2, 3, 4, 5))
    outcome = check_result(ref.astype(np.float32), ref)
    assert outcome.ok and outcome.error < 1e-7


def test_check_result_reports_unwritten_elements():
    ref = np.ones((1, 2, 3, 4))
    out = ref.astype(np.float32)
    out[0, 1, 2, 0] = POISON
    outcome = check_result(out, ref)
    assert not outcome.ok and outcome.error == float("inf")
    assert "1 of 24 output elements are NaN or infinite (first at [0, 1, 2, 0]" in outcome.message


def test_check_result_reports_the_largest_difference():
    ref = np.ones((1, 1, 2, 2))
    out = np.array([[[[1.0, 1.0], [1.1, 1.0]]]], dtype=np.float32)
    outcome = check_result(out, ref)
    assert not outcome.ok
    assert outcome.error == pytest.approx(relative_l2_error(out, ref))
    assert outcome.error == pytest.approx(0.05, rel=1e-5)
    assert "largest difference at [0, 0, 1, 0]" in outcome.message


def test_check_result_tolerance_and_shape():
    ref = np.ones((4, 4))
    assert check_result((ref * (1 + 5e-6)).astype(np.float32), ref).ok
    assert not check_result((ref * (1 + 5e-5)).astype(np.float32), ref).ok
    assert not check_result(np.ones((4, 5), np.float32), ref).ok
    assert not check_result(np.full((4, 4), np.inf, np.float32), ref).ok
    assert relative_l2_error(np.zeros(3), np.zeros(3)) == 0.0


# ---- autoconv verify --emulate ---------------------------------------------------------------------

@pytest.mark.slow
def test_verify_command_checks_every_family(capsys):
    spec = "N=2,C=3,H=9,W=8,K=5,R=3,S=2,stride=2x1,pad=1:0:1:1,dilation=1,bias=1"
    runnable = [name for name in FAMILY_NAMES if get_family(name).unsupported_reason(parse_spec(spec)) is None]
    assert main(["verify", "--emulate", "--problem", spec, "--samples", "1", "--seed", "11"]) == 0
    out = capsys.readouterr().out
    for name in runnable:
        assert re.search(rf"^  {name}\s+{name}_\S+\s+error \d\.\d\de-\d\d  ok$", out, re.MULTILINE), out
    for name in set(FAMILY_NAMES) - set(runnable):  # the 16-bit family says why it is not checked
        assert re.search(rf"^  {name}\s+skipped: ", out, re.MULTILINE), out
    # --samples 1: the default and the configs that cover the switches (check.SWITCHES), all ok
    summary = re.search(rf"summary: (\d+) configs of {len(runnable)} families: (\d+) ok, 0 mismatch, 0 fault", out)
    assert summary and summary[1] == summary[2] and int(summary[1]) > len(runnable), out


def test_verify_command_fails_on_a_wrong_result(capsys, monkeypatch):
    import autoconv.emulator.check
    monkeypatch.setattr(autoconv.emulator.check, "emulate_plan",
                        lambda plan, x, w, bias, **kw: np.full(plan.problem.output_shape, POISON, np.float32))
    assert main(["verify", "--emulate", "--problem", "N=1,C=2,H=5,W=6,K=3,R=3,S=3", "--family", "implicit_gemm",
                 "--samples", "1", "--seed", "1"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH" in out and "are NaN or infinite" in out
    assert re.search(r"summary: (\d+) configs? of 1 family: 0 ok, \1 mismatch", out), out


def test_verify_without_emulate_says_what_to_use(capsys):
    assert main(["verify", "--problem", "N=1,C=2,H=5,W=6,K=3,R=3,S=3"]) == 2
    assert "`--emulate` runs on the CPU" in capsys.readouterr().err


# ---- im2col_gemm reading x in place (1x1, stride 1, no padding) ---------------------------

@pytest.mark.parametrize("spec, a_vec", [
    ("N=3,C=5,H=7,W=9,K=11,R=1,S=1,bias=1", 1),    # P*Q = 63: scalar loads; tiles straddle images
    ("N=3,C=13,H=6,W=10,K=20,R=1,S=1", 4),         # P*Q = 60: float4 loads
])
def test_im2col_gemm_reads_x_in_place_for_pointwise_layers(spec, a_vec, seed):
    from autoconv.problems.problem import parse_spec

    problem = parse_spec(spec)
    family = get_family("im2col_gemm")
    configs = [c for c in family.space.points(problem, H100) if c["COLUMNS"] == "input"]
    assert configs, "every 1x1 stride-1 unpadded problem has COLUMNS=input points"
    rng = np.random.default_rng(seed)
    chosen = [configs[i] for i in rng.choice(len(configs), size=2, replace=False)]
    chosen = [c for c in chosen if family.space.context(c, problem, H100)["A_VEC"] == a_vec] or \
        [next(c for c in configs if family.space.context(c, problem, H100)["A_VEC"] == a_vec)]
    for config in chosen:
        plan = family.plan(problem, config, H100)
        assert plan.workspace_bytes == 0 and [launch.kernel for launch in plan.launches] == [plan.name + "_gemm"]
        assert plan.launches[0].args[0] == "x"
        check = verify_plan(plan, rng)
        assert check.status is Status.OK, check


@pytest.mark.parametrize("spec", ["N=1,C=4,H=6,W=6,K=8,R=3,S=3,pad=1", "N=1,C=4,H=6,W=6,K=8,R=1,S=1,stride=2",
                                  "N=1,C=4,H=6,W=6,K=8,R=1,S=1,pad=1:0:0:0"])
def test_im2col_gemm_reads_x_in_place_only_where_x_is_the_column_buffer(spec):
    from autoconv.problems.problem import parse_spec

    problem = parse_spec(spec)
    space = get_family("im2col_gemm").space
    assert not [c for c in space.points(problem, H100) if c["COLUMNS"] == "input"]
    config = dict(space.default_config(problem, H100), COLUMNS="input", IM2COL_THREADS=128)
    assert any("x is its own column buffer" in v for v in space.violations(config, problem, H100, 1 << 30))


# ---- precision tf32 ---------------------------------------------------------------------------

#: Families whose operands are rounded to TF32 with ties to even (by TMA copies of TF32 maps);
#: the others round with cvt.rna.tf32.f32, ties away from zero.
TIES_TO_EVEN = {"implicit_gemm_wgmma_tma": "even"}
#: Families with kernels of their own for tf32 problems (one TF32 product per multiply-add).
TF32_FAMILIES = [name for name in FAMILY_NAMES
                 if "tf32" in get_family(name).precisions and get_family(name).tensor_cores]


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["3x3-C32-bias-PQ4", "3x3-C13-dilation2x1-stride1x2", "1x7-C1"])
@pytest.mark.parametrize("family_name", TF32_FAMILIES)
def test_tf32_kernels_compute_tf32_exactly(family_name, shape, seed):
    """A tf32 kernel's output is the convolution of the TF32-rounded inputs to float32 accuracy:
    a kernel that kept the 3xTF32 split (more accurate, slower: ~3e-4 away from this model) or
    dropped to a coarser format fails either way; and it passes the tolerance derived for tf32
    against the float64 reference, the tuner's check."""
    rng = np.random.default_rng(seed)
    family = get_family(family_name)
    problem = PROBLEMS[shape](rng).with_(precision="tf32", layout=family.layouts[0])
    configs = sample_configs(family, problem, CONFIGS_PER_PROBLEM, rng)
    x, w, bias = random_inputs(problem, rng)
    exact = conv2d_reference(problem, x, w, bias)
    ties = TIES_TO_EVEN.get(family_name, "away")
    tf32_model = conv2d_reference(problem, round_mantissa(x, 10, ties), round_mantissa(w, 10, ties), bias)
    assert relative_l2_error(tf32_model, exact) > 3e-5  # (the two references really differ)
    from autoconv.emulator import emulate_plan
    from autoconv.verify.tolerance import tolerance
    for config in configs:
        plan = family.plan(problem, config)
        y = emulate_plan(plan, x, w, bias)
        described = f"{plan.name} on {problem.spec()}"
        assert relative_l2_error(y, tf32_model) <= 1e-5, described
        assert check_result(y, exact, tolerance(problem, x, w, exact)).ok, described


@pytest.mark.slow
@pytest.mark.parametrize("overlap", ["none", "quad", "carry"])
def test_tf32_wgmma_with_the_widest_tiles(overlap, seed):
    """Tiles 256 filters wide, which the sampled problems are too narrow for, on filters that
    fill one tile and spill into a second: one warpgroup's m64n256k8 (WGN 256, tf32 only: its
    128 sums leave no registers for fp32's chains), also with A from shared memory (carry),
    and two warpgroups of m64n128k8 in the quad loop, on a reduction of 9 K tiles (two trips
    of four and one tile)."""
    problem = make_problem(N=1, C=32, H=6, W=7, K=261, R=3, S=3, padding=1, bias=True, precision="tf32")
    family = get_family("implicit_gemm_wgmma")
    config = {"BM": 64, "BN": 256, "WGN": 128 if overlap == "quad" else 256, "BK": 32,
              "STAGES": 2 if overlap == "none" else 4, "MMA_OVERLAP": overlap, "SPLIT_K": 1, "MIN_BLOCKS": 1,
              "GATHER": "rsc"}
    x, w, bias = random_inputs(problem, np.random.default_rng(seed))
    tf32_model = conv2d_reference(problem, round_mantissa(x, 10), round_mantissa(w, 10), bias)
    from autoconv.emulator import emulate_plan
    y = emulate_plan(family.plan(problem, config), x, w, bias)
    assert relative_l2_error(y, tf32_model) <= 1e-5


def test_tf32_sampling_covers_every_switch():
    """The tf32 kernels' code paths (MMA_OVERLAP, GATHER, SPLIT_K...) are all sampled, as for fp32."""
    problem = PROBLEMS["3x3-C32-bias-PQ4"](np.random.default_rng(0)).with_(precision="tf32")
    for family_name in TF32_FAMILIES:
        family = get_family(family_name)
        configs = sample_configs(family, problem, CONFIGS_PER_PROBLEM, np.random.default_rng(0))
        points = family.space.points(problem, H100)
        taken = frozenset().union(*(switch_pairs(family, c, problem) for c in configs))
        assert frozenset().union(*(switch_pairs(family, c, problem) for c in points)) == taken, family_name
