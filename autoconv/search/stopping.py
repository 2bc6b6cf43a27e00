"""When a study stops asking for candidates: its budget per problem (``trials`` evaluated in the
study, ``seconds`` of wall time in this run) and its ``patience`` (evaluated trials without a
significant improvement of the best), whichever ends first; candidates in flight are finished,
not discarded, unless the seconds are spent (:func:`out_of_time`).

The seconds cover the whole problem, its winner's re-verification included: a study stops asking
once its seconds, less the time of its slowest candidate so far (what the re-verification is
expected to take), are spent; then its candidates in flight that have not reached the GPU are
withdrawn, unevaluated, and only the one the GPU is running is waited for. So a problem ends
within about one candidate's time of its seconds (at least its first candidate and its winner's
re-verification run, however short the seconds).

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
                patience_over: bool, reserve_s: float = 0.0) -> str | None:
    """Which limit of ``budget`` ends the study now, or None. ``in_flight``: this process's
    candidates in flight; ``started``: the study's beginning (:func:`time.monotonic`);
    ``patience_over``: the patience is spent (:func:`patience_spent`) and the best's variations are
    evaluated; ``reserve_s``: the seconds kept for the winner's re-verification (:func:`out_of_time`)."""
    # Trials being evaluated, here or by other processes, are spent budget (``running``
    # holds this process's in-flight trials too, once their params are stored).
    pending = max(in_flight, len(history.running))
    if budget.trials is not None and history.evaluated + pending >= budget.trials:
        return f"{budget.trials} trials"
    if out_of_time(budget, started, reserve_s):
        return seconds_spent(budget)
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


def out_of_time(budget: Budget, started: float, reserve_s: float = 0.0) -> bool:
    """Whether a study begun at ``started`` (:func:`time.monotonic`) has spent ``budget.seconds``,
    less ``reserve_s`` kept for its winner's re-verification (its slowest candidate's time so far)."""
    return budget.seconds is not None and time.monotonic() - started >= budget.seconds - reserve_s


def seconds_spent(budget: Budget) -> str:
    """The stop reason of a study whose ``budget.seconds`` are spent."""
    return f"{budget.seconds:g} s"
