"""A problem's verification set on the GPU: its inputs, their float64 reference and the
tolerance a kernel's output is held to.

The tuner's GPU worker (:mod:`autoconv.gpu.worker`) checks every candidate on these, and the
runtime (:func:`autoconv.runtime.selection.verify_runner`) checks a predicted kernel on them
before its first use, so a kernel is judged the same way wherever it runs. CuPy is imported
when a function is called (a test may stand NumPy in for it: only what the two share is used).
"""

from __future__ import annotations

from autoconv.problems.buffers import kernel_buffer, tensor_values
from autoconv.problems.problem import ConvProblem
from autoconv.verify.reference import conv2d_reference, random_inputs
from autoconv.verify.tolerance import tolerance


def verification_inputs(problem: ConvProblem, seed: int) -> tuple:
    """``problem``'s verification inputs (x, w, bias or None) for ``seed``, made on the GPU as the
    kernels take them (the problem's layout and element type), by CuPy's generator seeded with
    ``seed``: the same in every process. (On the GPU this takes milliseconds; NumPy on the host
    took up to seconds for a large layer, each time a worker began a problem.)"""
    import cupy

    x, w, bias = random_inputs(problem, cupy.random.default_rng(seed), xp=cupy)
    return (kernel_buffer(problem, "x", x, cupy), kernel_buffer(problem, "w", w, cupy),
            kernel_buffer(problem, "bias", bias, cupy) if bias is not None else None)


def reference_and_tolerance(problem: ConvProblem, x, w, bias) -> tuple:
    """The float64 reference output of inputs ``x``, ``w``, ``bias`` (:func:`verification_inputs`),
    computed on the GPU, and the relative L2 error a kernel's output may have against it. (For a
    16-bit problem the tolerance rounds the reference to the output type, which compiles CuPy's
    kernels for the output's decoding before any candidate's time limit runs.)"""
    import cupy

    # The reference reads the buffers' values (a float32 NCHW problem's buffers are its values:
    # no copy; a 16-bit problem's are decoded).
    x, w = tensor_values(problem, "x", x, cupy), tensor_values(problem, "w", w, cupy)
    bias = tensor_values(problem, "bias", bias, cupy) if bias is not None else None
    reference = conv2d_reference(problem, x, w, bias, xp=cupy)
    return reference, tolerance(problem, x, w, reference, xp=cupy)
