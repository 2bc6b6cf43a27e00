"""The tuning history's model (:mod:`autoconv.search.ranker`), on the fake backend: trained on
the studies of two problems, it ranks a third problem's valid points, and `--rank K` makes a
study try its K best right after the warm start."""

from __future__ import annotations

import math
import statistics
from types import SimpleNamespace

import numpy
import optuna
import pytest

from autoconv.backends.fake import FAKE_IDENTITY, FakeBackend
from autoconv.config.budget import Budget
from autoconv.kernels.families import FAMILY_NAMES, get_family
from autoconv.kernels.limits import H100
from autoconv.kernels.space import PointTable
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.search.options import SearchOptions, SearchSettings
from autoconv.search.points import ValidPoints, enumerate_points
from autoconv.search.ranker import MIN_SAMPLES, WORK_TILES, Ranker, _design, history_samples, table_rows, work_rows
from autoconv.search.study import parse_study_name, study_name
from autoconv.search.tuner import Tuner
from tests.helpers import family_spec
from tests.search.fake_history import FAMILIES, TRAINED, UNTUNED, tune_history


def synthetic_ms(problem, family, config) -> float:
    """The fake backend's time for a configuration (no plan needed)."""
    return FakeBackend.synthetic_time_ms(SimpleNamespace(problem=problem, family=family, config=config, constants={}))


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A journal with the fake-timed studies of the two TRAINED problems."""
    return tune_history(str(tmp_path_factory.mktemp("history") / "studies.journal"))


def test_a_configs_features_are_its_choices_one_hot_then_the_log2_of_its_numbers():
    params = get_family("implicit_gemm_wgmma").space.params
    configs = [dict(get_family("implicit_gemm_wgmma").space.default),
               {name: choices[-1] for name, choices in params.items()}]
    rows = table_rows(PointTable(params, configs))
    for row, config in zip(rows, configs):
        one_hot = [float(config[name] == choice) for name, choices in params.items() for choice in choices]
        logs = [float(numpy.log2(value)) if type(value) in (int, float) and value > 0 else 0.0
                for value in (config[name] for name in params)]
        assert row.tolist() == pytest.approx(one_hot + logs)
    assert any(isinstance(choice, str) for choices in params.values() for choice in choices)  # (and strings)


#: Families whose main kernel may run a persistent grid, sized to the SMs.
PERSISTENT = ("implicit_gemm_wgmma_f16", "implicit_gemm_wgmma_tma")


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_a_configurations_work_tiles_are_its_main_kernels_blocks_or_a_persistent_grids_tiles(family):
    """WORK_TILES names, for every GEMM family, the values whose product is the number of blocks of
    its main kernel (the one the plan is named after), or of the tiles its persistent grid takes in turn."""
    assert set(WORK_TILES) == set(FAMILY_NAMES) - {"direct"}  # (see WORK_TILES)
    if family not in WORK_TILES:
        return
    problem = parse_spec(family_spec(family, "N=2,C=24,H=15,W=13,K=40,R=3,S=3,pad=1"))
    found = get_family(family)
    configs = found.space.points(problem, H100, 1 << 30)[::11]
    rows = work_rows(problem, family, PointTable(found.space.params, configs).indices, H100)
    for (log_tiles, _), config in zip(rows, configs):
        tiles = round(2 ** log_tiles * H100.sm_count)
        plan = found.plan(problem, config, H100, 1 << 30)
        main = next(launch for launch in plan.launches if launch.kernel in (plan.name, f"{plan.name}_gemm"))
        blocks = math.prod(main.grid)
        persistent = blocks <= H100.sm_count * 4 and tiles != blocks  # (a grid sized to the SMs: stream-K, TMA)
        assert tiles == blocks or persistent and family in PERSISTENT, (config, tiles, main.grid)


def test_a_configurations_last_wave_is_the_share_of_the_slots_its_tiles_fill():
    problem = parse_spec("N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1")  # GEMM 6272 x 256: 98 x 2 tiles of 64 x 128
    space = get_family("implicit_gemm_wgmma").space
    configs = [{**space.default, "BM": 64, "BN": 128, "WGN": 128, "SPLIT_K": split, "MIN_BLOCKS": per_sm}
               for split, per_sm in ((1, 1), (2, 1), (2, 2))]
    rows = work_rows(problem, "implicit_gemm_wgmma", PointTable(space.params, configs).indices, H100)
    assert H100.sm_count == 132
    assert rows[:, 0] == pytest.approx(numpy.log2([196 / 132, 392 / 132, 392 / 132]))
    assert rows[:, 1] == pytest.approx([196 / 264, 392 / 396, 392 / 528])
    # A family the table does not name: columns of zeros, nothing to learn from.
    assert work_rows(problem, "direct", PointTable(space.params, configs).indices, H100).tolist() == [[0, 0]] * 3


def test_the_history_is_every_timed_trial_of_this_gpu_and_precision(history):
    samples = history_samples(history, FAKE_IDENTITY.gpu_name, "fp32")
    assert {s.problem for s in samples} == set(TRAINED)
    assert len(samples) >= 100 and all(s.time_ms > 0 and s.family in FAMILIES for s in samples)
    assert history_samples(history, FAKE_IDENTITY.gpu_name, "tf32") == []
    assert history_samples(history, "another GPU", "fp32") == []


def test_the_model_ranks_an_untuned_problems_points(history):
    samples = history_samples(history, FAKE_IDENTITY.gpu_name, "fp32")
    ranker = Ranker(samples, H100)
    # A family is modelled once it has enough timed trials (the sampler favoured one here).
    assert set(ranker.families) == {f for f in FAMILIES if sum(s.family == f for s in samples) >= MIN_SAMPLES}
    assert ranker.families
    points = {family: configs for family, configs in enumerate_points(UNTUNED, FAMILIES, H100, 1 << 30).items()
              if family in ranker.families}
    every = sorted(synthetic_ms(UNTUNED, family, c) for family, configs in points.items() for c in configs)
    best = ranker.best(UNTUNED, points, 10)
    assert len(best) == 10 and [ms for *_, ms in best] == sorted(ms for *_, ms in best)
    chosen = [synthetic_ms(UNTUNED, family, config) for family, config, _ in best]
    # The ten predicted fastest are among the fastest tenth of the space, not a random draw
    # (whose median would sit at the space's median).
    assert statistics.median(chosen) <= every[len(every) // 10]
    assert min(chosen) <= every[len(every) // 100]


def test_the_best_of_all_valid_points_read_off_their_tables_is_the_best_of_their_configs(history):
    """best_valid (features from the points' tables) ranks as best does from the configurations."""
    ranker = Ranker(history_samples(history, FAKE_IDENTITY.gpu_name, "fp32"), H100)
    points = ValidPoints(enumerate_points(UNTUNED, FAMILIES, H100, 1 << 30))
    modelled = {family: configs for family, configs in points.points.items() if family in ranker.families}
    assert ranker.best_valid(UNTUNED, points, 7) == ranker.best(UNTUNED, modelled, 7)
    family = ranker.families[0]
    assert ranker.best_valid(UNTUNED, points, 3, families=(family,)) == \
        ranker.best(UNTUNED, {family: points.points[family]}, 3)
    assert ranker.predict_valid(UNTUNED, family, points) == \
        pytest.approx(ranker.predict_ms(UNTUNED, family, points.points[family]), rel=1e-12)


def test_a_prediction_is_the_ridge_models_on_the_problems_design_rows(history):
    """(Computed without the rows of products: the model is linear in them.)"""
    ranker = Ranker(history_samples(history, FAKE_IDENTITY.gpu_name, "fp32"), H100)
    family = ranker.families[0]
    configs = enumerate_points(UNTUNED, FAMILIES, H100, 1 << 30)[family][:50]
    model = ranker._models[family]
    rows = _design(UNTUNED, family, configs, H100)
    expected = numpy.exp(model.intercept + ((rows - model.mean) / model.scale) @ model.weights) * UNTUNED.flops / 1e9
    assert ranker.predict_ms(UNTUNED, family, configs) == pytest.approx(expected, rel=1e-9)


def test_a_study_name_reads_back():
    tf32 = UNTUNED.with_(precision="tf32")
    requested = ("implicit_gemm", "direct", "implicit_gemm_wgmma_tma", "implicit_gemm_wgmma")
    found = parse_study_name(study_name(tf32, "A GPU/with a slash", requested))
    assert found is not None and found.problem == tf32
    # (``direct`` computes FP32 only: not a choice of the study; the order is the request's)
    assert (found.gpu_name, found.families) == ("A GPU/with a slash",
                                                ("implicit_gemm", "implicit_gemm_wgmma_tma", "implicit_gemm_wgmma"))
    assert parse_study_name("someone-else/study") is None
    assert parse_study_name("autoconv/not a spec/GPU/direct/0123") is None


def test_too_little_history_makes_no_model():
    assert Ranker([], H100).families == ()
    assert Ranker([], H100).best(UNTUNED, {"direct": [{}]}, 5) == []


def test_rank_k_queues_the_k_best_after_the_warm_start(history):
    tuner = Tuner(FakeBackend(),
                  SearchSettings(FAMILIES, Budget(trials=12), seed=3, search=SearchOptions(ranked=4, transfer=False)),
                  storage=history)
    tuner.tune_problem(NamedProblem("untuned", UNTUNED))
    study = optuna.load_study(study_name=study_name(UNTUNED, FAKE_IDENTITY.gpu_name, FAMILIES), storage=history)
    origins = [t.user_attrs.get("origin", "") for t in sorted(study.trials, key=lambda t: t.number)]
    ranked = [o for o in origins if o.startswith("ranked")]
    assert 1 <= len(ranked) <= 4
    first_ranked = origins.index(ranked[0])
    assert all(o.startswith("family") for o in origins[:first_ranked])  # after the defaults and seeds


def test_the_models_are_fitted_on_one_blas_thread(history, monkeypatch):
    """A tuning host's cores are busy compiling: OpenBLAS's threads then made a fit take seconds
    instead of a tenth of one."""
    import autoconv.search.ranker as ranker_module

    calls = []

    class Recorder:
        def __init__(self, limits, user_api):
            calls.append((limits, user_api))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(ranker_module, "threadpool_limits", Recorder)
    assert Ranker(history_samples(history, FAKE_IDENTITY.gpu_name, "fp32"), H100).families
    assert calls == [(1, "blas")]
