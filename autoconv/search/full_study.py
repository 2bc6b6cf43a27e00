"""The full study (:class:`FullStudy`): Optuna's TPE sampler proposes, within the budget and the
patience (:mod:`~autoconv.search.stopping`).

It starts from the warm start (:class:`~autoconv.search.warm_start.WarmStart`: the neighbours'
winners, each family's default and seeds, the ``--rank`` picks). Before its patience ends it, it
queues, in turn, the winners of neighbours cached since it began, the variations of its best (each
other choice of each parameter, at the nearest valid configuration: TPE samples parameters jointly
and may never pair the best tile with the split-K factor or pipeline depth that wins), and the next
tiles' other splits of the reduction (:func:`~autoconv.search.strategy.queue_runners_up`); one of
them beating the best by more than
:data:`~autoconv.search.stopping.SIGNIFICANT_IMPROVEMENT` restarts the patience. With ``--prefilter``
the history's model keeps the candidates it predicts among the slowest from compiling
(:mod:`~autoconv.search.prefilter`). With ``transfer``, a study begun full because the history was
not yet enough becomes a transfer as soon as it is (:meth:`FullStudy.becomes_transfer`).
"""

from __future__ import annotations

import time

from autoconv.search import transfer
from autoconv.search.context import SearchContext
from autoconv.search.prefilter import PreFilter
from autoconv.search.ranker import Ranker
from autoconv.search.stopping import patience_spent, stop_reason
from autoconv.search.strategy import Search, Step, queue_runners_up
from autoconv.search.study import SearchHistory, TrialRecord, ok_trials
from autoconv.search.transfer_study import TransferStudy
from autoconv.search.warm_start import WarmStart, enqueue_new

#: Bests whose variations are evaluated (:meth:`FullStudy.polish`) between two significant
#: improvements (each polish may find a slightly faster best to polish in turn).
POLISH_ROUNDS = 2
#: Seconds between a full study's looks at whether the history now allows a transfer
#: (:meth:`FullStudy.becomes_transfer`: reading the storage's timed trials takes milliseconds).
TRANSFER_CHECK_S = 1.0


class FullStudy:
    """A study the sampler searches (see the module docstring); ``ranker``: the tuning history's
    model, where one was fitted (for ``--rank`` and ``--prefilter``)."""

    def __init__(self, context: SearchContext, starts: WarmStart, ranker: Ranker | None):
        self.context, self.starts, self.ranker = context, starts, ranker
        self.polishing: set[str] = set()   # the variations queued before the patience ends it, until evaluated
        self.transfer_checked = 0.0        # time.monotonic() of its last look at the history

    def begin(self, search: Search) -> None:
        search.outcome.search = "full"
        problem, points, ranker = search.item.problem, search.points, self.ranker
        self.starts.enqueue_defaults(search.study, problem, points, ranker)
        if self.context.settings.search.prefilter and ranker and ranker.families:
            search.prefilter = PreFilter(ranker, problem, points, seed=self.context.settings.seed)

    def next_candidates(self, search: Search, history: SearchHistory, flying: set[str]) -> Step:
        becomes = self.becomes_transfer(search, history, flying)
        if becomes is not None:
            return Step(then=becomes)
        budget, in_flight = self.context.settings.budget, len(search.in_flight)
        self.polishing -= set(history.results)
        patience_over = patience_spent(budget, history, in_flight)
        if patience_over and not self.polishing:
            fastest = ok_trials(search.study)
            self.polishing = self.starts.late_neighbours(search.study, search.item.problem, search.points, history,
                                                         flying) \
                or self.polish(search, history, flying, fastest) \
                or queue_runners_up(search, fastest, history, flying, self.context.backend.device)
        stop = stop_reason(budget, history, in_flight, search.started,
                           patience_over=patience_over and not self.polishing, reserve_s=search.slowest_s)
        # (the variations all in flight: wait for them, ask nothing else)
        return Step(stop=stop, wait=bool(self.polishing) and self.polishing <= flying)

    def polish(self, search: Search, history: SearchHistory, flying: set[str],
               fastest: list[TrialRecord]) -> set[str]:
        """Before the patience ends the study: queue the variations of its fastest trial
        (:meth:`~autoconv.search.points.ValidPoints.variations`), unless evaluated, queued or in
        flight already (``flying``); the keys queued. A best is polished once, and at most
        :data:`POLISH_ROUNDS` bests per significant improvement. ``fastest``: the study's ok
        trials, fastest first (:func:`~autoconv.search.study.ok_trials`)."""
        polished = search.polished
        mark = history.judged - history.since_best  # (where the last significant improvement was)
        if not fastest or fastest[0].key in polished or \
                sum(1 for at in polished.values() if at == mark) >= POLISH_ROUNDS:
            return set()
        best = fastest[0]
        polished[best.key] = mark
        known = history.known() | flying
        return enqueue_new(search.study, [(best.family, config, f"a variation of the best (trial {best.number})")
                                          for config in search.points.variations(best.family, best.config)], known)

    def becomes_transfer(self, search: Search, history: SearchHistory, flying: set[str]) -> TransferStudy | None:
        """The transfer this study becomes now, or None. With ``transfer``, a study begun full
        because the history was not yet enough (a first tune from empty storage begins its first
        several studies so) becomes one as soon as the history is (this run's other studies' trials
        and its own count): the model's picks of each family are queued, and the transfer's polish
        and end take over from the sampler and the patience. It looks at most every
        :data:`TRANSFER_CHECK_S` seconds, and fits the model only once the history holds
        :data:`~autoconv.search.transfer.MIN_PROBLEMS` problems timed with the study's own families
        (a model of other families would not be trusted anyway). Why: from empty storage, a run's
        first studies cost most of its compilations, though the model was enough for a transfer
        long before most of them would end; the more studies a run begins at once (workers, GPUs),
        the more of them begin full."""
        if not self.context.settings.search.transfer:
            return None
        now = time.monotonic()
        if now - self.transfer_checked < TRANSFER_CHECK_S:
            return None
        self.transfer_checked = now
        problem, points, study = search.item.problem, search.points, search.study
        samples = self.starts.history_samples(problem)  # (read once: the count below, then the model)
        if len({sample.problem for sample in samples if sample.family in points.families}) < transfer.MIN_PROBLEMS:
            return None  # (not enough of its families, whatever the model: spared fitting it)
        ranker = self.starts.model(samples)
        if transfer.untrusted_reason(ranker, points) is not None:
            return None
        search.prefilter = None
        search.outcome.search = "full, then transfer"
        self.context.transferred.add(study.study_name)
        known = history.known() | flying
        enqueue_new(study, transfer.starts(ranker, problem, points), known)
        return TransferStudy(self.context, self.starts, ranker, more_picks_due=True)
