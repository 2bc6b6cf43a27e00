"""The cuDNN frontend: a convolution graph, its plans, and one plan run on raw pointers.

:class:`CudnnGraph` is the frontend graph ``y = conv_fprop(x, w) [+ bias]`` for one problem in
one mode, with its ranked plans (heuristics mode A, then the fallback list);
:mod:`autoconv.bench.baseline` searches them. :class:`CudnnConv`
rebuilds one named plan (the winner recorded in the cache) and runs it on raw device
pointers: that is how ``autoconv.conv2d`` calls cuDNN where cuDNN won. It lives in the runtime,
which runs it, and the benchmark (a layer above) imports it from here.

Modes: for float32 problems (NCHW), ``strict`` deselects plans with the tensor-core numerical
note (every multiply an FP32 one) and ``tf32`` keeps every plan; for 16-bit problems, ``bf16``
and ``fp16`` (16-bit x, w and bias in the problem's layout, float32 accumulation, the output in
the problem's output type: what PyTorch's autocast runs) keep every plan. CuPy and the frontend
(``pip install nvidia-cudnn-frontend``, the ``cudnn`` extra) are imported only when a function here
is called.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autoconv.errors import AutoconvError, BackendUnavailable
from autoconv.problems.problem import ConvProblem

STRICT = "strict"
TF32 = "tf32"
BF16 = "bf16"
FP16 = "fp16"
MODES = (STRICT, TF32, BF16, FP16)
#: The modes that compute each precision's problems: the first is the precision's own (its
#: baseline); float32 problems are measured in both float32 modes, side by side.
MODES_OF_PRECISION = {"fp32": (STRICT, TF32), "tf32": (TF32, STRICT), "bf16": (BF16,), "fp16": (FP16,)}
#: The cuDNN heuristics whose ranked plans a graph offers, in order (``cudnn.heur_mode`` names):
#: mode A's, then the fallback list, what PyTorch's ``cudnn.benchmark`` chooses from.
HEURISTICS = ("A", "FALLBACK")

INSTALL_HINT = ("install the cuDNN frontend: pip install nvidia-cudnn-frontend "
                "(or pip install 'autoconv[cudnn]'); it needs cuDNN 9 (pip install nvidia-cudnn-cu12 "
                "or -cu13, or PyTorch's copy)")


class CudnnUnsupported(AutoconvError):
    """cuDNN has no plan that builds and computes the problem correctly in this mode."""


# ---- the frontend --------------------------------------------------------------------------

def import_cudnn():
    """The ``cudnn`` frontend module, or :class:`BackendUnavailable` saying how to get it."""
    try:
        import cudnn
    except ImportError as err:
        raise BackendUnavailable(f"the cuDNN frontend cannot be imported ({err}); {INSTALL_HINT}") from None
    if not hasattr(cudnn, "pygraph"):
        raise BackendUnavailable(f"cudnn {getattr(cudnn, '__version__', '?')} has no pygraph; "
                                 f"autoconv needs nvidia-cudnn-frontend >= 1.8")
    return cudnn


_HANDLES: dict[int, Any] = {}


def cudnn_handle():
    """One cuDNN handle per device, created on first use (creating one costs ~100 ms)."""
    import cupy

    cudnn = import_cudnn()
    device = cupy.cuda.runtime.getDevice()
    if device not in _HANDLES:
        _HANDLES[device] = cudnn.create_handle()
    return _HANDLES[device]


def cudnn_versions() -> dict[str, Any]:
    """The backend library's and the frontend's versions, for the results' environment."""
    cudnn = import_cudnn()
    return {"cudnn": int(cudnn.backend_version()), "cudnn_frontend": cudnn.__version__}


def decline_errors(cudnn) -> tuple[type[BaseException], ...]:
    """The exceptions by which the frontend says "this plan cannot be built or run here":
    an unsupported-graph error, a backend status surfaced as RuntimeError, a plan barred by
    a note filter (ValueError), or a python engine missing its optional packages."""
    return (cudnn.cudnnGraphNotSupportedError, RuntimeError, ValueError, NotImplementedError,
            ImportError)


@dataclass(frozen=True)
class GraphTensor:
    """One tensor of the frontend graph: logical dims (N,C,H,W / K,C,R,S / N,K,P,Q / 1,K,1,1),
    element strides of its buffer and its element type."""

    dims: list[int]
    strides: list[int]
    dtype: str


def graph_tensors(problem: ConvProblem) -> dict[str, GraphTensor]:
    """The graph's tensors for ``problem``'s buffers as autoconv's kernels take them
    (:mod:`autoconv.problems.buffers`): dims always in the logical order, strides of the problem's layout
    (NHWC, KRSC and NPQK for an NHWC problem: PyTorch's channels_last), inputs and bias in the
    problem's dtype, the output in its output type."""
    tensors = {
        "x": GraphTensor(list(problem.input_shape), list(problem.strides(problem.input_shape)), problem.dtype),
        "w": GraphTensor(list(problem.weight_shape), list(problem.strides(problem.weight_shape)), problem.dtype),
        "y": GraphTensor(list(problem.output_shape), list(problem.strides(problem.output_shape)),
                         problem.output_dtype),
    }
    if problem.bias:
        # A K-vector broadcast over N, P and Q.
        tensors["bias"] = GraphTensor([1, problem.K, 1, 1], [problem.K, 1, 1, 1], problem.dtype)
    return tensors


class CudnnGraph:
    """The frontend graph of one problem in one mode and its ranked plans.

    Plans are addressed by their index in the ranked list; :meth:`build` one before
    :meth:`execute`-ing it. Buffers are raw device pointers named as in
    :data:`autoconv.kernels.families.BUFFER_NAMES` (``x``, ``w``, ``bias``, ``y``) plus the
    workspace's.
    """

    def __init__(self, problem: ConvProblem, mode: str = STRICT, handle=None,
                 workspace_limit: int | None = None, heuristics: tuple[str, ...] = HEURISTICS):
        if mode not in MODES:
            raise AutoconvError(f"cuDNN mode {mode!r} is unknown; use one of {', '.join(MODES)}")
        if mode not in MODES_OF_PRECISION[problem.precision]:
            raise CudnnUnsupported(f"cuDNN mode {mode} does not compute {problem.precision} problems; "
                                   f"use {' or '.join(MODES_OF_PRECISION[problem.precision])}")
        self.cudnn = cudnn = import_cudnn()
        self.problem = problem
        self.mode = mode
        self.handle = handle if handle is not None else cudnn_handle()
        self.graph, self.tensors = self._make_graph()
        self.graph.validate()
        self.graph.build_operation_graph()
        self.graph.create_execution_plans([getattr(cudnn.heur_mode, name) for name in heuristics])
        if mode == STRICT:
            # Engines that run the multiplies on tensor cores (TF32 for float32 data).
            self.graph.deselect_numeric_notes([cudnn.numerical_note.TENSOR_CORE])
        if workspace_limit is not None:
            # The scratch limit autoconv's own kernels are held to (config workspace_limit_mb).
            self.graph.deselect_workspace_greater_than(int(workspace_limit))
        count = self.graph.get_execution_plan_count
        self.plan_count = int(count() if callable(count) else count)
        self._built: set[int] = set()

    def _make_graph(self):
        cudnn, p = self.cudnn, self.problem
        spec = graph_tensors(p)
        types = {"float32": cudnn.data_type.FLOAT, "bfloat16": cudnn.data_type.BFLOAT16,
                 "float16": cudnn.data_type.HALF}
        fp32, io = cudnn.data_type.FLOAT, types[p.dtype]
        graph = cudnn.pygraph(io_data_type=io, intermediate_data_type=fp32, compute_data_type=fp32,
                              handle=self.handle)
        x = graph.tensor(name="x", dim=spec["x"].dims, stride=spec["x"].strides, data_type=io)
        w = graph.tensor(name="w", dim=spec["w"].dims, stride=spec["w"].strides, data_type=io)
        top, bottom, left, right = p.padding
        y = graph.conv_fprop(image=x, weight=w, pre_padding=[top, left], post_padding=[bottom, right],
                             stride=list(p.stride), dilation=list(p.dilation), compute_data_type=fp32,
                             name="conv")
        tensors = {"x": x, "w": w}
        if p.bias:
            # A K-vector broadcast over N, P and Q: dims 1xKx1x1, dense strides.
            bias = graph.tensor(name="bias", dim=spec["bias"].dims, stride=spec["bias"].strides, data_type=io)
            y = graph.add(a=y, b=bias, compute_data_type=fp32, name="bias_add")
            tensors["bias"] = bias
        y.set_output(True).set_data_type(types[p.output_dtype])
        y.set_dim(spec["y"].dims).set_stride(spec["y"].strides)
        tensors["y"] = y
        return graph, tensors

    # ---- plans ----------------------------------------------------------------------------
    def plan_name(self, index: int) -> str:
        return str(self.graph.get_plan_name_at_index(index))

    def build(self, index: int) -> None:
        """Build plan ``index``; raises one of the frontend's decline errors if it cannot."""
        if index not in self._built:
            self.graph.build_plan_at_index(index)
            self._built.add(index)

    def workspace_bytes(self, index: int) -> int:
        return int(self.graph.get_workspace_size_plan_at_index(index))

    def execute(self, index: int, buffers: Mapping[str, int], workspace: int, stream: int) -> None:
        """Enqueue plan ``index`` on ``stream`` (a ``cudaStream_t`` as int) with the given
        device pointers; ``workspace`` must hold :meth:`workspace_bytes` bytes (0 if none)."""
        # set_stream is cached by the frontend: free when the stream is unchanged.
        self.cudnn.set_stream(self.handle, stream)
        pack = {self.tensors[name]: int(buffers[name]) for name in self.tensors}
        self.graph.execute_plan_at_index(pack, workspace, index, handle=self.handle)


def parse_plan_name(name: str) -> tuple[int | None, dict[str, int]]:
    """The engine id and knobs a cuDNN plan name spells: ``eng38_k2=1_k13=0`` is engine 38
    with knob 2 = 1 and knob 13 = 0. The name is cuDNN's own identity of a plan (the
    frontend's knob objects do not all have Python names), so autoconv keeps the name and
    reads these off it. ``(None, {})`` for a name of another form."""
    match = _PLAN_NAME.fullmatch(name)
    if not match:
        return None, {}
    knobs = {f"k{k}": int(v) for k, v in _PLAN_KNOB.findall(match.group(2) or "")}
    return int(match.group(1)), knobs


_PLAN_NAME = re.compile(r"eng(\d+)((?:_k\d+=-?\d+)*)")
_PLAN_KNOB = re.compile(r"_k(\d+)=(-?\d+)")


def safe_plan_name(graph: CudnnGraph, index: int) -> str:
    """Plan ``index``'s name, or a stand-in saying why cuDNN gives none."""
    try:
        return graph.plan_name(index)
    except decline_errors(graph.cudnn) as err:
        return f"plan{index} (unnamed: {one_line(err)})"


def one_line(err: BaseException) -> str:
    """``err`` on one line, for failure lists."""
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text[:300]}"


# ---- one plan, for the runtime ---------------------------------------------------------------

class CudnnConv:
    """One cuDNN plan for one problem, built once, run on raw device pointers.

    ``plan_name`` is the name :func:`find_best_plan` returned (stored in the cache as
    ``baseline_plan``); the plan is found again among the heuristics' plans, which are
    the same for the same problem, GPU and cuDNN version. When it is not there (another
    cuDNN version), the first plan that builds is used and ``exact`` is False.

    Usage::

        conv = CudnnConv(problem, "strict", plan_name)
        conv(x.data.ptr, w.data.ptr, y.data.ptr, bias_ptr)  # on CuPy's current stream
    """

    def __init__(self, problem: ConvProblem, mode: str = STRICT, plan_name: str | None = None):
        self.problem = problem
        self.mode = mode
        self.graph = CudnnGraph(problem, mode)
        declines = decline_errors(self.graph.cudnn)
        names = [safe_plan_name(self.graph, i) for i in range(self.graph.plan_count)]
        order = list(range(self.graph.plan_count))
        if plan_name is not None and plan_name in names:
            order.remove(names.index(plan_name))
            order.insert(0, names.index(plan_name))
        built: int | None = None
        failures = []
        for index in order:
            try:
                self.graph.build(index)
            except declines as err:
                failures.append(f"[{index}] {names[index]}: {one_line(err)}")
                continue
            built = index
            break
        if built is None:
            raise CudnnUnsupported(f"cuDNN ({mode}) can build no plan for {problem.shape_str()}:\n  "
                                   + "\n  ".join(failures or ["no plans"]))
        self.index: int = built
        self.plan_name = names[self.index]
        self.exact = plan_name is None or self.plan_name == plan_name
        self.workspace_bytes = self.graph.workspace_bytes(self.index)
        self._workspace: Any = None  # a CuPy array, allocated on the first call that brings none

    @classmethod
    def from_baseline_plan(cls, problem: ConvProblem, baseline_plan: str) -> CudnnConv:
        """Rebuild the plan a cache entry's ``baseline_plan`` JSON names (as written by
        :meth:`BaselineResult.cache_baseline`)."""
        try:
            plan = json.loads(baseline_plan)
            mode, name = plan["mode"], plan["plan_name"]
        except (json.JSONDecodeError, TypeError, KeyError) as err:
            raise AutoconvError(f"cached cuDNN plan {baseline_plan!r} is malformed ({err}); "
                                f"run `autoconv bench` again to re-measure it") from None
        return cls(problem, mode, name)

    def __call__(self, x: int, w: int, y: int, bias: int | None = None, *,
                 stream: int | None = None, workspace: int | None = None) -> None:
        """Enqueue ``y = conv(x, w) [+ bias]`` on ``stream`` (CuPy's current stream if None).
        Pointers are device addresses of the problem's dense buffers (:func:`graph_tensors`:
        NCHW / KCRS / NKPQ float32 for float32 problems).
        ``workspace`` points at :attr:`workspace_bytes` bytes of scratch; without it the
        object's own scratch is used, so then do not run one instance on two streams at
        once."""
        import cupy

        if self.problem.bias and bias is None:
            raise AutoconvError(f"problem {self.problem.shape_str()} has a bias; pass its pointer")
        buffers = {"x": x, "w": w, "y": y}
        if self.problem.bias:
            assert bias is not None  # (refused above)
            buffers["bias"] = bias
        if stream is None:
            stream = cupy.cuda.get_current_stream().ptr
        if workspace is None:
            if self.workspace_bytes and self._workspace is None:
                self._workspace = cupy.empty(self.workspace_bytes, dtype=cupy.uint8)
            workspace = self._workspace.data.ptr if self.workspace_bytes else 0
        self.graph.execute(self.index, buffers, workspace, stream)

    def forward(self, x, w, bias=None):
        """Convenience for CuPy arrays (buffers as :mod:`autoconv.problems.buffers` makes them): returns a
        new output buffer."""
        import cupy

        from autoconv.problems.buffers import output_buffer

        y = output_buffer(self.problem, cupy)
        self(x.data.ptr, w.data.ptr, y.data.ptr, None if bias is None else bias.data.ptr)
        return y
