"""Problems near the kernels' 32-bit index bounds (issue 18, finding 1).

``check`` used to accept shapes whose element counts fit but whose index arithmetic does
not (``2 * 1500000000`` for a dilation of 1.5e9): the kernels then overflowed ``int``.
Each problem must now be refused with a ProblemError naming a field, or have every index
expression the templates compute fit in an ``int``, render, and (for a few small ones)
run in the emulator without sanitizer findings.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from autoconv.errors import ProblemError, SearchSpaceError
from autoconv.kernels.families import FAMILY_NAMES, get_family
from autoconv.problems.problem import INDEX_LIMIT, ConvProblem, make_problem, parse_spec
from autoconv.verify.reference import conv2d_reference, random_inputs

INT_MIN = -(2**31)
#: The fields a refusal may name.
FIELDS = {"dilation (height)", "dilation (width)", "padding (height)", "padding (width)",
          "stride (height)", "stride (width)", "padding", "R", "S", "size"}


def index_values(problem: ConvProblem) -> list[int]:
    """The extreme values of the index expressions the templates compute in ``int``
    (templates/implicit_gather.cu.j2, direct.cu.j2, problem.cu.j2), worked out here from
    the loops' ranges rather than from the checks in ConvProblem."""
    top, bottom, left, right = problem.padding
    (sh, sw), (dh, dw) = problem.stride, problem.dilation
    P, Q = problem.P, problem.Q
    values = [(problem.R - 1) * dh + 1, (problem.S - 1) * dw + 1,  # dilated extents
              (problem.R - 1) * dh, (problem.S - 1) * dw,           # r * DILATION_H
              (P - 1) * sh, (Q - 1) * sw, P * sh, Q * sw,           # p * STRIDE_H
              -top, -left,                                          # h0 of p = 0
              (P - 1) * sh - top + (problem.R - 1) * dh,            # the last row read
              (Q - 1) * sw - left + (problem.S - 1) * dw,
              problem.N * problem.C * problem.H * problem.W,
              problem.K * problem.C * problem.R * problem.S,
              problem.N * problem.K * P * Q]
    # Offsets of padded positions, computed before the inside test (the rsc gather):
    # image_offset + (c*H + h)*W + w, image_offset -1 for rows past the end.
    chw = problem.C * problem.H * problem.W
    h_last = (P - 1) * sh - top + (problem.R - 1) * dh
    w_last = (Q - 1) * sw - left + (problem.S - 1) * dw
    values.append((problem.N - 1) * chw + ((problem.C - 1) * problem.H + h_last) * problem.W + w_last)
    values.append(-1 + (0 * problem.H - top) * problem.W - left)
    return values


def assert_fits(problem: ConvProblem) -> None:
    for value in index_values(problem):
        assert INT_MIN <= value <= INDEX_LIMIT, (problem.spec(), value)


def test_the_reported_shape_is_refused_naming_the_dilation():
    with pytest.raises(ProblemError) as info:
        parse_spec("N=1,C=1,H=8,W=8,K=1,R=3,S=3,dilation=1500000000,pad=1500000000")
    assert info.value.field == "dilation (height)"
    assert "32-bit" in str(info.value)


@pytest.mark.parametrize("changes, field", [
    ({"padding": (2**30, 2**30, 0, 0), "H": 1, "stride": (2**30, 1)}, "padding (height)"),
    ({"padding": (0, 0, 2**31 - 1, 1), "W": 1, "stride": (1, 2**30)}, "padding (width)"),
    ({"R": 3, "dilation": (2**30, 1), "H": 1, "padding": (2**30, 2**30, 0, 0)}, "dilation (height)"),
    ({"stride": (1, 2**30 + 1), "W": 1, "S": 1, "padding": (0, 0, 2**30 + 1, 0)}, "stride (width)"),
    # Offsets of the padding reach 4 * 2^29 (and -4 * 2^29 - 1); the stride keeps P small.
    ({"padding": (0, 2**29, 0, 0), "W": 4, "stride": (2**20, 1)}, "padding"),
    ({"padding": (2**29, 0, 0, 0), "W": 4, "stride": (2**20, 1)}, "padding"),
])
def test_index_expressions_beyond_int_name_the_field(changes, field):
    base = dict(N=1, C=1, H=8, W=8, K=1, R=1, S=1)
    with pytest.raises(ProblemError) as info:
        make_problem(**{**base, **changes})
    assert info.value.field == field


def test_the_largest_index_expressions_that_fit_are_accepted():
    # Padded height exactly INDEX_LIMIT; the dilated filter spans all of it.
    problem = make_problem(N=1, C=1, H=1, W=1, K=1, R=2, S=1, dilation=(2**31 - 2, 1),
                           padding=(2**31 - 2, 0, 0, 0))
    assert problem.P == 1 and problem.extent_h == INDEX_LIMIT
    assert_fits(problem)


near_limit = st.one_of(st.integers(1, 16), st.integers(INDEX_LIMIT // 16 - 16, INDEX_LIMIT // 16 + 16),
                       st.integers(INDEX_LIMIT // 2 - 16, INDEX_LIMIT // 2 + 16),
                       st.integers(INDEX_LIMIT - 16, INDEX_LIMIT + 16))
near_limit_pad = st.one_of(st.just(0), near_limit)


@st.composite
def problems_near_the_bounds(draw):
    return dict(N=draw(st.integers(1, 2)), C=draw(st.integers(1, 3)), H=draw(st.integers(1, 9)),
                W=draw(st.integers(1, 9)), K=draw(st.integers(1, 3)), R=draw(st.integers(1, 3)),
                S=draw(st.integers(1, 3)), stride=(draw(near_limit), draw(near_limit)),
                dilation=(draw(near_limit), draw(near_limit)),
                padding=tuple(draw(near_limit_pad) for _ in range(4)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems_near_the_bounds())
@example(dict(N=1, C=1, H=8, W=8, K=1, R=3, S=3, stride=(1, 1), dilation=(1500000000,) * 2,
              padding=(1500000000,) * 4))
def test_near_the_bounds_refused_or_indexable_and_renders(fields):
    try:
        problem = make_problem(**fields)
    except ProblemError as err:
        assert err.field in FIELDS, str(err)
        return
    assert_fits(problem)
    family = get_family("implicit_gemm")
    try:
        plan = family.plan(problem)
    except SearchSpaceError:  # no valid configuration (e.g. tiles too large): refused too
        return
    assert "constexpr int PAD_TOP = " in plan.source


def _small_problems_near_the_index_bounds() -> list[ConvProblem]:
    big = 2**31 - 2
    return [
        parse_spec("N=1,C=1,H=1,W=1,K=1,R=3,S=3,dilation=1000000000,pad=1000000000"),
        make_problem(N=1, C=1, H=1, W=1, K=1, R=2, S=1, dilation=(big, 1), padding=(big, 0, 0, 0)),
        make_problem(N=1, C=2, H=3, W=2, K=2, R=2, S=1, stride=(2**30 - 1, 1),
                     padding=(2**30 - 2, 0, 0, 0)),
        make_problem(N=2, C=1, H=2, W=1, K=1, R=1, S=2, dilation=(1, 2**30), stride=(1, 2**30),
                     padding=(1, 1, 2**30 - 1, 2**30 - 1)),
    ]


#: The tensor-core families' emulated products take seconds a shape here: slow.
FAMILIES_BY_SPEED = [pytest.param(name, marks=pytest.mark.slow) if get_family(name).tensor_cores else name
                     for name in FAMILY_NAMES]


@pytest.mark.parametrize("family_name", FAMILIES_BY_SPEED)
@pytest.mark.parametrize("problem", _small_problems_near_the_index_bounds(), ids=lambda p: p.spec())
def test_small_problems_near_the_index_bounds_run_clean_in_the_emulator(problem, family_name):
    """Built with -fsanitize=address,undefined: a signed overflow would be a fault."""
    from autoconv.emulator.check import verify_emulated

    assert_fits(problem)
    try:
        check = verify_emulated(problem, family_name, None, np.random.default_rng(0))
    except SearchSpaceError as err:  # e.g. direct: its input tile would span the dilation
        pytest.skip(str(err))
    assert check.ok, f"{check.status}: {check.message}\n{check.details[-2000:]}"


def test_reference_handles_padding_near_the_limit_without_building_it():
    # Used to raise ValueError (numpy.pad of a 2e9 x 2e9 image) under verify --emulate.
    problem = parse_spec("N=1,C=2,H=1,W=1,K=1,R=3,S=3,dilation=1000000000,pad=1000000000")
    x, w, bias = random_inputs(problem, np.random.default_rng(1))
    y = conv2d_reference(problem, x, w, bias)
    expected = np.einsum("c,kc->k", x[0, :, 0, 0].astype(np.float64), w[:, :, 1, 1].astype(np.float64))
    np.testing.assert_allclose(y.ravel(), expected, rtol=1e-12)
