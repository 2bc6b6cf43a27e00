"""bf16 and fp16 on the GPU path: CuPy's codecs agree with NumPy's bit for bit, the tuner's worker
holds a 16-bit problem's buffers as its kernels take them (uint16 in NHWC, the output poisoned
with 0xFFFF) and its reference and tolerance as the CPU computes them, and it passes a right
16-bit kernel and fails wrong ones (run on the device machine: ``python -m pytest -m gpu
tests/gpu/test_16bit.py``).

The kernels are the naive ones of tests/emulator/test_emulate_16bit.py, which the CPU emulator
runs too; the family's own GPU test is in tests/emulator/test_wgmma_f16_family.py.
"""

from __future__ import annotations

import numpy
import pytest

from autoconv.backends.base import Status
from autoconv.dtypes import decode, encode, holds_exactly
from autoconv.problems.buffers import kernel_buffer
from autoconv.problems.problem import parse_spec
from autoconv.verify.reference import conv2d_reference, random_inputs
from autoconv.verify.tolerance import tolerance
from tests.emulator.test_emulate_16bit import SPEC, naive_16bit_plan

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_cupy_codecs_match_numpy_bit_for_bit(dtype):
    import cupy

    bits = numpy.arange(1 << 16, dtype=numpy.uint32).astype(numpy.uint16)
    on_host = decode(bits, dtype)
    on_device = cupy.asnumpy(decode(cupy.asarray(bits), dtype, cupy))
    # bit for bit but for NaN payloads, which CuPy's half-to-float conversion does not keep
    # (it gives the canonical NaN; NumPy keeps the payload): a NaN stays a NaN either way
    nan = numpy.isnan(on_host)
    assert numpy.array_equal(on_device[~nan].view(numpy.uint32), on_host[~nan].view(numpy.uint32))
    assert numpy.isnan(on_device[nan]).all()
    rng = numpy.random.default_rng(0)
    with numpy.errstate(invalid="ignore", over="ignore"):
        # random values, every value of the format, each nudged off it, ties, subnormals, overflow
        values = numpy.concatenate([
            rng.uniform(-4, 4, 100_000).astype(numpy.float32),
            on_host, (on_host.astype(numpy.float64) * (1 + 2.0**-9)).astype(numpy.float32),
            numpy.float32([1 + 2**-8, 1 + 3 * 2**-8, 2**-25, 3 * 2**-25, 65520, numpy.finfo(numpy.float32).max])])
        expected = encode(values, dtype)
    got = cupy.asnumpy(encode(cupy.asarray(values), dtype, cupy))
    nan = numpy.isnan(values)
    assert numpy.array_equal(got[~nan], expected[~nan])
    assert numpy.isnan(decode(got[nan], dtype)).all()


@pytest.mark.parametrize("spec", [SPEC + ",precision=bf16", SPEC + ",precision=fp16,out_dtype=float32"])
def test_worker_buffers_of_a_16bit_problem(spec):
    import cupy

    from autoconv.gpu.device import read_device
    from autoconv.gpu.worker import ProblemBuffers

    limits, _ = read_device(0)
    problem = parse_spec(spec)
    buffers = ProblemBuffers(problem, 3, limits.l2_bytes, 4)
    assert buffers.x.dtype == cupy.uint16 and buffers.x.shape == problem.input_storage_shape
    assert buffers.w.dtype == cupy.uint16 and buffers.w.shape == problem.weight_storage_shape
    assert buffers.bias is not None and buffers.bias.dtype == cupy.uint16
    out = cupy.float32 if problem.output_dtype == "float32" else cupy.uint16
    assert buffers.y.dtype == out and buffers.y.shape == problem.output_storage_shape
    # CuPy's generator's inputs for the seed, in the format; the same reference and tolerance as on the host
    x, w, bias = (cupy.asnumpy(values) for values in random_inputs(problem, cupy.random.default_rng(3), xp=cupy))
    assert x.dtype == numpy.float32 and holds_exactly(x, problem.dtype) and holds_exactly(bias, problem.dtype)
    assert numpy.array_equal(cupy.asnumpy(buffers.x), kernel_buffer(problem, "x", x))
    reference = conv2d_reference(problem, x, w, bias)
    numpy.testing.assert_allclose(cupy.asnumpy(buffers.reference), reference, rtol=1e-12, atol=1e-12)
    assert buffers.tolerance == pytest.approx(tolerance(problem, x, w, reference), rel=1e-9)
    # poisoned: NaN in the output's type (0xFFFF for 16 bits), read back as NaN values
    verification = buffers.verification(None)
    if out == cupy.uint16:
        assert bool((verification["y"] == 0xFFFF).all())
    assert bool(cupy.isnan(buffers.output_values()).all()) and buffers.output_values().shape == problem.output_shape
    assert buffers.written_inputs() == []
    for timing in buffers.timing_sets:
        assert timing["x"].dtype == cupy.uint16 and timing["x"].shape == problem.input_storage_shape
        assert timing["y"].dtype == out


def test_backend_passes_a_right_16bit_kernel_and_fails_wrong_ones():
    """The naive kernel, right (bf16 and float32 outputs, fp16 input), with its last output
    unwritten, and rounding its output twice: verified by the worker against the reference."""
    from autoconv.gpu.backend import CupyBackend

    bf16 = parse_spec(SPEC + ",precision=bf16")
    plans = [naive_16bit_plan(bf16), naive_16bit_plan(bf16.with_(out_dtype="float32")),
             naive_16bit_plan(parse_spec(SPEC + ",precision=fp16,out_dtype=float32")),
             naive_16bit_plan(bf16, "unwritten"), naive_16bit_plan(bf16, "twice")]
    with CupyBackend(compile_workers=2) as backend:
        results = [backend.evaluate(plan) for plan in plans]
    statuses = [result.status for result in results]
    assert statuses == [Status.OK] * 3 + [Status.WRONG_RESULT] * 2, [(r.status, r.reason) for r in results]
    assert results[0].error < 2e-3 and results[1].error < 1e-6 and results[2].error < 1e-6
    assert "NaN" in results[3].reason
    assert "exceeds" in results[4].reason
