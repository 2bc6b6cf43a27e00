"""cuDNN as the baseline autoconv is measured against, and as a runtime fallback.

For a problem, the cuDNN frontend graph ``y = conv_fprop(x, w) [+ bias]`` (in the problem's
types and layout, float32 compute: :func:`autoconv.runtime.cudnn.graph_tensors`) yields a ranked
list of plans: heuristics mode A, then the
fallback list. Every plan that builds is run once on poisoned output and checked against
the float64 reference, then timed with :func:`autoconv.gpu.timing.time_calls` -- CUDA-graph
replay of many calls over rotating buffer sets larger than twice the L2 cache, exactly as
autoconv's own kernels are timed -- and the fastest correct plan is cuDNN's answer: what
``cudnnFind`` or PyTorch's ``cudnn.benchmark`` would pick.

Modes:

- ``strict`` (float32 problems): plans with the tensor-core numerical note are deselected, so
  every multiply is an FP32 one. The output must match the reference at
  :data:`STRICT_TOLERANCE` (1e-5; TF32 lands near 3e-4), which also catches an engine that
  would use TF32 without the note. The baseline of fp32 problems.
- ``tf32`` (float32 problems): every plan, tensor-core (TF32) engines included; the baseline
  of tf32 problems, shown beside strict for fp32 ones.
- ``bf16``, ``fp16`` (16-bit problems, NHWC): every plan, checked at the problem's own
  tolerance (:func:`autoconv.verify.tolerance.tolerance`: the bound of float32 sums and one
  rounding to the output type).

The frontend graph, its plans and :class:`~autoconv.runtime.cudnn.CudnnConv` (one named plan run
on raw pointers, for ``autoconv.conv2d``) live in :mod:`autoconv.runtime.cudnn`.

An optional PyTorch column, :func:`time_torch`, times ``torch.nn.functional.conv2d``
(``cudnn.benchmark`` on, TF32 off for fp32 problems and on for tf32 ones; for 16-bit problems
on bf16/fp16 channels_last tensors, what ``torch.autocast`` with ``channels_last`` runs) the
same way, through torch's own CUDA graphs; unlike theirs, its calls' outputs share one block
(see :func:`time_torch`).

CuPy and the frontend (``pip install nvidia-cudnn-frontend``, the ``cudnn`` extra) are
imported only when a function here is called.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy

from autoconv.dtypes import POISON_BITS
from autoconv.errors import AutoconvError
from autoconv.gpu.timing import Timing, buffer_sets_for, time_calls
from autoconv.problems.problem import ConvProblem
from autoconv.runtime.cudnn import (
    HEURISTICS,
    MODES_OF_PRECISION,
    STRICT,
    TF32,
    CudnnGraph,
    CudnnUnsupported,
    decline_errors,
    one_line,
    parse_plan_name,
    safe_plan_name,
)
from autoconv.verify.compare import FLOAT32_TOLERANCE, check_result

#: Relative L2 error a plan may have against the float64 reference, per mode. Strict
#: plans compute in FP32 (rounding ~1e-7 to 1e-6, Winograd and FFT a little more); TF32
#: rounds the inputs to 10 mantissa bits (~3e-4 for random data).
STRICT_TOLERANCE = FLOAT32_TOLERANCE
TF32_TOLERANCE = 2e-3
TOLERANCES = {STRICT: STRICT_TOLERANCE, TF32: TF32_TOLERANCE}

#: L2 size assumed when the device does not report one (the H100's).
DEFAULT_L2_BYTES = 50 * 1024 * 1024



# ---- results ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class PlanOutcome:
    """What happened to one plan of the ranked list.

    ``status`` is ``ok`` (verified and timed), ``not_built`` (the frontend declined to
    build it: unsupported, or deselected by the mode's tensor-core filter; or it needs more
    workspace than the limit), ``failed`` (it built but raised when executed) or ``wrong_result`` (its
    output missed the mode's tolerance); ``reason`` says why for the last three.
    """

    index: int
    name: str
    status: str
    workspace_bytes: int = 0
    error: float | None = None  # relative L2 error vs the float64 reference
    time_ms: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class BaselineResult:
    """cuDNN's best plan for one problem in one mode."""

    mode: str
    problem: ConvProblem
    time_ms: float
    tflops: float
    plan_name: str  # e.g. "eng0_k2=1_k3=0": the engine and its knobs, cuDNN's identity
    plan_index: int
    engine_id: int | None
    knobs: Mapping[str, int]
    workspace_bytes: int
    plans_tried: int
    error_vs_reference: float
    timing: Timing
    plans: tuple[PlanOutcome, ...] = field(repr=False, default=())
    cudnn_version: int = 0

    @property
    def plans_ok(self) -> int:
        return sum(1 for p in self.plans if p.status == "ok")

    def cache_baseline(self, frontend_version: str = "") -> dict[str, Any]:
        """Keyword arguments of :meth:`autoconv.cache.winners.WinnerCache.set_baseline`: enough for
        :class:`CudnnConv` to rebuild this plan (``CudnnConv(problem, **plan)`` with the
        ``plan`` JSON's ``mode`` and ``plan_name``)."""
        plan = {"mode": self.mode, "plan_name": self.plan_name, "engine_id": self.engine_id,
                "knobs": dict(self.knobs), "workspace_bytes": self.workspace_bytes,
                "cudnn_version": self.cudnn_version, "cudnn_frontend": frontend_version}
        return {"name": f"cudnn-{self.mode}", "plan": json.dumps(plan, sort_keys=True),
                "time_ms": self.time_ms, "tflops": self.tflops}


# ---- operands --------------------------------------------------------------------------------

class OperandSets:
    """Independent input/output buffer sets on the GPU, together larger than twice the L2,
    as the kernels take them (the problem's layout and element types: :mod:`autoconv.problems.buffers`).

    Set 0 holds ``inputs`` (host float32 values, logical layouts, from
    :func:`autoconv.verify.reference.random_inputs`) and is the one outputs are checked on; the
    others are uniform in [-1, 1) too (never zeros: they can run faster than real data).
    """

    def __init__(self, problem: ConvProblem, inputs, *, l2_bytes: int, seed: int = 0,
                 max_sets: int = 256):
        import cupy

        from autoconv.gpu.memory import timing_set_bytes
        from autoconv.problems.buffers import kernel_buffer, output_buffer, random_buffer

        self.problem = problem
        self.count = buffer_sets_for(timing_set_bytes(problem), l2_bytes, max_sets)
        generator = cupy.random.default_rng(seed)

        def sets(name: str, values) -> list:
            return [cupy.asarray(kernel_buffer(problem, name, values))] + [
                random_buffer(problem, name, generator, cupy) for _ in range(self.count - 1)]

        x, w, bias = inputs
        self.x, self.w = sets("x", x), sets("w", w)
        self.bias = sets("bias", bias) if problem.bias else None
        self.y = [output_buffer(problem, cupy) for _ in range(self.count)]
        self.workspace: Any = None  # a CuPy array, once a plan needs one
        self._tolerances: dict[str, float] = {}

    def pointers(self, i: int) -> dict[str, int]:
        ptrs = {"x": self.x[i].data.ptr, "w": self.w[i].data.ptr, "y": self.y[i].data.ptr}
        if self.bias is not None:
            ptrs["bias"] = self.bias[i].data.ptr
        return ptrs

    def arrays(self, i: int) -> dict[str, Any]:
        """Set ``i`` as CuPy arrays by buffer name (x, w, y and bias if any)."""
        arrays = {"x": self.x[i], "w": self.w[i], "y": self.y[i]}
        if self.bias is not None:
            arrays["bias"] = self.bias[i]
        return arrays

    def workspace_ptr(self, nbytes: int) -> int:
        """A scratch buffer of at least ``nbytes`` (grown as needed, shared by all sets:
        calls on one stream run one after another)."""
        import cupy

        if nbytes <= 0:
            return 0
        if self.workspace is None or self.workspace.nbytes < nbytes:
            self.workspace = cupy.empty(nbytes, dtype=cupy.uint8)
        return self.workspace.data.ptr

    def poison_output(self, i: int = 0) -> None:
        self.y[i].fill(POISON_BITS[self.problem.output_dtype])

    def values(self, name: str, i: int = 0):
        """Tensor ``name`` (x, w, bias, y) of set ``i`` as float32 values in its logical layout
        (a view where the buffer already is one)."""
        import cupy

        from autoconv.problems.buffers import tensor_values

        buffer = {"x": self.x, "w": self.w, "bias": self.bias, "y": self.y}[name]
        assert buffer is not None  # (bias only where the problem has one)
        return tensor_values(self.problem, name, buffer[i], cupy)

    def tolerance(self, problem: ConvProblem, reference) -> float:
        """:func:`autoconv.verify.tolerance.tolerance` of ``problem`` (this set's, or it with
        another output type) on set 0's inputs and their float64 ``reference``, computed once per
        problem: a 16-bit problem's bound costs a convolution of its own, and every side (autoconv,
        each cuDNN plan, PyTorch in every round) is checked against it."""
        import cupy

        from autoconv.verify.tolerance import tolerance

        key = problem.key()
        if key not in self._tolerances:
            self._tolerances[key] = tolerance(problem, self.values("x"), self.values("w"), reference, xp=cupy)
        return self._tolerances[key]


def reference_output(problem: ConvProblem, operands: OperandSets):
    """The float64 reference of set 0, on the GPU."""
    import cupy

    from autoconv.verify.reference import conv2d_reference

    bias = operands.values("bias") if operands.bias is not None else None
    return conv2d_reference(problem, operands.values("x"), operands.values("w"), bias, xp=cupy)


def plan_tolerance(problem: ConvProblem, mode: str, operands: OperandSets, reference) -> float:
    """The relative L2 error a cuDNN plan's output may have in ``mode``: the mode's for float32
    problems (:data:`TOLERANCES`), the problem's own for 16-bit ones."""
    if mode in TOLERANCES:
        return TOLERANCES[mode]
    return operands.tolerance(problem, reference)


def device_l2_bytes() -> int:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())
    return int(props.get("l2CacheSize", 0)) or DEFAULT_L2_BYTES


# ---- the search over plans -------------------------------------------------------------------

def find_best_plan(problem: ConvProblem, mode: str = STRICT, *, inputs=None, seed: int = 0,
                   samples: int = 7, operands: OperandSets | None = None, reference=None,
                   workspace_limit: int | None = None, heuristics: tuple[str, ...] = HEURISTICS,
                   log=None) -> BaselineResult:
    """cuDNN's fastest correct plan for ``problem`` in ``mode`` (see the module docstring).

    Args:
        inputs: host ``(x, w, bias)`` float32 arrays checked on; drawn with ``seed`` if None.
        operands, reference: reuse buffer sets and the float64 reference of set 0 across
            calls (both modes, autoconv's kernels); made here if None.
        workspace_limit: leave out plans needing more scratch bytes than this.
        heuristics: the cuDNN heuristics whose plans are tried (``cudnn.heur_mode`` names).
        log: optional ``callable(str)`` told about every plan.

    Raises:
        BackendUnavailable: no CuPy, GPU or cuDNN frontend.
        CudnnUnsupported: no plan built and verified; the message lists every plan's fate.
    """
    import cupy

    from autoconv.verify.reference import random_inputs

    graph = CudnnGraph(problem, mode, workspace_limit=workspace_limit, heuristics=heuristics)
    if operands is None:
        if inputs is None:
            inputs = random_inputs(problem, numpy.random.default_rng(seed))
        operands = OperandSets(problem, inputs, l2_bytes=device_l2_bytes(), seed=seed + 1)
    if reference is None:
        reference = reference_output(problem, operands)
    tolerance = plan_tolerance(problem, mode, operands, reference)
    declines = decline_errors(graph.cudnn)

    outcomes: list[PlanOutcome] = []
    timings: dict[int, Timing] = {}
    errors: dict[int, float] = {}
    for index in range(graph.plan_count):
        name = safe_plan_name(graph, index)
        try:
            graph.build(index)
            workspace_bytes = graph.workspace_bytes(index)
        except declines as err:
            outcomes.append(PlanOutcome(index, name, "not_built", reason=one_line(err)))
            continue
        if workspace_limit is not None and workspace_bytes > workspace_limit:
            outcomes.append(PlanOutcome(index, name, "not_built", workspace_bytes,
                                        reason=f"needs {workspace_bytes} workspace bytes, over the "
                                               f"limit of {workspace_limit}"))
            continue
        workspace = operands.workspace_ptr(workspace_bytes)
        stream = cupy.cuda.get_current_stream()
        operands.poison_output(0)
        try:
            graph.execute(index, operands.pointers(0), workspace, stream.ptr)
            stream.synchronize()
        except declines as err:
            outcomes.append(PlanOutcome(index, name, "failed", workspace_bytes, reason=one_line(err)))
            continue
        verdict = check_result(operands.values("y"), reference, tolerance)
        if not verdict.ok:
            outcomes.append(PlanOutcome(index, name, "wrong_result", workspace_bytes,
                                        error=verdict.error, reason=verdict.message))
            if log:
                log(f"  cuDNN {mode} plan {index} {name}: wrong result: {verdict.message}")
            continue

        def enqueue(i, index=index, workspace=workspace):
            graph.execute(index, operands.pointers(i), workspace, cupy.cuda.get_current_stream().ptr)

        timing = time_calls(enqueue, operands.count, samples=samples)
        timings[index], errors[index] = timing, verdict.error
        outcomes.append(PlanOutcome(index, name, "ok", workspace_bytes, error=verdict.error,
                                    time_ms=timing.median_ms))
        if log:
            log(f"  cuDNN {mode} plan {index} {name}: {timing.median_ms:.4f} ms "
                f"(error {verdict.error:.2e}, workspace {workspace_bytes} B, graph={timing.graph})")

    if not timings:
        fates = "\n  ".join(f"[{o.index}] {o.name}: {o.status} {o.reason}" for o in outcomes) or "no plans"
        raise CudnnUnsupported(f"cuDNN ({mode}) has no working plan for {problem.shape_str()}:\n  {fates}")
    best = min(timings, key=lambda i: timings[i].median_ms)
    plan_name = safe_plan_name(graph, best)
    engine_id, knobs = parse_plan_name(plan_name)
    timing = timings[best]
    return BaselineResult(
        mode=mode, problem=problem, time_ms=timing.median_ms, tflops=timing.tflops(problem.flops),
        plan_name=plan_name, plan_index=best, engine_id=engine_id, knobs=knobs,
        workspace_bytes=next(o.workspace_bytes for o in outcomes if o.index == best),
        plans_tried=graph.plan_count, error_vs_reference=errors[best], timing=timing,
        plans=tuple(outcomes), cudnn_version=int(graph.cudnn.backend_version()))


# ---- PyTorch, optional -----------------------------------------------------------------------

@dataclass(frozen=True)
class TorchResult:
    time_ms: float
    tflops: float
    error_vs_reference: float
    timing: Timing
    torch_version: str


def torch_unavailable_reason(problem: ConvProblem) -> str | None:
    """Why the PyTorch column is empty for ``problem``, or None if it can be measured."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "PyTorch sees no CUDA device"
    top, bottom, left, right = problem.padding
    if top != bottom or left != right:
        # F.conv2d pads symmetrically; an extra F.pad would time a second kernel.
        return "asymmetric padding (torch.nn.functional.conv2d pads symmetrically)"
    return None


def torch_problem(problem: ConvProblem) -> ConvProblem:
    """The problem torch computes for ``problem``: its output is in the inputs' type (a 16-bit
    problem asking for float32 outputs gets 16-bit ones from ``F.conv2d``, as under autocast),
    so it is checked at that problem's tolerance."""
    return problem.with_(out_dtype=None) if problem.out_dtype else problem


def _torch_tensors(problem: ConvProblem, buffers: list):
    """Zero-copy torch views (DLPack) of CuPy buffers, in the logical shape: 16-bit bit
    patterns viewed as bfloat16/float16, NHWC buffers as channels_last tensors."""
    import torch

    types = {"bfloat16": torch.bfloat16, "float16": torch.float16}
    tensors = []
    for buffer in buffers:
        tensor = torch.from_dlpack(buffer)
        if problem.dtype in types:
            tensor = tensor.view(types[problem.dtype])
        if tensor.dim() == 4 and problem.layout == "NHWC":
            tensor = tensor.permute(0, 3, 1, 2)  # N,H,W,C memory -> N,C,H,W logical (channels_last)
        tensors.append(tensor)
    return tensors


def time_torch(problem: ConvProblem, operands: OperandSets, reference, *, samples: int = 7,
               warmup: int = 2, target_ms: float = 4.0, tf32: bool = False) -> TorchResult | None:
    """``torch.nn.functional.conv2d`` on the same operands (``cudnn.benchmark`` on, TF32
    allowed when ``tf32``; 16-bit problems on bf16/fp16 channels_last tensors), checked against
    ``reference`` at the precision's tolerance (:func:`torch_problem`'s), then timed like
    :func:`autoconv.gpu.timing.time_calls`: many calls over the rotating sets captured in one
    CUDA graph (torch's own, so its allocator knows about the capture), warm-up replays,
    median of ``samples`` replays. None when :func:`torch_unavailable_reason` says so.

    Unlike the other columns' calls, these write one output block: each output is freed at once
    and the graph's pool hands its block to the next call, so an output smaller than the L2 stays
    there. That favours PyTorch, by ~2% on a geometric mean, up to 16% on the smallest layers;
    keeping every output alive instead made cuDNN fail under capture on some tf32 layers, for a
    cause not found (docs/lab-notes/2026-11-27-cudnn-baseline-and-pytorch-column.md).

    Raises:
        AutoconvError: torch's output disagrees with the reference.
    """
    if torch_unavailable_reason(problem) is not None:
        return None
    import torch
    import torch.nn.functional as F

    torch.backends.cudnn.enabled = True
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    import cupy

    cupy.cuda.Device().synchronize()  # the operands were written on CuPy's streams

    # Zero-copy views of the CuPy buffers (DLPack): torch runs on exactly the same data.
    xs, ws = _torch_tensors(problem, operands.x), _torch_tensors(problem, operands.w)
    bs = _torch_tensors(problem, operands.bias) if operands.bias is not None else None
    if problem.precision in ("bf16", "fp16"):
        checked_problem = torch_problem(problem)
        tolerance = plan_tolerance(checked_problem, MODES_OF_PRECISION[problem.precision][0], operands, reference)
        if problem.bias:
            # F.conv2d rounds the convolution to the 16-bit type, then adds the bias and rounds
            # again (seen on an H100: 2.3e-3 against a once-rounded bound of 1.7e-3): the second
            # rounding adds at most as much again.
            tolerance *= 2
    else:
        tolerance = TF32_TOLERANCE if tf32 else STRICT_TOLERANCE
    kwargs: dict[str, Any] = dict(stride=problem.stride, padding=(problem.padding[0], problem.padding[2]),
                                  dilation=problem.dilation)

    def call(i):
        return F.conv2d(xs[i], ws[i], bs[i] if bs is not None else None, **kwargs)

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(operands.count):  # cudnn.benchmark picks its algorithm here
            out = call(i)
            if i == 0:
                checked = out
        stream.synchronize()
        verdict = check_result(cupy.from_dlpack(checked.detach().float().contiguous()), reference, tolerance)
        if not verdict.ok:
            raise AutoconvError(f"torch.nn.functional.conv2d disagrees with the reference for "
                                f"{problem.shape_str()}: {verdict.message}")
        del out, checked

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        call(0)
        end.record(stream)
        end.synchronize()
        single_ms = start.elapsed_time(end)
        calls = max(operands.count, min(int(target_ms / max(single_ms, 1e-3)), 2000))
        calls = max(1, round(calls / operands.count)) * operands.count

        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for c in range(calls):
                call(c % operands.count)  # outputs are freed at once: the graph's pool reuses them
        for _ in range(warmup):
            graph.replay()
        per_call = []
        for _ in range(samples):
            start.record(stream)
            graph.replay()
            end.record(stream)
            end.synchronize()
            per_call.append(start.elapsed_time(end) / calls)
    timing = Timing(median_ms=statistics.median(per_call), min_ms=min(per_call), max_ms=max(per_call),
                    samples_ms=tuple(per_call), calls_per_sample=calls, graph=True)
    return TorchResult(time_ms=timing.median_ms, tflops=timing.tflops(problem.flops),
                       error_vs_reference=verdict.error, timing=timing, torch_version=torch.__version__)
