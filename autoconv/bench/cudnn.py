"""The cuDNN frontend: a convolution graph, its plans, and one plan run on raw pointers.

:class:`CudnnGraph` is the frontend graph ``y = conv_fprop(x, w) [+ bias]`` (float32 in,
out and compute, NCHW) for one problem in one mode, with its ranked plans (heuristics mode
A, then the fallback list); :mod:`autoconv.bench.baseline` searches them. :class:`CudnnConv`
rebuilds one named plan (the winner recorded in the cache) and runs it on raw device
pointers: that is how ``autoconv.conv2d`` calls cuDNN where cuDNN won.

Two modes: ``strict`` deselects plans with the tensor-core numerical note (every multiply an
FP32 one); ``tf32`` keeps every plan. CuPy and the frontend (``pip install
nvidia-cudnn-frontend``, the ``cudnn`` extra) are imported only when a function here is called.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from autoconv.errors import AutoconvError, BackendUnavailable
from autoconv.problems.problem import ConvProblem

STRICT = "strict"
TF32 = "tf32"
MODES = (STRICT, TF32)

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


def _dense_strides(shape: Sequence[int]) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return list(reversed(strides))


class CudnnGraph:
    """The frontend graph of one problem in one mode and its ranked plans.

    Plans are addressed by their index in the ranked list; :meth:`build` one before
    :meth:`execute`-ing it. Buffers are raw device pointers named as in
    :data:`autoconv.kernels.families.BUFFER_NAMES` (``x``, ``w``, ``bias``, ``y``) plus the
    workspace's.
    """

    def __init__(self, problem: ConvProblem, mode: str = STRICT, handle=None,
                 workspace_limit: int | None = None):
        if mode not in MODES:
            raise AutoconvError(f"cuDNN mode {mode!r} is unknown; use one of {', '.join(MODES)}")
        if problem.dtype != "float32" or problem.layout != "NCHW":
            raise CudnnUnsupported(f"the cuDNN baseline handles float32 NCHW problems, "
                                   f"not {problem.dtype} {problem.layout}")
        self.cudnn = cudnn = import_cudnn()
        self.problem = problem
        self.mode = mode
        self.handle = handle if handle is not None else cudnn_handle()
        self.graph, self.tensors = self._make_graph()
        self.graph.validate()
        self.graph.build_operation_graph()
        self.graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
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
        fp32 = cudnn.data_type.FLOAT
        graph = cudnn.pygraph(io_data_type=fp32, intermediate_data_type=fp32, compute_data_type=fp32,
                              handle=self.handle)
        x = graph.tensor(name="x", dim=list(p.input_shape), stride=_dense_strides(p.input_shape),
                         data_type=fp32)
        w = graph.tensor(name="w", dim=list(p.weight_shape), stride=_dense_strides(p.weight_shape),
                         data_type=fp32)
        top, bottom, left, right = p.padding
        y = graph.conv_fprop(image=x, weight=w, pre_padding=[top, left], post_padding=[bottom, right],
                             stride=list(p.stride), dilation=list(p.dilation), compute_data_type=fp32,
                             name="conv")
        tensors = {"x": x, "w": w}
        if p.bias:
            # A K-vector broadcast over N, P and Q: dims 1xKx1x1, dense strides.
            bias = graph.tensor(name="bias", dim=[1, p.K, 1, 1], stride=[p.K, 1, 1, 1], data_type=fp32)
            y = graph.add(a=y, b=bias, compute_data_type=fp32, name="bias_add")
            tensors["bias"] = bias
        y.set_output(True).set_data_type(fp32)
        y.set_dim(list(p.output_shape)).set_stride(_dense_strides(p.output_shape))
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
        Pointers are device addresses of dense NCHW / KCRS / NKPQ float32 tensors.
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
        """Convenience for CuPy arrays: returns a new output array."""
        import cupy

        y = cupy.empty(self.problem.output_shape, dtype=cupy.float32)
        self(x.data.ptr, w.data.ptr, y.data.ptr, None if bias is None else bias.data.ptr)
        return y
