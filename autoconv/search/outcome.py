"""What tuning a problem gives (:class:`ProblemOutcome`), how the outcomes of one problem
tuned several times are merged into one (:func:`merge_outcomes`), what a run of them kept busy
(:func:`run_load`), and the interface through which the tuner reports its progress
(:class:`Reporter`).

One problem is tuned several times in two ways, and :func:`merge_outcomes` serves both:

- **in parallel**, by the workers of ``autoconv tune --gpus`` sharing its study
  (:mod:`autoconv.search.fleet`): the fastest verified winner (the one the cache keeps),
  the longest wall time, and the number of workers that tuned it;
- **one pass after another** in one process, when the tuner tunes a problem again to
  evaluate the candidates of a worker that died
  (:meth:`autoconv.search.tuner.Tuner._settle`): the last pass's winner (it re-verified
  the study's best), wall times added.

Either way the work is added up: trials run, invalid proposals, repeats, proposals skipped as
predicted slow, failures by status, compile and GPU seconds, and the seconds per phase
(:data:`PHASES`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from autoconv.backends.base import TrialResult
from autoconv.config.budget import Budget
from autoconv.kernels.families import KernelPlan
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import ConvProblem

#: Where a tuning process's wall time on a problem goes (``ProblemOutcome.phases_s``): ``start``
#: (the study opened, stalled trials failed, the warm start queued), ``ask`` (the sampler's
#: proposals, the budget's checks, each candidate's plan rendered and submitted), ``wait`` (for a
#: candidate's result: its compilation, its turn on the GPU and its run), ``record`` (results told
#: to the study and reported), ``finish`` (the winner re-verified, and cached).
PHASES = ("start", "ask", "wait", "record", "finish")


class PhaseClock:
    """Adds up wall seconds per phase: :meth:`enter` ends the current phase and starts another."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self._phase: str | None = None
        self._since = 0.0

    def enter(self, phase: str | None) -> None:
        """Start ``phase`` (one of :data:`PHASES`), or stop counting (None)."""
        now = time.monotonic()
        if self._phase is not None:
            self.seconds[self._phase] += now - self._since
        self._phase, self._since = phase, now


#: A tuning process's moments (``tune.json``: ``milestones_s``, per worker with ``--gpus``), in
#: the order they come: the process started (``process``), its GPU backend answered
#: (``backend``), its study storage was read (``storage``), its first candidate was submitted
#: (``first_submit``), its last result came (``last_result``), its problems were done (``tuned``),
#: its backend's processes were closed (``closed``). What comes before the first submission and
#: after the last result is paid by every tune, on any number of GPUs.
MILESTONES = ("process", "backend", "storage", "first_submit", "last_result", "tuned", "closed")


class Milestones:
    """Seconds from a run's start (``started_at``, :func:`time.time`: the moments of several
    processes compare) to each of :data:`MILESTONES` reached."""

    def __init__(self, started_at: float):
        self.started_at = started_at
        self.seconds: dict[str, float] = {}

    def mark(self, name: str, at: float | None = None) -> None:
        """``name`` (one of :data:`MILESTONES`) reached now, or at ``at`` (a :func:`time.time`)."""
        if name not in MILESTONES:
            raise ValueError(f"unknown milestone {name!r}")
        self.seconds[name] = round((time.time() if at is None else at) - self.started_at, 3)

    def in_order(self) -> dict[str, float]:
        return {name: self.seconds[name] for name in MILESTONES if name in self.seconds}


def phase_totals(outcomes: Sequence[ProblemOutcome]) -> dict[str, float]:
    """The outcomes' seconds per phase (:data:`PHASES`), added up."""
    return {phase: sum(o.phases_s.get(phase, 0.0) for o in outcomes) for phase in PHASES}


def compile_rate(outcomes: Sequence[ProblemOutcome]) -> tuple[int, float | None]:
    """The candidates the outcomes evaluated in this run, and how many of them a second of their
    compiling processes' CPU time paid for (None without compile time: all from the cache). The
    host's CPUs bound a tune (issue 16), so this is its cost per candidate, comparable across runs
    and hosts where the wall time is not."""
    candidates = sum(o.trials_run for o in outcomes)
    cpu_s = sum(o.compile_cpu_s for o in outcomes)
    return candidates, (candidates / cpu_s if cpu_s > 0 else None)


@dataclass(frozen=True)
class RunLoad:
    """What a tuning run kept busy, on average over its wall time: how a user (and issue 16) reads
    what bounds a tune on their host, and what more GPUs could give there.

    Its :attr:`cores_allow` is a bound, not a forecast: a run cannot end before its compiles' CPU
    seconds are spread over every core, so any run of the same compiles (more GPUs, more workers,
    another order) is at most that many times faster. More GPUs start more studies at once, which
    usually compile more candidates, not fewer."""

    host_cores: int
    compile_cores: float  # compile CPU-s over the run's wall time: cores the compilers kept busy
    gpus: int
    gpu_busy: float       # the candidates' GPU seconds (load, verify, time) over wall time x GPUs

    @property
    def cores_allow(self) -> float | None:
        """At most how many times faster a run of the same compiles can be on this host's cores
        (None: nothing was compiled)."""
        return self.host_cores / self.compile_cores if self.compile_cores > 0 else None

    def as_dict(self) -> dict[str, Any]:
        allow = self.cores_allow
        return {"host_cores": self.host_cores, "compile_cores_busy": round(self.compile_cores, 2), "gpus": self.gpus,
                "gpu_busy": round(self.gpu_busy, 3), "cores_allow": None if allow is None else round(allow, 2)}


def run_load(outcomes: Sequence[ProblemOutcome], wall_s: float, gpus: int, host_cores: int) -> RunLoad:
    """The :class:`RunLoad` of a run of ``wall_s`` seconds on ``gpus`` GPUs of a host with
    ``host_cores`` cores that gave ``outcomes`` (the seconds of problems served from the cache are 0)."""
    wall_s = max(wall_s, 1e-9)
    return RunLoad(host_cores=host_cores, compile_cores=sum(o.compile_cpu_s for o in outcomes) / wall_s,
                   gpus=gpus, gpu_busy=sum(o.gpu_s for o in outcomes) / (wall_s * max(gpus, 1)))


@dataclass
class ProblemOutcome:
    """What tuning one problem gave. ``source``: ``tuned``, ``cache`` or ``none`` (no
    candidate passed)."""

    name: str
    problem: ConvProblem
    count: int = 1
    source: str = "none"
    family: str | None = None
    config: dict | None = None
    kernel_name: str | None = None
    time_ms: float | None = None
    tflops: float | None = None
    workspace_bytes: int = 0
    study_name: str = ""
    stop_reason: str = ""
    search: str = ""           # how it was searched: one of :data:`SEARCHES`
    message: str = ""
    trials_run: int = 0        # candidates evaluated in this run
    trials_total: int = 0      # candidates evaluated in the study (all runs)
    invalid: int = 0           # proposals repaired because they broke a constraint
    repeats: int = 0           # proposals of configs evaluated before
    predicted_slow: int = 0    # candidates not compiled: the history's model ranks them among the slowest
    cut_short: int = 0         # candidates timed once, not in full: slower than a multiple of the best (cutoff_ms)
    failures: dict[str, int] = field(default_factory=dict)  # this run's failed candidates by status
    compile_s: float = 0.0      # the candidates' compilations, wall time summed over them
    compile_cpu_s: float = 0.0  # their compiling processes' CPU time
    gpu_s: float = 0.0
    compile_queue_s: float = 0.0  # the candidates' waits for a compiler process, summed
    gpu_queue_s: float = 0.0      # their waits from cubin to GPU (earlier candidates, other processes), summed
    wall_s: float = 0.0
    phases_s: dict[str, float] = field(default_factory=dict)  # this process's wall time by phase (PHASES)
    valid_points: int = 0
    workers: int = 1           # processes whose trials are counted here (``tune --gpus``)
    #: This run's own winner (family, config, kernel_name, time_ms, tflops, workspace_bytes) where
    #: the cache holds another after the run (a faster one that another run cached), else None:
    #: the fields above say what the cache holds (:func:`autoconv.search.finish.report_cached`).
    this_run_best: dict[str, Any] | None = None

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["problem"] = self.problem.key()
        data["shape"] = self.problem.shape_str()
        data["gflop"] = self.problem.gflop
        return data


#: How a problem's study was searched (:attr:`ProblemOutcome.search`): "full" (sampled until the
#: patience), "full, then transfer" (begun full, a transfer once the history was enough) or
#: "transfer"; the most sampled first. Of several passes or workers, the outcome keeps the first of
#: these any of them says: a study searched full by one worker and joined by another once the history
#: was enough is a full study, as is one whose end's revisit (a second pass) was a transfer.
SEARCHES = ("full", "full, then transfer", "transfer")


def merge_outcomes(outcomes: Sequence[ProblemOutcome], *, parallel: bool = True) -> ProblemOutcome:
    """One problem's outcome from several tunings of it (see the module docstring), in
    the order they ended: with ``parallel``, by workers at once (the fastest verified
    winner; the longest wall time; trials in the study: the most any saw; ``source``
    ``tuned`` when any tuned; ``workers``: how many tuned); else one pass after another
    in this process (the last pass with a winner, else the first; wall times added; the
    rest as that pass says). The work of all is added up either way, and ``search`` is the most
    sampled any says (:data:`SEARCHES`)."""
    failures: dict[str, int] = {}
    for outcome in outcomes:
        for status, count in outcome.failures.items():
            failures[status] = failures.get(status, 0) + count
    work: dict[str, Any] = dict(
        trials_run=sum(o.trials_run for o in outcomes), invalid=sum(o.invalid for o in outcomes),
        repeats=sum(o.repeats for o in outcomes), predicted_slow=sum(o.predicted_slow for o in outcomes),
        cut_short=sum(o.cut_short for o in outcomes),
        failures=failures,
        compile_s=sum(o.compile_s for o in outcomes), compile_cpu_s=sum(o.compile_cpu_s for o in outcomes),
        gpu_s=sum(o.gpu_s for o in outcomes),
        compile_queue_s=sum(o.compile_queue_s for o in outcomes), gpu_queue_s=sum(o.gpu_queue_s for o in outcomes),
        phases_s=phase_totals(outcomes))
    said = {o.search for o in outcomes}
    work["search"] = next((search for search in SEARCHES if search in said), outcomes[0].search)
    with_winner = [o for o in outcomes if o.time_ms is not None]
    if not parallel:
        chosen = with_winner[-1] if with_winner else outcomes[0]
        return dataclasses.replace(chosen, **work, wall_s=sum(o.wall_s for o in outcomes))
    chosen = min(with_winner, key=lambda o: cast(float, o.time_ms)) if with_winner else outcomes[0]
    tuned = [o for o in outcomes if o.source == "tuned" or o.trials_run]
    return dataclasses.replace(
        chosen, **work, source="tuned" if tuned else chosen.source,
        trials_total=max(o.trials_total for o in outcomes), wall_s=max(o.wall_s for o in outcomes),
        workers=len(tuned) or 1)


class Reporter:
    """Receives the tuner's progress; this base class ignores it (see
    :mod:`autoconv.commands.tune` for the terminal's, :mod:`autoconv.search.fleet` for a
    worker's)."""

    def run_started(self, problems: Sequence[NamedProblem], budget: Budget) -> None: ...
    def problem_started(self, item: NamedProblem, study: str, evaluated: int, budget: Budget) -> None: ...
    def trial_finished(self, item: NamedProblem, trial_number: int, plan: KernelPlan,
                       result: TrialResult, best: TrialResult | None, evaluated: int) -> None: ...
    def problem_finished(self, outcome: ProblemOutcome) -> None: ...
    def run_finished(self, outcomes: Sequence[ProblemOutcome]) -> None: ...
    def note(self, text: str) -> None: ...

    def note_once(self, text: str, key: str) -> None:
        """A note said once a run under ``key``, however many of the run's workers say it (a tuner
        says it once; each worker of a run has its own tuner): here, as :meth:`note`."""
        self.note(text)
