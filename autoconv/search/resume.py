"""Before a problem is searched: whether its cached winner stands (:func:`cached_outcome`).

A winner cached for the problem, the device and the templates' version is used as is
(``--retune`` searches anyway), unless it is no longer this autoconv's kernel (:func:`unusable`:
its configuration no longer plans, or renders to another source), or the problem's study holds
candidates of a run that ended early, queued again, and its trial budget is not spent: then the
study resumes (:func:`unfinished`; a killed run's worker may have cached the winner while counting
another worker's candidates, which the kill then abandoned).
"""

from __future__ import annotations

from optuna.trial import TrialState

from autoconv.cache.entries import CacheEntry
from autoconv.errors import AutoconvError
from autoconv.kernels.families import get_family
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import ConvProblem
from autoconv.search.context import SearchContext
from autoconv.search.outcome import ProblemOutcome
from autoconv.search.storage import is_retry
from autoconv.search.study import SearchHistory


def cached_outcome(context: SearchContext, item: NamedProblem, quiet: bool = False) -> ProblemOutcome | None:
    """``item``'s outcome from its cached winner, or None when it is to be searched (see the module
    docstring; ``quiet``: without saying why a cached winner is not used)."""
    cache = context.cache
    if cache is None or context.settings.search.retune:
        return None
    entry = cache.get(context.cache_key(item.problem))
    if entry is None or entry.family not in context.settings.families:
        return None
    stale = unusable(context, entry, item.problem)
    if stale:
        if not quiet:
            context.reporter.note(f"{item.name}: not using its cached winner ({stale}); tuning it again")
        return None
    resume = resumable(context, item.problem)
    if resume:
        if not quiet:
            context.reporter.note(f"{item.name}: resuming its study ({resume})")
        return None
    return ProblemOutcome(
        name=item.name, problem=item.problem, count=item.count, source="cache", family=entry.family,
        config=dict(entry.config), kernel_name=entry.kernel_name, time_ms=entry.time_ms,
        tflops=entry.tflops, workspace_bytes=entry.workspace_bytes, study_name=entry.study_name,
        stop_reason="cached", message=f"cached winner measured {entry.measured_at}",
        trials_total=entry.trials)


def unusable(context: SearchContext, entry: CacheEntry, problem: ConvProblem) -> str | None:
    """Why a cache entry of ``problem``'s key cannot be this autoconv's kernel (it no longer
    plans, or renders to another source), or None."""
    try:
        plan = get_family(entry.family).plan(problem, dict(entry.config), context.backend.device,
                                             max(context.settings.workspace_limit, entry.workspace_bytes))
    except AutoconvError as err:
        return f"its configuration is no longer valid: {str(err).splitlines()[0]}"
    if plan.source_hash != entry.source_hash:
        return "this autoconv renders another source for it (stale entry)"
    return None


def resumable(context: SearchContext, problem: ConvProblem) -> str | None:
    """Why ``problem``'s study, whose winner is cached, must be tuned on (:func:`unfinished`),
    once a killed run's trials in it are failed and queued again; None when it need not be, or
    has no study here."""
    try:
        study = context.load_study(problem)
    except KeyError:  # (never tuned with this storage)
        return None
    context.liveness.fail_abandoned(study, force=True)
    return unfinished(context, study)


def unfinished(context: SearchContext, study) -> str | None:
    """Why ``study`` is not done, though its winner may be cached: a run that ended early
    (killed, interrupted) left candidates that are queued again, and the trial budget is not
    spent. (A worker that stopped counting another's candidates as spent cached its winner;
    those candidates were then abandoned.) None when done. The callers fail a dead process's
    running trials first (:meth:`~autoconv.search.liveness.Liveness.fail_abandoned`), which
    queues them again."""
    budget = context.settings.budget
    evaluated = SearchHistory.of(study).evaluated
    if budget.trials is not None and evaluated >= budget.trials:
        return None
    retries = sum(is_retry(t) for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)))
    if not retries:
        return None
    spent = f"{evaluated} of {budget.trials} trials" if budget.trials is not None else f"{evaluated} trials"
    return f"{retries} candidate(s) of an interrupted run queued again, {spent} evaluated"
