"""Each precision's tolerance: fp32's constant, tf32's derived from the format and the data,
bf16's and fp16's from the formats and the reduction length.

Checked against convolutions computed here in float64 from operands rounded as a kernel would
round them: TF32 (10 mantissa bits) must pass with room, a coarser format (bf16, 7 bits) and a
lost term must fail; for bf16 and fp16, a model of the tensor cores' float32 sums must pass, and
sums kept in 16 bits, a lost term or an fp16 output rounded to bf16 must fail.
"""

from __future__ import annotations

import numpy as np
import pytest

from autoconv.dtypes import rounded
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


# ---- bf16 and fp16 -------------------------------------------------------------------------------

def _16bit_case(precision: str, out_dtype=None):
    problem = parse_spec(SPEC + f",precision={precision},layout=NHWC").with_(out_dtype=out_dtype)
    x, w, bias = random_inputs(problem, np.random.default_rng(11))
    assert np.array_equal(rounded(x, problem.dtype), x)  # the inputs are the format's numbers
    return problem, x, w, bias, conv2d_reference(problem, x, w, bias)


def _toward_zero(values: np.ndarray) -> np.ndarray:
    """float64 -> float32, rounded toward zero."""
    nearest = values.astype(np.float32)
    overshoot = np.abs(nearest.astype(np.float64)) > np.abs(values)
    return np.where(overshoot, np.nextafter(nearest, np.float32(0)), nearest).astype(np.float32)


def _tensor_core_sums(problem, x, w, bias, accumulator_dtype="float32"):
    """A model of the family's sums: per output, the products in reduction order (filter tap,
    then channel), exact; each k step of 16 added to the accumulator and truncated to float32
    once (and, to model a kernel that keeps its sums in 16 bits, rounded to that format); the
    bias added at the end."""
    top, bottom, left, right = problem.padding
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    taps = []
    (stride_h, stride_w), (dilation_h, dilation_w) = problem.stride, problem.dilation
    for r in range(problem.R):
        for s in range(problem.S):
            rows = slice(r * dilation_h, r * dilation_h + problem.P * stride_h, stride_h)
            cols = slice(s * dilation_w, s * dilation_w + problem.Q * stride_w, stride_w)
            taps.append(np.einsum("nchw,kc->nkhwc", padded[:, :, rows, cols], w[:, :, r, s].astype(np.float64)))
    products = np.concatenate(taps, axis=-1)  # N x K x P x Q x GEMM_K, in reduction order
    accumulator = np.zeros(products.shape[:-1], np.float32)
    for start in range(0, products.shape[-1], 16):
        accumulator = _toward_zero(accumulator + products[..., start:start + 16].sum(axis=-1))
        if accumulator_dtype != "float32":
            accumulator = rounded(accumulator, accumulator_dtype)
    if bias is not None:
        accumulator = accumulator + bias.astype(np.float32).reshape(1, -1, 1, 1)
    return accumulator


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
@pytest.mark.parametrize("out_dtype", [None, "float32"])
def test_16bit_sums_pass_and_16bit_accumulation_or_a_lost_term_fail(precision, out_dtype):
    problem, x, w, bias, exact = _16bit_case(precision, out_dtype)
    limit = tolerance(problem, x, w, exact)
    out = problem.output_dtype
    right = rounded(_tensor_core_sums(problem, x, w, bias), out)
    assert check_result(right, exact, limit).ok
    if out != "float32":  # the bound is of the output format's size, not a loose constant
        assert 0.1 * limit < relative_l2_error(right, exact) < limit
    else:
        assert limit < 1e-4
    in_16_bits = rounded(_tensor_core_sums(problem, x, w, bias, accumulator_dtype=problem.dtype), out)
    assert not check_result(in_16_bits, exact, limit).ok
    w_lost = w.copy()
    w_lost[:, 5, 1, 1] = 0.0  # one channel's centre tap dropped: 1 of 432 terms per output
    assert not check_result(rounded(_tensor_core_sums(problem, x, w_lost, bias), out), exact, limit).ok


def test_an_fp16_result_in_the_wrong_format_fails():
    problem, x, w, bias, exact = _16bit_case("fp16")
    limit = tolerance(problem, x, w, exact)
    sums = _tensor_core_sums(problem, x, w, bias)
    assert check_result(rounded(sums, "float16"), exact, limit).ok
    assert not check_result(rounded(sums, "bfloat16"), exact, limit).ok
