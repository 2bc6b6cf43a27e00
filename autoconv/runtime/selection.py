"""Which kernel runs a problem on a device, chosen once per process and kept loaded.

The choice, in order:

1. cuDNN's plan, where the cache entry records that ``autoconv bench`` measured cuDNN's
   best plan (strict FP32, or TF32 for a tf32 problem) faster than the tuned winner (and
   cuDNN use is allowed);
2. the cached winner (see :mod:`autoconv.cache`; the cache is :meth:`KernelRegistry.set_cache`'s,
   else ``$AUTOCONV_CACHE``, else the default path). The lookup is by problem key, which
   includes the precision; a ``tf32`` problem without a usable tf32 winner runs the fp32
   winner of the same shape where there is one (tuned, and more accurate than asked), and
   :meth:`KernelRegistry.loaded`'s ``note`` says so;
3. for a problem never tuned, the winning configuration of the nearest tuned problem on this GPU
   in the same precision (:func:`predicted_plan`: moved to the nearest configuration that fits
   the problem where it does not), run once on random inputs against the float64 reference
   before its first use (:func:`verify_runner`), with an :class:`UntunedWarning`;
4. otherwise, or when that check fails, a sound default, with an :class:`UntunedWarning` once per problem:
   ``implicit_gemm``'s default config, or for a ``tf32`` problem ``implicit_gemm_wgmma``'s
   where the device has it (compute capability 9.0; elsewhere ``implicit_gemm`` runs tf32
   problems at float32 accuracy); for an NHWC problem (bf16, fp16, tf32) that of
   ``implicit_gemm_wgmma_tma`` where it can run it, else ``implicit_gemm_wgmma_f16``'s.

The chosen kernel is compiled with NVRTC, loaded on the device and wrapped in a
:class:`~autoconv.runtime.launcher.Launcher`: a :class:`Runner`. All of it happens on the
first call of a (device, problem); later calls only look the runner up.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from autoconv.cache.entries import CacheEntry, CacheKey
from autoconv.cache.location import default_location
from autoconv.cache.neighbours import Neighbour, nearest_winners
from autoconv.cache.sql import NoCache
from autoconv.cache.winners import WinnerCache
from autoconv.errors import AutoconvError, CacheError
from autoconv.kernels.families import FAMILY_NAMES, KernelPlan, get_family
from autoconv.kernels.space import DEFAULT_WORKSPACE_LIMIT
from autoconv.problems.problem import ConvProblem
from autoconv.runtime.launcher import Launcher
from autoconv.urls import is_url, masked_url

logger = logging.getLogger(__name__)

#: Nearest tuned problems looked at for an untuned problem's configuration (the first whose
#: family can run it is taken).
PREDICTION_NEIGHBOURS = 3
#: Seed of the random inputs a predicted kernel is checked on.
VERIFY_SEED = 2027
#: The family whose default config runs untuned problems.
FALLBACK_FAMILY = "implicit_gemm"
#: The family whose default config runs untuned tf32 problems where the device has it
#: (its search space accepts compute capability 9.0 only); elsewhere :data:`FALLBACK_FAMILY`.
TF32_DEFAULT_FAMILY = "implicit_gemm_wgmma"
#: The family whose default config runs untuned NHWC problems (bf16, fp16, tf32) where it can (Hopper,
#: its tensor maps' limits): on ResNet-50's bf16 layers its default runs faster than the cp.async
#: family's.
NHWC_DEFAULT_FAMILY = "implicit_gemm_wgmma_tma"


class UntunedWarning(UserWarning):
    """No tuned kernel is cached for a problem: a default configuration runs instead."""


class CudnnFallbackWarning(UserWarning):
    """cuDNN was measured faster for a problem but cannot run here: the tuned kernel runs."""


@dataclass
class Runner:
    """What runs one problem on one device: an autoconv kernel, or a cuDNN plan."""
    problem: ConvProblem
    device: int
    plan: KernelPlan | None
    launcher: Launcher | None  # None when cuDNN runs
    origin: str                # "cache", "default" or "cudnn"
    cudnn: Any = None          # autoconv.runtime.cudnn.CudnnConv where cuDNN beat the cached winner
    loaded: Any = None         # autoconv.gpu.kernels.LoadedPlan: keeps the module loaded
    note: str = ""             # how what runs differs from what was asked (an fp32 winner for tf32)

    # (plan is None only where cuDNN runs)
    @property
    def name(self) -> str:
        return f"cudnn:{self.cudnn.plan_name}" if self.cudnn is not None else cast(KernelPlan, self.plan).name

    @property
    def workspace_bytes(self) -> int:
        """Scratch bytes one call needs (the plan's workspace, or cuDNN's)."""
        return self.cudnn.workspace_bytes if self.cudnn is not None else cast(KernelPlan, self.plan).workspace_bytes


@dataclass(frozen=True)
class Lookup:
    """What the winners' cache offers for a problem: the winner's plan (None where none is
    usable, ``why`` says why), the entry consulted (None where the cache has none; it
    also tells whether cuDNN was measured faster) and the problem that entry is keyed by.
    That is the fp32 problem where a tf32 problem falls back to the fp32 entry; then
    ``fallback`` says why (no tf32 entry, or one that cannot run)."""
    plan: KernelPlan | None
    entry: CacheEntry | None
    entry_problem: ConvProblem
    why: str
    fallback: str = ""

    def note(self, runs: str) -> str:
        """What :meth:`KernelRegistry.loaded` says of a runner that runs ``runs`` from this
        lookup's entry: empty unless it is the fp32 entry of a tf32 problem."""
        if not self.fallback:
            return ""
        return f"{self.fallback}: {runs} runs (float32 accuracy, more than tf32 asks)"


class KernelRegistry:
    """The runners of one process: the cache they are read from, whether cuDNN may run,
    and every (device, problem) loaded so far. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runners: dict[tuple[int, str], Runner] = {}
        self._devices: dict[int, tuple] = {}
        self._warned: set[tuple[int, str]] = set()
        self._cache_location: Path | str | None = None  # a file, or a SQLAlchemy URL
        self.cudnn_allowed = True

    # ---- settings -------------------------------------------------------------------------

    def set_cache(self, location: str | os.PathLike | None) -> None:
        self._cache_location = (None if location is None
                                else str(location) if is_url(location) else Path(location))

    def cache_location(self) -> Path | str:
        return self._cache_location if self._cache_location is not None else default_location()

    def loaded(self) -> list[dict[str, Any]]:
        """One dict per loaded (device, problem): ``device``, ``problem`` (spec), ``origin``,
        ``kernel`` and ``note`` (empty, or how what runs differs from what was asked)."""
        with self._lock:
            return [{"device": device, "problem": runner.problem.spec(), "origin": runner.origin,
                     "kernel": runner.name, "note": runner.note}
                    for (device, _), runner in self._runners.items()]

    def clear(self) -> None:
        with self._lock:
            self._runners.clear()
            self._warned.clear()

    # ---- the choice -------------------------------------------------------------------------

    def is_loaded(self, problem: ConvProblem, device_id: int) -> bool:
        """Whether ``problem``'s runner on ``device_id`` is loaded (a call needs no compile)."""
        return (device_id, problem.key()) in self._runners

    def loaded_runner(self, problem: ConvProblem, device_id: int) -> Runner | None:
        """``problem``'s runner on ``device_id`` if it is loaded, else None."""
        return self._runners.get((device_id, problem.key()))

    def runner(self, problem: ConvProblem, device_id: int) -> Runner:
        """The runner of ``problem`` on CUDA device ``device_id``, chosen, compiled and
        loaded on first use (the caller has made ``device_id`` current)."""
        key = (device_id, problem.key())
        runner = self._runners.get(key)
        if runner is not None:
            return runner
        with self._lock:
            runner = self._runners.get(key)
            if runner is None:
                runner = self._runners[key] = self._load(problem, device_id)
                logger.info("cuda:%d runs %s for %s (%s)%s", device_id, runner.name, problem.spec(), runner.origin,
                            f": {runner.note}" if runner.note else "")
            return runner

    def _load(self, problem: ConvProblem, device_id: int) -> Runner:
        from autoconv.gpu.device import require_cupy

        with require_cupy().cuda.Device(device_id):
            return self._load_on_current_device(problem, device_id)

    def _load_on_current_device(self, problem: ConvProblem, device_id: int) -> Runner:
        from autoconv.gpu.device import read_device

        if device_id not in self._devices:
            self._devices[device_id] = read_device(device_id)
        limits, identity = self._devices[device_id]
        found = self.lookup(problem, limits, identity)
        if found.entry is not None and self.cudnn_allowed:
            cudnn = _cudnn_if_faster(found.entry_problem, found.entry)
            if cudnn is not None:
                return Runner(problem, device_id, found.plan, None, "cudnn", cudnn,
                              note=found.note("the fp32 entry's cuDNN plan (measured faster than its winner)"))
        if found.plan is not None:
            return _loaded_runner(problem, device_id, found.plan, "cache", limits,
                                  note=found.note("the fp32 winner of this shape"))

        # Untuned: the configuration of the nearest tuned problem's winner, checked against a
        # reference once; else (none, or it fails its check) the default configuration.
        warn = (device_id, problem.key()) not in self._warned
        self._warned.add((device_id, problem.key()))
        predicted = self._predicted_plan(problem, limits, identity)
        if predicted is not None:
            neighbour, plan = predicted
            try:
                runner = _loaded_runner(problem, device_id, plan, "predicted", limits,
                                        note=f"the winner configuration of the nearest tuned problem "
                                             f"{neighbour.problem.spec()} (distance {neighbour.distance:.2f})")
            except AutoconvError as err:  # does not compile or cannot launch here: not a candidate
                failure: str | None = str(err)
            else:
                failure = verify_runner(runner)
            if failure is None:
                if warn:
                    warnings.warn(untuned_message(problem, found.why, plan, runner.note), UntunedWarning,
                                  stacklevel=5)
                return runner
            warnings.warn(f"autoconv.conv2d: {plan.name}, predicted for {problem.shape_str()} from "
                          f"{neighbour.problem.shape_str()}, failed its check ({failure}); running the default "
                          "configuration instead", UntunedWarning, stacklevel=5)
        plan = _default_plan(problem, limits)
        if warn:
            warnings.warn(untuned_message(problem, found.why, plan), UntunedWarning, stacklevel=5)
        return _loaded_runner(problem, device_id, plan, "default", limits)

    def _predicted_plan(self, problem: ConvProblem, limits, identity) -> tuple[Neighbour, KernelPlan] | None:
        """:func:`predicted_plan` from this registry's cache; None where it cannot be read."""
        try:
            with WinnerCache(self.cache_location(), create=False) as winners:
                entries = winners.entries()
        except (NoCache, CacheError) as err:
            logger.debug("no prediction for %s: the winners' cache cannot be read (%s)", problem.spec(), err)
            return None
        return predicted_plan(problem, entries, limits, identity.gpu_name)

    def lookup(self, problem: ConvProblem, limits, identity) -> Lookup:
        """The cached winner that runs ``problem`` on the device (``limits``, ``identity``),
        or why none does. A ``tf32`` problem without a usable tf32 winner takes the fp32
        winner of the same shape where there is one: tuned, and more accurate than asked
        (``entry_problem`` is then the fp32 problem and ``fallback`` says why)."""
        found = self._lookup_exact(problem, limits, identity)
        if found.plan is not None or problem.precision != "tf32":  # (only tf32 has a more accurate twin)
            return found
        strict = problem.with_(precision="fp32")
        other = self._lookup_exact(strict, limits, identity)
        reason = (f"no {problem.precision} winner is cached for this shape" if found.entry is None
                  else f"the {problem.precision} winner cannot run ({found.why})")
        if other.plan is not None:
            return Lookup(other.plan, other.entry, strict, "", fallback=reason)
        # Neither runs: one reason where both are the same (the cache is missing or unreadable).
        why = found.why if other.why == found.why else f"{found.why}; fp32: {other.why}"
        if found.entry is None and other.entry is not None:  # (its cuDNN plan may still run)
            return Lookup(None, other.entry, strict, why, fallback=reason)
        return Lookup(None, found.entry, problem, why)

    def winner_plan(self, problem: ConvProblem, limits, identity):
        """``(plan, "cache", "", entry)`` for the cached winner that runs ``problem`` (see
        :meth:`lookup`), or ``(None, "", why, entry)`` where none is usable (``entry`` None
        where the cache has none for this problem)."""
        found = self.lookup(problem, limits, identity)
        return found.plan, "cache" if found.plan is not None else "", found.why, found.entry

    def _lookup_exact(self, problem: ConvProblem, limits, identity) -> Lookup:
        """The cached winner of exactly ``problem`` (its key, precision included), or why none."""
        location = self.cache_location()
        try:
            with WinnerCache(location, create=False) as winners:  # a reader creates no file or table
                entry = winners.get(CacheKey.for_problem(identity, problem))
        except NoCache:
            return Lookup(None, None, problem, f"no winners' cache at {masked_url(str(location))}")
        except CacheError as err:
            return Lookup(None, None, problem, f"the winners' cache cannot be used ({err})")
        if entry is None:
            precision = "" if problem.precision == "fp32" else f" ({problem.precision})"
            return Lookup(None, None, problem,
                          f"no tuned kernel for this problem{precision} on {identity.gpu_name} in {winners.location}")
        if entry.family not in FAMILY_NAMES:
            return Lookup(None, entry, problem,
                          f"the cached winner's family {entry.family!r} is not part of this autoconv")
        limit = max(DEFAULT_WORKSPACE_LIMIT, entry.workspace_bytes)
        try:
            plan = get_family(entry.family).plan(problem, dict(entry.config), limits, limit)
        except AutoconvError as err:
            return Lookup(None, entry, problem, f"the cached winner no longer fits ({err})")
        if plan.source_hash != entry.source_hash:
            return Lookup(None, entry, problem,
                          "the cached winner's source differs from what this autoconv renders (stale entry)")
        return Lookup(plan, entry, problem, "")


def predicted_plan(problem: ConvProblem, entries, limits, gpu_name: str) -> tuple[Neighbour, KernelPlan] | None:
    """What ``autoconv.conv2d`` runs, once checked, on ``problem`` never tuned: the winning
    configuration of the nearest tuned problem (among cache ``entries`` of GPU ``gpu_name``,
    :mod:`autoconv.cache.neighbours`) as the valid point of its family nearest to it for
    ``problem`` (the configuration itself where it fits; else, say, another reduction order
    where ``C`` is no multiple of the K tile), with that neighbour. Of the
    :data:`PREDICTION_NEIGHBOURS` nearest, the first whose family can run ``problem``; None
    where none can."""
    for neighbour in nearest_winners(problem, entries, gpu_name=gpu_name, limit=PREDICTION_NEIGHBOURS):
        if neighbour.entry.family not in FAMILY_NAMES:
            continue
        family = get_family(neighbour.entry.family)
        try:
            config = family.space.nearest_config(neighbour.entry.config, problem, limits, DEFAULT_WORKSPACE_LIMIT)
            return neighbour, family.plan(problem, config, limits, DEFAULT_WORKSPACE_LIMIT)
        except AutoconvError:  # the family cannot run this problem at all
            continue
    return None


def _loaded_runner(problem: ConvProblem, device_id: int, plan: KernelPlan, origin: str, limits, *,
                   note: str = "") -> Runner:
    """``plan`` compiled (or read from the cubin folder), loaded and wrapped for launching on
    the current device.

    Raises:
        AutoconvError: it does not compile, or cannot launch on the device.
    """
    from autoconv.gpu.kernels import LoadedPlan
    from autoconv.runtime.cubins import compile_cached

    compiled = compile_cached(plan.source, limits.arch, plan.name)
    if not compiled.ok:
        raise AutoconvError(f"autoconv.conv2d: the {origin} kernel {plan.name} does not compile with this "
                            f"CUDA (NVRTC):\n{compiled.reason()}")
    try:
        loaded = LoadedPlan(plan, compiled.cubin)
    except Exception as err:  # a damaged file in the cubin folder: compile again
        logger.info("the kept cubin of %s does not load (%s: %s); compiling it again", plan.name,
                    type(err).__name__, err)
        loaded = LoadedPlan(plan, compile_cached(plan.source, limits.arch, plan.name, fresh=True).cubin)
    trouble = loaded.resource_problem(limits)
    if trouble is not None and trouble[0] != "spills":  # spilling is slow, not wrong
        raise AutoconvError(f"autoconv.conv2d: the {origin} kernel {plan.name} cannot launch on "
                            f"{limits.name}: {trouble[1]}")
    loaded.configure()
    return Runner(problem, device_id, plan, Launcher(plan, loaded.function_handles()), origin, loaded=loaded,
                  note=note)


def verify_runner(runner: Runner, seed: int = VERIFY_SEED) -> str | None:
    """Run ``runner``'s kernels once on random inputs (on a stream of its own, synchronised)
    and compare with the float64 reference at the problem's tolerance, as the tuner checks a
    candidate: None when the output is right, else why not. Outputs and workspace start as
    NaN, so an unwritten element fails."""
    from autoconv.gpu.device import require_cupy
    from autoconv.problems.buffers import buffer_values, output_buffer
    from autoconv.verify.compare import POISON, check_result
    from autoconv.verify.on_gpu import reference_and_tolerance, verification_inputs

    cupy = require_cupy()
    problem = runner.problem
    plan = cast(KernelPlan, runner.plan)
    try:  # anything that goes wrong here (a refused launch, a fault, memory) makes the kernel unusable
        stream = cupy.cuda.Stream(non_blocking=True)
        # The inputs and the NaN fills are made on the kernels' stream: a stream that does not
        # block is not ordered after the default stream, and a fill still running there overwrote
        # a first kernel's workspace (the padded x of ResNet-50's fp16 stem: every output NaN).
        # The inputs, reference and tolerance are those the tuner's GPU worker checks candidates on.
        with stream:
            x, w, bias = verification_inputs(problem, seed)
            y = output_buffer(problem, cupy)
            workspace = (cupy.full(plan.workspace_elements, POISON, dtype=cupy.float32) if plan.workspace_bytes
                         else None)
            cast(Launcher, runner.launcher)((x.data.ptr, w.data.ptr, 0 if bias is None else bias.data.ptr,
                                             y.data.ptr, 0 if workspace is None else workspace.data.ptr), stream.ptr)
            stream.synchronize()
        reference, tolerance = reference_and_tolerance(problem, x, w, bias)
        verdict = check_result(buffer_values(problem, y, cupy), reference, tolerance)
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    return None if verdict.ok else verdict.message


def _cudnn_if_faster(problem: ConvProblem, entry):
    """cuDNN's plan for ``problem`` when the cache entry says it beat the tuned winner
    (timed side by side by ``autoconv bench``) and the frontend can build it; else None."""
    if entry.baseline_time_ms is None or not entry.baseline_plan or entry.time_ms is None:
        return None
    if not entry.baseline_time_ms < entry.time_ms:
        return None
    from autoconv.runtime.cudnn import CudnnConv

    try:
        conv = CudnnConv.from_baseline_plan(problem, entry.baseline_plan)
        if not conv.exact:
            raise AutoconvError(f"this cuDNN has no plan {conv.plan_name!r} (another cuDNN version "
                                "measured it; run `autoconv bench` again)")
        return conv
    except AutoconvError as err:  # frontend missing, plan unknown to this cuDNN, ...
        warnings.warn(f"autoconv.conv2d: cuDNN was measured faster for {problem.shape_str()} "
                      f"({entry.baseline_time_ms:.4g} ms vs {entry.time_ms:.4g} ms) but cannot run here "
                      f"({err}); running the tuned kernel", CudnnFallbackWarning, stacklevel=6)
        return None


def _default_plan(problem: ConvProblem, limits) -> KernelPlan:
    """The default config of the first family that can run ``problem`` on the device:
    for an NHWC problem :data:`NHWC_DEFAULT_FAMILY`; for a tf32 problem :data:`TF32_DEFAULT_FAMILY`
    (one TF32 product per multiply, where the device has it); then :data:`FALLBACK_FAMILY`, then
    the others in registry order."""
    first: tuple[str, ...] = (FALLBACK_FAMILY,)
    if problem.precision == "tf32":
        first = (TF32_DEFAULT_FAMILY,) + first
    if problem.layout == "NHWC":
        first = (NHWC_DEFAULT_FAMILY,) + first
    reasons = []
    for name in (*first, *[n for n in FAMILY_NAMES if n not in first]):
        try:
            return get_family(name).plan(problem, None, limits)
        except AutoconvError as err:
            reasons.append(f"{name}: {err}")
    raise AutoconvError(f"autoconv.conv2d: no kernel family can run {problem.shape_str()}:\n  "
                        + "\n  ".join(reasons))


def untuned_message(problem: ConvProblem, why: str, plan: KernelPlan, predicted_from: str = "") -> str:
    """The :class:`UntunedWarning` for ``problem``, which runs ``plan`` because no cached
    winner is usable (``why``): a default config, or (``predicted_from`` says whose) the
    configuration of a nearby tuned problem's winner. Names the precision, and says so where
    a tf32 problem is computed at float32 accuracy (a family without TF32)."""
    precision = f"precision {problem.precision}"
    if problem.precision == "tf32" and not get_family(plan.family).tensor_cores:
        precision += ", computed at float32 accuracy"
    what = (f"{plan.family} with {predicted_from}, checked against a reference" if predicted_from
            else f"{plan.family}'s default configuration")
    return (f"autoconv.conv2d: {why}; running {what} for {problem.shape_str()} "
            f"({precision}; correct, maybe slow). Tune it with `autoconv tune` (problem spec: {problem.spec()})")


#: The registry of this process, behind :mod:`autoconv.runtime`'s functions.
REGISTRY = KernelRegistry()
