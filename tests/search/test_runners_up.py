"""The other tiles a study times at every split of the reduction (:mod:`autoconv.search.runners_up`):
which trials are runners-up, their split variations, and full and transfer studies on the fake
backend that reach a configuration two parameters from their best only so."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState

from autoconv.backends.base import Status
from autoconv.backends.fake import FakeBackend
from autoconv.kernels.limits import H100
from autoconv.problems.config import Budget
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.search import runners_up, transfer
from autoconv.search.points import ValidPoints, config_key, enumerate_points
from autoconv.search.study import TrialRecord
from autoconv.search.tuner import Tuner
from tests.search.stub_ranker import OrderRanker

FAMILY = "implicit_gemm"  # (tiles BM x BN, and SPLIT_K 1-8 on this problem)
PROBLEM = NamedProblem("small", parse_spec("N=2,C=64,H=14,W=14,K=128,R=3,S=3,pad=1"))


@pytest.fixture(scope="module")
def points():
    return ValidPoints(enumerate_points(PROBLEM.problem, (FAMILY,), H100, 1 << 30))


def record(number, ms, family=FAMILY, **config):
    return TrialRecord(number=number, state=TrialState.COMPLETE, family=family, config=dict(config),
                       status=Status.OK, value=ms)


def test_the_runners_up_are_the_fastest_of_the_next_tiles_of_the_best_family_within_the_margin(monkeypatch):
    best = record(0, 1.0, BM=64, BN=64, SPLIT_K=1)
    fastest_first = [best,
                     record(1, 1.01, BM=64, BN=64, SPLIT_K=2),                   # the best's tile
                     record(2, 1.02, family="other", BM=64, BN=128, SPLIT_K=1),  # another family
                     record(3, 1.04, BM=64, BN=128, SPLIT_K=6),
                     record(4, 1.05, BM=64, BN=128, SPLIT_K=1),                  # a tile already taken
                     record(5, 1.07, BM=128, BN=64, SPLIT_K=1),
                     record(6, 1.08, BM=128, BN=128, SPLIT_K=1),                 # a third tile
                     record(7, 1.2, BM=32, BN=32, SPLIT_K=1)]                    # beyond the margin
    assert [r.number for r in runners_up.tile_runners_up(fastest_first)] == [3, 5]
    monkeypatch.setattr(runners_up, "RUNNER_UP_TILES", 10)
    assert [r.number for r in runners_up.tile_runners_up(fastest_first)] == [3, 5, 6]
    assert runners_up.tile_runners_up(fastest_first[:1]) == [] and runners_up.tile_runners_up([]) == []
    # A family without splits of the reduction, or without block tiles, has none.
    assert runners_up.tile_runners_up([record(0, 1.0, BM=64, BN=64), record(1, 1.01, BM=128, BN=64)]) == []
    assert runners_up.tile_runners_up([record(0, 1.0, SPLIT_K=1, TILE=8), record(1, 1.01, SPLIT_K=2, TILE=4)]) == []


def test_the_split_variations_change_only_the_split_where_that_is_valid(points):
    config = next(c for c in points.points[FAMILY] if c["SPLIT_K"] == 1 and c["BN"] == 128)
    splits = runners_up.split_variations(points, FAMILY, config)
    assert {s["SPLIT_K"] for s in splits} == {v["SPLIT_K"] for v in points.variations(FAMILY, config)} - {1}
    assert len({s["SPLIT_K"] for s in splits}) == len(splits) >= 3
    assert all(config_key(FAMILY, s) in {config_key(FAMILY, c) for c in points.points[FAMILY]} for s in splits)
    assert any({k: v for k, v in s.items() if k != "SPLIT_K"} == {k: v for k, v in config.items() if k != "SPLIT_K"}
               for s in splits)


def two_steps_away(points, best, runner_up=None):
    """A runner-up (``runner_up``, or a variation of ``best`` with another tile and the same split)
    and a configuration faster than both, one of the runner-up's split variations that is not a
    variation of ``best`` (two parameters from it)."""
    near = {config_key(FAMILY, v) for v in points.variations(FAMILY, best)}
    runner_up = runner_up or next(v for v in points.variations(FAMILY, best)
                                  if runners_up.tile_of(v) != runners_up.tile_of(best)
                                  and v["SPLIT_K"] == best["SPLIT_K"])
    target = next(s for s in runners_up.split_variations(points, FAMILY, runner_up)
                  if config_key(FAMILY, s) not in near and s != best)
    return runner_up, target


def pocket(best, runner_up, target):
    """A fake backend: ``best`` 1 ms, ``runner_up`` 1.05 ms (within the margin), ``target`` 0.5 ms,
    every other configuration 2 ms: ``best`` survives all its one-parameter variations."""
    times = {config_key(FAMILY, best): 1.0, config_key(FAMILY, runner_up): 1.05, config_key(FAMILY, target): 0.5}

    class Pocket(FakeBackend):
        @staticmethod
        def synthetic_time_ms(plan):
            return times.get(config_key(plan.family, plan.config), 2.0)

    return Pocket()


@pytest.mark.parametrize("tiles", [runners_up.RUNNER_UP_TILES, 0])
def test_a_full_study_reaches_another_tiles_faster_split(points, monkeypatch, tiles):
    """The default (1 ms) survives its variations; the variation with another tile (1.05 ms) is
    faster at another split (0.5 ms). Without runners-up (0 tiles) the study ends at the default."""
    monkeypatch.setattr(runners_up, "RUNNER_UP_TILES", tiles)
    best = points.default(FAMILY)
    runner_up, target = two_steps_away(points, best)
    tuner = Tuner(pocket(best, runner_up, target), storage=optuna.storages.InMemoryStorage(), families=(FAMILY,),
                  budget=Budget(trials=400, patience=3), seed=3, pipeline_depth=1)
    outcome = tuner.tune_problem(PROBLEM, points)
    assert outcome.config == (target if tiles else best)
    assert outcome.trials_run < 400


def split_blind_ranker(points, start):
    """A model of ``FAMILY``: ``start`` predicted fastest, then the configurations in enumeration
    order (so it rates neither the runner-up nor the target above the rest)."""
    order = {config_key(FAMILY, c): 1.0 + i for i, c in enumerate(points.points[FAMILY])}
    return OrderRanker((FAMILY,), order | {config_key(FAMILY, start): 0.0})


@pytest.mark.parametrize("tiles", [runners_up.RUNNER_UP_TILES, 0])
def test_a_transfer_study_reaches_another_tiles_faster_split(points, monkeypatch, tiles):
    """As above, in a transfer study: its start is the model's pick, its polish the model's variations
    of it (the runner-up among them); the target comes from the runner-up's splits only."""
    monkeypatch.setattr(runners_up, "RUNNER_UP_TILES", tiles)
    start = points.default(FAMILY)
    ranker = split_blind_ranker(points, start)
    polished = transfer.best_variations(ranker, PROBLEM.problem, points, FAMILY, start, set())
    runner_up, target = two_steps_away(points, start, next(
        v for v in polished if runners_up.tile_of(v) != runners_up.tile_of(start) and v["SPLIT_K"] == start["SPLIT_K"]))
    picks = {config_key(FAMILY, c) for _, c, _ in ranker.best_valid(PROBLEM.problem, points, transfer.PICKS_PER_FAMILY)}
    assert config_key(FAMILY, target) not in picks | {config_key(FAMILY, v) for v in polished}
    monkeypatch.setattr(Tuner, "_history_model", lambda self, problem: ranker)
    tuner = Tuner(pocket(start, runner_up, target), storage=optuna.storages.InMemoryStorage(), families=(FAMILY,),
                  budget=Budget(trials=400, patience=40), seed=3, transfer=True)
    outcome = tuner.tune_problem(PROBLEM, points)
    assert outcome.search == "transfer" and outcome.config == (target if tiles else start)
    origins = [t.user_attrs.get("origin", "") for t in optuna.load_study(
        study_name=outcome.study_name, storage=tuner.storage).trials]
    assert any(origin.startswith("another split of a runner-up tile") for origin in origins) == bool(tiles)
