"""Verify kernel families on the CPU: render configurations, run them in the emulator,
compare with the float64 reference.

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
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy

from autoconv.backends.base import Status
from autoconv.emulator import EmulatedKernelFault, EmulationTimeout, EmulatorCompileError, default_workers, emulate_plan
from autoconv.errors import AutoconvError, SearchSpaceError
from autoconv.kernels.families import Family, KernelPlan, get_family
from autoconv.kernels.limits import H100, DeviceLimits
from autoconv.problems.problem import ConvProblem
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
    # filter, as one contiguous run); REUSE_W: derived (each stage's w box copied once)
    "implicit_gemm_wgmma_tma": {"BN": None, "CONSUMERS": None, "SPLIT_K": None, "SCHEDULE": None, "EPILOGUE": None,
                                "STAGED": (0, 1), "PAD_CHANNELS": (0, 1), "PAD_PITCH": None, "FILTERS_ON_M": (0, 1),
                                "FLAT_STORES": (0, 1), "REUSE_W": (0, 1)},
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
                   device: DeviceLimits = H100) -> list[dict[str, object]]:
    """Distinct valid configurations of ``family`` for ``problem``, stratified: the default
    first; then configurations that together take every value of every switch
    (:data:`SWITCHES`) that some valid configuration takes; then uniform draws from the rest
    of the valid space until there are ``samples`` (all of it when it is smaller). So there
    may be more than ``samples``: coverage of the code paths comes first.

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
        wanted = frozenset().union(*pairs) - switch_pairs(family, chosen[0], problem, device)
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
