"""The search: one Optuna study per problem, candidates evaluated by a backend.

This module is the ask/tell loop, its budget, and the winner's re-verification and
caching; around it: :mod:`~autoconv.search.points` (the valid configurations and the
repair of a proposal), :mod:`~autoconv.search.study` (study names, and what a trial
holds), :mod:`~autoconv.search.liveness` (heartbeats, abandoned trials),
:mod:`~autoconv.search.outcome` (what tuning a problem gives),
:mod:`~autoconv.search.storage` (the Optuna storage).

For each problem (:class:`Tuner.tune`):

1. **Cache first.** A winner cached for this problem, device and template version is
   used as is (``retune=True`` searches anyway), unless the problem's study holds candidates of
   a run that ended early, queued again, and its trial budget is not spent: then the study
   resumes (a killed run's worker may have cached the winner while counting another worker's
   candidates, which the kill then abandoned).
2. **The study.** ``autoconv/<problem key>/<GPU>/<families>/<template hash>`` in the
   storage (an Optuna journal file by default, which several processes on one host can
   share, or a SQLAlchemy URL). Re-running the same command loads it and continues: the
   trial budget counts the study's evaluated trials, and a configuration evaluated
   before, or being evaluated by another process, is never evaluated again. Several
   processes (``autoconv tune --gpus``, or the same command on several hosts sharing a
   database) tune one study together. Trials of a killed process are failed as
   ``abandoned`` and their configurations enqueued again
   (:mod:`~autoconv.search.liveness`: by process id on this host, by heartbeat through
   an RDB storage), and so are the candidates a run had in flight when it was interrupted,
   or whose compilation its end cut short. A damaged journal is an error naming the file,
   except a last record cut short, which is dropped
   (:func:`~autoconv.search.storage.make_storage`). Before
   anything else, a problem whose buffers cannot fit in the device's memory is refused
   (:mod:`autoconv.gpu.memory`), and the workspace its candidates may use is capped by
   what its buffers leave.
3. **Sampling only valid points.** The kernel family is a categorical parameter over the
   families that can run the problem (:func:`~autoconv.search.study.searched_families`), each
   family's parameters are namespaced (``implicit_gemm.BM``) and suggested
   define-by-run, so their distributions are fixed within a study. TPE (seeded,
   multivariate, grouped for the conditional space) proposes a point; the search
   spaces' valid points are enumerated once per problem, and a proposal that breaks a
   constraint costs nothing: it is told as PRUNED with the reason (TPE ranks such trials
   worst, so it learns to avoid the region), and the nearest valid point not yet
   evaluated is enqueued and asked instead (a family with no valid point for the problem,
   on this GPU or within the workspace, is only told invalid). This *repair* matters: for a ResNet layer
   only ~3% of implicit_gemm's parameter combinations are valid, so rejecting and
   re-asking would spend almost every ask on an invalid point. A proposal evaluated
   before is told FAIL (``status: repeat``; samplers ignore failed trials) and its
   nearest unevaluated neighbour enqueued likewise. So is one that another process
   holds: a proposal is checked again once its params are in the storage, so of two
   processes proposing one config at once, the later one sees the earlier's. The winners of
   the nearest problems already tuned on this GPU (:mod:`autoconv.cache.neighbours`), then each
   family's default config and its seeds (the search space's list of configs measured best
   elsewhere), each as its nearest valid point, are enqueued first (warm start). Neighbours'
   winners cached while the study runs (by the run's other workers) are tried before its
   patience ends it, and those of neighbours tuned after it ended, at the end of the run
   (:meth:`Tuner._revisit`).
4. **Pipelined evaluation.** Up to ``pipeline_depth`` candidates are asked ahead and
   submitted to the backend, which compiles them in parallel while the GPU evaluates the
   earliest submitted of those compiled; the tuner takes each result as it is ready (TPE's
   constant liar treats the pending ones as bad, so the batch stays diverse). A study waiting on
   its last candidates (a transfer study between its rounds, a full one draining its pipeline)
   leaves the compilers idle, so the next problem's study begins then, sharing the pipeline
   (:data:`CONCURRENT_STUDIES`, :data:`OVERLAP_BELOW`, :meth:`Tuner._tune_overlapped`). A candidate
   over :data:`SLOW_CUTOFF` times the best is timed once, not in full (``cut_short``). With
   ``run_time_sizes`` (``autoconv tune --run-time-sizes``) a family with a build
   whose sizes come at run time (implicit_gemm_wgmma) is searched with it: a configuration tried
   on several problems compiles once (the backend
   keeps compiled sources; the compile service shares them between workers), for kernels
   some percent slower than with constants. The search times each candidate with a shorter
   measurement than the winner's (:data:`autoconv.gpu.timing.SCREENING`: enough to rank candidates). Each
   result is told as it arrives: ok as COMPLETE with the time in ms as the value, any
   failure as PRUNED; params, status, reason, compile and GPU seconds, registers,
   spills, shared memory and workspace go into the trial's user attributes
   (``optuna-dashboard`` shows them).
5. **Budget.** Per problem: ``trials`` evaluated trials in the study (those being
   evaluated by any process count as spent), ``seconds`` of wall time in this run,
   ``patience`` evaluated trials without improving the best by more than
   :data:`SIGNIFICANT_IMPROVEMENT` (the winner is the fastest all the same); whichever ends first
   (in-flight candidates are finished, not discarded). Before the patience ends a study, its
   best's variations are evaluated: each other choice of each parameter, at the nearest valid
   configuration (:meth:`Tuner._polish`); then every other split of the reduction of the next
   tiles' fastest configurations within reach of the best (:mod:`~autoconv.search.runners_up`);
   one of them beating the best by that much restarts it.
   Candidates in flight count towards the patience too: no more are asked while those pending
   would complete it, so a problem ends ``patience`` trials after its best, not ``patience`` plus a pipeline's
   worth (one of them improving the best lets the asking resume).
   With ``prefilter`` (``autoconv tune --prefilter``) the history's model skips compiling the
   candidates it predicts among the slowest (:mod:`~autoconv.search.prefilter`); each skipped
   one counts towards the patience as a trial that did not improve, not towards ``trials``.
   With ``transfer`` (``autoconv tune``'s default) a problem the history's model knows enough
   about is searched locally instead, without the sampler or the patience: its neighbours'
   winners and the model's picks, then variations of each best, then the next tiles' splits
   (:mod:`~autoconv.search.transfer`, :meth:`Tuner._transfer_step`); a full study begun before
   the history was enough becomes such a search once it is (:meth:`Tuner._becomes_transfer`).
6. **The winner** is the fastest ok trial of the study, built with constants; it is
   re-verified and re-timed on fresh inputs, and only then cached (if it fails, the next
   fastest is tried; if its time in full is above the next fastest's time in the search, that one
   is timed in full too, and the fastest in full wins). Where the fastest were ranked with sizes
   at run time, the :data:`REVERIFY_CANDIDATES` fastest are all rebuilt, verified and timed, and
   the fastest of them wins (:meth:`Tuner._finish`).
"""

from __future__ import annotations

import hashlib
import os
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import TrialState

from autoconv.backends.base import Backend, Status, TrialResult
from autoconv.cache.neighbours import Neighbour, nearest_winners
from autoconv.cache.winners import CacheEntry, CacheKey, WinnerCache
from autoconv.errors import AutoconvError, DeviceMemoryError
from autoconv.gpu.memory import check_fits
from autoconv.kernels.families import KernelPlan, get_family
from autoconv.problems.config import Budget
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import ConvProblem
from autoconv.processes import process_owner
from autoconv.search import runners_up as runners_up_search
from autoconv.search import transfer as transfer_search
from autoconv.search.liveness import Liveness
from autoconv.search.options import SearchOptions, SearchSettings
from autoconv.search.outcome import Milestones, PhaseClock, ProblemOutcome, Reporter, merge_outcomes
from autoconv.search.points import ValidPoints, config_key, enumerate_in_turn, enumerate_points
from autoconv.search.prefilter import PreFilter
from autoconv.search.ranker import Ranker, Sample, history_samples
from autoconv.search.storage import is_retry, make_storage, retry_trial, sync_storage
from autoconv.search.study import (
    SearchHistory,
    TrialRecord,
    claim,
    claimed_by_another,
    enqueue,
    mark_problem,
    ok_trials,
    record_evaluation,
    record_winner,
    refuse,
    searched_families,
    study_name,
    suggest,
)

#: Winners of the nearest tuned problems a new study tries first.
TRANSFERRED_WINNERS = 3
#: Fastest ok trials tried, in order, when the winner fails its re-verification or is slower in
#: full than the next in the search; all of them are timed in the build with constants when one
#: was ranked with sizes at run time (see ``_finish``).
REVERIFY_CANDIDATES = 3
#: What :meth:`Tuner._transfer_step` says when a transfer study has nothing to ask until a result
#: comes.
WAIT_FOR_RESULTS = "wait for results"
#: Seconds between a full study's looks at whether the history now allows a transfer
#: (:meth:`Tuner._becomes_transfer`: reading the storage's timed trials costs ~10 ms).
TRANSFER_CHECK_S = 1.0
#: Offset of the re-verification inputs' seed from the search's.
REVERIFY_SEED_OFFSET = 7919
#: Asks without a new candidate after which the space counts as exhausted (a safety
#: net: a repair enqueues a valid unevaluated point, so one ask normally suffices).
MAX_ASKS_PER_CANDIDATE = 200
#: Candidates the prefilter may skip while one is asked for; past them it lets the next one through
#: (a sampler stuck in a region the model calls slow must not exhaust :data:`MAX_ASKS_PER_CANDIDATE`).
MAX_SKIPS_PER_CANDIDATE = 24
#: Seconds between two looks at other workers' running trials once this one is done. A look at a
#: VGG-16 run's nine studies takes ~20 ms; at 1 s, a worker ended up to a second after the last
#: trial it waited for, and a transfer run with it (results/h100/thirtieth).
SETTLE_POLL_S = 0.2
#: A new best restarts the patience only if it beats the best that last restarted it by more
#: than this fraction: a study creeping forward by steps near the screening timing's own spread
#: does not earn another ``patience`` trials for each step. Replayed on five tunes' journals
#: (results/h100/tuning_cost/patience_polish), 2% at patience 60 ran 77-89% of the trials, at
#: patience 40 54-62%, best times within 0.1-0.8% (geometric mean) but 14% slower on the worst
#: layer of the H100 journals: what :meth:`Tuner._polish` is for.
SIGNIFICANT_IMPROVEMENT = 0.02
#: Bests whose variations are evaluated (:meth:`Tuner._polish`) between two
#: significant improvements.
POLISH_ROUNDS = 2
#: A candidate whose one call, timed alone after its verification (twice, if the first is over),
#: takes longer than this many times the study's best (plus :data:`LAUNCH_SLACK_MS` per launch of
#: its plan, for the host's launches inside a lone call's timing) keeps that time and is not
#: timed in full (``cut_short``). 80% of a ResNet-50 tune's GPU
#: time went to candidates over twice their layer's best (two H200s, nineteenth session,
#: results/h200x2/tune_latency), up to 0.7 s each; none of them can win, and one call ranks
#: them well enough.
SLOW_CUTOFF = 3.0
LAUNCH_SLACK_MS = 0.02
#: Studies a tuner keeps in flight at once. A study waiting on its last candidates (a transfer
#: study between its rounds, a full one draining its pipeline at its end) leaves the host's
#: compilers idle: the next problem's study begins then (:meth:`Tuner._tune_overlapped`).
CONCURRENT_STUDIES = 2
#: The next study begins only while the studies in flight hold fewer candidates than this: a
#: transfer study's start (13-17 candidates) is mostly compiled before the next one's joins the
#: queue, and two studies never start at once (six workers' starts at once queued the compilers
#: for over a second per candidate, results/h100/twentyeighth).
OVERLAP_BELOW = 8


def sampler_seed(seed: int, study: str) -> int:
    """The TPE sampler's seed for ``study`` (a :func:`~autoconv.search.study.study_name`) in a run
    seeded ``seed``: per problem, GPU and families, but not per templates' version, so that an
    edit of a template or search space (a comment included) does not redraw every search, and a
    kernel change timed through two tunes meets the same proposals until their results differ."""
    without_templates = study.rsplit("/", 1)[0]
    return (seed * 1_000_003 + int(hashlib.sha256(without_templates.encode()).hexdigest()[:8], 16)) % 2**32


def cutoff_ms(best_ms: float | None, launches: int = 1) -> float | None:
    """The cut-off of a candidate of ``launches`` kernel launches screened while ``best_ms`` is the
    study's best (None: no best yet, no cut-off)."""
    return None if best_ms is None else SLOW_CUTOFF * best_ms + LAUNCH_SLACK_MS * launches


def enqueue_new(study, starts: Sequence[tuple[str, Mapping[str, object], str]], known: set[str]) -> set[str]:
    """Queue each (family, config, origin) of ``starts`` whose config key is not in ``known``
    (evaluated, queued or in flight), once; the keys queued (added to ``known``)."""
    queued = set()
    for family, config, origin in starts:
        key = config_key(family, config)
        if key not in known:
            known.add(key)
            enqueue(study, family, config, origin)
            queued.add(key)
    return queued


def lower_cutoffs(in_flight, best_ms: float) -> None:
    """A new best: the candidates submitted before it and not yet on the GPU are cut off by it
    (a study's first candidates are all submitted before any best is known)."""
    for _, plan, ticket in in_flight:
        ticket.lower_cutoff(cast(float, cutoff_ms(best_ms, len(plan.launches))))


#: What :meth:`Tuner._tune_overlapped` calls as each job ends: (tag, item, points, its outcome or the
#: error that ended it).
SearchEnded = Callable[[int, NamedProblem, ValidPoints, "ProblemOutcome | AutoconvError"], None]


@dataclass(eq=False)
class _Search:
    """One problem's study while a :class:`Tuner` searches it (:meth:`Tuner._begin` to
    :meth:`Tuner._end`)."""

    item: NamedProblem
    points: ValidPoints
    study: optuna.Study
    workspace_limit: int
    outcome: ProblemOutcome
    clock: PhaseClock
    started: float                        # time.monotonic() at its beginning (its ``seconds`` count from there)
    transfer: Ranker | None               # the history's model, when the study is a transfer; None: a full study
    prefilter: PreFilter | None
    in_flight: deque = field(default_factory=deque)  # (trial, plan, ticket), in submission order
    best: TrialResult | None = None                  # the fastest result it received
    #: Bests whose variations were queued -> the significant best then (:meth:`Tuner._polish`).
    polished: dict[str, int] = field(default_factory=dict)
    polishing: set[str] = field(default_factory=set)  # those variations, until evaluated (a full study's)
    #: Configurations of other tiles whose other splits were queued (:meth:`Tuner._polish_runners_up`).
    runners_up: set[str] = field(default_factory=set)
    more_picks_due: bool = False          # a transfer study's start is queued, its further picks are not yet
    transfer_checked: float = 0.0         # time.monotonic() of a full study's last look at the history
    stop: str | None = None               # why it asks no more, once decided (its candidates in flight are finished)
    tag: int = 0                          # its job's (:meth:`Tuner._tune_overlapped`)


class Tuner:
    """Tunes problems on ``backend`` (see the module docstring).

    Args:
        backend: evaluates candidates (:class:`~autoconv.gpu.CupyBackend`, a fake...).
        settings: what it searches and how (:class:`~autoconv.search.options.SearchSettings`).
        storage: Optuna storage: a journal-file path or a SQLAlchemy URL, or one opened
            (:func:`~autoconv.search.storage.make_storage`).
        cache: where winners go (None: nowhere).
        reporter: progress callbacks.
    """

    def __init__(self, backend: Backend, settings: SearchSettings, *, storage,
                 cache: WinnerCache | None = None, reporter: Reporter | None = None):
        if settings.budget.trials is None and settings.budget.seconds is None:
            raise AutoconvError("a tuning budget needs trials and/or seconds per problem")
        if not settings.families:
            raise AutoconvError("no kernel family to search")
        for name in settings.families:
            get_family(name)  # unknown names fail here, with the known ones listed
        self.backend = backend
        self.settings = settings
        self.reporter = reporter or Reporter()
        self.storage = make_storage(storage, on_repair=self.reporter.note) \
            if isinstance(storage, (str, os.PathLike)) else storage
        self.cache = cache
        self._transferred: set[str] = set()  # the studies tuned by transfer (their end is not the patience)
        self._full_study_reasons: set[str] = set()  # why studies were full, not transfers (each said once)
        self.owner = process_owner()
        self.liveness = Liveness(self.storage, self.owner)
        # When this tuner submitted its first candidate and received its last result
        # (time.time(); None until then): the edges of its search (outcome.MILESTONES).
        self.first_submit_at: float | None = None
        self.last_result_at: float | None = None

    @property
    def families(self) -> tuple[str, ...]:
        return self.settings.families

    @property
    def budget(self) -> Budget:
        return self.settings.budget

    @property
    def search(self) -> SearchOptions:
        return self.settings.search

    @property
    def pipeline_depth(self) -> int:
        return max(1, self.search.pipeline_depth)

    @property
    def ranked(self) -> int:
        return max(0, self.search.ranked)

    def mark_search(self, milestones: Milestones) -> None:
        """The edges of this tuner's search in ``milestones``, if it searched."""
        if self.first_submit_at is not None:
            milestones.mark("first_submit", self.first_submit_at)
        if self.last_result_at is not None:
            milestones.mark("last_result", self.last_result_at)

    # ---- all problems --------------------------------------------------------------
    def tune(self, problems: Sequence[NamedProblem]) -> list[ProblemOutcome]:
        """Tune each problem in turn; one outcome per problem, in order."""
        self.reporter.run_started(problems, self.budget)
        outcomes: dict[int, ProblemOutcome] = {}
        to_tune = []
        for index, item in enumerate(problems):
            cached = self._cached(item)
            if cached is not None:
                outcomes[index] = cached
                self.reporter.problem_finished(cached)
            else:
                to_tune.append((index, item))
        fitting = []
        for index, item in to_tune:  # before enumerating or allocating anything
            try:
                fitting.append((index, item, self.problem_workspace_limit(item)))
            except DeviceMemoryError as err:
                outcomes[index] = ProblemOutcome(name=item.name, problem=item.problem, count=item.count,
                                                 stop_reason="too large for GPU memory", message=str(err))
                self.reporter.problem_finished(outcomes[index])
        to_tune = [(index, item) for index, item, _ in fitting]
        if to_tune:
            finished_since: dict[int, ProblemOutcome] = {}

            def finished_by_another(position: int) -> bool:
                """(another process may have finished it since: then it is not enumerated)"""
                cached = self._cached(to_tune[position][1], quiet=True)
                if cached is not None:
                    finished_since[position] = cached
                return cached is not None

            all_points = enumerate_in_turn([item.problem for _, item in to_tune], self.families, self.backend.device,
                                           [limit for _, _, limit in fitting], skip=finished_by_another)
            tuned = []

            def jobs():
                for position, ((index, item), points) in enumerate(zip(to_tune, all_points)):
                    if points is None:
                        outcomes[index] = finished_since[position]
                        self.reporter.problem_finished(outcomes[index])
                    else:
                        yield index, item, ValidPoints(points)

            def ended(index: int, item: NamedProblem, points: ValidPoints,
                      outcome: ProblemOutcome | AutoconvError) -> None:
                if isinstance(outcome, AutoconvError):  # e.g. the problem does not fit on the GPU
                    outcome = ProblemOutcome(name=item.name, problem=item.problem, count=item.count,
                                             stop_reason="error", message=str(outcome))
                elif points.families:  # (else no study was made)
                    tuned.append((index, item, points))
                outcomes[index] = outcome
                self.reporter.problem_finished(outcome)

            self._tune_overlapped(jobs(), ended)
            tuned.sort(key=lambda entry: entry[0])
            self._settle(tuned, outcomes)
        ordered = [outcomes[i] for i in range(len(problems))]
        self.reporter.run_finished(ordered)
        return ordered

    def _settle(self, tuned: list, outcomes: dict[int, ProblemOutcome]) -> None:
        """Leave no trial behind: while another worker's trials are still running in the
        studies of this run, wait; a dead worker's trial (killed after this process left
        its study) is failed, queued again and evaluated here (the problem is tuned once
        more, which evaluates what the budget still holds), and so are the candidates another
        worker abandoned and queued again when its run was interrupted, while the study's trial
        budget is unspent (:meth:`_unfinished`: this worker may have stopped counting them as
        spent). A problem left without a winner because its only ok trials were still another
        worker's when this one stopped gets its winner once they are done. Alone, this is one
        look. First, :meth:`_revisit`."""
        self._revisit(tuned, outcomes)
        while True:
            others_running = False
            for index, item, points in tuned:
                study = self._load_study(item.problem)
                died = self.liveness.fail_abandoned(study, force=True)
                left = self._unfinished(study)
                if died or left:
                    self.reporter.note(f"{item.name}: evaluating the candidates of a worker that died" if died else
                                       f"{item.name}: evaluating what another worker left ({left})")
                    again = self.tune_problem(item, points)
                    outcomes[index] = merge_outcomes([outcomes[index], again], parallel=False)
                    self.reporter.problem_finished(outcomes[index])
                elif study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
                    others_running = True
            if not others_running:
                break
            time.sleep(SETTLE_POLL_S)
        for index, item, _points in tuned:
            if outcomes[index].source == "none":
                study = self._load_study(item.problem)
                if ok_trials(study):
                    outcomes[index].message = ""
                    self._finish(study, item.problem, outcomes[index])
                    self.reporter.problem_finished(outcomes[index])

    def _revisit(self, tuned: list, outcomes: dict[int, ProblemOutcome]) -> None:
        """At the end of a run, each problem whose nearest tuned neighbours (:meth:`_neighbours`)
        now have winners its study never tried is tuned once more: its warm start queues them, and
        one that beats its best by more than :data:`SIGNIFICANT_IMPROVEMENT` restarts its patience
        (within the trial budget). Why: a study that ended before a near neighbour was tuned never
        saw that neighbour's winner, however close; in a ResNet-50 tune on one H100 (twentieth
        session) layer3.1.conv2 was tuned before layer3.0.conv2 (distance 2.83), missed the
        split-K 4 tile that layer3.0.conv2 then found, and ended 8.5% slower than the other runs'."""
        for index, item, points in tuned:
            study = self._load_study(item.problem)
            history = SearchHistory.of(study, SIGNIFICANT_IMPROVEMENT)
            ended_by_search = self._patience_spent(history, 0) or study.study_name in self._transferred
            if not ended_by_search or (self.budget.trials is not None and history.evaluated >= self.budget.trials):
                continue  # (ended by its trials or its seconds: the budget is spent)
            known = history.known()
            untried = [origin for family, config, origin in self._neighbour_starts(item.problem, points)
                       if config_key(family, config) not in known]
            if not untried:
                continue
            self.reporter.note(f"{item.name}: trying {len(untried)} winner(s) of neighbours tuned after its "
                               f"study ended ({untried[0]}{', ...' if len(untried) > 1 else ''})")
            again = self.tune_problem(item, points)
            outcomes[index] = merge_outcomes([outcomes[index], again], parallel=False)
            self.reporter.problem_finished(outcomes[index])

    def problem_workspace_limit(self, item: NamedProblem) -> int:
        """The workspace a candidate for ``item`` may use: the configured limit, less
        whatever the problem's own buffers leave of the device's memory
        (:mod:`autoconv.gpu.memory`).

        Raises:
            DeviceMemoryError: the problem's buffers alone do not fit (nothing allocated).
        """
        available = self.backend.available_memory_bytes()
        need = check_fits(item.problem, available, self.backend.device.name, self.backend.device.l2_bytes,
                          label=item.name)
        return max(0, min(self.settings.workspace_limit, available - need.fixed))

    def _cache_key(self, problem: ConvProblem) -> CacheKey:
        return CacheKey.for_problem(self.backend.identity, problem)

    def _cached(self, item: NamedProblem, quiet: bool = False) -> ProblemOutcome | None:
        if self.cache is None or self.search.retune:
            return None
        entry = self.cache.get(self._cache_key(item.problem))
        if entry is None or entry.family not in self.families:
            return None
        stale = self._unusable(entry, item.problem)
        if stale:
            if not quiet:
                self.reporter.note(f"{item.name}: not using its cached winner ({stale}); tuning it again")
            return None
        unfinished = self._resumable(item.problem)
        if unfinished:
            if not quiet:
                self.reporter.note(f"{item.name}: resuming its study ({unfinished})")
            return None
        return ProblemOutcome(
            name=item.name, problem=item.problem, count=item.count, source="cache", family=entry.family,
            config=dict(entry.config), kernel_name=entry.kernel_name, time_ms=entry.time_ms,
            tflops=entry.tflops, workspace_bytes=entry.workspace_bytes, study_name=entry.study_name,
            stop_reason="cached", message=f"cached winner measured {entry.measured_at}",
            trials_total=entry.trials)

    def _load_study(self, problem: ConvProblem) -> optuna.Study:
        """``problem``'s study in this tuner's storage (KeyError: there is none)."""
        return optuna.load_study(study_name=study_name(problem, self.backend.identity.gpu_name, self.families),
                                 storage=self.storage)

    def _resumable(self, problem: ConvProblem) -> str | None:
        """Why ``problem``'s study, whose winner is cached, must be tuned on (:meth:`_unfinished`),
        once a killed run's trials in it are failed and queued again; None when it need not be, or
        has no study here."""
        try:
            study = self._load_study(problem)
        except KeyError:  # (never tuned with this storage)
            return None
        self.liveness.fail_abandoned(study, force=True)
        return self._unfinished(study)

    def _unfinished(self, study) -> str | None:
        """Why ``study`` is not done, though its winner may be cached: a run that ended early
        (killed, interrupted) left candidates that are queued again, and the trial budget is not
        spent. (A worker that stopped counting another's candidates as spent cached its winner;
        those candidates were then abandoned.) None when done. The callers fail a dead process's
        running trials first (:meth:`Liveness.fail_abandoned`), which queues them again."""
        evaluated = SearchHistory.of(study).evaluated
        if self.budget.trials is not None and evaluated >= self.budget.trials:
            return None
        retries = sum(is_retry(t) for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)))
        if not retries:
            return None
        spent = f"{evaluated} of {self.budget.trials} trials" if self.budget.trials is not None else \
            f"{evaluated} trials"
        return f"{retries} candidate(s) of an interrupted run queued again, {spent} evaluated"

    def _unusable(self, entry: CacheEntry, problem: ConvProblem) -> str | None:
        """Why a cache entry of this problem's key cannot be this autoconv's kernel (it no
        longer plans, or renders to another source), or None."""
        try:
            plan = get_family(entry.family).plan(problem, dict(entry.config), self.backend.device,
                                                 max(self.settings.workspace_limit, entry.workspace_bytes))
        except AutoconvError as err:
            return f"its configuration is no longer valid: {str(err).splitlines()[0]}"
        if plan.source_hash != entry.source_hash:
            return "this autoconv renders another source for it (stale entry)"
        return None

    # ---- one problem ---------------------------------------------------------------
    def tune_problem(self, item: NamedProblem, points: ValidPoints | None = None) -> ProblemOutcome:
        """Search ``item``'s problem (see the module docstring); never consults the cache."""
        if points is None:
            points = ValidPoints(enumerate_points(item.problem, self.families, self.backend.device,
                                                  self.problem_workspace_limit(item)))
        ended: list[ProblemOutcome | AutoconvError] = []
        self._tune_overlapped([(0, item, points)], lambda _tag, _item, _points, outcome: ended.append(outcome))
        if isinstance(ended[0], AutoconvError):
            raise ended[0]
        return ended[0]

    def _tune_overlapped(self, jobs: Iterable[tuple[int, NamedProblem, ValidPoints]], ended: SearchEnded) -> None:
        """Search the problem of each of ``jobs`` (``(tag, item, points)``), taken in turn, with up
        to :data:`CONCURRENT_STUDIES` studies in flight: the next begins when those in flight ask
        nothing until a result comes and hold fewer than :data:`OVERLAP_BELOW` candidates, so that
        the host's compilers work on it while they wait on their last ones. ``ended`` hears of each
        as it ends: its tag, item, points, and its outcome or the error that ended it (its
        candidates in flight then abandoned and queued again). Any other exception abandons every
        study in flight likewise, and is raised."""
        jobs = iter(jobs)
        active: list[_Search] = []
        more = True

        def drop(search: _Search, error: AutoconvError) -> None:
            active.remove(search)
            self._abandon(search)
            ended(search.tag, search.item, search.points, error)

        try:
            while True:
                for search in list(active):
                    try:
                        self._ask(search, self.pipeline_depth - sum(len(other.in_flight) for other in active
                                                                    if other is not search))
                        outcome = None if search.in_flight else self._end(search)
                    except AutoconvError as err:  # e.g. its problem does not fit on the GPU
                        drop(search, err)
                        continue
                    if outcome is not None:
                        active.remove(search)
                        ended(search.tag, search.item, search.points, outcome)
                # (each asked just now, up to the pipeline's room: fewer in flight than that means
                # that they wait for results)
                if more and len(active) < CONCURRENT_STUDIES \
                        and sum(len(search.in_flight) for search in active) < min(OVERLAP_BELOW, self.pipeline_depth):
                    job = next(jobs, None)
                    if job is None:
                        more = False
                        continue
                    tag, item, points = job
                    try:
                        begun = self._begin(item, points)
                    except AutoconvError as err:
                        ended(tag, item, points, err)
                        continue
                    if isinstance(begun, ProblemOutcome):  # (nothing to search)
                        ended(tag, item, points, begun)
                    else:
                        begun.tag = tag
                        active.append(begun)
                    continue  # (a study begun asks first)
                if not active:
                    if more:
                        continue
                    return
                for search in active:
                    search.clock.enter("wait")
                # (the first whose result is ready: a slow compilation holds back no other result)
                flying = [(search, index) for search in active for index in range(len(search.in_flight))]
                search, index = flying[self.backend.first_done([search.in_flight[index][2]
                                                                for search, index in flying])]
                try:
                    self._record(search, index)
                except AutoconvError as err:
                    drop(search, err)
        except BaseException:
            for search in active:
                self._abandon(search)
            raise

    def _begin(self, item: NamedProblem, points: ValidPoints) -> _Search | ProblemOutcome:
        """Open ``item``'s study and queue its start (its warm start, or a transfer's); its search,
        or its outcome when no configuration is valid."""
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        problem = item.problem
        workspace_limit = self.problem_workspace_limit(item)
        name = study_name(problem, self.backend.identity.gpu_name, self.families)
        outcome = ProblemOutcome(name=item.name, problem=problem, count=item.count, study_name=name,
                                 valid_points=len(points))
        started = time.monotonic()
        clock = PhaseClock()
        clock.enter("start")
        if not points.families:
            outcome.stop_reason = "no valid configuration"
            outcome.message = (f"no configuration of {', '.join(self.families)} is valid for "
                               f"{problem.shape_str()} within a workspace of {workspace_limit} bytes")
            return outcome

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(seed=sampler_seed(self.settings.seed, name), multivariate=True,
                                                 group=True, constant_liar=True)
        study = optuna.create_study(study_name=name, storage=self.storage, sampler=sampler,
                                    direction="minimize", load_if_exists=True)
        mark_problem(study, problem)
        self.liveness.fail_abandoned(study, force=True)
        ranker = self._history_model(problem) if self.ranked or self.search.prefilter or self.search.transfer else None
        transferring = self.search.transfer and ranker is not None and self._transfers(item, points, ranker)
        outcome.search = "transfer" if transferring else "full"
        if transferring:
            assert ranker is not None  # (for mypy: checked above)
            self._transferred.add(name)
            # The model's picks at the study's first start only: tuned again (a revisit, a resumed
            # run) it queues the neighbours' winners it lacks, not the picks of a model refitted since.
            known = SearchHistory.of(study).known()
            more_picks_due = not known
            enqueue_new(study, self._neighbour_starts(problem, points)
                        + ([] if known else transfer_search.starts(ranker, problem, points)), known)
        else:
            self._enqueue_defaults(study, problem, points, ranker)
            more_picks_due = False
        prefilter = PreFilter(ranker, problem, points, seed=self.settings.seed) \
            if self.search.prefilter and ranker and ranker.families and not transferring else None
        self.reporter.problem_started(item, name, SearchHistory.of(study).evaluated, self.budget)
        return _Search(item=item, points=points, study=study, workspace_limit=workspace_limit, outcome=outcome,
                       clock=clock, started=started, transfer=ranker if transferring else None, prefilter=prefilter,
                       more_picks_due=more_picks_due)

    def _ask(self, search: _Search, depth: int) -> None:
        """Ask for candidates and submit them, until ``search`` has ``depth`` in flight (the
        pipeline's room the tuner's other studies leave), it must wait for results, or its budget
        (or the transfer) ends it: then :attr:`_Search.stop` says why, and its candidates in flight
        are finished."""
        study, problem, points, in_flight = search.study, search.item.problem, search.points, search.in_flight
        search.clock.enter("ask")
        search.stop = None
        self.liveness.fail_abandoned(study)
        while len(in_flight) < depth:
            history = SearchHistory.of(study, SIGNIFICANT_IMPROVEMENT)
            if search.prefilter is not None:
                search.prefilter.observe(history.timed())
            flying = {config_key(plan.family, plan.config) for _, plan, _ in in_flight}
            if search.transfer is not None:
                stop = self._stop_reason(history, len(in_flight), search.started, patience_over=False) \
                    or self._transfer_step(search, history, flying)
                wait = stop == WAIT_FOR_RESULTS
                stop = None if wait else stop
            elif self._becomes_transfer(search, history, flying):
                continue  # (asked again, as a transfer study)
            else:
                search.polishing -= set(history.results)
                patience_over = self._patience_spent(history, len(in_flight))
                if patience_over and not search.polishing:
                    fastest = ok_trials(study)
                    search.polishing = self._transfer_late(study, problem, points, history, flying) \
                        or self._polish(study, points, history, flying, search.polished, fastest) \
                        or self._polish_runners_up(search, fastest, history, flying)
                stop = self._stop_reason(history, len(in_flight), search.started,
                                         patience_over=patience_over and not search.polishing)
                # (the variations all in flight: wait for them, ask nothing else)
                wait = bool(search.polishing) and search.polishing <= flying
            if stop or wait:
                search.stop = stop
                return
            candidate = self._next_candidate(study, problem, points, history, in_flight, search.outcome,
                                             search.workspace_limit, search.prefilter)
            if candidate is None:
                search.stop = "every valid configuration evaluated"
                return
            trial, plan = candidate
            # (compiled before the candidates of the studies begun after it: its rounds, not their starts,
            # are what its end waits for)
            self._submit(study, trial, plan, history, in_flight, priority=search.started)

    def _record(self, search: _Search, index: int) -> None:
        """Tell ``search``'s study the result of its ``index``-th candidate in flight (ready)."""
        study, outcome, in_flight = search.study, search.outcome, search.in_flight
        trial, plan, ticket = in_flight[index]
        result = self.backend.result(ticket)
        self.last_result_at = time.time()
        search.clock.enter("record")
        del in_flight[index]  # only now: an interrupted wait leaves it to the cleanup (:meth:`_abandon`)
        self._tell(study, trial, plan, result)
        self.liveness.done(study, trial.number)
        outcome.trials_run += result.status.evaluated
        outcome.compile_s += result.compile_s
        outcome.compile_cpu_s += result.compile_cpu_s
        outcome.gpu_s += result.run_s
        outcome.compile_queue_s += result.compile_queue_s
        outcome.gpu_queue_s += result.gpu_queue_s
        outcome.cut_short += result.cut_short
        if result.ok:
            best = search.best
            if best is None or cast(float, result.time_ms) < cast(float, best.time_ms):  # (ok: timed)
                search.best = result
                lower_cutoffs(in_flight, cast(float, result.time_ms))
                if plan.constants:  # ranked with sizes at run time: the winner is rebuilt
                    self.backend.prepare(get_family(plan.family).plan(
                        search.item.problem, plan.config, self.backend.device, search.workspace_limit))
        else:
            outcome.failures[result.status.value] = outcome.failures.get(result.status.value, 0) + 1
        self.reporter.trial_finished(search.item, trial.number, plan, result, search.best,
                                     SearchHistory.of(study).evaluated)

    def _abandon(self, search: _Search) -> None:
        """Leave none of ``search``'s trials running (its search was interrupted): each in flight
        is failed and queued again."""
        for trial, _plan, _ in search.in_flight:
            refuse(search.study, trial, Status.ABANDONED, "the tuning run ended before this candidate was evaluated")
            retry_trial(search.study, trial, Status.ABANDONED.value)
            self.liveness.done(search.study, trial.number)
        search.in_flight.clear()
        sync_storage(self.storage)  # (the study's trials on the disk, however the search ended)

    def _end(self, search: _Search) -> ProblemOutcome:
        """``search``'s outcome, its winner re-verified and cached (:meth:`_finish`)."""
        study, outcome = search.study, search.outcome
        outcome.stop_reason = search.stop or "done"
        sync_storage(self.storage)  # (the study's trials on the disk)
        outcome.trials_total = SearchHistory.of(study).evaluated
        search.clock.enter("finish")
        self._finish(study, search.item.problem, outcome)
        sync_storage(self.storage)  # (the study on the disk, whatever happens to the host next)
        search.clock.enter(None)
        outcome.phases_s = {phase: round(seconds, 3) for phase, seconds in search.clock.seconds.items()}
        outcome.wall_s = time.monotonic() - search.started
        return outcome

    def _submit(self, study, trial, plan: KernelPlan, history: SearchHistory, in_flight: deque,
                priority: float) -> None:
        """Hand ``trial``'s candidate to the backend (screening, cut off by the study's best; compiled
        after those of a lower ``priority``) and keep it in ``in_flight``."""
        self.liveness.evaluating(study, trial.number)
        if self.first_submit_at is None:
            self.first_submit_at = time.time()
        in_flight.append((trial, plan, self.backend.submit(plan, screening=True, priority=priority,
                                                           cutoff_ms=cutoff_ms(history.best_ms, len(plan.launches)))))

    def _transfers(self, item: NamedProblem, points: ValidPoints, ranker: Ranker) -> bool:
        """Whether ``item`` is tuned by transfer from ``ranker`` (else a full study). Each reason for
        a full study is reported once a run (by this tuner, and by the run's other workers: ``note_once``):
        transfer is the default, and a first tune from empty storage runs its first several studies
        full for the same reason."""
        why_not = transfer_search.untrusted_reason(ranker, points)
        if why_not and why_not not in self._full_study_reasons:
            self._full_study_reasons.add(why_not)
            self.reporter.note_once(f"{item.name}: a full study, not a transfer: {why_not} (said once; tune.json's "
                                    f"`search` names each problem's)", key=f"full study: {why_not}")
        return why_not is None

    def _becomes_transfer(self, search: _Search, history: SearchHistory, flying: set[str]) -> bool:
        """Whether ``search``, a full study, became a transfer study just now. With ``transfer``, a
        study begun full because the history was not yet enough (a first tune from empty storage
        begins its first several studies so) becomes one as soon as the history is (this run's
        other studies' trials and its own count): the model's picks of each family are queued, and
        the transfer's polish and end take over from the sampler and the patience
        (:meth:`_transfer_step`). It looks at most every :data:`TRANSFER_CHECK_S` seconds, and fits
        the model only once the history holds :data:`~autoconv.search.transfer.MIN_PROBLEMS` problems
        timed with the study's own families (a model of other families would not be trusted anyway).

        Why: from empty storage a run's first studies were full to their patience, though the
        model was enough for a transfer long before most of them ended. They cost most of such a
        run's compiles (on an H200, fp16 ResNet-50: 9 full studies, ~715 of ~1000 candidates), and the
        more studies a run begins at once (workers, GPUs), the more of them begin full. Measured on
        an H200 (16 cores, 3 workers; FP32 ResNet-50 from empty, three runs a side alternated):
        4-5 studies a run converted, 7% fewer candidates, 8% less time, the same winners; with six
        workers on the GPU, 13 studies ran full without it, 8-9 converted with it, 17% fewer
        candidates, 14% less time, no layer lost (results/h100/fortyfirst).
        """
        if not self.search.transfer or search.transfer is not None:
            return False
        now = time.monotonic()
        if now - search.transfer_checked < TRANSFER_CHECK_S:
            return False
        search.transfer_checked = now
        problem, points, study = search.item.problem, search.points, search.study
        samples = self._history_samples(problem)  # (read once: the count below, then the model)
        if len({sample.problem for sample in samples if sample.family in points.families}) < \
                transfer_search.MIN_PROBLEMS:
            return False  # (not enough of its families, whatever the model: spared fitting it)
        ranker = Ranker(samples, self.backend.device)
        if transfer_search.untrusted_reason(ranker, points) is not None:
            return False
        search.transfer, search.prefilter, search.polishing = ranker, None, set()
        search.outcome.search = "full, then transfer"
        self._transferred.add(study.study_name)
        known = history.known() | flying
        enqueue_new(study, transfer_search.starts(ranker, problem, points), known)
        search.more_picks_due = True
        return True

    def _transfer_step(self, search: _Search, history: SearchHistory, flying: set[str]) -> str | None:
        """What a transfer study (:mod:`~autoconv.search.transfer`) does before asking for its next
        candidate: None (ask: one is queued), :data:`WAIT_FOR_RESULTS`, or why it ends. When its queue
        is empty it queues the winners of neighbours cached since it began, else the model's best
        variations of its best (once the start's candidates are all timed; each best once,
        :data:`~autoconv.search.transfer.POLISHED_BESTS` at most); with the first of those, the next
        picks of the families measured close to the best (:func:`~autoconv.search.transfer.more_picks`);
        once those are timed, the next tiles' other splits (:meth:`_polish_runners_up`)."""
        study, problem, points, ranker = search.study, search.item.problem, search.points, search.transfer
        assert ranker is not None  # (a transfer study's)
        polished, in_flight = search.polished, search.in_flight
        if history.waiting - flying:
            return None
        if not polished and in_flight:
            return WAIT_FOR_RESULTS  # (the first polish waits for the start's results)
        picked: set[str] = set()
        if search.more_picks_due and (timed := history.timed()):
            search.more_picks_due = False
            picked = enqueue_new(study, transfer_search.more_picks(ranker, problem, points, timed),
                                 history.known() | flying)
        queued = self._transfer_late(study, problem, points, history, flying)
        fastest = ok_trials(study)
        best = fastest[:1]
        if not queued and best and best[0].key not in polished and len(polished) < transfer_search.POLISHED_BESTS:
            polished[best[0].key] = history.judged
            known = history.known() | flying | picked
            variations = transfer_search.best_variations(ranker, problem, points, best[0].family, best[0].config,
                                                         known)
            queued = enqueue_new(study, [(best[0].family, config, f"a variation of the best (trial {best[0].number}), "
                                                                  "predicted fast by the tuning history's model")
                                         for config in variations], known)
        if queued or picked:
            return None
        if in_flight:
            return WAIT_FOR_RESULTS  # (a result may bring a new best to polish)
        if not best:
            return "transfer: no candidate of its start or their variations passed"
        if self._polish_runners_up(search, fastest, history, flying):
            return None
        if len(polished) >= transfer_search.POLISHED_BESTS:
            return f"transfer: {transfer_search.POLISHED_BESTS} bests polished"
        return "transfer: the best's variations predicted fastest are timed, none faster"

    def _polish_runners_up(self, search: _Search, fastest: list[TrialRecord], history: SearchHistory,
                           flying: set[str]) -> set[str]:
        """Once the best's variations are timed: queue every other split of the reduction (and every
        other value of the family's other :func:`~autoconv.search.runners_up.partners` in the problem's
        precision) of the fastest configuration of each next tile within reach of the best
        (:mod:`~autoconv.search.runners_up`), each such configuration once, unless evaluated, queued
        or in flight (``flying``); the keys queued.
        ``fastest``: the study's ok trials, fastest first (:func:`ok_trials`)."""
        known, queued = history.known() | flying, set()
        problem, device, workspace_limit = search.item.problem, self.backend.device, search.workspace_limit

        def grid_of(record: TrialRecord) -> runners_up_search.Grid | None:
            return runners_up_search.output_grid(record.family, record.config, problem, device, workspace_limit)

        for runner_up in runners_up_search.tile_runners_up(fastest, grid_of):
            if runner_up.key in search.runners_up:
                continue
            search.runners_up.add(runner_up.key)
            variations = runners_up_search.partner_variations(search.points, runner_up.family, problem.precision,
                                                              runner_up.config)
            queued |= enqueue_new(search.study, [(runner_up.family, config, f"another {changed} of a runner-up tile "
                                                 f"(trial {runner_up.number})") for changed, config in variations],
                                  known)
        return queued

    def _stop_reason(self, history: SearchHistory, in_flight: int, started: float,
                     patience_over: bool) -> str | None:
        """Which limit of the budget ends the study now, or None. ``patience_over``: the
        patience is spent (:meth:`_patience_spent`) and the best's variations are evaluated."""
        budget = self.budget
        # Trials being evaluated, here or by other processes, are spent budget (``running``
        # holds this process's in-flight trials too, once their params are stored).
        pending = max(in_flight, len(history.running))
        if budget.trials is not None and history.evaluated + pending >= budget.trials:
            return f"{budget.trials} trials"
        if budget.seconds is not None and time.monotonic() - started >= budget.seconds:
            return f"{budget.seconds:g} s"
        if patience_over:
            return (f"no improvement of more than {SIGNIFICANT_IMPROVEMENT:.0%} in {budget.patience} trials "
                    "and none among the best's variations")
        return None

    def _patience_spent(self, history: SearchHistory, in_flight: int) -> bool:
        """Whether ``patience`` trials, counting those in flight, came after the last
        significant improvement (:data:`SIGNIFICANT_IMPROVEMENT`)."""
        pending = max(in_flight, len(history.running))
        return (self.budget.patience is not None and history.best_ms is not None
                and history.since_best + pending >= self.budget.patience)

    def _polish(self, study, points: ValidPoints, history: SearchHistory, flying: set[str],
                polished: dict[str, int], fastest: list[TrialRecord]) -> set[str]:
        """Before the patience ends a study: queue the variations of its fastest trial
        (:meth:`ValidPoints.variations`: each other choice of each parameter, at the nearest
        valid configuration), unless evaluated, queued or in flight already (``flying``: this
        process's in-flight keys); the keys queued.
        A best is polished once, and at most :data:`POLISH_ROUNDS` bests per significant
        improvement (each polish may find a slightly faster best to polish in turn). Why: TPE
        samples parameters jointly and may never pair the best tile with the one split-K
        factor or pipeline depth that wins (a ResNet-50 layer ended 12% slower so at patience
        40, ninth session); a best that survives its variations is a local optimum.
        ``fastest``: the study's ok trials, fastest first (:func:`ok_trials`)."""
        mark = history.judged - history.since_best  # (where the last significant improvement was)
        if not fastest or fastest[0].key in polished or \
                sum(1 for at in polished.values() if at == mark) >= POLISH_ROUNDS:
            return set()
        best = fastest[0]
        polished[best.key] = mark
        known = history.known() | flying
        return enqueue_new(study, [(best.family, config, f"a variation of the best (trial {best.number})")
                                   for config in points.variations(best.family, best.config)], known)

    def _transfer_late(self, study, problem: ConvProblem, points: ValidPoints, history: SearchHistory,
                       flying: set[str]) -> set[str]:
        """Before the patience ends a study: queue the winners of the nearest tuned problems that
        its warm start did not have (cached since it began, by another worker of the run), as the
        warm start queues them; the keys queued, and those of neighbours' winners queued before
        and not yet asked for (a study tuned again by :meth:`_revisit`: its warm start queued them).
        Why: with several workers, the first problems each one takes start with a cache empty of
        their neighbours; on two H200s a ResNet-50 layer so begun ended 12% slower in three runs of
        four, lacking the split-K configuration its neighbour's winner had
        (results/h200x2/tune_latency)."""
        starts = self._neighbour_starts(problem, points, ", cached since the study began")
        still_queued = {key for key in (config_key(family, config) for family, config, _ in starts)
                        if key in history.waiting}
        known = history.known() | flying
        return enqueue_new(study, starts, known) | still_queued

    def _history_samples(self, problem: ConvProblem) -> list[Sample]:
        """The timed candidates of this storage's tuning history on this GPU, in ``problem``'s precision."""
        return history_samples(self.storage, self.backend.identity.gpu_name, problem.precision)

    def _history_model(self, problem: ConvProblem) -> Ranker:
        """The model of this storage's tuning history on this GPU, for ``problem``'s precision."""
        return Ranker(self._history_samples(problem), self.backend.device)

    def _enqueue_defaults(self, study, problem: ConvProblem, points: ValidPoints, ranker: Ranker | None) -> None:
        """The winners of the nearest tuned problems in the cache (:mod:`~autoconv.cache.neighbours`),
        then each family's default config and its seeds, each as the valid point nearest to it,
        then the ``ranked`` valid points the history's model (``ranker``) predicts fastest; unless
        evaluated or queued already."""
        history = SearchHistory.of(study)
        known = history.known()
        starts = self._neighbour_starts(problem, points)
        for family in points.families:
            starts.append((family, points.default(family), "family default"))
            starts += [(family, points.nearest(family, seed), "family seed")
                       for seed in get_family(family).space.seeds]
        if self.ranked and ranker is not None:
            best = ranker.best_valid(problem, points, self.ranked)
            starts += [(family, config, f"ranked {place} by the tuning history's model ({ms:.4g} ms predicted)")
                       for place, (family, config, ms) in enumerate(best, 1)]
        enqueue_new(study, starts, known)

    def _neighbour_starts(self, problem: ConvProblem, points: ValidPoints,
                          note: str = "") -> list[tuple[str, dict, str]]:
        """The winners of the problems nearest to ``problem`` in the cache, each as the valid
        point nearest to it: (family, config, origin), ``note`` ending the origin."""
        return [(n.entry.family, points.nearest(n.entry.family, n.entry.config),
                 f"winner of {n.problem.spec()} (distance {n.distance:.2f}){note}")
                for n in self._neighbours(problem) if n.entry.family in points.families]

    def _neighbours(self, problem: ConvProblem) -> list[Neighbour]:
        """The cache's winners of the problems nearest to ``problem`` (none without a cache)."""
        if self.cache is None:
            return []
        return nearest_winners(problem, self.cache.entries(), gpu_name=self.backend.identity.gpu_name,
                               limit=TRANSFERRED_WINNERS)

    def _next_candidate(self, study, problem: ConvProblem, points: ValidPoints, history: SearchHistory,
                        in_flight, outcome: ProblemOutcome, workspace_limit: int, prefilter: PreFilter | None):
        """Ask until a valid, unevaluated config comes up that ``prefilter`` keeps; (trial,
        plan), or None when every valid config has been evaluated (or is being, here or by
        another process on the same study). A proposal that is invalid or a repeat is
        repaired: its nearest valid, unevaluated point is queued and asked next, unless
        ``prefilter`` skips that point, in which case the proposal is told predicted slow and
        the point joins :attr:`PreFilter.skipped` (no later repair picks it); the prefilter
        skips at most :data:`MAX_SKIPS_PER_CANDIDATE` times per call."""
        skips = 0
        pending = {config_key(plan.family, plan.config) for _, plan, _ in in_flight}
        seen = set(history.results) | pending | history.running
        best_key = history.best_key()

        def predicted_slow(candidate: str) -> str | None:
            """Why the prefilter skips ``candidate``, while it may still skip in this call."""
            if prefilter is None or skips >= MAX_SKIPS_PER_CANDIDATE:
                return None
            return prefilter.verdict(candidate, best_key)

        # Every requested family that serves the problem stays a choice (a fixed distribution per
        # study), also one without valid points on this device or within this workspace:
        # proposing it is invalid.
        choices = searched_families(problem, self.families)
        for _ in range(MAX_ASKS_PER_CANDIDATE):
            trial = study.ask()
            try:
                claim(trial, self.owner)
            except UpdateFinishedTrialError:  # stalled past the grace period: failed as unclaimed
                continue
            family, config = suggest(trial, choices)
            key = config_key(family, config)
            why_not: tuple[Status, str] | None = None
            if not points.is_valid(family, config):
                why_not = Status.INVALID, self._invalid_reason(family, config, problem, workspace_limit)
            elif key in seen:
                earlier = history.results.get(key)
                why_not = Status.REPEAT, f"evaluated before (trial {earlier[0]})" if earlier else "being evaluated now"
            else:
                # Checked again now that this trial's params are in the storage: of two
                # processes proposing the same config at once, the later sees the other.
                repeat = claimed_by_another(study, trial.number, key)
                if repeat is not None:
                    why_not = Status.REPEAT, repeat
            seen.add(key)  # (claimed since ``history`` was read, or skipped: the repair must not pick it)
            repair = slow = None
            if why_not is None:
                # A sampler's proposal is judged here; an enqueued one (it has an origin: warm start,
                # variations, a repair judged below) is not.
                slow = None if "origin" in trial.user_attrs else predicted_slow(key)
                if slow is None:
                    # The ranking build: one compilation serves every problem the configuration
                    # is tried on, where the family has it (the winner is built with constants).
                    return trial, get_family(family).plan(problem, config, self.backend.device, workspace_limit,
                                                          run_time_sizes=self.search.run_time_sizes)
            elif family in points.families:
                skipped = prefilter.skipped if prefilter is not None else set()
                repair = points.nearest_unseen(family, config, seen | skipped | SearchHistory.of(study).waiting)
                repair_key = config_key(*repair) if repair is not None else None
                slow = predicted_slow(repair_key) if repair_key is not None else None
                if slow is not None and repair_key is not None:
                    skipped.add(repair_key)
                    slow = f"{why_not[1]}; its nearest valid point is {slow}"
            if slow is not None:
                refuse(study, trial, Status.PREDICTED_SLOW, slow)
                outcome.predicted_slow += 1
                skips += 1
                continue
            assert why_not is not None  # (else returned or skipped above)
            refuse(study, trial, *why_not)
            if why_not[0] is Status.INVALID:
                outcome.invalid += 1
            else:
                outcome.repeats += 1
            if family not in points.families:
                # Asked again: the sampler learns to leave the family (a repair would queue the
                # first unseen point of another, unrelated to the proposal).
                continue
            if repair is None:
                return None
            enqueue(study, *repair, f"nearest unevaluated valid point to trial {trial.number}")
        raise AutoconvError(f"no new candidate after {MAX_ASKS_PER_CANDIDATE} proposals for "
                            f"{problem.shape_str()} (is another process draining the same study?)")

    def _invalid_reason(self, family: str, config: Mapping[str, object], problem: ConvProblem,
                        workspace_limit: int) -> str:
        unsupported = get_family(family).unsupported_reason(problem)
        if unsupported:
            return unsupported
        broken = get_family(family).space.violations(config, problem, self.backend.device, workspace_limit)
        return "; ".join(broken) or f"no valid {family} configuration for this problem"

    def _tell(self, study, trial, plan: KernelPlan, result: TrialResult) -> None:
        """Record ``result`` on ``trial`` (:func:`autoconv.search.study.record_evaluation`); an
        abandoned one (the backend was closed, or its compilation cut short) is queued again."""
        try:
            record_evaluation(study, trial, plan, result)
            if result.status is Status.ABANDONED:  # cut short by the run's end: evaluated by the next one
                retry_trial(study, trial, Status.ABANDONED.value)
        except UpdateFinishedTrialError:
            # Another process ended this trial: it took this process for dead (no heartbeat
            # within the grace period) and failed it, so its configuration was queued again.
            self.reporter.note(f"trial {trial.number} was ended by another worker while it was evaluated "
                               f"here (no heartbeat within the grace period?); its result is dropped")

    def _finish(self, study, problem: ConvProblem, outcome: ProblemOutcome) -> None:
        """Re-verify the study's fastest ok trials, built as users run them (sizes compiled in),
        on fresh inputs, and cache the winner.

        Where the search ranked a family with sizes at run time (``run_time_sizes``: its slower
        ranking build), the :data:`REVERIFY_CANDIDATES` fastest and the fastest of each such
        family are built with constants, verified and timed, and the fastest that passes wins:
        the builds' speeds differ by 2-29% from one configuration to another (and not at all for
        the other families), which may reorder the top.

        Otherwise the first that passes is the winner unless its time in full is above the next
        one's time in the search: then the next is verified and timed in full too (and so on, up
        to :data:`REVERIFY_CANDIDATES`), and the fastest in full wins. The search's short timing
        ranks most candidates as the full timing does (the winners' full times were 0.94-1.06x
        their search times over 258 problems of 12 ResNet-50 runs on an H200), but not a kernel
        whose time jumps between runs: one TF32 NHWC winner took 1.25x its search time in full,
        and 1.11x the next fastest's time when the two were re-timed side by side
        (results/h100/fortieth)."""
        ranked = ok_trials(study)
        fastest = ranked[:REVERIFY_CANDIDATES]
        if not fastest:
            outcome.message = "no candidate passed verification"
            return
        # The families ranked in their slower build: the best of each is rebuilt too, should the
        # others hide it.
        slowed = {trial.family for trial in ranked if get_family(trial.family).takes_run_time_sizes} \
            if self.search.run_time_sizes else set()
        rebuilt = bool(slowed)
        fastest += [next(trial for trial in ranked if trial.family == family)
                    for family in sorted(slowed - {trial.family for trial in fastest})]
        plans = [get_family(trial.family).plan(problem, trial.config, self.backend.device,
                                               self.settings.workspace_limit) for trial in fastest]
        seed = self.settings.seed + REVERIFY_SEED_OFFSET
        # Rebuilt, all are evaluated: submitted together, they compile in parallel (the search's
        # best is usually compiled already: prepared when it became the best).
        tickets = [self.backend.submit(plan, seed=seed) for plan in plans] if rebuilt else []
        rejected: list[str] = []
        passed: list[tuple[TrialRecord, KernelPlan, TrialResult]] = []
        fastest_in_full_ms = float("inf")
        for index, (trial, plan) in enumerate(zip(fastest, plans)):
            if not rebuilt and cast(float, trial.value) >= fastest_in_full_ms:
                break  # (going by its time in the search, it cannot beat the fastest in full)
            check = self.backend.result(tickets[index]) if rebuilt else self.backend.evaluate(plan, seed=seed)
            outcome.compile_s += check.compile_s
            outcome.compile_cpu_s += check.compile_cpu_s
            outcome.gpu_s += check.run_s
            if not check.ok:
                rejected.append(f"trial {trial.number} ({plan.name}): {check.status.value}: {check.reason}")
                continue
            passed.append((trial, plan, check))
            fastest_in_full_ms = min(fastest_in_full_ms, cast(float, check.time_ms))  # (ok: timed)
        if passed:  # the fastest, the first of equals
            trial, plan, check = min(passed, key=lambda entry: cast(float, entry[2].time_ms))  # (ok: timed)
            family, config = trial.family, trial.config
            assert check.time_ms is not None and check.tflops is not None  # (passed: timed)
            outcome.source = "tuned"
            outcome.family, outcome.config, outcome.kernel_name = family, config, plan.name
            outcome.time_ms, outcome.tflops = check.time_ms, check.tflops
            outcome.workspace_bytes = plan.workspace_bytes
            outcome.message = (f"trial {trial.number}, re-verified on fresh inputs (error {check.error:.2g}); "
                               f"{trial.value:.4f} ms in the search")
            if not rebuilt and trial is not passed[0][0]:  # (timed in full after one faster in the search)
                first_trial, _, first_check = passed[0]
                outcome.message += (f"; trial {first_trial.number} ({first_trial.value:.4f} ms in the search) "
                                    f"took {first_check.time_ms:.4f} ms in full")
            record_winner(study, trial.number, plan.name, check.time_ms, check.tflops)
            if self.cache is not None:
                # A faster entry stays, unless it is one this autoconv cannot use.
                existing = self.cache.get(self._cache_key(problem))
                replace_it = existing is not None and self._unusable(existing, problem) is not None
                self.cache.put(CacheEntry(
                    key=self._cache_key(problem), family=family, config=config, kernel_name=plan.name,
                    source_hash=plan.source_hash, time_ms=check.time_ms, tflops=check.tflops,
                    workspace_bytes=plan.workspace_bytes, trials=outcome.trials_total,
                    study_name=outcome.study_name), only_if_faster=not replace_it)
        if rejected:
            outcome.message = "; ".join(filter(None, [outcome.message, "re-verification failed for "
                                                      + " | ".join(rejected)]))
