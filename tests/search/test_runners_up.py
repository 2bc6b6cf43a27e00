"""The other tiles a study times at every split of the reduction (:mod:`autoconv.search.runners_up`):
which trials are runners-up, the grid that tells tiles apart, their split variations, and full and
transfer studies on the fake backend (a float32 NCHW problem of implicit_gemm, a bf16 NHWC one of
implicit_gemm_wgmma_tma) that reach a configuration two parameters from their best only so."""

from __future__ import annotations

import dataclasses
import functools
import math

import optuna
import pytest
from optuna.trial import TrialState

from autoconv.backends.base import Status
from autoconv.backends.fake import FakeBackend
from autoconv.config.budget import Budget
from autoconv.kernels.families import all_families, get_family
from autoconv.kernels.limits import H100
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.search import runners_up, transfer
from autoconv.search.options import SearchOptions, SearchSettings
from autoconv.search.points import ValidPoints, config_key, enumerate_points
from autoconv.search.study import TrialRecord
from autoconv.search.tuner import Tuner
from autoconv.search.warm_start import WarmStart
from tests.search.stub_ranker import OrderRanker

WORKSPACE = 1 << 30
FAMILY = "implicit_gemm"  # (tiles BM x BN, and SPLIT_K 1-8 on this problem)
PROBLEM = NamedProblem("small", parse_spec("N=2,C=64,H=14,W=14,K=128,R=3,S=3,pad=1"))
# implicit_gemm_wgmma_tma's tile has no BM: 64 rows per consumer warpgroup, 64 in all for pingpong
TMA_FAMILY = "implicit_gemm_wgmma_tma"
TMA_PROBLEM = NamedProblem("small_bf16",
                           parse_spec("N=2,C=64,H=14,W=14,K=128,R=3,S=3,pad=1,layout=NHWC,precision=bf16"))
CASES = {FAMILY: PROBLEM, TMA_FAMILY: TMA_PROBLEM}


@functools.cache
def valid_points(family):
    """The valid points of ``family`` for its problem in :data:`CASES`."""
    return ValidPoints(enumerate_points(CASES[family].problem, (family,), H100, WORKSPACE))


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    """(family, problem, its valid points) for each of :data:`CASES`."""
    return request.param, CASES[request.param], valid_points(request.param)


@pytest.fixture(scope="module")
def points():
    return valid_points(FAMILY)


def record(number, ms, family=FAMILY, **config):
    return TrialRecord(number=number, state=TrialState.COMPLETE, family=family, config=dict(config),
                       status=Status.OK, value=ms)


def block_tile(record):
    """A stand-in for the grid: the block tile, where the family splits the reduction."""
    return (record.config["BM"], record.config["BN"]) if "SPLIT_K" in record.config else None


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
    assert [r.number for r in runners_up.tile_runners_up(fastest_first, block_tile)] == [3, 5]
    monkeypatch.setattr(runners_up, "RUNNER_UP_TILES", 10)
    assert [r.number for r in runners_up.tile_runners_up(fastest_first, block_tile)] == [3, 5, 6]
    assert runners_up.tile_runners_up(fastest_first[:1], block_tile) == []
    assert runners_up.tile_runners_up([], block_tile) == []
    # A family without splits of the reduction has none.
    assert runners_up.tile_runners_up([record(0, 1.0, BM=64, BN=64), record(1, 1.01, BM=128, BN=64)], block_tile) == []


@pytest.mark.parametrize("family", [f.name for f in all_families() if runners_up.SPLIT in f.space.params])
def test_every_family_that_splits_the_reduction_derives_its_grid(family):
    """Else its runner-up tiles could not be told apart (:func:`runners_up.output_grid` would fail)."""
    assert set(runners_up.GRID) <= set(get_family(family).space.derived)


def test_a_family_without_a_split_of_the_reduction_has_no_grid():
    family = next(f for f in all_families() if runners_up.SPLIT not in f.space.params)
    config = family.space.default_config(PROBLEM.problem, H100, WORKSPACE)
    assert runners_up.output_grid(family.name, config, PROBLEM.problem, H100, WORKSPACE) is None


def test_the_grid_is_the_output_cut_into_tiles(points):
    gemm_m, gemm_n = 2 * 14 * 14, 128  # (output pixels, filters)
    for config in points.points[FAMILY][::37]:
        assert runners_up.output_grid(FAMILY, config, PROBLEM.problem, H100, WORKSPACE) == \
            (math.ceil(gemm_m / config["BM"]), math.ceil(gemm_n / config["BN"]))


def test_implicit_gemm_wgmma_tmas_grid_follows_its_consumers_schedule_and_operand_order():
    problem = parse_spec("N=8,C=64,H=28,W=28,K=256,R=3,S=3,pad=1,layout=NHWC,precision=bf16")
    pixels = 8 * 28 * 28
    config = dict(get_family(TMA_FAMILY).space.default, BN=128, CONSUMERS=2, SCHEDULE="cooperative", M_OPERAND="pixels")

    def grid(**changes):
        return runners_up.output_grid(TMA_FAMILY, config | changes, problem, H100, WORKSPACE)

    assert grid() == (math.ceil(pixels / 128), 2)                        # 2 consumers: 128 pixels a tile
    assert grid(CONSUMERS=3) == (math.ceil(pixels / 192), 2)
    assert grid(SCHEDULE="pingpong") == (math.ceil(pixels / 64), 2)      # a tile per consumer: 64 pixels
    assert grid(M_OPERAND="filters") == (math.ceil(pixels / 128), 2)     # BM filters x BN pixels
    assert grid(M_OPERAND="filters", BN=64) == (math.ceil(pixels / 64), 2)


def test_the_split_variations_change_only_the_split_where_that_is_valid(points):
    config = next(c for c in points.points[FAMILY] if c["SPLIT_K"] == 1 and c["BN"] == 128)
    found = runners_up.partner_variations(points, FAMILY, PROBLEM.problem.precision, config)
    assert {changed for changed, _ in found} == {"SPLIT_K"}  # (implicit_gemm: the split alone)
    splits = [variation for _, variation in found]
    assert {s["SPLIT_K"] for s in splits} == {v["SPLIT_K"] for v in points.variations(FAMILY, config)} - {1}
    assert len({s["SPLIT_K"] for s in splits}) == len(splits) >= 3
    assert all(config_key(FAMILY, s) in {config_key(FAMILY, c) for c in points.points[FAMILY]} for s in splits)
    assert any({k: v for k, v in s.items() if k != "SPLIT_K"} == {k: v for k, v in config.items() if k != "SPLIT_K"}
               for s in splits)


def test_implicit_gemm_wgmma_tmas_runner_ups_get_every_split_and_every_stages():
    points = valid_points(TMA_FAMILY)
    config = points.default(TMA_FAMILY)
    found = runners_up.partner_variations(points, TMA_FAMILY, TMA_PROBLEM.problem.precision, config)
    for partner in ("SPLIT_K", "STAGES"):
        changed = [variation for name, variation in found if name == partner]
        others = {v[partner] for v in points.variations(TMA_FAMILY, config)} - {config[partner]}
        assert {v[partner] for v in changed} == others
        assert len(changed) >= 2
    assert {name for name, _ in found} == {"SPLIT_K", "STAGES"}


def test_implicit_gemm_wgmma_tma_varies_the_stages_of_16_bit_precisions_alone():
    """In TF32 its runner-up tiles get every split alone (the stages cost more candidates there and
    paid nothing measured); fp16 runs bf16's kernel."""
    tf32 = dataclasses.replace(TMA_PROBLEM.problem, precision="tf32", dtype="float32")
    points = ValidPoints(enumerate_points(tf32, (TMA_FAMILY,), H100, WORKSPACE))
    config = points.default(TMA_FAMILY)
    assert {v["STAGES"] for v in points.variations(TMA_FAMILY, config)} - {config["STAGES"]}  # (there are others)
    assert {name for name, _ in runners_up.partner_variations(points, TMA_FAMILY, "tf32", config)} == {"SPLIT_K"}
    assert runners_up.partners(TMA_FAMILY, "fp16") == runners_up.partners(TMA_FAMILY, "bf16") == ("SPLIT_K", "STAGES")
    assert runners_up.partners(TMA_FAMILY, "tf32") == runners_up.partners(FAMILY, "fp32") == ("SPLIT_K",)


def grid(case, config):
    family, problem, _ = case
    return runners_up.output_grid(family, config, problem.problem, H100, WORKSPACE)


def two_steps_away(case, best, runner_up=None, partner="SPLIT_K"):
    """A runner-up (``runner_up``, or a variation of ``best`` with another grid and the same
    ``partner``) and a configuration faster than both, one of the runner-up's variations in
    ``partner`` that is not a variation of ``best`` (two parameters from it)."""
    family, problem, points = case
    near = {config_key(family, v) for v in points.variations(family, best)}
    runner_up = runner_up or next(v for v in points.variations(family, best)
                                  if grid(case, v) != grid(case, best) and v[partner] == best[partner])
    variations = runners_up.partner_variations(points, family, problem.problem.precision, runner_up)
    target = next(v for changed, v in variations
                  if changed == partner and config_key(family, v) not in near and v != best)
    return runner_up, target


def pocket(family, best, runner_up, target):
    """A fake backend: ``best`` 1 ms, ``runner_up`` 1.05 ms (within the margin), ``target`` 0.5 ms,
    every other configuration 2 ms: ``best`` survives all its one-parameter variations."""
    times = {config_key(family, best): 1.0, config_key(family, runner_up): 1.05, config_key(family, target): 0.5}

    class Pocket(FakeBackend):
        @staticmethod
        def synthetic_time_ms(plan):
            return times.get(config_key(plan.family, plan.config), 2.0)

    return Pocket()


def case_partners(case):
    """The parameters whose other values a runner-up tile of the case's family must be timed at."""
    return {FAMILY: ("SPLIT_K",), TMA_FAMILY: ("SPLIT_K", "STAGES")}[case[0]]


@pytest.mark.parametrize("tiles", [runners_up.RUNNER_UP_TILES, 0])
def test_a_full_study_reaches_another_tiles_faster_split(case, monkeypatch, tiles):
    """The default (1 ms) survives its variations; the variation with another tile (1.05 ms) is
    faster at another split, or (implicit_gemm_wgmma_tma) other stages (0.5 ms). Without runners-up
    (0 tiles) the study ends at the default."""
    for partner in case_partners(case):
        full_study_reaches(case, monkeypatch, tiles, partner)


def full_study_reaches(case, monkeypatch, tiles, partner):
    family, problem, points = case
    monkeypatch.setattr(runners_up, "RUNNER_UP_TILES", tiles)
    best = points.default(family)
    runner_up, target = two_steps_away(case, best, partner=partner)
    tuner = Tuner(pocket(family, best, runner_up, target),
                  SearchSettings((family,), Budget(trials=400, patience=3), seed=3,
                                 search=SearchOptions(pipeline_depth=1)),
                  storage=optuna.storages.InMemoryStorage())
    outcome = tuner.tune_problem(problem, points)
    assert outcome.config == (target if tiles else best)
    assert outcome.trials_run < 400


def split_blind_ranker(family, points, start):
    """A model of ``family``: ``start`` predicted fastest, then the configurations in enumeration
    order (so it rates neither the runner-up nor the target above the rest)."""
    order = {config_key(family, c): 1.0 + i for i, c in enumerate(points.points[family])}
    return OrderRanker((family,), order | {config_key(family, start): 0.0})


@pytest.mark.parametrize("tiles", [runners_up.RUNNER_UP_TILES, 0])
def test_a_transfer_study_reaches_another_tiles_faster_split(case, monkeypatch, tiles):
    """As above, in a transfer study: its start is the model's pick, its polish the model's variations
    of it (the runner-up among them); the target comes from the runner-up's splits (or stages) only."""
    for partner in case_partners(case):
        transfer_study_reaches(case, monkeypatch, tiles, partner)


def transfer_study_reaches(case, monkeypatch, tiles, partner):
    family, problem, points = case
    monkeypatch.setattr(runners_up, "RUNNER_UP_TILES", tiles)
    start = points.default(family)
    ranker = split_blind_ranker(family, points, start)
    polished = transfer.best_variations(ranker, problem.problem, points, family, start, set())
    runner_up, target = two_steps_away(case, start, next(
        v for v in polished if grid(case, v) != grid(case, start) and v[partner] == start[partner]), partner)
    picks = {config_key(family, c) for _, c, _ in ranker.best_valid(problem.problem, points, transfer.PICKS_PER_FAMILY)}
    assert config_key(family, target) not in picks | {config_key(family, v) for v in polished}
    monkeypatch.setattr(WarmStart, "history_model", lambda self, problem: ranker)
    tuner = Tuner(pocket(family, start, runner_up, target),
                  SearchSettings((family,), Budget(trials=400, patience=40), seed=3,
                                 search=SearchOptions(transfer=True)),
                  storage=optuna.storages.InMemoryStorage())
    outcome = tuner.tune_problem(problem, points)
    assert outcome.search == "transfer" and outcome.config == (target if tiles else start)
    origins = [t.user_attrs.get("origin", "") for t in optuna.load_study(
        study_name=outcome.study_name, storage=tuner.storage).trials]
    assert any(origin.startswith(f"another {partner} of a runner-up tile") for origin in origins) == bool(tiles)
