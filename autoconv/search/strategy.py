"""A study while a tuner searches it (:class:`Search`), and the protocol of the strategies that
choose its candidates (:class:`Strategy`): a full study (:mod:`~autoconv.search.full_study`: the
sampler, the patience, the polish of its bests) or a transfer from the tuning history
(:mod:`~autoconv.search.transfer_study`: the history's model instead of the sampler).

A strategy chooses by queueing configurations in the study (Optuna's enqueued trials), which the
study loop (:mod:`~autoconv.search.study_loop`) asks for before anything the sampler proposes.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

import optuna

from autoconv.backends.base import TrialResult
from autoconv.kernels.limits import DeviceLimits
from autoconv.problems.models import NamedProblem
from autoconv.search import runners_up as runners_up_search
from autoconv.search.outcome import PhaseClock, ProblemOutcome
from autoconv.search.points import ValidPoints
from autoconv.search.prefilter import PreFilter
from autoconv.search.study import SearchHistory, TrialRecord
from autoconv.search.warm_start import enqueue_new


@dataclass(frozen=True)
class Step:
    """What the study loop does after :meth:`Strategy.next_candidates`: ask for a candidate (the
    default), ``wait`` for a result before asking, ``stop`` asking (why: its candidates in flight are
    finished), or hand the study over to the strategy ``then`` and ask that one."""

    stop: str | None = None
    wait: bool = False
    then: Strategy | None = None


ASK = Step()
WAIT = Step(wait=True)


class Strategy(Protocol):
    """How a study chooses its candidates. The study loop calls :meth:`begin` once, when the study
    is opened, then :meth:`next_candidates` before each candidate it asks for, until a step stops
    the study. Each may queue configurations in ``search.study``; neither evaluates anything."""

    def begin(self, search: Search) -> None:
        """Queue the study's first candidates, and name the search in ``search.outcome.search``."""

    def next_candidates(self, search: Search, history: SearchHistory, flying: set[str]) -> Step:
        """Queue what the study tries next, if anything, and say what the loop does now.
        ``history``: the study as it stands; ``flying``: the config keys of this process's
        candidates in flight."""


@dataclass(eq=False)
class Search:
    """One problem's study while a tuner searches it (:class:`~autoconv.search.study_loop.StudyLoop`
    opens it and ends it)."""

    item: NamedProblem
    points: ValidPoints
    study: optuna.Study
    workspace_limit: int
    outcome: ProblemOutcome
    clock: PhaseClock
    started: float                        # time.monotonic() at its beginning (its ``seconds`` count from there)
    strategy: Strategy
    prefilter: PreFilter | None = None    # keeps the candidates the history's model predicts slow from compiling
    in_flight: deque = field(default_factory=deque)  # (trial, plan, ticket), in submission order
    best: TrialResult | None = None                  # the fastest result it received
    slowest_s: float = 0.0                # the longest wait for one of its results (its seconds keep this much)
    #: Bests whose variations were queued -> the study's point then (each strategy's polish).
    polished: dict[str, int] = field(default_factory=dict)
    #: Configurations of other tiles whose other splits were queued (:func:`queue_runners_up`).
    runners_up: set[str] = field(default_factory=set)
    stop: str | None = None               # why it asks no more, once decided (its candidates in flight are finished)
    tag: int = 0                          # its job's (:func:`autoconv.search.scheduler.search_in_turn`)


def queue_runners_up(search: Search, fastest: list[TrialRecord], history: SearchHistory, flying: set[str],
                     device: DeviceLimits) -> set[str]:
    """Once the best's variations are timed: queue every other split of the reduction (and every
    other value of the family's other :func:`~autoconv.search.runners_up.partners` in the problem's
    precision) of the fastest configuration of each next tile within reach of the best
    (:mod:`~autoconv.search.runners_up`), each such configuration once, unless evaluated, queued
    or in flight (``flying``); the keys queued. ``fastest``: the study's ok trials, fastest first
    (:func:`~autoconv.search.study.ok_trials`)."""
    known, queued = history.known() | flying, set()
    problem, workspace_limit = search.item.problem, search.workspace_limit

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
