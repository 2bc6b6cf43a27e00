"""The transfer study (:class:`TransferStudy`): a problem searched by the tuning history's model
instead of the sampler, where the model knows enough problems (:func:`trusted`; the choices
themselves are :mod:`~autoconv.search.transfer`'s).

It starts from the nearest tuned problems' winners and the model's picks; once those are timed it
queues the model's best variations of its best (each best once, up to
:data:`~autoconv.search.transfer.POLISHED_BESTS`), with the first of them the further picks of the
families measured close to the best, then the next tiles' other splits of the reduction
(:func:`~autoconv.search.strategy.queue_runners_up`). It has no patience: it ends when nothing it
would queue is left, or with its budget.
"""

from __future__ import annotations

from autoconv.problems.models import NamedProblem
from autoconv.search import transfer
from autoconv.search.context import SearchContext
from autoconv.search.points import ValidPoints
from autoconv.search.ranker import Ranker
from autoconv.search.stopping import stop_reason
from autoconv.search.strategy import WAIT, Search, Step, queue_runners_up
from autoconv.search.study import SearchHistory, ok_trials
from autoconv.search.warm_start import WarmStart, enqueue_new

#: What :meth:`TransferStudy.step` says when the study has nothing to ask until a result comes.
WAIT_FOR_RESULTS = "wait for results"


def trusted(context: SearchContext, item: NamedProblem, points: ValidPoints, ranker: Ranker) -> bool:
    """Whether ``item`` is tuned by transfer from ``ranker`` (else a full study). Each reason for a
    full study is reported once a run (by this tuner, and by the run's other workers: ``note_once``):
    transfer is the default, and a first tune from empty storage runs its first several studies full
    for the same reason."""
    why_not = transfer.untrusted_reason(ranker, points)
    if why_not and why_not not in context.full_study_reasons:
        context.full_study_reasons.add(why_not)
        context.reporter.note_once(f"{item.name}: a full study, not a transfer: {why_not} (said once; tune.json's "
                                   f"`search` names each problem's)", key=f"full study: {why_not}")
    return why_not is None


class TransferStudy:
    """A study searched by ``ranker``, the tuning history's model (see the module docstring).
    ``more_picks_due``: its start is queued and its further picks are not yet."""

    def __init__(self, context: SearchContext, starts: WarmStart, ranker: Ranker, more_picks_due: bool = False):
        self.context, self.starts, self.ranker = context, starts, ranker
        self.more_picks_due = more_picks_due

    def begin(self, search: Search) -> None:
        study, problem, points = search.study, search.item.problem, search.points
        search.outcome.search = "transfer"
        self.context.transferred.add(study.study_name)
        # The model's picks at the study's first start only: tuned again (a revisit, a resumed
        # run) it queues the neighbours' winners it lacks, not the picks of a model refitted since.
        known = SearchHistory.of(study).known()
        self.more_picks_due = not known
        enqueue_new(study, self.starts.neighbour_starts(problem, points)
                    + ([] if known else transfer.starts(self.ranker, problem, points)), known)

    def next_candidates(self, search: Search, history: SearchHistory, flying: set[str]) -> Step:
        stop = stop_reason(self.context.settings.budget, history, len(search.in_flight), search.started,
                           patience_over=False, reserve_s=search.slowest_s) or self.step(search, history, flying)
        return WAIT if stop == WAIT_FOR_RESULTS else Step(stop=stop)

    def step(self, search: Search, history: SearchHistory, flying: set[str]) -> str | None:
        """What the study does before asking for its next candidate: None (ask: one is queued),
        :data:`WAIT_FOR_RESULTS`, or why it ends. When its queue is empty it queues the winners of
        neighbours cached since it began, else the model's best variations of its best (once the
        start's candidates are all timed; each best once, :data:`~autoconv.search.transfer.POLISHED_BESTS`
        at most); with the first of those, the next picks of the families measured close to the best
        (:func:`~autoconv.search.transfer.more_picks`); once those are timed, the next tiles' other
        splits (:func:`~autoconv.search.strategy.queue_runners_up`)."""
        study, problem, points, ranker = search.study, search.item.problem, search.points, self.ranker
        polished, in_flight = search.polished, search.in_flight
        if history.waiting - flying:
            return None
        if not polished and in_flight:
            return WAIT_FOR_RESULTS  # (the first polish waits for the start's results)
        picked: set[str] = set()
        if self.more_picks_due and (timed := history.timed()):
            self.more_picks_due = False
            picked = enqueue_new(study, transfer.more_picks(ranker, problem, points, timed),
                                 history.known() | flying)
        queued = self.starts.late_neighbours(study, problem, points, history, flying)
        fastest = ok_trials(study)
        best = fastest[:1]
        if not queued and best and best[0].key not in polished and len(polished) < transfer.POLISHED_BESTS:
            polished[best[0].key] = history.judged
            known = history.known() | flying | picked
            variations = transfer.best_variations(ranker, problem, points, best[0].family, best[0].config, known)
            queued = enqueue_new(study, [(best[0].family, config, f"a variation of the best (trial {best[0].number}), "
                                                                  "predicted fast by the tuning history's model")
                                         for config in variations], known)
        if queued or picked:
            return None
        if in_flight:
            return WAIT_FOR_RESULTS  # (a result may bring a new best to polish)
        if not best:
            return "transfer: no candidate of its start or their variations passed"
        if queue_runners_up(search, fastest, history, flying, self.context.backend.device):
            return None
        if len(polished) >= transfer.POLISHED_BESTS:
            return f"transfer: {transfer.POLISHED_BESTS} bests polished"
        return "transfer: the best's variations predicted fastest are timed, none faster"
