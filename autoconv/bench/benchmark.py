"""``autoconv bench``: every problem's cached winner against cuDNN, measured alike.

For each problem of a config:

1. the winner is read from the cache (tuned first where there is none, unless
   ``--no-tune``, which makes a missing entry an error naming the problem);
2. one set of operands is made: input/output buffer sets that together exceed twice the
   L2 cache, set 0 from :func:`autoconv.verify.reference.random_inputs`, and the float64
   reference of set 0;
3. cuDNN's fastest strict-FP32 plan and its fastest TF32 plan are found
   (:func:`autoconv.bench.baseline.find_best_plan`: every plan verified, then timed); the one
   in the problem's precision (strict for ``fp32``, TF32 for ``tf32``) is the baseline;
4. autoconv's winner and both cuDNN plans are run once on poisoned outputs and checked
   against the reference, each at its precision's tolerance (:mod:`autoconv.verify.tolerance`):
   no time is reported for an output that is wrong;
5. in ``rounds`` rounds, autoconv, cuDNN strict, cuDNN TF32 and (if installed) PyTorch
   are timed one after another with the same timer (:func:`autoconv.gpu.timing.time_calls`)
   on the same buffers, the order rotating each round, so clock or thermal drift hits
   every side alike; each side's time is the median over the rounds;
6. the baseline's time and plan go into the cache entry (``baseline_*``), so that
   ``autoconv.conv2d`` can run cuDNN where cuDNN is faster in the same precision.

The per-family best times and the trials (for convergence plots) come from the Optuna
study that found the winner. :func:`run_bench` returns the results
(:mod:`autoconv.bench.results`, for ``autoconv report``); ``autoconv bench``
(:mod:`autoconv.commands.bench`) writes them and prints the table.
"""

from __future__ import annotations

import datetime as _dt
import math
import platform
import statistics
import subprocess
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy

from autoconv import settings
from autoconv._version import __version__
from autoconv.backends.base import Status
from autoconv.bench.baseline import (
    OperandSets,
    find_best_plan,
    plan_tolerance,
    reference_output,
    time_torch,
    torch_unavailable_reason,
)
from autoconv.bench.peak import dense_tensor_peak_tflops, measure_fp32_peak
from autoconv.bench.results import CUDNN_MODES, SCHEMA_VERSION, geomeans, geomeans_by_precision
from autoconv.cache.entries import CacheKey
from autoconv.errors import AutoconvError, BackendUnavailable, SearchSpaceError
from autoconv.gpu.backend import CupyBackend
from autoconv.gpu.compiler import compile_source
from autoconv.gpu.device import read_device, require_cupy
from autoconv.gpu.kernels import LoadedPlan
from autoconv.gpu.timing import time_calls
from autoconv.kernels.families import get_family
from autoconv.runtime.cudnn import MODES_OF_PRECISION, STRICT, TF32, CudnnConv, cudnn_versions, import_cudnn, one_line
from autoconv.search.outcome import Reporter
from autoconv.search.storage import make_storage
from autoconv.search.study import read_trials
from autoconv.urls import masked_url
from autoconv.verify.compare import POISON, check_result
from autoconv.verify.reference import random_inputs

#: Where the measurement of one side of the comparison lives in a problem's entry.
SIDES = ("autoconv", "cudnn_strict", "cudnn_tf32", "torch")


# ---- the environment -----------------------------------------------------------------------------

def collect_environment(command: str) -> dict[str, Any]:
    """What the numbers depend on: GPU, driver, CUDA, cuDNN, libraries, autoconv and its
    commit, the date and the command. Needs CuPy; every other entry is None when its
    library is absent."""
    import cupy  # optional: autoconv imports without it

    runtime = cupy.cuda.runtime
    device = runtime.getDevice()
    props = runtime.getDeviceProperties(device)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    env: dict[str, Any] = {
        "gpu": name,
        "compute_capability": f"{props['major']}.{props['minor']}",
        "sm_count": int(props["multiProcessorCount"]),
        "l2_bytes": int(props.get("l2CacheSize", 0)),
        "driver": _driver_version() or _cuda_version(runtime.driverGetVersion()),
        "cuda_driver_api": _cuda_version(runtime.driverGetVersion()),
        "cuda_runtime": _cuda_version(runtime.runtimeGetVersion()),
        "cudnn": None, "cudnn_frontend": None,
        "cupy": cupy.__version__,
        "torch": None,
        "python": platform.python_version(),
        "autoconv": __version__,
        "git_commit": None, "git_dirty": None,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
    }
    try:
        versions = cudnn_versions()
        backend = versions["cudnn"]
        env["cudnn"] = f"{backend // 10000}.{backend % 10000 // 100}.{backend % 100}"
        env["cudnn_frontend"] = versions["cudnn_frontend"]
    except BackendUnavailable:
        pass
    try:
        import torch  # optional
        env["torch"] = torch.__version__
    except ImportError:
        pass
    env["git_commit"], env["git_dirty"] = _git_state()
    return env


def _cuda_version(number: int) -> str:
    """CUDA's version integers are 1000 * major + 10 * minor: 13000 -> "13.0 (13000)"."""
    return f"{number // 1000}.{number % 1000 // 10} ({number})"


def _driver_version() -> str | None:
    """The kernel driver's version string, e.g. 580.159.04, from nvidia-smi if present."""
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    first = done.stdout.strip().splitlines()
    return first[0].strip() if first else None


def _git_state() -> tuple[str | None, bool | None]:
    """The commit autoconv runs from and whether its tree has uncommitted changes:
    ``$AUTOCONV_GIT_COMMIT`` when set (a copy of the tree on a remote GPU machine, whose own .git
    may be missing or stale), the dirty flag then unknown, with a warning where the checkout names
    another commit (a variable left over from another run); else the git checkout's."""
    given = settings.GIT_COMMIT.value()
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=20, check=True).stdout.strip() or None
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        commit, status = None, None
    if given:
        if commit and not (commit.startswith(given) or given.startswith(commit)):
            warnings.warn(f"{settings.GIT_COMMIT.name}={given} is recorded, but the checkout at {root} is at "
                          f"{commit}: unset the variable where the checkout is the code that runs", stacklevel=2)
        return given, None
    return commit, None if status is None else bool(status.strip())


# ---- the measurements ------------------------------------------------------------------------

def run_bench(session, *, tune: bool = True, rounds: int = 3, samples: int = 7, torch: bool = True,
              command: str = "autoconv bench", log: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Measure every problem of ``session``'s config (a :class:`autoconv.search.session.TuneSession`:
    its cache, storage, families and budget are the ones ``autoconv tune`` uses); returns
    the results dict (schema :data:`autoconv.bench.results.SCHEMA_VERSION`). Progress goes to
    ``log``, one line at a time (``autoconv bench`` prints it).

    Raises:
        BackendUnavailable: no CuPy, GPU or cuDNN frontend.
        AutoconvError: ``tune`` is False and a problem has no cached winner (all such
            problems are named); no family of the session computes a problem without one (e.g.
            bf16 in NCHW: the 16-bit family is NHWC only; each family's reason is given);
            tuning found no winner; a winner or cuDNN computes a wrong result.
    """
    cupy = require_cupy()
    import_cudnn()  # fail before any tuning if the baseline cannot run
    config = session.config
    side = AutoconvSide(session)
    try:
        missing = [item for item in config.problems if side.cached(item.problem) is None]
        tuning_seconds = None
        if missing:
            side.check_computable(missing)   # a problem no family can run: tuning would not help
        if missing and not tune:
            names = ", ".join(f"{item.name} ({item.problem.spec()})" for item in missing)
            raise AutoconvError(f"no cached winner for {len(missing)} problem(s): {names}; run "
                                f"`autoconv tune {config.origin}` first, or drop --no-tune")
        if missing:
            log(f"tuning {len(missing)} problem(s) without a cached winner first")
            started = time.monotonic()
            side.tune(missing, log)
            tuning_seconds = time.monotonic() - started

        cupy.cuda.Device(config.device).use()
        peak = measure_fp32_peak()
        log(f"measured FP32 FMA peak: {peak.tflops:.2f} TFLOP/s")
        problems = []
        for item in config.problems:
            log(f"{item.name}: {item.problem.shape_str()}")
            problems.append(measure_problem(item, side, peak_tflops=peak.tflops, rounds=rounds,
                                            samples=samples, torch=torch, seed=config.seed, log=log))
    finally:
        side.close()

    results = {
        "schema": SCHEMA_VERSION,
        "environment": collect_environment(command),
        "peak_tflops": peak.tflops,
        "method": {"rounds": rounds, "samples": samples, "timer": "autoconv.gpu.timing.time_calls",
                   "operand_sets": "together > 2x L2", "seed": config.seed,
                   "workspace_limit_bytes": config.workspace_limit_bytes},
        "tuning_seconds": tuning_seconds,
        "problems": problems,
    }
    results["geomean"] = geomeans(problems)
    results["geomean_by_precision"] = geomeans_by_precision(problems)
    return results


# ---- autoconv's side -----------------------------------------------------------------------------

class AutoconvSide:
    """autoconv's half of the comparison, through the tuner's own modules: the winners'
    cache (keyed by this GPU's identity), tuning, the Optuna studies, and a winner
    compiled and loaded in this process (the way :func:`autoconv.conv2d` runs it)."""

    def __init__(self, session):
        self.session = session
        self.config = session.config
        self.device, self.identity = read_device(self.config.device)
        self.cache = session.open_cache()

    def key(self, problem):
        return CacheKey.for_problem(self.identity, problem)

    def cached(self, problem):
        """The cache entry for ``problem`` on this GPU with these templates, or None."""
        return self.cache.get(self.key(problem))

    def check_computable(self, items: Sequence) -> None:
        """Raise :class:`~autoconv.errors.AutoconvError` naming every problem of ``items``
        (NamedProblems) that no family of the session computes, with each family's reason (it
        does not implement the problem's precision or layout, or none of its configurations is
        valid for the problem's sizes), before anything is tuned."""
        refused = []
        for item in items:
            reasons = [self._refusal(name, item.problem) for name in self.session.families]
            if all(reasons):
                refused.append(f"{item.name} ({item.problem.shape_str()}): " + "; ".join(cast(list[str], reasons)))
        if refused:
            raise AutoconvError("no kernel family computes " + " | ".join(refused)
                                + "; change the problem (e.g. layout: NHWC for bf16/fp16) or the families")

    def _refusal(self, family_name: str, problem) -> str | None:
        """Why ``family_name`` cannot run ``problem`` on this GPU, or None."""
        family = get_family(family_name)
        reason = family.unsupported_reason(problem)
        if reason is not None:
            return reason
        try:
            family.space.default_config(problem, self.device, self.config.workspace_limit_bytes)
        except SearchSpaceError as err:
            return str(err)
        return None

    def tune(self, items: Sequence, log: Callable[[str], None]) -> None:
        """Tune ``items`` (NamedProblems) with the session's families, budget and storage;
        winners go into the cache.

        Raises:
            AutoconvError: naming every problem for which no candidate passed.
        """
        config = self.config
        with CupyBackend(config.device, seed=config.seed) as backend:
            tuner = self.session.tuner(backend, cache=self.cache, reporter=_LogReporter(log))
            outcomes = tuner.tune(list(items))
        lost = [o for o in outcomes if o.time_ms is None]
        if lost:
            raise AutoconvError("tuning found no working kernel for "
                                + "; ".join(f"{o.name}: {o.message or o.stop_reason}" for o in lost))

    def load(self, problem, entry) -> LoadedWinner:
        """The cached winner compiled (NVRTC) and loaded here.

        Raises:
            AutoconvError: it no longer renders, compiles or fits the device (the message
                says how to recover: clear the entry and tune again).
        """
        recover = "; clear the cache (`autoconv cache clear`) and tune again"
        plan = get_family(entry.family).plan(problem, entry.config, self.device,
                                             self.config.workspace_limit_bytes)
        if plan.name != entry.kernel_name:
            raise AutoconvError(f"the cached winner {entry.kernel_name} renders as {plan.name} now{recover}")
        compiled = compile_source(plan.source, self.device.arch, plan.name)
        if not compiled.ok:
            raise AutoconvError(f"the cached winner {plan.name} no longer compiles:\n{compiled.reason()}{recover}")
        loaded = LoadedPlan(plan, compiled.cubin)
        trouble = loaded.resource_problem(self.device)
        if trouble is not None:
            raise AutoconvError(f"the cached winner {plan.name} cannot run here: {trouble[1]}{recover}")
        return LoadedWinner(plan, loaded)

    def store_baseline(self, problem, fields: Mapping[str, Any]) -> bool:
        """cuDNN's time and plan into the problem's cache entry (``baseline_*``)."""
        return self.cache.set_baseline(self.key(problem), **fields)

    def history(self, entry) -> StudyHistory:
        """Per-family best times and the evaluated trials of the study that found ``entry``
        (empty when the study is not in the session's storage, e.g. an imported cache)."""
        import optuna  # imported where needed: it takes a while, and every command imports this module

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        try:
            study = optuna.load_study(study_name=entry.study_name, storage=make_storage(self.session.storage))
        except KeyError:  # Optuna's answer for an unknown study name
            return StudyHistory({}, [], f"study {entry.study_name!r} is not in {masked_url(self.session.storage)}")
        return StudyHistory.of(study)

    def close(self) -> None:
        self.cache.close()


class _LogReporter(Reporter):
    """The tuner's progress as ``autoconv bench`` logs it: a line per tuned problem."""

    def __init__(self, log: Callable[[str], None]):
        self.log = log

    def problem_finished(self, outcome) -> None:
        found = f"{outcome.family} {outcome.time_ms:.4f} ms" if outcome.time_ms is not None else "no winner"
        self.log(f"  tuned {outcome.name}: {found} ({outcome.trials_run} trials, {outcome.stop_reason})")


class LoadedWinner:
    """A cached winner ready to run: ``enqueue(buffers)`` puts its launches on CuPy's
    current stream; ``buffers`` maps x, w, bias, y to CuPy arrays. Its workspace (if
    any) belongs to it."""

    def __init__(self, plan, loaded):
        import cupy  # optional: autoconv imports without it

        self.plan = plan
        self.loaded = loaded
        self.workspace_bytes = plan.workspace_bytes
        self.workspace = (cupy.empty(plan.workspace_elements, dtype=cupy.float32)
                          if plan.workspace_bytes > 0 else None)

    def enqueue(self, buffers: Mapping[str, Any]) -> None:
        if self.workspace is not None:
            buffers = {**buffers, "workspace": self.workspace}
        self.loaded.launch(buffers)

    def poison_workspace(self) -> None:
        if self.workspace is not None:
            self.workspace.fill(POISON)


class StudyHistory:
    """What a study says about one problem: each family's best verified time (ms), the
    evaluated trials in evaluation order (``number`` counts evaluated candidates only;
    proposals the tuner repaired or skipped are not candidates), and a note."""

    def __init__(self, family_best_ms: dict[str, float], trials: list[dict[str, Any]], note: str = ""):
        self.family_best_ms = family_best_ms
        self.trials = trials
        self.note = note

    @classmethod
    def of(cls, study) -> StudyHistory:
        """From a study the tuner wrote, read as :mod:`autoconv.search.study` says: its
        evaluated trials (:attr:`~autoconv.search.study.TrialRecord.evaluated`); an ok
        one's time is the value of a COMPLETE trial."""
        best: dict[str, float] = {}
        trials: list[dict[str, Any]] = []
        for record in sorted(read_trials(study), key=lambda r: r.number):
            if not record.evaluated:
                continue
            time_ms = record.time_ms
            ok = time_ms is not None
            state = "COMPLETE" if ok else cast(Status, record.status).value  # (evaluated: a status)
            trials.append({"number": len(trials), "optuna_number": record.number, "family": record.family,
                           "value_ms": time_ms, "state": state, "kernel": record.details.get("kernel_name")})
            if time_ms is not None:
                best[record.family] = min(best.get(record.family, math.inf), time_ms)
        return cls(best, trials)


# ---- one problem ---------------------------------------------------------------------------------

def alternate_rounds(timers: Mapping[str, Callable[[], float]], rounds: int, *,
                     optional: str | None = None) -> tuple[dict[str, list[float]], str | None]:
    """Each timer's milliseconds, once per round; the first timer of each round rotates, so no side
    always follows the same one. The ``optional`` timer (the PyTorch column) that raises is left
    out from then on, with the reason returned; any other's error propagates."""
    per_round: dict[str, list[float]] = {name: [] for name in timers}
    order, failure = list(timers), None
    for r in range(rounds):
        shift = r % len(order)
        for name in order[shift:] + order[:shift]:
            if name not in per_round:
                continue  # (the optional timer, failed in an earlier round)
            try:
                per_round[name].append(timers[name]())
            except Exception as err:
                if name != optional:
                    raise
                failure = one_line(err)
                del per_round[name]
    return per_round, failure


def measure_problem(item, side: AutoconvSide, *, peak_tflops: float, rounds: int, samples: int,
                    torch: bool, seed: int, log: Callable[[str], None]) -> dict[str, Any]:
    """One problem's entry of the results (see the module docstring, steps 2-6)."""
    import cupy  # optional: autoconv imports without it

    problem = item.problem
    entry = side.cached(problem)
    inputs = random_inputs(problem, numpy.random.default_rng(seed))
    operands = OperandSets(problem, inputs, l2_bytes=side.device.l2_bytes, seed=seed + 1)
    reference = reference_output(problem, operands)

    # cuDNN in the problem's precision (the baseline, first) and, for float32 problems, the other
    # float32 mode beside it.
    modes = MODES_OF_PRECISION[problem.precision]
    baselines = {mode: find_best_plan(problem, mode, operands=operands, reference=reference, samples=samples,
                                      workspace_limit=side.config.workspace_limit_bytes)
                 for mode in modes}
    for mode, found in baselines.items():
        log(f"  cuDNN {mode}: {found.time_ms:.4f} ms, plan {found.plan_name} "
            f"({found.plans_ok} of {found.plans_tried} plans ran and verified)")

    # Every side as enqueue(i): one call on operand set i, on CuPy's current stream.
    winner = side.load(problem, entry)
    convs = {mode: CudnnConv(problem, mode, baselines[mode].plan_name) for mode in modes}
    enqueues: dict[str, Callable[[int], None]] = {"autoconv": lambda i: winner.enqueue(operands.arrays(i))}
    for mode, conv in convs.items():
        enqueues[f"cudnn_{mode}"] = lambda i, conv=conv: conv(**operands.pointers(i))  # type: ignore[misc]

    # No time without a verified output: each side once on poisoned output, vs float64.
    tolerances = {"autoconv": operands.tolerance(problem, reference)}
    tolerances |= {f"cudnn_{mode}": plan_tolerance(problem, mode, operands, reference) for mode in modes}
    errors: dict[str, float] = {}
    for name, enqueue in enqueues.items():
        operands.poison_output(0)
        winner.poison_workspace()
        enqueue(0)
        cupy.cuda.get_current_stream().synchronize()
        verdict = check_result(operands.values("y"), reference, tolerances[name])
        if not verdict.ok:
            raise AutoconvError(f"{item.name}: {name.replace('_', ' ')} computes a wrong result "
                                f"({verdict.message}); no times are reported for this problem"
                                + ("; clear the cache (`autoconv cache clear`) and tune again"
                                   if name == "autoconv" else ""))
        errors[name] = verdict.error

    torch_note = torch_unavailable_reason(problem) if torch else "left out (--no-torch)"
    timers: dict[str, Callable[[], float]] = {
        name: lambda enqueue=enqueue: time_calls(enqueue, operands.count, samples=samples).median_ms  # type: ignore[misc]
        for name, enqueue in enqueues.items()}
    if torch_note is None:
        def time_torch_column() -> float:
            measured = time_torch(problem, operands, reference, samples=samples, tf32=problem.precision == "tf32")
            assert measured is not None  # (a torch column only where PyTorch can run it)
            errors["torch"] = measured.error_vs_reference
            return measured.time_ms
        timers["torch"] = time_torch_column
    per_round, torch_failure = alternate_rounds(timers, rounds, optional="torch")
    if torch_failure is not None:
        torch_note = f"F.conv2d failed: {torch_failure}"
        errors.pop("torch", None)
        log(f"  PyTorch's column left out: {torch_note}")
    times = {name: statistics.median(values) for name, values in per_round.items()}
    spread = {name: (max(values) - min(values)) / statistics.median(values)
              for name, values in per_round.items()}
    if "torch" in times and problem.out_dtype:
        torch_note = (f"F.conv2d writes {problem.dtype} outputs (as under autocast), not the problem's "
                      f"{problem.out_dtype}")
    log("  " + ", ".join(f"{name} {ms:.4f} ms" for name, ms in times.items()))

    def tflops_of(ms: float | None) -> float | None:
        return problem.flops / (ms * 1e-3) / 1e12 if ms else None

    def ratio_to(ms: float | None) -> float | None:
        return ms / autoconv_ms if ms else None

    def plan_of(cudnn_mode: str) -> str | None:
        return baselines[cudnn_mode].plan_name if cudnn_mode in baselines else None

    def verified(cudnn_mode: str) -> str | None:
        found = baselines.get(cudnn_mode)
        return f"{found.plans_ok} of {found.plans_tried} verified" if found else None

    autoconv_ms = times["autoconv"]
    # The baseline: cuDNN in the problem's precision (strict against fp32, TF32 against tf32,
    # bf16 against bf16...).
    mode = CUDNN_MODES[problem.precision]
    baseline_ms = times[f"cudnn_{mode}"]
    baseline_tflops = cast(float, tflops_of(baseline_ms))
    fields = baselines[mode].cache_baseline(cudnn_versions()["cudnn_frontend"])
    side.store_baseline(problem, {**fields, "time_ms": baseline_ms, "tflops": baseline_tflops})

    tflops = cast(float, tflops_of(autoconv_ms))
    history = side.history(entry)
    tensor_peak = dense_tensor_peak_tflops(side.device.name, problem.precision)

    return {
        "name": item.name, "count": item.count, "spec": problem.spec(), "shape": problem.shape_str(),
        "precision": problem.precision, "cudnn_mode": mode,
        "gflop": problem.flops / 1e9, "family": entry.family, "params": dict(entry.config),
        "kernel": entry.kernel_name,
        "autoconv_ms": autoconv_ms, "autoconv_tflops": tflops, "pct_of_peak": 100 * tflops / peak_tflops,
        "autoconv_tuning_ms": entry.time_ms,
        "cudnn_strict_ms": times.get("cudnn_strict"), "cudnn_strict_plan": plan_of(STRICT),
        "cudnn_strict_tflops": tflops_of(times.get("cudnn_strict")),
        "cudnn_strict_plans": verified(STRICT),
        "cudnn_tf32_ms": times.get("cudnn_tf32"), "cudnn_tf32_plan": plan_of(TF32),
        "torch_ms": times.get("torch"), "torch_note": torch_note,
        "cudnn_ms": baseline_ms, "cudnn_plan": baselines[mode].plan_name, "cudnn_tflops": baseline_tflops,
        "cudnn_plans": verified(mode),
        "speedup_vs_cudnn": baseline_ms / autoconv_ms,
        "speedup_vs_cudnn_strict": ratio_to(times.get("cudnn_strict")),
        "speedup_vs_cudnn_tf32": ratio_to(times.get("cudnn_tf32")),
        "tensor_peak_tflops": tensor_peak,
        "pct_of_tensor_peak": {side_name: 100 * cast(float, tflops_of(ms)) / tensor_peak
                               for side_name, ms in times.items()} if tensor_peak else None,
        "errors_vs_reference": errors, "round_spread": spread,
        "family_best_ms": history.family_best_ms, "study_note": history.note,
        "workspace_bytes": winner.workspace_bytes, "trials": history.trials,
    }
