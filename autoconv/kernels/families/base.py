"""What a kernel family is: a template, a search space, and how its kernels launch.

A family turns (problem, config) into a :class:`KernelPlan`: the rendered CUDA source
and the launches that, run in order, compute ``y = conv(x, w) + bias``. Backends (the
CuPy GPU backend, the CPU emulator) only execute plans; they know nothing of families.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from autoconv.errors import SearchSpaceError
from autoconv.kernels.limits import H100, DeviceLimits
from autoconv.kernels.space import DEFAULT_WORKSPACE_LIMIT, SearchSpace, load_search_space
from autoconv.kernels.tensor_maps import TensorMap
from autoconv.problems.problem import ConvProblem

#: The buffers a launch may take, in the order a family lists them.
BUFFER_NAMES = ("x", "w", "bias", "y", "workspace")

DTYPE_TAGS = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a plan.

    ``args`` names the buffers passed, in order (see :data:`BUFFER_NAMES`), or the plan's
    tensor maps (:attr:`KernelPlan.tensor_maps`), passed by value; problem sizes are
    compile-time constants of the source, or ``__constant__`` values set when the module loads
    (:attr:`KernelPlan.constants`), so kernels take nothing else.
    """

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[str, ...]
    shared_bytes: int = 0  # dynamic shared memory per block

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass(frozen=True)
class KernelPlan:
    family: str
    name: str  # the identity of (family, dtype, config): logs, cache, failure dumps
    problem: ConvProblem
    config: Mapping[str, object]
    source: str
    launches: tuple[Launch, ...]
    workspace_bytes: int
    values: Mapping[str, object] = field(repr=False, default_factory=dict)
    #: Tensor maps the launches take by name (TMA families): each is encoded by the launcher
    #: for the buffer it names (:mod:`autoconv.kernels.tensor_maps`).
    tensor_maps: Mapping[str, TensorMap] = field(default_factory=dict)
    #: A source built with its sizes at run time (:meth:`Family.plan`'s ``run_time_sizes``) declares them
    #: ``__constant__ int``: each loader (GPU module, emulated program) sets them to these
    #: values before the first launch. Empty for a source with the sizes compiled in.
    constants: Mapping[str, int] = field(default_factory=dict)

    @property
    def workspace_elements(self) -> int:
        """float32 elements of the workspace buffer (its bytes rounded up)."""
        return -(-self.workspace_bytes // 4)

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]


def config_hash(config: Mapping[str, object]) -> str:
    return hashlib.sha256(json.dumps(dict(config), sort_keys=True).encode()).hexdigest()[:8]


# A template's run-time values: `__constant__ int A, B;` at the start of a line (problem.cu.j2).
_CONSTANT_DECLARATION = re.compile(r"^__constant__ int ([A-Za-z_][A-Za-z0-9_]*(?:, *[A-Za-z_][A-Za-z0-9_]*)*);",
                                   re.MULTILINE)


def declared_constants(source: str) -> tuple[str, ...]:
    """The names a rendered source declares ``__constant__ int`` at file scope, in order."""
    return tuple(name.strip() for names in _CONSTANT_DECLARATION.findall(source) for name in names.split(","))


class Family:
    """Base class of kernel families. A subclass names its template and says how its
    kernels launch; its parameters, derived values and constraints live in its search
    space file, ``search_spaces/<name>.yaml``.
    """

    #: CLI name, also the search-space file's and the template's stem.
    name: str = ""
    #: One line for ``autoconv families`` and reports.
    summary: str = ""
    #: True when the kernels multiply on TF32 tensor cores at float32 accuracy (the 3xTF32
    #: split: three tensor-core products per multiply-add) rather than with float32 FMAs.
    tensor_cores: bool = False
    dtypes: tuple[str, ...] = ("float32",)
    layouts: tuple[str, ...] = ("NCHW",)
    #: The precisions (:data:`autoconv.problems.problem.PRECISIONS`) of the problems it serves.
    precisions: tuple[str, ...] = ("fp32",)
    #: Whether its templates build with the problem's sizes at run time (``__constant__`` values
    #: set on load, :attr:`KernelPlan.constants`) on request (:meth:`plan`'s ``run_time_sizes``):
    #: one compilation then serves every problem of a configuration and filter size.
    takes_run_time_sizes: bool = False

    def __init__(self) -> None:
        self._space: SearchSpace | None = None

    @property
    def template(self) -> str:
        return f"{self.name}.cu.j2"

    @property
    def space(self) -> SearchSpace:
        if self._space is None:
            self._space = load_search_space(self.name)
            if self._space.family != self.name:
                raise SearchSpaceError(
                    f"search space for {self.name!r} says family: {self._space.family!r}")
        return self._space

    def unsupported_reason(self, problem: ConvProblem) -> str | None:
        """Why this family cannot run the problem at all (dtype, layout, precision), or None."""
        if problem.precision not in self.precisions:
            return (f"{self.name} computes precision {', '.join(self.precisions)}, not {problem.precision}")
        if problem.dtype not in self.dtypes:
            return f"{self.name} implements dtype {', '.join(self.dtypes)}, not {problem.dtype}"
        if problem.layout not in self.layouts:
            return f"{self.name} implements layout {', '.join(self.layouts)}, not {problem.layout}"
        return None

    def kernel_name(self, problem: ConvProblem, config: Mapping[str, object]) -> str:
        """``implicit_gemm_f32_BM64_BN64_..._<hash>``: readable and unique per config (``tf32``
        in place of ``f32`` for a tf32 problem)."""
        params = "_".join(f"{k}{v}" for k, v in config.items())
        tag = "tf32" if problem.precision == "tf32" else DTYPE_TAGS[problem.dtype]
        return f"{self.name}_{tag}_{params}_{config_hash(config)}"

    def launches(self, name: str, values: Mapping[str, Any]) -> tuple[Launch, ...]:
        """The launches of a plan, from the kernel name and the evaluated space values."""
        raise NotImplementedError

    def tensor_maps(self, values: Mapping[str, Any]) -> dict[str, TensorMap]:
        """The tensor maps the launches take by name (none but in TMA families)."""
        return {}

    def workspace_bytes(self, values: Mapping[str, Any]) -> int:
        """Scratch memory the plan needs; search spaces derive ``WORKSPACE_BYTES``."""
        return int(values.get("WORKSPACE_BYTES", 0))

    def plan(self, problem: ConvProblem, config: Mapping[str, object] | None = None,
             device: DeviceLimits = H100,
             workspace_limit: int = DEFAULT_WORKSPACE_LIMIT, *,
             run_time_sizes: bool = False) -> KernelPlan:
        """Render and describe the kernels for ``config`` (the default when None).

        ``run_time_sizes``: the build whose sizes (but the filter's) come at run time, where the
        family has one (:attr:`takes_run_time_sizes`; else the sizes are compiled in anyway). The
        tuner ranks candidates with it, to compile a configuration once for all the problems it
        tries it on; it runs slower than the build with constants, which is what winners, the
        cache and the runtime use.

        Raises:
            SearchSpaceError: the config is invalid for this problem and device, with
                every constraint it breaks.
        """
        from autoconv.kernels.render import render_source

        reason = self.unsupported_reason(problem)
        if reason:
            raise SearchSpaceError(reason)
        if config is None:
            config = self.space.default_config(problem, device, workspace_limit)
        config = {name: config[name] for name in self.space.params if name in config} | dict(config)
        broken = self.space.violations(config, problem, device, workspace_limit)
        if broken:
            raise SearchSpaceError(
                f"{self.name} config {config} is invalid for {problem.shape_str()}:\n  "
                + "\n  ".join(broken))
        values = self.space.context(config, problem, device, workspace_limit)
        values = {**values, "RUN_TIME_SIZES": int(run_time_sizes and self.takes_run_time_sizes)}
        name = self.kernel_name(problem, config)
        source = render_source(self, problem, config, values, name)
        missing = [name for name in declared_constants(source) if name not in values]
        if missing:
            raise SearchSpaceError(f"templates/{self.template} declares __constant__ {', '.join(missing)}, which "
                                   f"search_spaces/{self.name}.yaml does not derive: the host could not set them")
        constants = {name: int(cast(int, values[name])) for name in declared_constants(source)}
        return KernelPlan(family=self.name, name=name, problem=problem, config=dict(config),
                          source=source, launches=self.launches(name, values),
                          workspace_bytes=self.workspace_bytes(values), values=values,
                          tensor_maps=self.tensor_maps(values), constants=constants)


def dim3(x, y=1, z=1) -> tuple[int, int, int]:
    return (int(x), int(y), int(z))


def grid_for(elements: int, threads: int) -> tuple[int, int, int]:
    """A 1-D grid with one thread per element."""
    return dim3(-(-elements // threads))
