"""The history's model in front of the compiler (:mod:`autoconv.search.prefilter`): which
proposals it skips, when it acts, and a study tuned with it on the fake backend."""

from __future__ import annotations

import optuna
import pytest

from autoconv.backends.base import Status
from autoconv.backends.fake import FAKE_IDENTITY, FakeBackend
from autoconv.config.budget import Budget
from autoconv.kernels.limits import H100
from autoconv.problems.models import NamedProblem
from autoconv.search.options import SearchOptions, SearchSettings
from autoconv.search.points import ValidPoints, config_key, enumerate_points
from autoconv.search.prefilter import BEST_MARGIN, KEEP_FRACTION, MIN_CHECKED, PreFilter
from autoconv.search.study import EVALUATED, read_trials, study_name
from autoconv.search.tuner import Tuner
from tests.search.fake_history import FAMILIES, UNTUNED, tune_history

PROBLEM = UNTUNED


@pytest.fixture(scope="module")
def points():
    return ValidPoints(enumerate_points(PROBLEM, FAMILIES, H100, 1 << 30))


class StubRanker:
    """A model of ``direct`` only, predicting each config's position in the enumeration (ms)."""

    families = ("direct",)

    def __init__(self, points):
        self.order = {config_key("direct", c): i + 1.0 for i, c in enumerate(points.points["direct"])}

    def predict_ms(self, problem, family, configs):
        return [self.order[config_key(family, c)] for c in configs]


def keys(points, family="direct"):
    return [config_key(family, c) for c in points.points[family]]


def test_fractions_rank_a_candidate_among_the_modelled_points(points):
    prefilter = PreFilter(StubRanker(points), PROBLEM, points)
    direct = keys(points)
    assert prefilter.modelled == len(direct)
    assert prefilter.fraction(direct[0]) == 0.0
    fractions = [prefilter.fraction(key) for key in direct]
    assert fractions == sorted(fractions) and fractions[-1] > 0.99
    # With more valid points than it samples, the ranks are estimated from the sample.
    middle = prefilter.fraction(direct[len(direct) // 2])
    assert middle == pytest.approx(0.5, abs=0.05)
    assert prefilter.fraction(keys(points, "im2col_gemm")[0]) is None
    assert prefilter.predicted_ms(direct[3]) == 4.0


def test_it_acts_only_once_the_model_ranks_the_studys_own_candidates_well(points):
    prefilter = PreFilter(StubRanker(points), PROBLEM, points)
    direct = keys(points)
    slowest = direct[-1]
    assert prefilter.verdict(slowest, None) is None
    # Too few timed candidates: not yet.
    prefilter.observe({key: float(i) for i, key in enumerate(direct[:MIN_CHECKED - 1])})
    assert not prefilter.active and prefilter.verdict(slowest, None) is None
    # Enough, but measured in the opposite order to the prediction: never.
    prefilter.observe({key: -float(i) for i, key in enumerate(direct[:MIN_CHECKED])})
    assert prefilter.rank_correlation == pytest.approx(-1.0) and not prefilter.active
    assert prefilter.verdict(slowest, None) is None
    # Enough, in the predicted order: it acts.
    prefilter.observe({key: float(i) for i, key in enumerate(direct[:MIN_CHECKED])})
    assert prefilter.active and prefilter.rank_correlation == pytest.approx(1.0)
    assert "predicted slow" in prefilter.verdict(slowest, None)
    assert prefilter.verdict(direct[0], None) is None
    # A family without a model is never skipped.
    assert prefilter.verdict(keys(points, "im2col_gemm")[-1], None) is None


def test_the_kept_share_widens_when_the_model_ranks_the_best_itself_slow(points):
    prefilter = PreFilter(StubRanker(points), PROBLEM, points)
    direct = keys(points)
    prefilter.observe({key: float(i) for i, key in enumerate(direct[:MIN_CHECKED])})
    assert prefilter.threshold(None) == KEEP_FRACTION == prefilter.threshold(direct[0])
    best = direct[len(direct) // 5]  # ranked near 20% by the model
    assert prefilter.threshold(best) == pytest.approx(BEST_MARGIN * prefilter.fraction(best))
    skipped = [key for key in direct if prefilter.verdict(key, best) is not None]
    assert skipped == [key for key in direct if prefilter.fraction(key) > prefilter.threshold(best)]
    assert 0 < len(skipped) < sum(prefilter.verdict(key, None) is not None for key in direct)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A journal with the fake-timed studies of two other problems (the model's history)."""
    journal = str(tmp_path_factory.mktemp("history") / "studies.journal")
    tune_history(journal)
    return journal


def tune(history, tmp_path, name, prefilter):
    """PROBLEM tuned on a copy of ``history``: (outcome, backend, the study's trial records)."""
    journal = tmp_path / f"{name}.journal"
    journal.write_bytes(open(history, "rb").read())
    backend = FakeBackend()
    tuner = Tuner(backend, SearchSettings(FAMILIES, Budget(trials=120, patience=30), seed=5,
                                          search=SearchOptions(prefilter=prefilter, transfer=False)),
                  storage=str(journal))
    outcome = tuner.tune_problem(NamedProblem("p", PROBLEM))
    study = optuna.load_study(study_name=study_name(PROBLEM, FAKE_IDENTITY.gpu_name, FAMILIES),
                              storage=tuner.storage)
    return outcome, backend, study


def test_a_study_with_history_compiles_fewer_candidates_for_as_good_a_winner(history, tmp_path):
    plain, plain_backend, _ = tune(history, tmp_path, "plain", prefilter=False)
    filtered, backend, study = tune(history, tmp_path, "filtered", prefilter=True)
    assert plain.predicted_slow == 0 and filtered.predicted_slow > 0
    skipped = [t for t in study.trials if t.user_attrs.get("status") == Status.PREDICTED_SLOW.value]
    assert len(skipped) == filtered.predicted_slow
    # Sampler proposals only (enqueued candidates are never skipped), each skipped uncompiled:
    # the proposal itself, or, for one that was invalid or a repeat, its nearest valid point.
    assert all(t.state == optuna.trial.TrialState.PRUNED and "predicted slow" in t.user_attrs["reason"]
               and "origin" not in t.user_attrs for t in skipped)
    # A skipped proposal is not compiled by the search's proposals. (It may be later as a queued
    # candidate: a variation of the best, which the filter never judges.)
    records = {r.number: r for r in read_trials(study)}
    direct_skips = {records[t.number].key for t in skipped if "nearest valid point" not in t.user_attrs["reason"]}
    proposed = {records[t.number].key for t in study.trials
                if t.user_attrs.get("status") in EVALUATED and "origin" not in t.user_attrs}
    assert direct_skips and not direct_skips & proposed
    # Fewer compilations, the same winner within 2% (the fake landscape is one the model can learn).
    assert len(backend.evaluated) < len(plain_backend.evaluated)
    assert filtered.time_ms <= plain.time_ms * 1.02


def test_no_history_no_filter(tmp_path):
    backend = FakeBackend()
    tuner = Tuner(backend, SearchSettings(FAMILIES, Budget(trials=40, patience=20), seed=5,
                                          search=SearchOptions(prefilter=True)),
                  storage=str(tmp_path / "empty.journal"))
    assert tuner.tune_problem(NamedProblem("p", PROBLEM)).predicted_slow == 0



def test_a_filter_that_calls_everything_slow_still_lets_the_search_go_on(history, tmp_path, monkeypatch):
    """At most MAX_SKIPS_PER_CANDIDATE skips per candidate asked for: a model (or a sampler)
    that finds nothing worth compiling must not end the study in an error."""
    from autoconv.search import full_study, proposals

    class AlwaysSlow:
        def __init__(self, *args, **kwargs):
            self.skipped = set()

        def observe(self, timed):
            pass

        def verdict(self, key, best_key):
            return "predicted slow (a test's model)"

    monkeypatch.setattr(full_study, "PreFilter", AlwaysSlow)
    outcome, backend, _ = tune(history, tmp_path, "always", prefilter=True)
    assert outcome.time_ms is not None and outcome.predicted_slow > 0
    assert outcome.predicted_slow <= proposals.MAX_SKIPS_PER_CANDIDATE * (len(backend.evaluated) + 1)
    assert "patience" in outcome.stop_reason or "no improvement" in outcome.stop_reason
