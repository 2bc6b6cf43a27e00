"""A study's next candidate (:func:`next_candidate`): asked of the study (what a strategy queued
first, else a proposal of the sampler), and judged before anything compiles.

The family is a categorical parameter over the families that can run the problem, each family's
parameters namespaced (``implicit_gemm.BM``) and suggested define-by-run
(:func:`~autoconv.search.study.suggest`). A proposal that breaks a constraint costs nothing: it is
told PRUNED with the reason (TPE ranks such trials worst, so it learns to avoid the region), and the
nearest valid point not yet evaluated is queued and asked instead. This *repair* matters: for a
ResNet layer only a few percent of implicit_gemm's parameter combinations are valid, so rejecting
and asking again would spend almost every ask on an invalid point. A proposal evaluated before, or
held by another process on the same study, is told FAIL (``status: repeat``; samplers ignore
failed trials) and repaired likewise. A family with no valid point for the problem (on this GPU or
within the workspace) is only told invalid. With ``--prefilter``, a proposal the history's model
predicts among the slowest is told so and skipped (:mod:`~autoconv.search.prefilter`).
"""

from __future__ import annotations

from collections.abc import Mapping

from optuna.exceptions import UpdateFinishedTrialError

from autoconv.backends.base import Status
from autoconv.errors import AutoconvError
from autoconv.kernels.families import KernelPlan, get_family
from autoconv.kernels.limits import DeviceLimits
from autoconv.problems.problem import ConvProblem
from autoconv.search.context import SearchContext
from autoconv.search.outcome import ProblemOutcome
from autoconv.search.points import ValidPoints, config_key
from autoconv.search.prefilter import PreFilter
from autoconv.search.study import SearchHistory, claim, claimed_by_another, enqueue, refuse, searched_families, suggest

#: Asks without a new candidate after which the space counts as exhausted (a safety
#: net: a repair enqueues a valid unevaluated point, so one ask normally suffices).
MAX_ASKS_PER_CANDIDATE = 200
#: Candidates the prefilter may skip while one is asked for; past them it lets the next one through
#: (a sampler stuck in a region the model calls slow must not exhaust :data:`MAX_ASKS_PER_CANDIDATE`).
MAX_SKIPS_PER_CANDIDATE = 24


def next_candidate(context: SearchContext, study, problem: ConvProblem, points: ValidPoints, history: SearchHistory,
                   in_flight, outcome: ProblemOutcome, workspace_limit: int,
                   prefilter: PreFilter | None) -> tuple[object, KernelPlan] | None:
    """Ask until a valid, unevaluated config comes up that ``prefilter`` keeps; (trial,
    plan), or None when every valid config has been evaluated (or is being, here or by
    another process on the same study). A proposal that is invalid or a repeat is
    repaired: its nearest valid, unevaluated point is queued and asked next, unless
    ``prefilter`` skips that point, in which case the proposal is told predicted slow and
    the point joins :attr:`PreFilter.skipped` (no later repair picks it); the prefilter
    skips at most :data:`MAX_SKIPS_PER_CANDIDATE` times per call. ``outcome`` counts the
    invalid, repeated and skipped proposals.

    Raises:
        AutoconvError: :data:`MAX_ASKS_PER_CANDIDATE` proposals without a new candidate.
    """
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
    choices = searched_families(problem, context.settings.families)
    device = context.backend.device
    for _ in range(MAX_ASKS_PER_CANDIDATE):
        trial = study.ask()
        try:
            claim(trial, context.owner)
        except UpdateFinishedTrialError:  # stalled past the grace period: failed as unclaimed
            continue
        family, config = suggest(trial, choices)
        key = config_key(family, config)
        why_not: tuple[Status, str] | None = None
        if not points.is_valid(family, config):
            why_not = Status.INVALID, invalid_reason(family, config, problem, device, workspace_limit)
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
                return trial, get_family(family).plan(problem, config, device, workspace_limit,
                                                      run_time_sizes=context.settings.search.run_time_sizes)
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


def invalid_reason(family: str, config: Mapping[str, object], problem: ConvProblem, device: DeviceLimits,
                   workspace_limit: int) -> str:
    """Why ``config`` of ``family`` is no valid candidate for ``problem`` on ``device``."""
    unsupported = get_family(family).unsupported_reason(problem)
    if unsupported:
        return unsupported
    broken = get_family(family).space.violations(config, problem, device, workspace_limit)
    return "; ".join(broken) or f"no valid {family} configuration for this problem"
