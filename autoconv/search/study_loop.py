"""The ask/tell loop of one study (:class:`StudyLoop`): open it, ask for candidates and hand them to
the backend, tell each result as it arrives, end it with its winner.

**The study.** ``autoconv/<problem key>/<GPU>/<families>/<template hash>`` in the storage (an
Optuna journal file by default, which several processes on one host can share, or a SQLAlchemy
URL). Opening it again continues it: the trial budget counts the study's evaluated trials, and a
configuration evaluated before, or being evaluated by another process, is never evaluated again,
so several processes (``autoconv tune --gpus``, or the same command on several hosts sharing a
database) tune one study together. Trials of a killed process are failed as ``abandoned`` and
their configurations queued again (:mod:`~autoconv.search.liveness`), and so are the candidates a
run had in flight when it was interrupted. TPE (seeded per study, multivariate, grouped for the
conditional space, a constant liar for the pending candidates) proposes where the strategy
(:mod:`~autoconv.search.strategy`) queued nothing, and every proposal is judged before it compiles
(:mod:`~autoconv.search.proposals`).

**Pipelined evaluation.** Up to ``pipeline_depth`` candidates are asked ahead and submitted to the
backend, which compiles them in parallel while the GPU evaluates the earliest submitted of those
compiled; each result is told as it arrives: ok as COMPLETE with the time in ms as the value, any
failure as PRUNED, its params, status, reason, compile and GPU seconds, registers, spills, shared
memory and workspace in the trial's user attributes (``optuna-dashboard`` shows them). The search
times each candidate with a shorter measurement than the winner's
(:data:`autoconv.gpu.timing.SCREENING`), and a candidate over :data:`SLOW_CUTOFF` times the best is
timed once, not in full (``cut_short``).
"""

from __future__ import annotations

import hashlib
import time
import warnings
from collections import deque
from typing import cast

import optuna
from optuna.exceptions import UpdateFinishedTrialError

from autoconv.backends.base import Status, TrialResult
from autoconv.kernels.families import KernelPlan, get_family
from autoconv.problems.models import NamedProblem
from autoconv.search.context import SearchContext
from autoconv.search.finish import finish
from autoconv.search.full_study import FullStudy
from autoconv.search.outcome import PhaseClock, ProblemOutcome
from autoconv.search.points import ValidPoints, config_key
from autoconv.search.proposals import next_candidate
from autoconv.search.stopping import SIGNIFICANT_IMPROVEMENT, out_of_time, seconds_spent
from autoconv.search.storage import retry_trial, sync_storage
from autoconv.search.strategy import Search, Strategy
from autoconv.search.study import SearchHistory, mark_problem, record_evaluation, refuse
from autoconv.search.transfer_study import TransferStudy, trusted
from autoconv.search.warm_start import WarmStart

#: A candidate whose one call, timed alone after its verification (twice, if the first is over),
#: takes longer than this many times the study's best (plus :data:`LAUNCH_SLACK_MS` per launch of
#: its plan, for the host's launches inside a lone call's timing) keeps that time and is not timed
#: in full (``cut_short``): most of a tune's GPU time went to candidates far slower than their
#: layer's best, none of which can win, and one call ranks them well enough.
SLOW_CUTOFF = 3.0
LAUNCH_SLACK_MS = 0.02


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


def lower_cutoffs(in_flight, best_ms: float) -> None:
    """A new best: the candidates submitted before it and not yet on the GPU are cut off by it
    (a study's first candidates are all submitted before any best is known)."""
    for _, plan, ticket in in_flight:
        ticket.lower_cutoff(cast(float, cutoff_ms(best_ms, len(plan.launches))))


class StudyLoop:
    """Runs the studies of one tuner (``context``), each from :meth:`begin` to :meth:`end`; a
    scheduler (:mod:`~autoconv.search.scheduler`) interleaves several."""

    def __init__(self, context: SearchContext, starts: WarmStart):
        self.context, self.starts = context, starts
        # When this loop submitted its first candidate and received its last result
        # (time.time(); None until then): the edges of its search (outcome.MILESTONES).
        self.first_submit_at: float | None = None
        self.last_result_at: float | None = None

    @property
    def pipeline_depth(self) -> int:
        """Candidates asked ahead of the GPU, by all the studies in flight."""
        return max(1, self.context.settings.search.pipeline_depth)

    def begin(self, item: NamedProblem, points: ValidPoints) -> Search | ProblemOutcome:
        """Open ``item``'s study and let its strategy queue its start (a warm start, or a
        transfer's); its search, or its outcome when no configuration is valid.

        Raises:
            DeviceMemoryError: the problem's buffers do not fit on the device.
        """
        context, settings = self.context, self.context.settings
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        problem = item.problem
        workspace_limit = context.workspace_limit(item)
        name = context.study_name(problem)
        outcome = ProblemOutcome(name=item.name, problem=problem, count=item.count, study_name=name,
                                 valid_points=len(points))
        started = time.monotonic()
        clock = PhaseClock()
        clock.enter("start")
        if not points.families:
            outcome.stop_reason = "no valid configuration"
            outcome.message = (f"no configuration of {', '.join(settings.families)} is valid for "
                               f"{problem.shape_str()} within a workspace of {workspace_limit} bytes")
            return outcome

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(seed=sampler_seed(settings.seed, name), multivariate=True,
                                                 group=True, constant_liar=True)
        study = optuna.create_study(study_name=name, storage=context.storage, sampler=sampler,
                                    direction="minimize", load_if_exists=True)
        mark_problem(study, problem)
        context.liveness.fail_abandoned(study, force=True)
        options = settings.search
        ranker = self.starts.history_model(problem) \
            if max(0, options.ranked) or options.prefilter or options.transfer else None
        strategy: Strategy
        if options.transfer and ranker is not None and trusted(context, item, points, ranker):
            strategy = TransferStudy(context, self.starts, ranker)
        else:
            strategy = FullStudy(context, self.starts, ranker)
        search = Search(item=item, points=points, study=study, workspace_limit=workspace_limit, outcome=outcome,
                        clock=clock, started=started, strategy=strategy)
        strategy.begin(search)
        context.reporter.problem_started(item, name, SearchHistory.of(study).evaluated, settings.budget)
        return search

    def ask(self, search: Search, depth: int) -> None:
        """Ask for candidates and submit them, until ``search`` has ``depth`` in flight (the
        pipeline's room the other studies leave), its strategy waits for results, or stops it:
        then :attr:`Search.stop` says why, and its candidates in flight are finished."""
        study, problem, points, in_flight = search.study, search.item.problem, search.points, search.in_flight
        search.clock.enter("ask")
        search.stop = None
        self.context.liveness.fail_abandoned(study)
        while len(in_flight) < depth:
            history = SearchHistory.of(study, SIGNIFICANT_IMPROVEMENT)
            if search.prefilter is not None:
                search.prefilter.observe(history.timed())
            flying = {config_key(plan.family, plan.config) for _, plan, _ in in_flight}
            step = search.strategy.next_candidates(search, history, flying)
            if step.then is not None:
                search.strategy = step.then
                continue  # (asked again, of the strategy it became)
            if step.stop or step.wait:
                search.stop = step.stop
                if out_of_time(self.context.settings.budget, search.started, search.slowest_s):
                    self.withdraw(search)
                return
            candidate = next_candidate(self.context, study, problem, points, history, in_flight, search.outcome,
                                       search.workspace_limit, search.prefilter)
            if candidate is None:
                search.stop = "every valid configuration evaluated"
                return
            trial, plan = candidate
            # (compiled before the candidates of the studies begun after it: its rounds, not their starts,
            # are what its end waits for)
            self.submit(study, trial, plan, history, in_flight, priority=search.started)

    def record(self, search: Search, index: int, waiting_since: float | None = None) -> None:
        """Tell ``search``'s study the result of its ``index``-th candidate in flight (ready);
        ``waiting_since``: when the wait for it began (:func:`time.monotonic`), for
        :attr:`Search.slowest_s`."""
        backend = self.context.backend
        study, outcome, in_flight = search.study, search.outcome, search.in_flight
        trial, plan, ticket = in_flight[index]
        result = backend.result(ticket)
        self.last_result_at = time.time()
        if waiting_since is not None:
            search.slowest_s = max(search.slowest_s, time.monotonic() - waiting_since)
        search.clock.enter("record")
        del in_flight[index]  # only now: an interrupted wait leaves it to the cleanup (:meth:`abandon`)
        self.tell(study, trial, plan, result)
        self.context.liveness.done(study, trial.number)
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
                    backend.prepare(get_family(plan.family).plan(
                        search.item.problem, plan.config, backend.device, search.workspace_limit))
        else:
            outcome.failures[result.status.value] = outcome.failures.get(result.status.value, 0) + 1
        self.context.reporter.trial_finished(search.item, trial.number, plan, result, search.best,
                                             SearchHistory.of(study).evaluated)

    def abandon(self, search: Search) -> None:
        """Leave none of ``search``'s trials running (its search was interrupted): each in flight
        is failed and queued again."""
        for trial, _plan, _ in search.in_flight:
            refuse(search.study, trial, Status.ABANDONED, "the tuning run ended before this candidate was evaluated")
            retry_trial(search.study, trial, Status.ABANDONED.value)
            self.context.liveness.done(search.study, trial.number)
        search.in_flight.clear()
        sync_storage(self.context.storage)  # (the study's trials on the disk, however the search ended)

    def withdraw(self, search: Search) -> None:
        """``search``'s seconds are spent (:func:`~autoconv.search.stopping.out_of_time`): its
        candidates in flight that have not reached the GPU are withdrawn from the backend and ended
        unevaluated (abandoned, not queued again: the seconds that would evaluate them are spent);
        those the GPU runs or ran stay, to be told, and so does the first while the study has no
        winner (seconds spent before any result still give the problem one candidate)."""
        kept: list[tuple] = []
        for entry in search.in_flight:
            trial, _plan, ticket = entry
            if (search.best is None and not kept) or not self.context.backend.withdraw(ticket):
                kept.append(entry)
                continue
            refuse(search.study, trial, Status.ABANDONED,
                   f"not evaluated: the problem's {seconds_spent(self.context.settings.budget)} were spent")
            self.context.liveness.done(search.study, trial.number)
        search.in_flight.clear()
        search.in_flight.extend(kept)

    def end(self, search: Search) -> ProblemOutcome:
        """``search``'s outcome, its winner re-verified and cached (:func:`~autoconv.search.finish.finish`)."""
        study, outcome = search.study, search.outcome
        outcome.stop_reason = search.stop or "done"
        sync_storage(self.context.storage)  # (the study's trials on the disk)
        outcome.trials_total = SearchHistory.of(study).evaluated
        search.clock.enter("finish")
        budget = self.context.settings.budget
        finish(self.context, study, search.item.problem, outcome,
               deadline=None if budget.seconds is None else search.started + budget.seconds)
        sync_storage(self.context.storage)  # (the study on the disk, whatever happens to the host next)
        search.clock.enter(None)
        outcome.phases_s = {phase: round(seconds, 3) for phase, seconds in search.clock.seconds.items()}
        outcome.wall_s = time.monotonic() - search.started
        return outcome

    def submit(self, study, trial, plan: KernelPlan, history: SearchHistory, in_flight: deque,
               priority: float) -> None:
        """Hand ``trial``'s candidate to the backend (screening, cut off by the study's best; compiled
        after those of a lower ``priority``) and keep it in ``in_flight``."""
        self.context.liveness.evaluating(study, trial.number)
        if self.first_submit_at is None:
            self.first_submit_at = time.time()
        in_flight.append((trial, plan, self.context.backend.submit(
            plan, screening=True, priority=priority, cutoff_ms=cutoff_ms(history.best_ms, len(plan.launches)))))

    def tell(self, study, trial, plan: KernelPlan, result: TrialResult) -> None:
        """Record ``result`` on ``trial`` (:func:`autoconv.search.study.record_evaluation`); an
        abandoned one (the backend was closed, or its compilation cut short) is queued again."""
        try:
            record_evaluation(study, trial, plan, result)
            if result.status is Status.ABANDONED:  # cut short by the run's end: evaluated by the next one
                retry_trial(study, trial, Status.ABANDONED.value)
        except UpdateFinishedTrialError:
            # Another process ended this trial: it took this process for dead (no heartbeat
            # within the grace period) and failed it, so its configuration was queued again.
            self.context.reporter.note(f"trial {trial.number} was ended by another worker while it was evaluated "
                                       f"here (no heartbeat within the grace period?); its result is dropped")
