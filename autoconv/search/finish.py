"""The end of a study (:func:`finish`): its winner re-verified and re-timed as users run it, then cached.

The winner is the fastest ok trial of the study, built with constants; it is re-verified and
re-timed in full on fresh inputs, and only then cached (if it fails, the next fastest is tried).
The search's short timing ranks most candidates as the full timing does, but not a kernel whose
time jumps between runs: where the winner's time in full is above the next fastest's time in the
search, that one is timed in full too, and the fastest in full wins. Where the fastest were ranked
with sizes at run time (``--run-time-sizes``), the :data:`REVERIFY_CANDIDATES` fastest are all
rebuilt, verified and timed, and the fastest of them wins.
"""

from __future__ import annotations

import time
from typing import cast

from autoconv.backends.base import TrialResult
from autoconv.cache.entries import CacheEntry
from autoconv.kernels.families import KernelPlan, get_family
from autoconv.problems.problem import ConvProblem
from autoconv.search.context import SearchContext
from autoconv.search.outcome import ProblemOutcome
from autoconv.search.resume import unusable
from autoconv.search.study import TrialRecord, ok_trials, record_winner

#: Fastest ok trials tried, in order, when the winner fails its re-verification or is slower in
#: full than the next in the search; all of them are timed in the build with constants when one
#: was ranked with sizes at run time.
REVERIFY_CANDIDATES = 3
#: Offset of the re-verification inputs' seed from the search's.
REVERIFY_SEED_OFFSET = 7919


def finish(context: SearchContext, study, problem: ConvProblem, outcome: ProblemOutcome,
           deadline: float | None = None) -> None:
    """Re-verify ``study``'s fastest ok trials, built as users run them (sizes compiled in), on
    fresh inputs, and cache the winner (a faster entry of its key stays, unless this autoconv
    cannot use it); ``outcome`` gets the winner and the work (see the module docstring).

    Where the search ranked a family with sizes at run time (its slower ranking build), the
    :data:`REVERIFY_CANDIDATES` fastest and the fastest of each such family are built with
    constants, verified and timed, and the fastest that passes wins: the two builds' speeds differ
    from one configuration to another, which may reorder the top.

    Past ``deadline`` (:func:`time.monotonic`: the end of the problem's seconds), no further
    trial is timed in full once one has passed."""
    backend, settings = context.backend, context.settings
    ranked = ok_trials(study)
    fastest = ranked[:REVERIFY_CANDIDATES]
    if not fastest:
        outcome.message = "no candidate passed verification"
        return
    # The families ranked in their slower build: the best of each is rebuilt too, should the
    # others hide it.
    slowed = {trial.family for trial in ranked if get_family(trial.family).takes_run_time_sizes} \
        if settings.search.run_time_sizes else set()
    rebuilt = bool(slowed)
    fastest += [next(trial for trial in ranked if trial.family == family)
                for family in sorted(slowed - {trial.family for trial in fastest})]
    plans = [get_family(trial.family).plan(problem, trial.config, backend.device, settings.workspace_limit)
             for trial in fastest]
    seed = settings.seed + REVERIFY_SEED_OFFSET
    # Rebuilt, all are evaluated: submitted together, they compile in parallel (the search's
    # best is usually compiled already: prepared when it became the best).
    tickets = [backend.submit(plan, seed=seed) for plan in plans] if rebuilt else []
    rejected: list[str] = []
    passed: list[tuple[TrialRecord, KernelPlan, TrialResult]] = []
    fastest_in_full_ms = float("inf")
    for index, (trial, plan) in enumerate(zip(fastest, plans)):
        if not rebuilt and cast(float, trial.value) >= fastest_in_full_ms:
            break  # (going by its time in the search, it cannot beat the fastest in full)
        if not rebuilt and passed and deadline is not None and time.monotonic() >= deadline:
            break  # (the problem's seconds are spent: the fastest in full so far wins)
        check = backend.result(tickets[index]) if rebuilt else backend.evaluate(plan, seed=seed)
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
        if context.cache is not None:
            # A faster entry stays, unless it is one this autoconv cannot use.
            key = context.cache_key(problem)
            existing = context.cache.get(key)
            replace_it = existing is not None and unusable(context, existing, problem) is not None
            context.cache.put(CacheEntry(
                key=key, family=family, config=config, kernel_name=plan.name,
                source_hash=plan.source_hash, time_ms=check.time_ms, tflops=check.tflops,
                workspace_bytes=plan.workspace_bytes, trials=outcome.trials_total,
                study_name=outcome.study_name), only_if_faster=not replace_it)
    if rejected:
        outcome.message = "; ".join(filter(None, [outcome.message, "re-verification failed for "
                                                  + " | ".join(rejected)]))


def report_cached(context: SearchContext, outcome: ProblemOutcome) -> None:
    """Make ``outcome`` (tuned in this run) say what the cache holds for its problem now that the
    run is over: where another run cached a faster winner (two runs tuning one problem with one
    cache: the cache keeps the fastest), that winner becomes the outcome's, and this run's own
    best is kept as :attr:`~autoconv.search.outcome.ProblemOutcome.this_run_best`."""
    if context.cache is None or outcome.source != "tuned" or outcome.kernel_name is None:
        return
    entry = context.cache.get(context.cache_key(outcome.problem))
    if entry is None or (entry.kernel_name == outcome.kernel_name and entry.time_ms == outcome.time_ms):
        return
    outcome.this_run_best = {"family": outcome.family, "config": outcome.config, "kernel_name": outcome.kernel_name,
                             "time_ms": outcome.time_ms, "tflops": outcome.tflops,
                             "workspace_bytes": outcome.workspace_bytes}
    outcome.message = (f"the cache holds {entry.kernel_name} at {entry.time_ms:.4f} ms, cached by another run "
                       f"(measured {entry.measured_at}); this run's best (this_run_best): {outcome.kernel_name} at "
                       f"{outcome.time_ms:.4f} ms, {outcome.message}")
    outcome.family, outcome.config, outcome.kernel_name = entry.family, dict(entry.config), entry.kernel_name
    outcome.time_ms, outcome.tflops, outcome.workspace_bytes = entry.time_ms, entry.tflops, entry.workspace_bytes
