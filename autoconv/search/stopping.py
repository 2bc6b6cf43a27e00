"""When a study stops asking for candidates: its budget per problem (``trials`` evaluated in the
study, ``seconds`` of wall time in this run) and its ``patience`` (evaluated trials without a
significant improvement of the best), whichever ends first; candidates in flight are finished,
not discarded.

Trials being evaluated, here or by other processes, count as spent: no more are asked while
those pending would complete the budget or the patience, so a problem ends ``patience`` trials
after its best, not ``patience`` plus a pipeline's worth (one of them improving the best lets the
asking resume).
"""

from __future__ import annotations

import time

from autoconv.config.budget import Budget
from autoconv.search.study import SearchHistory

#: A new best restarts the patience only if it beats the best that last restarted it by more than
#: this fraction: a study creeping forward by steps near the screening timing's own spread does not
#: earn another ``patience`` trials for each step (the winner is the fastest all the same, and the
#: best's variations are evaluated before the patience ends a study: what the full study's polish
#: is for).
SIGNIFICANT_IMPROVEMENT = 0.02


def stop_reason(budget: Budget, history: SearchHistory, in_flight: int, started: float,
                patience_over: bool) -> str | None:
    """Which limit of ``budget`` ends the study now, or None. ``in_flight``: this process's
    candidates in flight; ``started``: the study's beginning (:func:`time.monotonic`);
    ``patience_over``: the patience is spent (:func:`patience_spent`) and the best's variations are
    evaluated."""
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


def patience_spent(budget: Budget, history: SearchHistory, in_flight: int) -> bool:
    """Whether ``budget.patience`` trials, counting those in flight, came after the last
    significant improvement (:data:`SIGNIFICANT_IMPROVEMENT`; ``history`` read with it)."""
    pending = max(in_flight, len(history.running))
    return (budget.patience is not None and history.best_ms is not None
            and history.since_best + pending >= budget.patience)
