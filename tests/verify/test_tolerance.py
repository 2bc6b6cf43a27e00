"""Each precision's tolerance: fp32's constant, tf32's derived from the format and the data.

Checked against convolutions computed here in float64 from operands rounded as a kernel would
round them: TF32 (10 mantissa bits) must pass with room, a coarser format (bf16, 7 bits) and a
lost term must fail.
"""

from __future__ import annotations

import numpy as np
import pytest

from autoconv.problems.problem import parse_spec
from autoconv.verify.compare import FLOAT32_TOLERANCE, check_result, relative_l2_error
from autoconv.verify.reference import conv2d_reference, random_inputs
from autoconv.verify.tolerance import TF32_UNIT_ROUNDOFF, expected_tf32_error, tolerance
from tests.helpers import round_mantissa

SPEC = "N=2,C=48,H=9,W=11,K=17,R=3,S=3,pad=1,bias=1"


@pytest.fixture(params=["signed", "relu"])
def data(request):
    problem = parse_spec(SPEC + ",precision=tf32")
    x, w, bias = random_inputs(problem, np.random.default_rng(7))
    if request.param == "relu":
        x = np.abs(x)  # post-ReLU activations: outputs with a mean, less cancellation
    return problem, x, w, bias, conv2d_reference(problem, x, w, bias)


def test_fp32_keeps_its_constant():
    problem = parse_spec(SPEC)
    x, w, bias = random_inputs(problem, np.random.default_rng(0))
    assert tolerance(problem, x, w, conv2d_reference(problem, x, w, bias)) == FLOAT32_TOLERANCE


def test_tf32_rounding_passes_and_is_predicted(data):
    problem, x, w, bias, exact = data
    tf32 = conv2d_reference(problem, round_mantissa(x, 10), round_mantissa(w, 10), bias)
    error = relative_l2_error(tf32, exact)
    expected = expected_tf32_error(problem, x, w, exact)
    # The expectation is an upper estimate (every rounding at its largest mean square)...
    assert 0.3 * expected < error < expected
    # ...and the tolerance leaves room above it, but is of TF32's size, not a loose constant.
    limit = tolerance(problem, x, w, exact)
    assert check_result(tf32, exact, limit).ok
    assert limit < 4 * TF32_UNIT_ROUNDOFF


def test_a_coarser_format_or_a_lost_term_fails(data):
    problem, x, w, bias, exact = data
    limit = tolerance(problem, x, w, exact)
    bf16 = conv2d_reference(problem, round_mantissa(x, 7), round_mantissa(w, 7), bias)
    assert not check_result(bf16, exact, limit).ok
    w_lost = w.copy()
    w_lost[:, 5, 1, 1] = 0.0  # one channel's centre tap dropped: 1 of 432 terms per output
    assert not check_result(conv2d_reference(problem, x, w_lost, bias), exact, limit).ok
