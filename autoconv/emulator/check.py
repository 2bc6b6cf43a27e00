"""Verify kernel families on the CPU: render configurations, run them in the emulator,
compare with the float64 reference; and find the problems like a given one that take the code
paths it does not (:data:`PROBLEM_PATHS`: dilation, bias, precision, output type).

This is what ``autoconv verify --emulate`` (:mod:`autoconv.commands.verify`) runs, and
what CI runs for every family: no GPU needed.
A configuration passes when its output has no NaN or infinity (outputs start as NaN, so
an unwritten element fails) and its relative L2 error is within its precision's tolerance
(:mod:`autoconv.verify.tolerance`: 1e-5 for fp32, derived from the data for tf32). A kernel that
faults (AddressSanitizer, UBSan, a launch the GPU would refuse), does not compile under
emulation, or runs too long fails with the tools' report.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy

from autoconv.backends.base import Status
from autoconv.emulator import EmulatedKernelFault, EmulationTimeout, EmulatorCompileError, default_workers, emulate_plan
from autoconv.errors import AutoconvError, ProblemError, SearchSpaceError
from autoconv.kernels.families import Family, KernelPlan, get_family
from autoconv.kernels.limits import H100, DeviceLimits
from autoconv.problems.problem import ConvProblem, ceil_div
from autoconv.verify.compare import check_result
from autoconv.verify.reference import conv2d_reference, random_inputs
from autoconv.verify.tolerance import tolerance as result_tolerance

#: The statuses a check can have (:class:`~autoconv.backends.base.Status`, the backends'
#: and the tuner's vocabulary), each with the word ``autoconv verify --emulate`` prints for
#: it, in the order its summary lists them.
LABELS = {Status.OK: "ok", Status.WRONG_RESULT: "mismatch", Status.RUNTIME_FAILED: "fault",
          Status.TIMEOUT: "timeout", Status.COMPILE_FAILED: "compile error"}
STATUSES = tuple(LABELS)


@dataclass(frozen=True)
class EmulatedCheck:
    """The verdict on one configuration of a family, run in the emulator.

    ``status`` is one of :data:`STATUSES` (a fault is ``RUNTIME_FAILED``, a mismatch
    ``WRONG_RESULT``), ``label`` the word printed for it; ``error`` the relative L2 error when the kernel
    ran to the end (``inf`` when the output had NaN or infinity), else None; ``message``
    says why in a line or a few; ``details`` holds the full compiler or sanitizer output.
    """

    family: str
    kernel: str
    config: Mapping[str, object]
    status: Status
    error: float | None
    message: str
    details: str = field(default="", repr=False)

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @property
    def label(self) -> str:
        return LABELS[self.status]


#: The values that switch a family's kernels between code paths (a Jinja ``if``, an ``if
#: constexpr`` or a different instantiation in its templates), each with the values to cover:
#: None for all of a parameter's choices, or the values a derived one takes. Sampling covers
#: every value of each that is valid for the problem (:func:`sample_configs`), so a bug in one
#: path is found by construction, not when a random draw happens to take it. Values fixed by
#: the problem alone (HAS_BIAS, OUT_VEC: P*Q % 4) are the test shapes' to cover.
SWITCHES: dict[str, dict[str, tuple | None]] = {
    "direct": {"WEIGHT_VEC": (1, 4)},
    "im2col_gemm": {"COLUMNS": None, "A_VEC": (1, 4), "FRAG_M": (1, 4), "FRAG_N": (1, 4)},
    "implicit_gemm": {"GATHER": None, "SPLIT_K": None, "MIN_BLOCKS": None},
    "implicit_gemm_3xtf32": {"GATHER": None, "SPLIT_K": None, "MIN_BLOCKS": None, "STAGES": None},
    "implicit_gemm_mma": {"SPLIT": None, "ACCUMULATE": None, "GATHER": None, "SPLIT_K": None, "MIN_BLOCKS": None,
                          "STAGES": None},
    "implicit_gemm_wgmma": {"MMA_OVERLAP": None, "GATHER": None, "SPLIT_K": None, "MIN_BLOCKS": None,
                            "STAGES": None, "A_SHARED": (0, 1)},
    # WGN: each width is its own asm statement (wgmma m64nNk16)
    "implicit_gemm_wgmma_f16": {"WGN": None, "BK": None, "MMA_PENDING": None, "MIN_BLOCKS": None, "STAGES": None,
                                "SPLIT_K": None, "SCHEDULE": None, "PAD_CHANNELS": None},
    # BN: each width is its own asm statement; CONSUMERS: one or two warpgroups on a tile's rows;
    # SCHEDULE: cooperative or ping-pong consumers; EPILOGUE: staged or direct stores (float32
    # outputs); STAGED: derived (staged and no split-K) and PAD_CHANNELS: derived from the problem
    # (C % 8), listed so that a sample names them; PAD_PITCH: padded pixels of 16, 64 or 128 bytes
    # (x' and w' strides, the channels and K tiles the maps describe); FILTERS_ON_M: derived from
    # M_OPERAND, pixels or filters on wgmma's M side (the descriptors swapped, the accumulators
    # stored transposed); FLAT_STORES: derived (staged 16-byte stores of a tile spanning every
    # filter, as one contiguous run); REUSE_W: derived (each stage's w box copied once); A_SOURCE:
    # x's operand from the stages or (tf32 NCHW 1 x 1) loaded into wgmma's A registers, and
    # A_IN_REGISTERS, the name the template branches on; TRANSPOSE_X: derived (NCHW x transposed
    # into the workspace first)
    "implicit_gemm_wgmma_tma": {"BN": None, "CONSUMERS": None, "SPLIT_K": None, "SCHEDULE": None, "EPILOGUE": None,
                                "STAGED": (0, 1), "PAD_CHANNELS": (0, 1), "PAD_PITCH": None, "FILTERS_ON_M": (0, 1),
                                "FLAT_STORES": (0, 1), "REUSE_W": (0, 1), "A_SOURCE": None, "A_IN_REGISTERS": (0, 1),
                                "TRANSPOSE_X": (0, 1)},
}


def switch_values(family: Family) -> dict[str, tuple]:
    """:data:`SWITCHES` of ``family``, each with the values to cover."""
    return {name: family.space.params[name] if values is None else values
            for name, values in SWITCHES.get(family.name, {}).items()}


def switch_pairs(family: Family, config: Mapping[str, object], problem: ConvProblem,
                 device: DeviceLimits = H100) -> frozenset[tuple[str, object]]:
    """The (switch, value) pairs a configuration takes (see :data:`SWITCHES`)."""
    switches = switch_values(family)
    if all(name in config for name in switches):
        values: Mapping[str, object] = config
    else:  # a derived switch
        values = family.space.context(config, problem, device)
    return frozenset((name, values[name]) for name in switches)


def sample_configs(family: Family, problem: ConvProblem, samples: int, rng: numpy.random.Generator,
                   device: DeviceLimits = H100, covered: frozenset[tuple[str, object]] = frozenset()
                   ) -> list[dict[str, object]]:
    """Distinct valid configurations of ``family`` for ``problem``, stratified: the default
    first; then configurations that together take every value of every switch
    (:data:`SWITCHES`) that some valid configuration takes, but those in ``covered`` (switch
    values checked already, on another problem); then uniform draws from the rest of the valid
    space until there are ``samples`` (all of it when it is smaller). So there may be more than
    ``samples``: coverage of the code paths comes first.

    The valid space is listed (:meth:`~autoconv.kernels.space.SearchSpace.points`, well
    under a second). Coverage is a greedy set cover in an order drawn from ``rng``: each
    step takes the first configuration, in that order, that takes the most values not yet
    covered.

    Raises:
        SearchSpaceError: the family has no valid configuration for the problem.
    """
    space = family.space
    chosen = [space.default_config(problem, device)]
    points = space.points(problem, device)
    keys = {_config_key(chosen[0])}
    others = [config for config in points if _config_key(config) not in keys]
    order = [others[i] for i in rng.permutation(len(others))]
    if switch_values(family):
        pairs = [switch_pairs(family, config, problem, device) for config in order]
        wanted = frozenset().union(*pairs) - switch_pairs(family, chosen[0], problem, device) - covered
        while wanted:
            gains = [len(p & wanted) for p in pairs]
            best = int(numpy.argmax(gains))
            chosen.append(order[best])
            wanted -= pairs[best]
            del order[best], pairs[best]
    return chosen + order[:max(samples - len(chosen), 0)]


def _config_key(config: Mapping[str, object]) -> tuple:
    return tuple(sorted(config.items()))


def verify_plan(plan: KernelPlan, rng: numpy.random.Generator, *, workers: int | None = None,
                timeout: float | None = None, tolerance: float | None = None) -> EmulatedCheck:
    """Run ``plan`` in the emulator on random inputs and compare with the reference, at
    ``tolerance`` (default: the problem's precision's, :func:`autoconv.verify.tolerance.tolerance`)."""
    problem = plan.problem
    x, w, bias = random_inputs(problem, rng)

    def failed(status: Status, err) -> EmulatedCheck:
        return EmulatedCheck(plan.family, plan.name, dict(plan.config), status, None, err.summary, err.output)

    try:
        y = emulate_plan(plan, x, w, bias, workers=workers, timeout=timeout)
    except EmulatorCompileError as err:
        return failed(Status.COMPILE_FAILED, err)
    except EmulationTimeout as err:
        return failed(Status.TIMEOUT, err)
    except EmulatedKernelFault as err:
        return failed(Status.RUNTIME_FAILED, err)
    reference = conv2d_reference(problem, x, w, bias)
    if tolerance is None:
        tolerance = result_tolerance(problem, x, w, reference)
    outcome = check_result(y, reference, tolerance)
    return EmulatedCheck(plan.family, plan.name, dict(plan.config), Status.OK if outcome.ok else Status.WRONG_RESULT,
                         outcome.error, outcome.message)


def verify_emulated(problem: ConvProblem, family: Family | str, config: Mapping[str, object] | None,
                    rng: numpy.random.Generator, *, workers: int | None = None,
                    timeout: float | None = None) -> EmulatedCheck:
    """Render ``config`` of ``family`` (its default when None) for ``problem``, run it in the
    emulator on random inputs drawn from ``rng``, and compare with the reference.

    Expected failures of the kernel are results (see :class:`EmulatedCheck`); a config
    the search space refuses raises :class:`SearchSpaceError`, a missing compiler
    :class:`~autoconv.emulator.EmulatorUnavailable`.
    """
    if isinstance(family, str):
        family = get_family(family)
    return verify_plan(family.plan(problem, config), rng, workers=workers, timeout=timeout)


def verify_configs(problem: ConvProblem, family: Family, configs: Sequence[Mapping[str, object]], seed: int, *,
                   jobs: int | None = None, on_check: Callable[[EmulatedCheck], None] | None = None
                   ) -> list[EmulatedCheck]:
    """Verify several configurations of a family, ``jobs`` at a time (compiling dominates,
    so jobs run in parallel; each run gets its share of the CPUs as block workers). The
    inputs of configuration i are drawn from ``default_rng([seed, i])``. ``on_check`` sees
    each result in order, as soon as it and those before it are done."""
    cpus = default_workers()
    jobs = max(1, min(jobs or cpus, len(configs) or 1))
    workers = max(1, cpus // jobs)

    def check(index: int) -> EmulatedCheck:
        rng = numpy.random.default_rng([seed, index])
        return verify_emulated(problem, family, configs[index], rng, workers=workers)

    results = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for result in pool.map(check, range(len(configs))):
            if on_check is not None:
                on_check(result)
            results.append(result)
    return results


def family_seed(seed: int, family: Family) -> int:
    """A per-family seed, so that adding a family does not change another's samples."""
    return (seed * 1_000_003 + zlib.crc32(family.name.encode())) % 2**32


#: What emulation costs, measured on the 2-core CI machine with the sanitizers on (2026-11-23):
#: ~50 MFLOP/s of the kernels' arithmetic and ~40,000 CUDA threads (fibers) per second, and a
#: few seconds to compile a kernel. Estimates only need to be right within a few times.
EMULATED_FLOPS_PER_S = 50e6
EMULATED_THREADS_PER_S = 40e3
#: Estimated seconds one configuration may take before ``verify --emulate`` refuses the problem.
DEFAULT_MAX_SECONDS = 60.0


class EmulationTooLarge(AutoconvError):
    """A problem whose emulation would take far longer than a check should."""


def estimated_seconds(plan: KernelPlan) -> float:
    """Roughly how long emulating ``plan`` takes (arithmetic plus one fiber per CUDA thread)."""
    threads = sum(launch.grid[0] * launch.grid[1] * launch.grid[2] * launch.threads for launch in plan.launches)
    return plan.problem.flops / EMULATED_FLOPS_PER_S + threads / EMULATED_THREADS_PER_S


def check_emulation_size(plans: Sequence[KernelPlan], max_seconds: float = DEFAULT_MAX_SECONDS) -> None:
    """Raise :class:`EmulationTooLarge` when a plan's estimate exceeds ``max_seconds``,
    before anything is compiled or run."""
    for plan in plans:
        seconds = estimated_seconds(plan)
        if seconds > max_seconds:
            raise EmulationTooLarge(
                f"emulating {plan.problem.shape_str()} would take about {seconds:.0f} s per configuration "
                f"({plan.family}, {plan.problem.flops / 1e6:.0f} MFLOP; limit {max_seconds:.0f} s): the kernels "
                "are generic in the sizes, so check a smaller problem with the same filter, strides, dilation "
                "and padding pattern, or raise the limit with --max-seconds")


def sample_families(problem: ConvProblem, families: Sequence[Family], samples: int, seed: int
                    ) -> tuple[list[tuple[Family, list[dict[str, object]]]], list[tuple[Family, str]]]:
    """The configurations to verify of each family (:func:`sample_configs`: the default, every
    switch value, then random ones up to ``samples``; seeded by
    :func:`family_seed`), and the families left out with the reason (the problem is not
    one they support, or they have no valid configuration for it), both in family order."""
    plans: list[tuple[Family, list[dict[str, object]]]] = []
    skipped: list[tuple[Family, str]] = []
    for family in families:
        reason = family.unsupported_reason(problem)
        if reason is None:
            try:
                rng = numpy.random.default_rng(family_seed(seed, family))
                plans.append((family, sample_configs(family, problem, samples, rng)))
            except SearchSpaceError as err:
                reason = str(err)
        if reason is not None:
            skipped.append((family, reason))
    return plans, skipped


# ---- code paths the problem chooses ---------------------------------------------------------------

#: The reduction length from which a tf32 problem runs its main loops whole trips and a tail: nine K
#: tiles of the widest BK (64), two trips of four tiles (MMA_OVERLAP quad) and one more.
DEEP_GEMM_K = 9 * 64


@dataclass(frozen=True)
class ProblemPath:
    """A code path that the problem selects, not the configuration (the templates branch on the
    problem's dilation, bias, precision and output type), so that no sample of configurations of
    one problem takes it and its alternative both.

    ``applies`` says whether a family has the path, ``taken`` whether a problem takes it, and
    ``reach`` changes a problem as little as it takes to take it (ProblemError when no valid
    problem does).
    """

    name: str
    applies: Callable[[Family], bool]
    taken: Callable[[ConvProblem], bool]
    reach: Callable[[ConvProblem], ConvProblem]


def _dilated(problem: ConvProblem, axis: int) -> ConvProblem:
    """``problem`` dilated along ``axis`` (0: height, 1: width) by 2 or 3, unlike the other axis
    (so that swapped axes differ), with a filter of 2 taps or more along it and an input that
    holds the dilated filter."""
    filter_name, size_name = ("R", "H") if axis == 0 else ("S", "W")
    dilation = list(problem.dilation)
    dilation[axis] = 3 if dilation[1 - axis] == 2 else 2
    taps = max(getattr(problem, filter_name), 2)
    extent = (taps - 1) * dilation[axis] + 1
    padding = problem.padding[2 * axis] + problem.padding[2 * axis + 1]
    return problem.with_(**{filter_name: taps, size_name: max(getattr(problem, size_name), extent - padding)},
                         dilation=(dilation[0], dilation[1]))


def _deep_tf32(problem: ConvProblem) -> ConvProblem:
    """``problem`` in tf32 with at least :data:`DEEP_GEMM_K` reduction steps (more channels)."""
    problem = problem.in_precision("tf32")
    if problem.gemm_k < DEEP_GEMM_K:
        problem = problem.with_(C=problem.C * ceil_div(DEEP_GEMM_K, problem.gemm_k))
    return problem


def _sixteen_bit(problem: ConvProblem) -> ConvProblem:
    """``problem`` with 16-bit inputs: itself if it has them, else in bf16."""
    return problem if problem.dtype != "float32" else problem.in_precision("bf16")


def _always(family: Family) -> bool:
    return True


def _computes(precisions: Sequence[str]) -> Callable[[Family], bool]:
    """Whether a family computes any of ``precisions``."""
    return lambda family: any(precision in family.precisions for precision in precisions)


def _precision_path(precision: str) -> ProblemPath:
    return ProblemPath(precision, _computes([precision]), lambda p: p.precision == precision,
                       lambda p: p.in_precision(precision))


#: The code paths a problem selects, each reached from any problem of a family that has it.
PROBLEM_PATHS = (
    ProblemPath("dilation along the height", _always, lambda p: p.dilation[0] > 1 and p.R > 1,
                lambda p: _dilated(p, 0)),
    ProblemPath("dilation along the width", _always, lambda p: p.dilation[1] > 1 and p.S > 1,
                lambda p: _dilated(p, 1)),
    ProblemPath("bias", _always, lambda p: p.bias, lambda p: p.with_(bias=True)),
    _precision_path("fp32"),
    ProblemPath(f"tf32 with {DEEP_GEMM_K}+ reduction steps", _computes(["tf32"]),
                lambda p: p.precision == "tf32" and p.gemm_k >= DEEP_GEMM_K, _deep_tf32),
    _precision_path("bf16"),
    _precision_path("fp16"),
    ProblemPath("float32 output of 16-bit inputs", _computes(["bf16", "fp16"]),
                lambda p: p.dtype != "float32" and p.out_dtype == "float32",
                lambda p: _sixteen_bit(p).with_(out_dtype="float32")),
    ProblemPath("16-bit output", _computes(["bf16", "fp16"]), lambda p: p.dtype != "float32" and p.out_dtype is None,
                lambda p: _sixteen_bit(p).with_(out_dtype=None)),
)


def untaken_paths(family: Family, problem: ConvProblem) -> list[ProblemPath]:
    """The :data:`PROBLEM_PATHS` of ``family`` that ``problem`` does not take."""
    return [path for path in PROBLEM_PATHS if path.applies(family) and not path.taken(problem)]


@dataclass(frozen=True)
class Variant:
    """A problem like the one verified that takes code paths it does not (``paths``, by name),
    and the configurations of ``family`` to run on it."""

    family: Family
    problem: ConvProblem
    paths: tuple[str, ...]
    configs: list[dict[str, object]]


def problem_variants(family: Family, problem: ConvProblem, covered: frozenset[tuple[str, object]], seed: int,
                     max_seconds: float = DEFAULT_MAX_SECONDS) -> tuple[list[Variant], list[tuple[str, str]]]:
    """Problems like ``problem`` that take, together, the paths of :func:`untaken_paths`, and the
    paths none can take, each with the reason (the family does not support such a problem, or
    its emulation would take longer than ``max_seconds``).

    Paths are combined into as few variants as keep each of them taken; a combination that
    fails is tried one path at a time. A variant's configurations are the default and those
    that take the switch values (:data:`SWITCHES`) not in ``covered``; ``covered`` grows by
    theirs.
    """
    rng = numpy.random.default_rng([seed, 1])
    variants: list[Variant] = []
    missed: list[tuple[str, str]] = []

    def attempt(paths: list[ProblemPath]) -> str | None:
        """Make one variant taking every one of ``paths``; the reason when there is none."""
        nonlocal covered
        variant = problem
        try:
            for path in paths:
                variant = path.reach(variant)
        except ProblemError as err:
            return str(err)
        if not all(path.taken(variant) for path in paths):
            return "no problem takes them together"
        reason = family.unsupported_reason(variant)
        if reason is not None:
            return reason
        try:
            configs = sample_configs(family, variant, 1, rng, covered=covered)
        except SearchSpaceError as err:
            return str(err)
        slowest = max(estimated_seconds(family.plan(variant, config)) for config in configs)
        if slowest > max_seconds:
            return f"{variant.spec()} would take about {slowest:.0f} s to emulate (limit {max_seconds:.0f} s)"
        variants.append(Variant(family, variant, tuple(path.name for path in paths), configs))
        covered = covered.union(*(switch_pairs(family, config, variant) for config in configs))
        return None

    remaining = untaken_paths(family, problem)
    while remaining:
        group = _compatible(problem, remaining)
        remaining = [path for path in remaining if path not in group]
        reason = attempt(group)
        if reason is None:
            continue
        if len(group) == 1:
            missed.append((group[0].name, reason))
            continue
        for path in group:
            reason = attempt([path])
            if reason is not None:
                missed.append((path.name, reason))
    return variants, missed


def _compatible(problem: ConvProblem, paths: Sequence[ProblemPath]) -> list[ProblemPath]:
    """The first of ``paths`` and those after it that one variant of ``problem`` takes with it
    (tf32 and fp32 exclude each other, as the two output types do)."""
    group = [paths[0]]
    for path in paths[1:]:
        variant = problem
        try:
            for member in (*group, path):
                variant = member.reach(variant)
        except ProblemError:
            continue
        if all(member.taken(variant) for member in (*group, path)):
            group.append(path)
    return group


def uncovered_switches(family: Family, checked: Iterable[tuple[ConvProblem, Mapping[str, object]]]
                       ) -> dict[str, list[object]]:
    """The values of each switch (:data:`SWITCHES`) that no checked (problem, configuration) took:
    those valid for none of the problems."""
    taken = frozenset().union(*(switch_pairs(family, config, problem) for problem, config in checked))
    return {name: missing for name, values in switch_values(family).items()
            if (missing := [value for value in values if (name, value) not in taken])}
