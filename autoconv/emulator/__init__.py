"""Run autoconv's generated CUDA on the CPU, with CUDA's execution semantics.

The rendered source is compiled unchanged by g++ against ``cuda_emulation.h`` (the CUDA
vocabulary the templates use: built-in indices, ``__syncthreads``, ``__shared__``,
``float4``...; see that file for the execution model) and run with AddressSanitizer and
UBSan in a subprocess. CI has no GPU: this is how it proves that every kernel family
computes the right convolution, and how a user without a GPU checks a template change
(``autoconv verify --emulate``).

Beyond the core vocabulary it models ``__syncwarp()`` (whole warp), cp.async
(``<cuda_pipeline.h>``: a copy lands when its batch is waited for) and TF32 WMMA
(``<mma.h>``, m16n16k8, operands read as TF32 like the tensor cores), integer ``atomicAdd``
and ``__threadfence()`` (blocks run concurrently: real atomics and fences). It does not model
warp shuffles and votes, other atomics, other fences or inline PTX (each is a compile error naming
it), the GPU's timing, or the contents of static ``__shared__`` arrays at block start
(only the dynamic ``smem`` is poisoned per block). A project header may give inline PTX a
model of its own, chosen by the ``AUTOCONV_EMULATOR`` macro that ``cuda_emulation.h``
defines: ``templates/mma_tf32.cuh`` models ``mma.sync.m16n8k8`` (TF32) lane by lane, and
``templates/tma.cuh`` Hopper's TMA copies (im2col and tiled boxes into the 128-byte swizzle,
completing on ``templates/mbarrier.cuh``'s barriers by transaction bytes), reading tensor maps
in the emulator's own encoding (:mod:`autoconv.emulator.tensor_maps`), which a plan's
``tensor_maps`` get when it is emulated.

Typical use::

    from autoconv.emulator import emulate_plan
    y = emulate_plan(plan, x, w, bias)   # float32 values, logical NKPQ; unwritten elements NaN

Buffers reach the kernels as raw bytes (each launch argument is a pointer to its buffer's
data, typed by the kernel's own signature), so a 16-bit problem's kernels read their
``const unsigned short*`` bit patterns and write an ``unsigned short*`` or ``float*`` output
as on the GPU; :mod:`autoconv.problems.buffers` makes and reads those buffers.
"""

from __future__ import annotations

import numpy

from autoconv.dtypes import holds_exactly
from autoconv.emulator.build import MAX_SHARED_BYTES, cache_dir, compile_program
from autoconv.emulator.errors import (
    EmulatedKernelFault,
    EmulationError,
    EmulationTimeout,
    EmulatorCompileError,
    EmulatorUnavailable,
)
from autoconv.emulator.program import EmulatedProgram, default_workers
from autoconv.problems.buffers import buffer_values, kernel_buffer, output_buffer, tensor_values
from autoconv.verify.compare import POISON


def emulate_plan(plan, x, w, bias=None, *, workers: int | None = None,
                 timeout: float | None = None, reverse_blocks: bool = False) -> numpy.ndarray:
    """Execute a :class:`~autoconv.kernels.families.KernelPlan` on the CPU and return ``y``.

    Runs the plan's launches in order, as a GPU backend does, on the inputs as the kernels
    take them (:func:`autoconv.problems.buffers.kernel_buffer`: the problem's layout and element type);
    ``y`` and the workspace start filled with NaN (:data:`autoconv.verify.compare.POISON`),
    so elements no kernel writes come back NaN. The plan's ``tensor_maps`` (if it has any) are
    passed in the emulator's encoding, each describing its buffer, and its ``constants`` (the
    sizes of a source that takes them at run time) are set before the first launch.

    Args:
        plan: the kernels and launches to run.
        x, w: input and weights, logical (NCHW, KCRS) values of ``plan.problem``'s shapes
            (a 16-bit problem's must be numbers of its format: :func:`autoconv.dtypes.rounded`),
            or a 16-bit problem's buffers as its kernels take them (uint16 bit patterns in
            the problem's layout, :func:`autoconv.problems.buffers.kernel_buffer`).
        bias: ``(K,)`` values (or bit patterns), exactly when ``plan.problem.bias``.
        workers: OS threads running blocks (default :func:`default_workers`).
        timeout: seconds before the program is stopped (default 300).
        reverse_blocks: take each launch's blocks from the last (default: in index order).

    Returns:
        ``y``'s values, float32, of the logical shape ``plan.problem.output_shape``.

    Raises:
        ValueError: an input's shape, or the presence of bias, disagrees with the problem,
            or a 16-bit problem's input has a value its format does not hold.
        EmulatorCompileError: the source does not compile under emulation.
        EmulatedKernelFault: a kernel faulted (sanitizer report...) or wrote to an input.
        EmulationTimeout: the launches ran past ``timeout``.
    """
    problem = plan.problem
    buffers = {"x": _input(problem, "x", x), "w": _input(problem, "w", w)}
    if problem.bias != (bias is not None):
        raise ValueError(f"the problem {'has' if problem.bias else 'has no'} bias, but bias "
                         f"{'is missing' if bias is None else 'was given'}")
    if bias is not None:
        buffers["bias"] = _input(problem, "bias", bias)
    buffers["y"] = output_buffer(problem)
    if plan.workspace_bytes > 0:
        buffers["workspace"] = numpy.full(plan.workspace_elements, POISON, dtype=numpy.float32)

    constants = getattr(plan, "constants", None) or {}
    program = compile_program(plan.source, (launch.kernel for launch in plan.launches), name=plan.name,
                              constants=constants)
    result = program.run(plan.launches, buffers, workers=workers, timeout=timeout,
                         reverse_blocks=reverse_blocks, tensor_maps=getattr(plan, "tensor_maps", None) or {},
                         constants=constants)
    for name in ("x", "w", "bias"):
        if name in buffers and not numpy.array_equal(result[name], buffers[name], equal_nan=True):
            raise EmulatedKernelFault(f"{plan.name} wrote to its input {name}, which must stay unchanged")
    return numpy.ascontiguousarray(buffer_values(problem, result["y"]))


def _input(problem, name: str, array) -> numpy.ndarray:
    """Tensor ``name``'s buffer as the kernels take it, from its values or its buffer."""
    array = numpy.asarray(array)
    if array.dtype == numpy.uint16 and problem.dtype != "float32":  # already a buffer
        tensor_values(problem, name, array)  # (checks its shape)
        return numpy.ascontiguousarray(array)
    shape = {"x": problem.input_shape, "w": problem.weight_shape, "bias": (problem.K,)}[name]
    if array.shape != tuple(shape):
        raise ValueError(f"{name} has shape {array.shape}; the problem needs {tuple(shape)}")
    # Rounding here would hand the kernels other numbers than the caller's reference reads (a
    # float32 problem's values are converted, as they always were).
    if problem.dtype != "float32" and not holds_exactly(array, problem.dtype):
        raise ValueError(f"{name} has values that {problem.dtype} does not hold: round them first "
                         f"(autoconv.dtypes.rounded), and compute the reference from the rounded values")
    return kernel_buffer(problem, name, array)


__all__ = [
    "MAX_SHARED_BYTES", "EmulatedKernelFault", "EmulatedProgram", "EmulationError", "EmulationTimeout",
    "EmulatorCompileError", "EmulatorUnavailable", "cache_dir", "compile_program", "default_workers",
    "emulate_plan",
]
