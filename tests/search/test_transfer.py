"""Tuning by transfer from the history (:mod:`autoconv.search.transfer`): what a transfer study
starts from, which variations it polishes, when it transfers at all, and studies tuned so on the
fake backend."""

from __future__ import annotations

import dataclasses

import numpy
import optuna
import pytest
from optuna.trial import TrialState

from autoconv.backends.fake import FAKE_IDENTITY, FakeBackend
from autoconv.cache.neighbours import Neighbour
from autoconv.cache.winners import WinnerCache
from autoconv.config.budget import Budget
from autoconv.kernels.limits import H100
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.search import transfer
from autoconv.search.options import SearchOptions, SearchSettings
from autoconv.search.outcome import Reporter
from autoconv.search.points import ValidPoints, config_key, enumerate_points
from autoconv.search.study import read_trials, study_name
from autoconv.search.tuner import Tuner
from tests.search.fake_history import FAMILIES, TRAINED, UNTUNED, tune_history
from tests.search.stub_ranker import OrderRanker

#: A second problem the history does not hold.
ANOTHER = parse_spec("N=8,C=16,H=40,W=40,K=32,R=3,S=3,pad=1")


@pytest.fixture(scope="module")
def points():
    return ValidPoints(enumerate_points(UNTUNED, FAMILIES, H100, 1 << 30))


@pytest.fixture
def history(tmp_path):
    """The fake history's storage, trusted although it holds only its two problems."""
    return tune_history(str(tmp_path / "history.journal"))


@pytest.fixture
def trusting(monkeypatch):
    monkeypatch.setattr(transfer, "MIN_PROBLEMS", len(TRAINED))


class StubRanker(OrderRanker):
    """Models ``direct`` only: a config's predicted ms is its place in the enumeration, reversed
    (the last enumerated is predicted fastest), times ``scale``."""

    def __init__(self, points, problems=transfer.MIN_PROBLEMS, scale=1.0):
        configs = points.points["direct"]
        super().__init__(("direct",), {config_key("direct", c): (len(configs) - i) * scale
                                       for i, c in enumerate(configs)}, problems)


def test_a_model_of_too_few_problems_or_of_none_of_the_families_is_not_trusted(points):
    assert transfer.untrusted_reason(StubRanker(points), points) is None
    few = transfer.untrusted_reason(StubRanker(points, problems=transfer.MIN_PROBLEMS - 1), points)
    assert f"fewer than the {transfer.MIN_PROBLEMS}" in few
    other = StubRanker(points)
    other.families = ("implicit_gemm",)
    assert "models none of its kernel families" in transfer.untrusted_reason(other, points)


def test_the_start_is_the_models_fastest_then_the_defaults_of_the_families_it_does_not_model(points):
    found = transfer.starts(StubRanker(points), UNTUNED, points)
    assert found[0] == ("direct", points.points["direct"][-1],
                        f"predicted 1 of direct by the tuning history's model ({1.0:.4g} ms)")
    assert found[1:] == [("im2col_gemm", points.default("im2col_gemm"),
                          "family default (not modelled by the tuning history)")]


class TwoFamilies(StubRanker):
    """``im2col_gemm`` modelled too: its configs predicted from ``offset`` ms up (direct's from 1 ms)."""

    def __init__(self, points, offset):
        super().__init__(points)
        self.families = ("direct", "im2col_gemm")
        self.order.update({config_key("im2col_gemm", c): offset + i
                           for i, c in enumerate(points.points["im2col_gemm"])})


def test_every_modelled_family_starts_with_its_predicted_best_fastest_predicted_first(points):
    far = transfer.starts(TwoFamilies(points, 1000.0), UNTUNED, points)
    assert far == [("direct", points.points["direct"][-1], far[0][2]),
                   ("im2col_gemm", points.points["im2col_gemm"][0], far[1][2])]
    near = transfer.starts(TwoFamilies(points, 0.5), UNTUNED, points)
    assert [family for family, _, _ in near] == ["im2col_gemm", "direct"]


def test_more_picks_go_to_the_families_measured_close_to_the_best_not_those_predicted_close(points):
    """The model's family ranking is off by far more than its tile ranking: the start's times decide."""
    ranker = TwoFamilies(points, 0.5)  # (im2col_gemm predicted the faster family)
    direct, im2col = points.points["direct"], points.points["im2col_gemm"]
    start = {config_key("direct", direct[-1]): 1.0,
             config_key("im2col_gemm", im2col[0]): transfer.FAMILY_MARGIN * 1.01}  # (measured just too slow)
    picks = transfer.more_picks(ranker, UNTUNED, points, start)
    assert picks == [("direct", direct[-1 - place], f"predicted {place + 1} of direct by the tuning history's "
                      f"model ({1.0 + place:.4g} ms)") for place in range(1, transfer.PICKS_PER_FAMILY)]
    start[config_key("im2col_gemm", im2col[0])] = transfer.FAMILY_MARGIN * 0.99
    assert sorted(family for family, _, _ in transfer.more_picks(ranker, UNTUNED, points, start)) == \
        ["direct"] * (transfer.PICKS_PER_FAMILY - 1) + ["im2col_gemm"] * (transfer.PICKS_PER_FAMILY - 1)
    # A family timed only through another of its configs (a neighbour's winner) counts as measured.
    assert [family for family, _, _ in transfer.more_picks(ranker, UNTUNED, points,
                                                           {config_key("im2col_gemm", im2col[5]): 2.0})] == \
        ["im2col_gemm"] * (transfer.PICKS_PER_FAMILY - 1)
    assert transfer.more_picks(ranker, UNTUNED, points, {}) == []


def test_the_variations_polished_are_the_models_fastest_less_those_known(points):
    ranker = StubRanker(points)
    best = points.default("direct")
    every = points.variations("direct", best)
    assert len(every) > transfer.VARIATIONS_PER_BEST
    chosen = transfer.best_variations(ranker, UNTUNED, points, "direct", best, set())
    predicted = sorted(ranker.predict_ms(UNTUNED, "direct", every))
    assert sorted(ranker.predict_ms(UNTUNED, "direct", chosen)) == predicted[:transfer.VARIATIONS_PER_BEST]
    # Those known are left out, and not replaced: polishing a best again queues nothing new.
    known = {config_key("direct", config) for config in chosen[:2]}
    assert transfer.best_variations(ranker, UNTUNED, points, "direct", best, known) == chosen[2:]
    # A family without a model: every variation.
    other = points.default("im2col_gemm")
    assert transfer.best_variations(ranker, UNTUNED, points, "im2col_gemm", other, set()) == \
        points.variations("im2col_gemm", other)


def test_the_polish_varies_each_parameter_even_one_the_model_rates_slow(points):
    best = points.default("direct")
    every = points.variations("direct", best)
    varied = [name for name in best if any(variation[name] != best[name] for variation in every)]
    slow = varied[-1]

    class RatesOneParameterSlow(StubRanker):
        """As StubRanker, but every variation of ``slow`` predicted slower than all the others."""

        def predict_ms(self, problem, family, configs):
            return super().predict_ms(problem, family, configs) + \
                numpy.array([1e6 if config[slow] != best[slow] else 0.0 for config in configs])

    ranker = RatesOneParameterSlow(points)
    by_speed = sorted(every, key=lambda config: ranker.predict_ms(UNTUNED, "direct", [config])[0])
    fastest_of_slow = next(config for config in by_speed if config[slow] != best[slow])
    assert fastest_of_slow not in by_speed[:transfer.VARIATIONS_PER_BEST]  # (the model's fastest alone miss it)
    chosen = transfer.best_variations(ranker, UNTUNED, points, "direct", best, set())
    assert fastest_of_slow in chosen
    assert {name for config in chosen for name in config if config[name] != best[name]} == set(varied)
    assert transfer.VARIATIONS_PER_BEST <= len(chosen) <= max(transfer.VARIATIONS_PER_BEST, len(varied))
    assert chosen == [config for config in by_speed if config in chosen]  # fastest predicted first


def test_the_polish_times_every_split_of_the_reduction(points):
    """The model misjudges which SPLIT_K pays, and the time is not monotonic in it: each other
    SPLIT_K of the best is timed, not only the model's fastest."""
    family, problem = "implicit_gemm", parse_spec("N=2,C=64,H=14,W=14,K=128,R=3,S=3,pad=1")  # (SPLIT_K 1-8)
    gemm = ValidPoints(enumerate_points(problem, (family,), H100, 1 << 30))
    best = next(config for config in gemm.points[family]
                if len({v["SPLIT_K"] for v in gemm.variations(family, config)} - {config["SPLIT_K"]}) >= 3)
    splits = {v["SPLIT_K"] for v in gemm.variations(family, best)} - {best["SPLIT_K"]}

    class RatesSplitsSlow:
        """Every variation that changes SPLIT_K predicted slower than all others, larger splits slower."""
        families = (family,)
        problems = transfer.MIN_PROBLEMS

        def predict_ms(self, problem, family, configs):
            return numpy.array([1e6 * c["SPLIT_K"] if c["SPLIT_K"] != best["SPLIT_K"] else float(i)
                                for i, c in enumerate(configs)])

    chosen = transfer.best_variations(RatesSplitsSlow(), problem, gemm, family, best, set())
    assert {config["SPLIT_K"] for config in chosen} - {best["SPLIT_K"]} == splits
    keys = [config_key(family, config) for config in chosen]
    assert len(set(keys)) == len(keys)


def transfer_trials(storage, problem):
    study = optuna.load_study(study_name=study_name(problem, FAKE_IDENTITY.gpu_name, FAMILIES), storage=storage)
    return [(record, study.trials[record.number].user_attrs.get("origin", "")) for record in read_trials(study)]


def test_a_transfer_study_times_its_start_then_polishes_its_best_and_asks_the_sampler_nothing(history, trusting):
    budget = Budget(trials=160, patience=40)
    tuner = Tuner(FakeBackend(), SearchSettings(FAMILIES, budget, seed=3, search=SearchOptions(transfer=True)),
                  storage=history)
    outcome = tuner.tune_problem(NamedProblem("new", UNTUNED))
    assert outcome.search == "transfer" and outcome.stop_reason.startswith("transfer: ")
    trials = transfer_trials(history, UNTUNED)
    assert all(origin for _, origin in trials)  # (every one queued: none is a sampler's proposal)
    assert not any(record.state == TrialState.WAITING for record, _ in trials)
    polish = [record.number for record, origin in trials if origin.startswith("a variation")]
    first_picks = [record.number for record, origin in trials if not origin.startswith(("a variation", "predicted 2",
                                                                                       "predicted 3"))]
    more = [record.number for record, origin in trials if origin.startswith(("predicted 2", "predicted 3"))]
    assert polish and more and max(first_picks) < min(polish + more)  # (the further picks with the first polish)
    # The first polish waited for the start's results: it varies the fastest of them.
    first_polished = next(origin for _, origin in trials if origin.startswith("a variation"))
    fastest_start = min((record for record, _ in trials if record.number in first_picks and record.value is not None),
                        key=lambda record: record.value)
    assert f"(trial {fastest_start.number})" in first_polished
    parameters = max(len(record.config) for record, _ in trials)  # (of a family polished, at most)
    assert len(polish) <= transfer.POLISHED_BESTS * max(transfer.VARIATIONS_PER_BEST, parameters)
    assert outcome.trials_run == len(trials) < budget.patience
    # The fake's best is found as a full study finds it.
    full = Tuner(FakeBackend(), SearchSettings(FAMILIES, budget, seed=3, search=SearchOptions(transfer=False)),
                 storage=tune_history(str(history_path(history)) + ".full")).tune_problem(NamedProblem("new", UNTUNED))
    assert full.search == "full" and full.trials_run > 2 * outcome.trials_run
    assert outcome.time_ms == pytest.approx(full.time_ms, rel=0.02)


def test_a_study_begun_full_becomes_a_transfer_once_the_history_is_enough(history, monkeypatch):
    """(A first tune from empty storage: its first studies begin full; the model counts a problem once
    its study has timed candidates, this study's own included.)"""
    from autoconv.search import full_study

    monkeypatch.setattr(transfer, "MIN_PROBLEMS", len(TRAINED) + 1)  # (the history's problems and this one)
    monkeypatch.setattr(full_study, "TRANSFER_CHECK_S", 0.0)
    budget = Budget(trials=160, patience=40)
    outcome = Tuner(FakeBackend(), SearchSettings(FAMILIES, budget, seed=3, search=SearchOptions(transfer=True)),
                    storage=history).tune_problem(NamedProblem("new", UNTUNED))
    assert outcome.search == "full, then transfer" and outcome.stop_reason.startswith("transfer: ")
    trials = transfer_trials(history, UNTUNED)
    assert any(origin.startswith("predicted 1") for _, origin in trials)  # (the model's picks, queued then)
    assert any(origin.startswith("a variation of the best") for _, origin in trials)  # (and the transfer's polish)
    assert not any(record.state == TrialState.WAITING for record, _ in trials)
    # With a history never enough, the same study runs full to its patience, for the same best.
    monkeypatch.setattr(transfer, "MIN_PROBLEMS", 1000)
    full = Tuner(FakeBackend(), SearchSettings(FAMILIES, budget, seed=3, search=SearchOptions(transfer=True)),
                 storage=tune_history(str(history_path(history)) + ".full")).tune_problem(NamedProblem("new", UNTUNED))
    assert full.search == "full" and full.trials_run > outcome.trials_run + budget.patience // 2
    assert outcome.time_ms == pytest.approx(full.time_ms, rel=0.02)


def test_a_full_study_no_history_models_does_not_refit_the_model_as_it_runs(history, trusting, monkeypatch):
    """(A study of families the history never timed: the history is trusted, but not for it.)"""
    from autoconv.search import full_study

    monkeypatch.setattr(full_study, "TRANSFER_CHECK_S", 0.0)
    fits = []

    from autoconv.search import warm_start

    class CountedRanker(warm_start.Ranker):
        def __init__(self, *args, **kwargs):
            fits.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(warm_start, "Ranker", CountedRanker)
    outcome = Tuner(FakeBackend(), SearchSettings(("implicit_gemm",), Budget(trials=40, patience=15), seed=3,
                                                  search=SearchOptions(transfer=True)),
                    storage=history).tune_problem(NamedProblem("new", UNTUNED))
    assert outcome.search == "full" and outcome.trials_run > 15
    assert len(fits) == 1  # (the start's: it looked at the history at every ask, and found too few of its families)


def history_path(storage) -> str:
    """The journal file behind an Optuna journal storage (:func:`tune_history`'s)."""
    return storage._backend._file_path


def test_without_a_trusted_history_a_study_is_full_and_says_why_once(tmp_path, history):
    notes = []

    class Notes(Reporter):
        def note(self, text):
            notes.append(text)

    tuner = Tuner(FakeBackend(), SearchSettings(FAMILIES, Budget(trials=30, patience=10), seed=3,
                                                search=SearchOptions(transfer=True)),
                  storage=history, reporter=Notes())
    outcome = tuner.tune_problem(NamedProblem("new", UNTUNED))
    assert outcome.search == "full" and "transfer" not in outcome.stop_reason
    said = [note for note in notes if "a full study, not a transfer" in note]
    assert len(said) == 1 and f"fewer than the {transfer.MIN_PROBLEMS} tuned problems" in said[0]
    other = parse_spec("N=3,C=20,H=19,W=15,K=28,R=3,S=3,pad=1")  # (neither trained nor UNTUNED)
    assert tuner.tune_problem(NamedProblem("other", other)).search == "full"
    assert [note for note in notes if "a full study, not a transfer" in note] == said  # (the same reason: not again)


def test_a_run_by_transfer_starts_from_the_neighbours_winners_and_caches_verified_winners(tmp_path, history,
                                                                                         trusting):
    with WinnerCache(tmp_path / "cache.sqlite") as cache:
        full_studies = SearchSettings(FAMILIES, Budget(trials=60), seed=3, search=SearchOptions(transfer=False))
        Tuner(FakeBackend(), full_studies, storage=history,
              cache=cache).tune([NamedProblem("trained0", TRAINED[0])])  # (cached: the history's winner)
        tuner = Tuner(FakeBackend(), SearchSettings(FAMILIES, Budget(trials=160, patience=40), seed=3,
                                                    search=SearchOptions(transfer=True)),
                      storage=history, cache=cache)
        outcomes = tuner.tune([NamedProblem("new", UNTUNED), NamedProblem("another", ANOTHER)])
        assert [outcome.search for outcome in outcomes] == ["transfer", "transfer"]
        assert all(cache.get(tuner.cache_key(problem)) is not None for problem in (UNTUNED, ANOTHER))
    origins = [origin for _, origin in transfer_trials(history, ANOTHER)]
    assert origins[0].startswith("winner of ")  # (the neighbours' winners first, as a full study's)


def test_a_transfer_study_tries_the_winner_of_a_neighbour_tuned_after_it_ended(tmp_path, history, trusting):
    """At the end of a run (:meth:`Tuner._revisit`), as a full study whose patience ended it."""
    with WinnerCache(tmp_path / "cache.sqlite") as cache:
        tuner = Tuner(FakeBackend(), SearchSettings(FAMILIES, Budget(trials=160, patience=40), seed=3,
                                                    search=SearchOptions(transfer=True)),
                      storage=history, cache=cache)
        item = NamedProblem("new", UNTUNED)
        (outcome,) = tuner.tune([item])
        entry = cache.get(tuner.cache_key(UNTUNED))
        tried = {record.key for record, _ in transfer_trials(history, UNTUNED)}
        points = ValidPoints(enumerate_points(UNTUNED, FAMILIES, H100, 1 << 30))
        winner = next(point for point in points.points["direct"] if config_key("direct", point) not in tried)
        tuner.starts.neighbours = lambda problem: [  # type: ignore[method-assign]
            Neighbour(TRAINED[0], dataclasses.replace(entry, family="direct", config=dict(winner)), 0.5)]
        # The model has changed since (refitted with the study's trials): its picks now are others.
        tuner.starts.history_model = lambda problem: StubRanker(points)  # type: ignore[method-assign]
        assert {config_key(family, config) for family, config, _ in transfer.starts(StubRanker(points), UNTUNED,
                                                                                     points)} - tried
        outcomes = {0: outcome}
        tuner._revisit([(0, item, points)], outcomes)
    again = [(record, origin) for record, origin in transfer_trials(history, UNTUNED) if record.key not in tried]
    assert again[0][1].startswith("winner of ") and again[0][0].key == config_key("direct", winner)
    assert again[0][0].state == TrialState.COMPLETE
    # (and no picks of the model, refitted with the study's own trials since its start)
    assert not [origin for _, origin in again if origin.startswith("predicted")]
    assert outcomes[0].trials_run == outcome.trials_run + len(again)
