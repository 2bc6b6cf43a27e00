"""The search over a config's problems (:class:`Tuner`): one Optuna study per problem, its candidates
evaluated by a backend. The tuner's parts, each in its module:

1. **Cache first** (:mod:`~autoconv.search.resume`): a problem's cached winner is used as is, unless
   it is stale or its study must resume. Before anything else, a problem whose buffers cannot fit in
   the device's memory is refused (:mod:`autoconv.gpu.memory`), and the workspace its candidates may
   use is capped by what its buffers leave; each problem's valid configurations are enumerated once
   (:mod:`~autoconv.search.points`).
2. **The study** (:mod:`~autoconv.search.study_loop`): opened in the storage (shared by every process
   that tunes it), asked and told candidate by candidate, ``pipeline_depth`` of them compiling ahead
   of the GPU; each proposal judged before it compiles (:mod:`~autoconv.search.proposals`).
3. **The strategy** (:mod:`~autoconv.search.strategy`): a full study (:mod:`~autoconv.search.full_study`)
   or, where the tuning history knows enough problems, a transfer
   (:mod:`~autoconv.search.transfer_study`); both start from the warm start
   (:mod:`~autoconv.search.warm_start`).
4. **Stopping** (:mod:`~autoconv.search.stopping`): the budget per problem and the patience.
5. **Scheduling** (:mod:`~autoconv.search.scheduler`): up to two studies in flight, the next begun
   while the last waits on its last candidates.
6. **The winner** (:mod:`~autoconv.search.finish`): re-verified and re-timed as users run it, then
   cached.

At the run's end the tuner leaves no trial behind (:meth:`Tuner._settle`): it waits for the other
workers' trials in its studies, evaluates those of a worker that died, and tries the winners of
neighbours tuned after a study ended (:meth:`Tuner._revisit`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from optuna.trial import TrialState

from autoconv.backends.base import Backend
from autoconv.cache.entries import CacheKey
from autoconv.cache.winners import WinnerCache
from autoconv.config.budget import Budget
from autoconv.errors import AutoconvError, DeviceMemoryError
from autoconv.kernels.families import get_family
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import ConvProblem
from autoconv.processes import process_owner
from autoconv.search.context import SearchContext
from autoconv.search.finish import finish, report_cached
from autoconv.search.liveness import Liveness
from autoconv.search.options import SearchSettings
from autoconv.search.outcome import Milestones, ProblemOutcome, Reporter, merge_outcomes
from autoconv.search.points import ValidPoints, config_key, enumerate_in_turn, enumerate_points
from autoconv.search.resume import cached_outcome, unfinished
from autoconv.search.scheduler import search_in_turn
from autoconv.search.stopping import SIGNIFICANT_IMPROVEMENT, patience_spent, seconds_spent
from autoconv.search.storage import make_storage
from autoconv.search.study import SearchHistory, ok_trials
from autoconv.search.study_loop import StudyLoop
from autoconv.search.warm_start import WarmStart

#: Seconds between two looks at other workers' running trials once this one is done (a look at a
#: run's studies takes milliseconds; a long wait would keep a worker, and a run, after its last
#: trial).
SETTLE_POLL_S = 0.2


class Tuner:
    """Tunes problems on ``backend`` (see the module docstring).

    Args:
        backend: evaluates candidates (:class:`~autoconv.gpu.CupyBackend`, a fake...).
        settings: what it searches and how (:class:`~autoconv.search.options.SearchSettings`).
        storage: Optuna storage: a journal-file path or a SQLAlchemy URL, or one opened
            (:func:`~autoconv.search.storage.make_storage`).
        cache: where winners go (None: nowhere).
        reporter: progress callbacks.

    Raises:
        AutoconvError: a budget without trials or seconds, no family, an unknown family.
    """

    def __init__(self, backend: Backend, settings: SearchSettings, *, storage,
                 cache: WinnerCache | None = None, reporter: Reporter | None = None):
        if settings.budget.trials is None and settings.budget.seconds is None:
            raise AutoconvError("a tuning budget needs trials and/or seconds per problem")
        if not settings.families:
            raise AutoconvError("no kernel family to search")
        for name in settings.families:
            get_family(name)  # unknown names fail here, with the known ones listed
        reporter = reporter or Reporter()
        opened = make_storage(storage, on_repair=reporter.note) if isinstance(storage, (str, os.PathLike)) \
            else storage
        owner = process_owner()
        self.context = SearchContext(backend=backend, settings=settings, storage=opened, cache=cache,
                                     reporter=reporter, owner=owner, liveness=Liveness(opened, owner))
        self.starts = WarmStart(self.context)
        self.loop = StudyLoop(self.context, self.starts)

    # (the context's parts, as callers and tests name them)
    @property
    def backend(self) -> Backend:
        return self.context.backend

    @property
    def settings(self) -> SearchSettings:
        return self.context.settings

    @property
    def families(self) -> tuple[str, ...]:
        return self.context.settings.families

    @property
    def budget(self) -> Budget:
        return self.context.settings.budget

    @property
    def storage(self):
        return self.context.storage

    @property
    def cache(self) -> WinnerCache | None:
        return self.context.cache

    @property
    def owner(self) -> str:
        return self.context.owner

    @property
    def liveness(self) -> Liveness:
        return self.context.liveness

    @property
    def reporter(self) -> Reporter:
        return self.context.reporter

    @reporter.setter
    def reporter(self, reporter: Reporter) -> None:
        self.context.reporter = reporter

    def cache_key(self, problem: ConvProblem) -> CacheKey:
        """``problem``'s key in the winners' cache, on this GPU."""
        return self.context.cache_key(problem)

    def problem_workspace_limit(self, item: NamedProblem) -> int:
        """The workspace a candidate for ``item`` may use (:meth:`SearchContext.workspace_limit`).

        Raises:
            DeviceMemoryError: the problem's buffers alone do not fit (nothing allocated).
        """
        return self.context.workspace_limit(item)

    def mark_search(self, milestones: Milestones) -> None:
        """The edges of this tuner's search in ``milestones``, if it searched."""
        if self.loop.first_submit_at is not None:
            milestones.mark("first_submit", self.loop.first_submit_at)
        if self.loop.last_result_at is not None:
            milestones.mark("last_result", self.loop.last_result_at)

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

            search_in_turn(self.loop, jobs(), ended)
            tuned.sort(key=lambda entry: entry[0])
            self._settle(tuned, outcomes)
        ordered = [outcomes[i] for i in range(len(problems))]
        for outcome in ordered:  # (what the cache holds now: another run may have cached a faster winner)
            report_cached(self.context, outcome)
        self.reporter.run_finished(ordered)
        return ordered

    def _settle(self, tuned: list, outcomes: dict[int, ProblemOutcome]) -> None:
        """Leave no trial behind: while another worker's trials are still running in the
        studies of this run, wait; a dead worker's trial (killed after this process left
        its study) is failed, queued again and evaluated here (the problem is tuned once
        more, which evaluates what the budget still holds), and so are the candidates another
        worker abandoned and queued again when its run was interrupted, while the study's trial
        budget is unspent (:func:`~autoconv.search.resume.unfinished`: this worker may have stopped
        counting them as spent). A problem left without a winner because its only ok trials were
        still another worker's when this one stopped gets its winner once they are done. Alone,
        this is one look. First, :meth:`_revisit`."""
        self._revisit(tuned, outcomes)
        while True:
            others_running = False
            for index, item, points in tuned:
                study = self.context.load_study(item.problem)
                died = self.liveness.fail_abandoned(study, force=True)
                left = unfinished(self.context, study)
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
                study = self.context.load_study(item.problem)
                if ok_trials(study):
                    outcomes[index].message = ""
                    finish(self.context, study, item.problem, outcomes[index])
                    self.reporter.problem_finished(outcomes[index])

    def _revisit(self, tuned: list, outcomes: dict[int, ProblemOutcome]) -> None:
        """At the end of a run, each problem whose nearest tuned neighbours
        (:meth:`~autoconv.search.warm_start.WarmStart.neighbours`) now have winners its study never
        tried is tuned once more: its warm start queues them, and one that beats its best by more
        than :data:`~autoconv.search.stopping.SIGNIFICANT_IMPROVEMENT` restarts its patience
        (within the trial budget). Why: a study that ended before a near neighbour was tuned never
        saw that neighbour's winner, however close (a layer tuned before its nearest neighbour can
        miss the split-K tile that the neighbour's search then finds)."""
        for index, item, points in tuned:
            study = self.context.load_study(item.problem)
            history = SearchHistory.of(study, SIGNIFICANT_IMPROVEMENT)
            ended_by_search = patience_spent(self.budget, history, 0) or study.study_name in self.context.transferred
            if not ended_by_search or (self.budget.trials is not None and history.evaluated >= self.budget.trials) \
                    or (self.budget.seconds is not None and outcomes[index].stop_reason == seconds_spent(self.budget)):
                continue  # (ended by its trials or its seconds: the budget is spent)
            known = history.known()
            untried = [origin for family, config, origin in self.starts.neighbour_starts(item.problem, points)
                       if config_key(family, config) not in known]
            if not untried:
                continue
            self.reporter.note(f"{item.name}: trying {len(untried)} winner(s) of neighbours tuned after its "
                               f"study ended ({untried[0]}{', ...' if len(untried) > 1 else ''})")
            again = self.tune_problem(item, points)
            outcomes[index] = merge_outcomes([outcomes[index], again], parallel=False)
            self.reporter.problem_finished(outcomes[index])

    def _cached(self, item: NamedProblem, quiet: bool = False) -> ProblemOutcome | None:
        """``item``'s outcome from its cached winner, or None (:func:`~autoconv.search.resume.cached_outcome`)."""
        return cached_outcome(self.context, item, quiet)

    # ---- one problem ---------------------------------------------------------------
    def tune_problem(self, item: NamedProblem, points: ValidPoints | None = None) -> ProblemOutcome:
        """Search ``item``'s problem (see the module docstring); never consults the cache."""
        if points is None:
            points = ValidPoints(enumerate_points(item.problem, self.families, self.backend.device,
                                                  self.problem_workspace_limit(item)))
        ended: list[ProblemOutcome | AutoconvError] = []
        search_in_turn(self.loop, [(0, item, points)], lambda _tag, _item, _points, outcome: ended.append(outcome))
        if isinstance(ended[0], AutoconvError):
            raise ended[0]
        return ended[0]
