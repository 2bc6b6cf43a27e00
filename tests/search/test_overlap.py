"""Studies in flight together (:func:`~autoconv.search.scheduler.search_in_turn`): the next problem's
study begins while the one in flight waits on its last candidates, two at most, within one
pipeline; each result goes to its own study; an error ends only its study, an interrupt abandons
both."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState

from autoconv.backends.fake import FakeBackend
from autoconv.cache.winners import WinnerCache
from autoconv.config.budget import Budget
from autoconv.errors import AutoconvError
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.search import scheduler, transfer
from autoconv.search.options import SearchOptions, SearchSettings
from autoconv.search.scheduler import CONCURRENT_STUDIES, OVERLAP_BELOW
from autoconv.search.study import EVALUATED, study_name
from autoconv.search.tuner import Tuner
from tests.search.fake_history import FAMILIES, TRAINED, UNTUNED, tune_history

PROBLEMS = [NamedProblem("untuned", UNTUNED),
            NamedProblem("another", parse_spec("N=8,C=16,H=40,W=40,K=32,R=3,S=3,pad=1")),
            NamedProblem("third", parse_spec("N=1,C=40,H=15,W=11,K=24,R=1,S=3,pad=0x1"))]


class Recording(FakeBackend):
    """Records each submission and each result, with its problem's name (``events``); hands out the
    *last* ready ticket first, so that a later study's results overtake an earlier one's. Raises an
    AutoconvError for ``raise_for``'s candidates, or KeyboardInterrupt once ``interrupt_after``
    results came, while two studies have candidates in flight; an AutoconvError for the
    re-verification of ``raise_verifying``'s winner."""

    def __init__(self, *args, raise_for: str | None = None, interrupt_after: int | None = None,
                 raise_verifying: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.raise_verifying = raise_verifying
        self.events: list[tuple[str, str]] = []
        self.priorities: dict[str, set] = {}  # problem -> the priorities its candidates were submitted with
        self.raise_for, self.interrupt_after = raise_for, interrupt_after

    @staticmethod
    def name(plan) -> str:
        return next(item.name for item in PROBLEMS if item.problem == plan.problem)

    def submit(self, plan, **kwargs):
        self.events.append(("submit", self.name(plan)))
        if kwargs.get("screening"):  # (a search's candidate, not a winner's re-verification)
            self.priorities.setdefault(self.name(plan), set()).add(kwargs.get("priority"))
        return super().submit(plan, **kwargs)

    def first_done(self, tickets) -> int:
        return len(tickets) - 1

    def result(self, ticket):
        name = self.name(ticket.plan)
        if self.interrupt_after is not None and sum(kind == "result" for kind, _ in self.events) >= \
                self.interrupt_after and len(self.in_flight()) == 2:
            raise KeyboardInterrupt
        if name == self.raise_for and len(self.in_flight()) == 2:
            raise AutoconvError(f"cannot tune {name} on this GPU (injected)")
        if name == self.raise_verifying and not ticket.screening:  # (a winner's re-verification)
            raise AutoconvError(f"the GPU worker died while preparing {name} (injected)")
        self.events.append(("result", name))
        return super().result(ticket)

    def in_flight(self) -> list[tuple[int, str]]:
        """(count, problem) of each problem with candidates submitted and no result yet."""
        counts: dict[str, int] = {}
        for kind, name in self.events:
            counts[name] = counts.get(name, 0) + (1 if kind == "submit" else -1)
        return [(count, name) for name, count in counts.items() if count]


def flights(events):
    """After each event: {problem: candidates in flight}."""
    counts: dict[str, int] = {}
    for kind, name in events:
        counts[name] = counts.get(name, 0) + (1 if kind == "submit" else -1)
        yield kind, name, {n: c for n, c in counts.items() if c}


def study_of(tuner, problem):
    return optuna.load_study(study_name=study_name(problem, tuner.backend.identity.gpu_name, FAMILIES),
                             storage=tuner.storage)


def overlap_tuner(backend, history, budget=None, cache=None, **search) -> Tuner:
    """A tuner of the fake history's families with room in its pipeline for two studies."""
    search = {"pipeline_depth": 12, "transfer": False, **search}
    budget = budget or Budget(trials=40, patience=12)
    return Tuner(backend, SearchSettings(FAMILIES, budget, seed=3, search=SearchOptions(**search)), storage=history,
                 cache=cache)


def abandoned_and_queued_again(trials) -> tuple[list, list]:
    """Of a study's ``trials``: those failed as abandoned, and the retries of them that wait."""
    abandoned = [t for t in trials if t.user_attrs.get("status") == "abandoned"]
    retries = [t for t in trials if t.state == TrialState.WAITING
               and str(t.user_attrs.get("origin", "")).startswith("retry of trial")]
    return abandoned, retries


@pytest.fixture
def history(tmp_path, monkeypatch):
    """The fake history's storage, trusted for transfer although it holds only its two problems."""
    monkeypatch.setattr(transfer, "MIN_PROBLEMS", len(TRAINED))
    return tune_history(str(tmp_path / "history.journal"))


@pytest.mark.parametrize("search", ["transfer", "full"])
def test_the_next_study_begins_while_the_one_in_flight_waits_on_its_last_candidates(history, tmp_path, search):
    backend = Recording()
    depth = 12
    with WinnerCache(tmp_path / "cache.sqlite") as cache:
        tuner = overlap_tuner(backend, history, cache=cache, pipeline_depth=depth, transfer=search == "transfer")
        outcomes = tuner.tune(PROBLEMS)
        assert [outcome.search for outcome in outcomes] == [search] * 3
        assert all(outcome.source == "tuned" and cache.get(tuner.cache_key(outcome.problem)) for outcome in outcomes)
    begun: set[str] = set()
    overlapped = False
    for kind, name, flying in flights(backend.events):
        assert len(flying) <= CONCURRENT_STUDIES and sum(flying.values()) <= depth
        if kind == "submit" and name not in begun:
            # (begun while the others hold few candidates and ask for none: their last ones)
            assert sum(count for other, count in flying.items() if other != name) < OVERLAP_BELOW
            begun.add(name)
        overlapped |= len(flying) == 2
    assert overlapped
    # A study's candidates compile before those of the studies begun after it: each carries the
    # moment its study began.
    assert all(len(backend.priorities[item.name]) == 1 for item in PROBLEMS)
    began = [next(iter(backend.priorities[item.name])) for item in PROBLEMS]
    assert None not in began and began == sorted(began) and len(set(began)) == len(PROBLEMS)
    # Each result went to its own study: its trials are those evaluated for its problem, none left.
    for item, outcome in zip(PROBLEMS, outcomes):
        trials = study_of(tuner, item.problem).get_trials(deepcopy=False)
        assert not [t for t in trials if t.state == TrialState.RUNNING]  # (a full study's budget may leave some queued)
        evaluated = [t for t in trials if t.user_attrs.get("status") in EVALUATED]
        searched = sum(1 for kind, name in backend.events if kind == "result" and name == item.name) - 1
        assert outcome.trials_run == len(evaluated) == searched  # (less the winner's re-verification)


def test_one_study_at_a_time_when_the_pipeline_has_no_room_for_a_second(history):
    backend = Recording()
    overlap_tuner(backend, history, budget=Budget(trials=10), pipeline_depth=1).tune(PROBLEMS[:2])
    assert all(len(flying) <= 1 for _, _, flying in flights(backend.events))


def test_an_error_ends_its_own_study_and_the_other_goes_on(history):
    """The second study's candidates fail with an error (as a problem the GPU worker cannot
    prepare does) while the first still has candidates in flight."""
    backend = Recording(raise_for="another")
    tuner = overlap_tuner(backend, history)
    first, second, third = tuner.tune(PROBLEMS)
    assert second.stop_reason == "error" and "cannot tune another on this GPU (injected)" in second.message
    assert first.source == third.source == "tuned"
    trials = study_of(tuner, PROBLEMS[1].problem).get_trials(deepcopy=False)
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    abandoned, queued_again = abandoned_and_queued_again(trials)
    assert abandoned and len(queued_again) == len(abandoned)


def test_an_error_in_a_studys_end_ends_it_alone(history):
    backend = Recording(raise_verifying="another")
    tuner = overlap_tuner(backend, history)
    first, second, third = tuner.tune(PROBLEMS)
    assert second.stop_reason == "error" and "while preparing another (injected)" in second.message
    assert first.source == third.source == "tuned"


def test_an_interrupt_abandons_every_study_in_flight_and_queues_their_candidates_again(history):
    backend = Recording(interrupt_after=30)
    tuner = overlap_tuner(backend, history)
    with pytest.raises(KeyboardInterrupt):
        tuner.tune(PROBLEMS)
    flying = dict((name, count) for count, name in backend.in_flight())
    assert len(flying) == 2
    for item in PROBLEMS:
        if item.name not in flying:
            continue
        trials = study_of(tuner, item.problem).get_trials(deepcopy=False)
        assert not [t for t in trials if t.state == TrialState.RUNNING]
        abandoned, queued_again = abandoned_and_queued_again(trials)
        assert len(abandoned) == flying[item.name]  # (the candidate interrupted included)
        assert len(queued_again) == len(abandoned)


def test_with_one_study_at_a_time_none_overlaps(history, monkeypatch):
    """The constant is what bounds it (and 1 restores the earlier order: each study ends first)."""
    monkeypatch.setattr(scheduler, "CONCURRENT_STUDIES", 1)
    backend = Recording()
    overlap_tuner(backend, history, transfer=True).tune(PROBLEMS)
    assert all(len(flying) <= 1 for _, _, flying in flights(backend.events))
