"""How much GPU memory tuning a problem takes, checked before anything is allocated.

Tuning one problem holds, on the GPU (see :class:`autoconv.gpu.worker.ProblemBuffers`):

- the verification inputs ``x``, ``w`` (and ``bias``) as the kernels take them (float32, or
  2-byte bit patterns for a bf16/fp16 problem), plus a pristine copy of each (to catch kernels
  that write their inputs);
- the float64 reference output; while it is computed
  (:func:`autoconv.verify.reference.conv2d_reference`) also float64 copies of ``x`` and ``w``,
  the zero-padded input, one tap's gathered window (N x C x P x Q) and a second output
  (the tap's product, then the transposed result); for a 16-bit problem also the decoding's
  temporaries (two 4-byte arrays per input element), the squares of ``x`` and ``w`` beside
  their float64 copies, and the tolerance's per-output bounds
  (:mod:`autoconv.verify.tolerance`: :data:`TOLERANCE_OUTPUT_COPIES` float64 arrays of ``y``'s size);
- the output ``y`` in its type (float32, or 2 bytes for a 16-bit output);
- the rotating timing buffer sets (``x``, ``w``, ``y``, ``bias`` each), as many as
  exceed twice the L2 cache (:func:`autoconv.gpu.timing.buffer_sets_for`);
- a candidate's workspace (im2col buffer, split-K partials);
- a small reserve for CuPy's own work (cuBLAS workspace of the reference's products).

The reference's temporaries are gone before the output and timing sets are made, so
the need is the larger of the two phases. :func:`check_fits` compares it with what the
device offers and raises :class:`~autoconv.errors.DeviceMemoryError` with the
breakdown, so that a problem too large for the GPU is refused with a clear message
instead of failing inside CUDA after minutes of preparation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from autoconv.errors import DeviceMemoryError
from autoconv.gpu.timing import buffer_sets_for
from autoconv.problems.problem import DTYPE_SIZES, ConvProblem

#: Timing buffer sets at most (as :class:`autoconv.gpu.worker.WorkerOptions`).
MAX_BUFFER_SETS = 256
#: Memory CuPy may take for itself while the reference is computed (cuBLAS workspace).
RUNTIME_RESERVE_BYTES = 64 << 20

_F32, _F64 = 4, 8
#: Float64 arrays of the output's size that a 16-bit problem's tolerance holds at once, at most
#: (the bounds, the worst error, a rounded sum with its encoding's temporaries).
TOLERANCE_OUTPUT_COPIES = 6


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes of GPU memory tuning one problem needs, by purpose."""

    inputs: int              # x, w, bias (as the kernels take them) and their pristine copies
    reference: int           # the float64 reference output, kept
    reference_scratch: int   # the reference's temporaries while it is computed
    output: int              # y (its type)
    timing_sets: int         # all rotating timing buffer sets
    buffer_sets: int         # how many sets that is
    workspace: int           # a candidate's workspace
    reserve: int = RUNTIME_RESERVE_BYTES

    @property
    def total(self) -> int:
        computing_reference = self.inputs + self.reference + self.reference_scratch
        timing = self.inputs + self.reference + self.output + self.timing_sets + self.workspace
        return max(computing_reference, timing) + self.reserve

    @property
    def fixed(self) -> int:
        """The need without the workspace (what every candidate shares)."""
        return replace(self, workspace=0).total

    def describe(self) -> str:
        parts = [f"inputs and their copies {format_bytes(self.inputs)}",
                 f"float64 reference {format_bytes(self.reference)} "
                 f"(+{format_bytes(self.reference_scratch)} while computing it)",
                 f"output {format_bytes(self.output)}",
                 f"{self.buffer_sets} timing buffer set{'s' if self.buffer_sets != 1 else ''} "
                 f"{format_bytes(self.timing_sets)}"]
        if self.workspace:
            parts.append(f"workspace {format_bytes(self.workspace)}")
        parts.append(f"CuPy's own {format_bytes(self.reserve)}")
        return ", ".join(parts)


def estimate(problem: ConvProblem, l2_bytes: int, *, workspace_bytes: int = 0,
             max_buffer_sets: int = MAX_BUFFER_SETS) -> MemoryEstimate:
    """The GPU memory tuning ``problem`` takes on a device with ``l2_bytes`` of L2 (see
    the module docstring), with a candidate workspace of ``workspace_bytes``."""
    N, C, K = problem.N, problem.C, problem.K
    P, Q = problem.P, problem.Q
    top, bottom, left, right = problem.padding
    x = N * C * problem.H * problem.W
    w = K * C * problem.R * problem.S
    bias = K if problem.bias else 0
    y = N * K * P * Q
    padded = N * C * (problem.H + top + bottom) * (problem.W + left + right)
    window = N * C * P * Q
    per_set = timing_set_bytes(problem)
    sets = buffer_sets_for(per_set, l2_bytes, max_buffer_sets)
    # float64 x, w and padded input; the tap's window; the tap's product (or, at the end, the
    # transposed copy) beside the accumulator (counted in ``reference``).
    scratch = _F64 * (x + w + padded + window + y)
    if problem.dtype != "float32":
        scratch += (2 * _F32 + _F64) * (x + w) + TOLERANCE_OUTPUT_COPIES * _F64 * y
    return MemoryEstimate(
        inputs=2 * DTYPE_SIZES[problem.dtype] * (x + w + bias),
        reference=_F64 * y,
        reference_scratch=scratch,
        output=DTYPE_SIZES[problem.output_dtype] * y,
        timing_sets=sets * per_set,
        buffer_sets=sets,
        workspace=int(workspace_bytes))


def timing_set_bytes(problem: ConvProblem) -> int:
    """Bytes of one timing buffer set: ``x``, ``w``, ``bias`` and ``y`` in their types."""
    inputs = problem.N * problem.C * problem.H * problem.W + problem.K * problem.C * problem.R * problem.S
    inputs += problem.K if problem.bias else 0
    outputs = problem.N * problem.K * problem.P * problem.Q
    return DTYPE_SIZES[problem.dtype] * inputs + DTYPE_SIZES[problem.output_dtype] * outputs


def check_fits(problem: ConvProblem, available_bytes: int, device_name: str, l2_bytes: int, *,
               label: str = "", free: bool = False, max_buffer_sets: int = MAX_BUFFER_SETS) -> MemoryEstimate:
    """The estimate for ``problem`` without a workspace, or :class:`DeviceMemoryError`
    when even that exceeds ``available_bytes`` (the message names the problem, the need
    with its breakdown, the device and what to do). ``free``: the bytes are what is free
    now, not the device's total."""
    need = estimate(problem, l2_bytes, max_buffer_sets=max_buffer_sets)
    if need.total > available_bytes:
        name = f"{label} ({problem.shape_str()})" if label else problem.shape_str()
        raise DeviceMemoryError(
            f"{name} needs about {format_bytes(need.total)} of GPU memory to tune ({need.describe()}), "
            f"but {device_name} has {format_bytes(available_bytes)}{' free' if free else ''}; nothing was "
            f"allocated for it. Use a "
            f"smaller batch (N={problem.N}) or image, or a GPU with more memory")
    return need


def format_bytes(count: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"
