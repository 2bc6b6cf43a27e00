"""A 16-bit problem's buffers through ``emulate_plan``, with hand-written kernels (no family):
x, w and bias reach the kernel as uint16 bit patterns in the problem's layout (NHWC, KRSC), y
as uint16 bits or float32 by the problem's output type, poisoned, in NPQK order, and come back
as logical float32 values that the reference and the tolerance judge.

The naive kernel here (:func:`naive_16bit_plan`) is independent of the families' templates and
plain C++ (bit operations only), so that tests/gpu/test_16bit.py runs the same source on the GPU
through the tuner's worker.
"""

from __future__ import annotations

import numpy as np
import pytest

from autoconv.dtypes import rounded
from autoconv.emulator import emulate_plan
from autoconv.kernels.families import KernelPlan, Launch
from autoconv.problems.buffers import kernel_buffer
from autoconv.problems.problem import ConvProblem, parse_spec
from autoconv.verify.compare import check_result
from autoconv.verify.reference import conv2d_reference, random_inputs
from autoconv.verify.tolerance import tolerance

#: An awkward shape (odd C and K, stride 2x1, asymmetric padding, dilation, bias) with enough
#: outputs (2 x 19 x 6 x 9 = 2052) that a second rounding shows in the L2 error.
SPEC = "N=2,C=13,H=11,W=9,K=19,R=3,S=2,stride=2x1,pad=1:2:0:1,dilation=1x2,bias=1,layout=NHWC"

#: Kernel variants: ``good`` sums in float32 and rounds once; ``unwritten`` skips the last output;
#: ``twice`` rounds the sum to the 16-bit output type before adding the bias, then again.
VARIANTS = ("good", "unwritten", "twice")

_DEVICE_FUNCTIONS = r"""
__device__ __forceinline__ float bf16_value(unsigned short bits) { return __uint_as_float((unsigned)bits << 16); }
__device__ __forceinline__ float f16_value(unsigned short bits)
{
    const unsigned sign = (unsigned)(bits >> 15) << 31, exponent = (bits >> 10) & 31u, mantissa = bits & 1023u;
    if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
        const float magnitude = (float)mantissa * 5.9604644775390625e-8f;
        return sign ? -magnitude : magnitude;
    }
    if (exponent == 31)
        return __uint_as_float(sign | 0x7F800000u | (mantissa << 13));
    return __uint_as_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}
// bfloat16 bits of a float, rounded to nearest even (finite values; NaN stays NaN)
__device__ __forceinline__ unsigned short bf16_bits(float value)
{
    const unsigned bits = __float_as_uint(value);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u)
        return (unsigned short)((bits >> 16) | 0x40u);
    return (unsigned short)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}
"""


def naive_16bit_plan(problem: ConvProblem, variant: str = "good") -> KernelPlan:
    """One thread per output of a bf16 or fp16 NHWC ``problem``: float32 sums of the exact
    products (filter tap, then channel), the bias, one rounding to a bfloat16 output or none for
    a float32 one (an fp16 problem's output must be float32: the kernel rounds only to bf16)."""
    p = problem
    assert p.layout == "NHWC" and p.dtype in ("bfloat16", "float16") and variant in VARIANTS
    assert p.output_dtype in ("bfloat16", "float32"), "the naive kernel writes bf16 or float32"
    value = "bf16_value" if p.dtype == "bfloat16" else "f16_value"
    out_type = "float" if p.output_dtype == "float32" else "unsigned short"
    store = "acc" if p.output_dtype == "float32" else "bf16_bits(acc)"
    bias_term = f"acc += {value}(bias[k]);" if p.bias else ""
    if variant == "twice":
        assert p.output_dtype == "bfloat16" and p.bias
        bias_term = f"acc = bf16_value(bf16_bits(acc)); acc += {value}(bias[k]);"
    guard = "if (i + 1 < TOTAL) " if variant == "unwritten" else ""
    name = f"naive_nhwc_{p.dtype}_{'f32' if p.output_dtype == 'float32' else 'bf16'}_{variant}"
    bias_arg = "const unsigned short* __restrict__ bias, " if p.bias else ""
    source = _DEVICE_FUNCTIONS + f"""
extern "C" __global__ void {name}(const unsigned short* __restrict__ x, const unsigned short* __restrict__ w,
                                  {bias_arg}{out_type}* __restrict__ y)
{{
    constexpr int N = {p.N}, C = {p.C}, H = {p.H}, W = {p.W}, K = {p.K}, R = {p.R}, S = {p.S};
    constexpr int P = {p.P}, Q = {p.Q}, TOTAL = N * P * Q * K;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= TOTAL) return;
    const int k = i % K, q = (i / K) % Q, pp = (i / (K * Q)) % P, n = i / (K * Q * P);  // y is N x P x Q x K
    float acc = 0.0f;
    for (int r = 0; r < R; ++r)
        for (int s = 0; s < S; ++s) {{
            const int h = pp * {p.stride[0]} - {p.padding[0]} + r * {p.dilation[0]};
            const int ww = q * {p.stride[1]} - {p.padding[2]} + s * {p.dilation[1]};
            if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
            for (int c = 0; c < C; ++c)  // x is N x H x W x C, w is K x R x S x C
                acc += {value}(x[((n * H + h) * W + ww) * C + c]) * {value}(w[((k * R + r) * S + s) * C + c]);
        }}
    {bias_term}
    {guard}y[i] = {store};
}}
"""
    args = ("x", "w", "bias", "y") if p.bias else ("x", "w", "y")
    total = p.N * p.K * p.P * p.Q
    return KernelPlan(family="test", name=name, problem=p, config={"variant": variant}, source=source,
                      launches=(Launch(name, (-(-total // 128), 1, 1), (128, 1, 1), args),), workspace_bytes=0)


def _case(precision: str, out_dtype=None, seed: int = 0):
    problem = parse_spec(SPEC + f",precision={precision}").with_(out_dtype=out_dtype)
    x, w, bias = random_inputs(problem, np.random.default_rng(seed))
    reference = conv2d_reference(problem, x, w, bias)
    return problem, x, w, bias, reference, tolerance(problem, x, w, reference)


@pytest.mark.parametrize("precision, out_dtype", [("bf16", None), ("bf16", "float32"), ("fp16", "float32")])
def test_16bit_buffers_reach_the_kernel_and_come_back_as_values(precision, out_dtype, seed):
    problem, x, w, bias, reference, limit = _case(precision, out_dtype, seed)
    y = emulate_plan(naive_16bit_plan(problem), x, w, bias)
    assert y.dtype == np.float32 and y.shape == problem.output_shape
    verdict = check_result(y, reference, limit)
    assert verdict.ok, verdict.message
    if out_dtype is None:
        assert np.array_equal(rounded(y, "bfloat16"), y)  # bf16 numbers, as the kernel wrote their bits
    else:
        assert verdict.error < 1e-6
    # the same, from the buffers the kernels take (uint16 in the problem's layout)
    buffers = [kernel_buffer(problem, name, values) for name, values in (("x", x), ("w", w), ("bias", bias))]
    assert np.array_equal(emulate_plan(naive_16bit_plan(problem), *buffers), y)


def test_an_unwritten_16bit_output_reads_nan_and_a_second_rounding_fails():
    problem, x, w, bias, reference, limit = _case("bf16")
    unwritten = emulate_plan(naive_16bit_plan(problem, "unwritten"), x, w, bias)
    assert np.isnan(unwritten[-1, -1, -1, -1]) and np.isnan(unwritten).sum() == 1  # y poisoned with 0xFFFF
    assert "NaN" in check_result(unwritten, reference, limit).message
    twice = check_result(emulate_plan(naive_16bit_plan(problem, "twice"), x, w, bias), reference, limit)
    assert not twice.ok and "exceeds" in twice.message


def test_16bit_values_the_format_does_not_hold_are_refused():
    problem, x, w, bias, _, _ = _case("fp16", "float32")
    plan = naive_16bit_plan(problem)
    with pytest.raises(ValueError, match=r"w has values that float16 does not hold: round them first"):
        emulate_plan(plan, x, w + np.float32(2**-13), bias)
    with pytest.raises(ValueError, match=r"x has shape \(2, 13, 11, 9\); a NHWC x buffer .* is \(2, 11, 9, 13\)"):
        emulate_plan(plan, np.zeros(problem.input_shape, np.uint16), w, bias)
