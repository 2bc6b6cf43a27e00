"""Which kernel runs a problem on a device, chosen once per process and kept loaded.

The choice, in order:

1. cuDNN's plan, where the cache entry records that ``autoconv bench`` measured cuDNN's
   best strict-FP32 plan faster than the tuned winner (and cuDNN use is allowed);
2. the cached winner (see :mod:`autoconv.cache`; the cache is :meth:`KernelRegistry.set_cache`'s,
   else ``$AUTOCONV_CACHE``, else the default path);
3. otherwise a sound default (``implicit_gemm``'s default config), with an
   :class:`UntunedWarning` once per problem.

The chosen kernel is compiled with NVRTC, loaded on the device and wrapped in a
:class:`~autoconv.runtime.launcher.Launcher`: a :class:`Runner`. All of it happens on the
first call of a (device, problem); later calls only look the runner up.
"""

from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from autoconv.cache.sql import NoCache
from autoconv.cache.winners import CacheKey, WinnerCache, default_location, is_url
from autoconv.errors import AutoconvError, CacheError
from autoconv.kernels.families import FAMILY_NAMES, KernelPlan, get_family
from autoconv.kernels.space import DEFAULT_WORKSPACE_LIMIT
from autoconv.problems.problem import ConvProblem
from autoconv.runtime.launcher import Launcher
from autoconv.search.storage import masked_url

#: The family whose default config runs untuned problems.
FALLBACK_FAMILY = "implicit_gemm"


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
    cudnn: Any = None          # autoconv.bench.cudnn.CudnnConv where cuDNN beat the cached winner
    loaded: Any = None         # autoconv.gpu.kernels.LoadedPlan: keeps the module loaded

    # (plan is None only where cuDNN runs)
    @property
    def name(self) -> str:
        return f"cudnn:{self.cudnn.plan_name}" if self.cudnn is not None else cast(KernelPlan, self.plan).name

    @property
    def workspace_bytes(self) -> int:
        """Scratch bytes one call needs (the plan's workspace, or cuDNN's)."""
        return self.cudnn.workspace_bytes if self.cudnn is not None else cast(KernelPlan, self.plan).workspace_bytes


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
        with self._lock:
            return [{"device": device, "problem": runner.problem.spec(), "origin": runner.origin,
                     "kernel": runner.name} for (device, _), runner in self._runners.items()]

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
            return runner

    def _load(self, problem: ConvProblem, device_id: int) -> Runner:
        from autoconv.gpu.device import require_cupy

        with require_cupy().cuda.Device(device_id):
            return self._load_on_current_device(problem, device_id)

    def _load_on_current_device(self, problem: ConvProblem, device_id: int) -> Runner:
        from autoconv.gpu.device import read_device
        from autoconv.gpu.kernels import LoadedPlan
        from autoconv.runtime.cubins import compile_cached

        if device_id not in self._devices:
            self._devices[device_id] = read_device(device_id)
        limits, identity = self._devices[device_id]
        plan, origin, why, entry = self.winner_plan(problem, limits, identity)
        if entry is not None and self.cudnn_allowed:
            cudnn = _cudnn_if_faster(problem, entry)
            if cudnn is not None:
                return Runner(problem, device_id, plan, None, "cudnn", cudnn)
        if plan is None:
            plan, origin = _default_plan(problem, limits), "default"
            if (device_id, problem.key()) not in self._warned:
                self._warned.add((device_id, problem.key()))
                warnings.warn(f"autoconv.conv2d: {why}; running {plan.family}'s default configuration for "
                              f"{problem.shape_str()} (correct, maybe slow). Tune it with `autoconv tune` "
                              "(problem spec: " + problem.spec() + ")", UntunedWarning, stacklevel=5)
        compiled = compile_cached(plan.source, limits.arch, plan.name)
        if not compiled.ok:
            raise AutoconvError(f"autoconv.conv2d: the {origin} kernel {plan.name} does not compile with this "
                                f"CUDA (NVRTC):\n{compiled.reason()}")
        try:
            loaded = LoadedPlan(plan, compiled.cubin)
        except Exception:  # a damaged file in the cubin folder: compile again
            loaded = LoadedPlan(plan, compile_cached(plan.source, limits.arch, plan.name, fresh=True).cubin)
        trouble = loaded.resource_problem(limits)
        if trouble is not None and trouble[0] != "spills":  # spilling is slow, not wrong
            raise AutoconvError(f"autoconv.conv2d: the {origin} kernel {plan.name} cannot launch on "
                                f"{limits.name}: {trouble[1]}")
        loaded.configure()
        return Runner(problem, device_id, plan, Launcher(plan, loaded.function_handles()), origin, loaded=loaded)

    def winner_plan(self, problem: ConvProblem, limits, identity):
        """``(plan, "cache", "", entry)`` for the cached winner, or ``(None, "", why, entry)``
        where none is usable (``entry`` None where the cache has none for this problem)."""
        location = self.cache_location()
        try:
            with WinnerCache(location, create=False) as winners:  # a reader creates no file or table
                entry = winners.get(CacheKey.for_problem(identity, problem))
        except NoCache:
            return None, "", f"no winners' cache at {masked_url(str(location))}", None
        except CacheError as err:
            return None, "", f"the winners' cache cannot be used ({err})", None
        if entry is None:
            return None, "", f"no tuned kernel for this problem on {identity.gpu_name} in {winners.location}", None
        if entry.family not in FAMILY_NAMES:
            return None, "", f"the cached winner's family {entry.family!r} is not part of this autoconv", entry
        limit = max(DEFAULT_WORKSPACE_LIMIT, entry.workspace_bytes)
        try:
            plan = get_family(entry.family).plan(problem, dict(entry.config), limits, limit)
        except AutoconvError as err:
            return None, "", f"the cached winner no longer fits ({err})", entry
        if plan.source_hash != entry.source_hash:
            return None, "", "the cached winner's source differs from what this autoconv renders (stale entry)", entry
        return plan, "cache", "", entry


def _cudnn_if_faster(problem: ConvProblem, entry):
    """cuDNN's plan for ``problem`` when the cache entry says it beat the tuned winner
    (timed side by side by ``autoconv bench``) and the frontend can build it; else None."""
    if entry.baseline_time_ms is None or not entry.baseline_plan or entry.time_ms is None:
        return None
    if not entry.baseline_time_ms < entry.time_ms:
        return None
    from autoconv.bench.cudnn import CudnnConv

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
    """The fallback family's default config; else any family's, in registry order."""
    reasons = []
    for name in (FALLBACK_FAMILY, *[n for n in FAMILY_NAMES if n != FALLBACK_FAMILY]):
        try:
            return get_family(name).plan(problem, None, limits)
        except AutoconvError as err:
            reasons.append(f"{name}: {err}")
    raise AutoconvError(f"autoconv.conv2d: no kernel family can run {problem.shape_str()}:\n  "
                        + "\n  ".join(reasons))


#: The registry of this process, behind :mod:`autoconv.runtime`'s functions.
REGISTRY = KernelRegistry()
