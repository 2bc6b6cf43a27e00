"""A learned ranking of configurations before any is compiled: what the tuning history
says a configuration's time will be on a problem never tuned.

The history is the Optuna storage: every timed trial of every study of the same GPU,
templates and precision (:func:`history_samples`). A :class:`Ranker` fits, per kernel
family, a ridge regression of log(time per FLOP) on features of the problem (those of
:mod:`autoconv.cache.neighbours`: the implicit GEMM's sizes, the output image, filter,
stride, dilation), of the configuration (each parameter's value as a category, and the
log2 of numeric ones), of how the configuration fills the GPU on the problem (:func:`work_rows`:
its main kernel's tiles per SM, and how full their last wave is) and the products of the
problem's features with the others (a tile that suits a large GEMM may not suit a small one).
It then orders a problem's valid configurations by predicted time: a transfer study starts from
and polishes with its picks (``autoconv tune --transfer``), and ``--rank K`` tries the best few
right after a study's warm start.

Why so simple a model: a few thousand timed trials per GPU and family are all there is,
the features are few, and the ranking has to be computed for up to ~30000 valid points in
well under a second; offline, with a study's own layer left out of its training, such a model
ranks the study's candidates well. The fill of the GPU is there because a linear model of the
parameters cannot tell when split-K pays: with it, far more of the pairs of configurations that
differ only in SPLIT_K are ordered as measured.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy
import optuna
from threadpoolctl import threadpool_limits

from autoconv.cache.neighbours import features as problem_features
from autoconv.kernels.families import FAMILY_NAMES, get_family
from autoconv.kernels.fingerprint import templates_hash
from autoconv.kernels.limits import DeviceLimits
from autoconv.kernels.space import PointTable
from autoconv.problems.problem import ConvProblem
from autoconv.search.points import ValidPoints
from autoconv.search.study import ok_trials, parse_study_name

#: Ridge penalty on the standardised features (the intercept is not penalised).
RIDGE = 1.0
#: Timed trials a family needs (over at least two problems) before it is modelled.
MIN_SAMPLES = 30
#: BLAS threads for fitting the models. One: a tuning host's cores are busy compiling, and
#: OpenBLAS's threads, one per core, then wait on each other (a fit that takes a tenth of a second
#: on one thread took seconds with one per core of a busy host, and every study's start waits for it).
FIT_THREADS = 1

#: Per GEMM family: the search space's values whose product is the number of tiles its main
#: kernel's work is cut into (its blocks, or the tiles a persistent kernel's blocks take in turn),
#: and the value for the blocks of it an SM holds at least (a launch bound's minimum; None: one).
#: Not ``direct``: with its grid of output tiles (GRID_Q x GRID_P x GRID_Z) the model ranked its
#: configurations no better and, in transfer runs, picked slower ones. (Here, not on the families:
#: their code is part of the templates' hash, which keys the cache.)
WORK_TILES: dict[str, tuple[tuple[str, ...], str | None]] = {
    "im2col_gemm": (("GRID_M", "GRID_N"), None),
    "implicit_gemm": (("GRID_M", "GRID_N", "SPLIT_K"), "MIN_BLOCKS"),
    "implicit_gemm_3xtf32": (("GRID_M", "GRID_N", "SPLIT_K"), "MIN_BLOCKS"),
    "implicit_gemm_mma": (("GRID_M", "GRID_N", "SPLIT_K"), "MIN_BLOCKS"),
    "implicit_gemm_wgmma": (("GRID_M", "GRID_N", "SPLIT_K"), "MIN_BLOCKS"),
    "implicit_gemm_wgmma_f16": (("GRID_M", "GRID_N", "SPLIT_K"), "MIN_BLOCKS"),
    "implicit_gemm_wgmma_tma": (("TILES",), None),
}
#: Columns of :func:`work_rows`.
WORK_FEATURES = 2


@dataclass(frozen=True)
class Sample:
    """One timed candidate of the history."""

    problem: ConvProblem
    family: str
    config: Mapping[str, object]
    time_ms: float


def _log2_or_zero(value: object) -> float:
    return math.log2(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0.0


def table_rows(table: PointTable) -> numpy.ndarray:
    """One row per configuration of ``table`` (a family's points, as choice indices): one 0/1
    indicator per (parameter, choice) of the family's search space, then the log2 of each numeric
    parameter (0 for other types). Built a parameter at a time off the indices, not a config at a
    time: a problem's valid points number up to ~30000, and the start of a transfer study
    (:mod:`autoconv.search.transfer`) ranks them all."""
    places = [table.indices[:, column] for column in range(len(table.params))]
    indicators = [(column_places[:, None] == numpy.arange(len(choices))[None, :]).astype(float)
                  for choices, column_places in zip(table.params.values(), places)]
    logs = [numpy.array([_log2_or_zero(choice) for choice in choices])[column_places][:, None]
            for choices, column_places in zip(table.params.values(), places)]
    return numpy.hstack(indicators + logs).reshape(len(table.indices), -1)


def work_rows(problem: ConvProblem, family: str, indices: numpy.ndarray, device: DeviceLimits) -> numpy.ndarray:
    """How each configuration (a row of choice indices, :class:`PointTable`'s) fills ``device`` on
    ``problem``: the log2 of its main kernel's work tiles (:data:`WORK_TILES`) per SM, and the
    share of the block slots (SMs times the blocks each holds) its last wave of tiles fills
    (1: every wave full). Zeros for a family without :data:`WORK_TILES`."""
    if family not in WORK_TILES:
        return numpy.zeros((len(indices), WORK_FEATURES))
    tiles_of, per_sm = WORK_TILES[family]
    values = get_family(family).space.values_of(tiles_of + ((per_sm,) if per_sm else ()), indices, problem, device)
    tiles = values[:, :len(tiles_of)].prod(axis=1)
    slots = device.sm_count * (values[:, -1] if per_sm else 1.0)
    return numpy.column_stack([numpy.log2(tiles / device.sm_count), tiles / (numpy.ceil(tiles / slots) * slots)])


def _table_features(problem: ConvProblem, family: str, table: PointTable, device: DeviceLimits) -> numpy.ndarray:
    """Per configuration of ``table``, :func:`table_rows` then :func:`work_rows`."""
    return numpy.hstack([table_rows(table), work_rows(problem, family, table.indices, device)])


def _config_features(problem: ConvProblem, family: str, configs: Sequence[Mapping[str, object]],
                     device: DeviceLimits) -> numpy.ndarray:
    """:func:`_table_features` of ``configs`` (each value one of its parameter's choices)."""
    return _table_features(problem, family, PointTable(get_family(family).space.params, configs), device)


def _problem_row(problem: ConvProblem) -> numpy.ndarray:
    return numpy.array(list(problem_features(problem).values()))


def _design(problem: ConvProblem, family: str, configs: Sequence[Mapping[str, object]],
            device: DeviceLimits) -> numpy.ndarray:
    """Rows of [problem features, config features (:func:`_config_features`), their products] for
    ``configs``."""
    p = _problem_row(problem)
    c = _config_features(problem, family, configs, device)
    products = (c[:, :, None] * p[None, None, :]).reshape(len(configs), -1)
    return numpy.hstack([numpy.broadcast_to(p, (len(configs), len(p))), c, products])


class _FamilyModel:
    """The ridge regression of one family: log(ms per GFLOP) from :func:`_design` rows."""

    def __init__(self, rows: numpy.ndarray, targets: numpy.ndarray):
        self.mean = rows.mean(axis=0)
        self.scale = rows.std(axis=0)
        self.scale[self.scale == 0] = 1.0
        x = (rows - self.mean) / self.scale
        self.intercept = float(targets.mean())
        gram = x.T @ x + RIDGE * numpy.eye(x.shape[1])
        self.weights = numpy.linalg.solve(gram, x.T @ (targets - self.intercept))

    def predict(self, problem_row: numpy.ndarray, config_rows: numpy.ndarray) -> numpy.ndarray:
        """The prediction for :func:`_design` rows of one problem, without building them: the
        model is linear in the products, so on one problem it is a linear function of the config's
        features alone (a problem's ~30000 valid points cost their features, not their products)."""
        per_feature = self.weights / self.scale
        constant = self.intercept - float(self.mean @ per_feature)
        problems, configs = len(problem_row), config_rows.shape[1]
        of_products = per_feature[problems + configs:].reshape(configs, problems)
        of_config = per_feature[problems:problems + configs] + of_products @ problem_row
        return constant + float(problem_row @ per_feature[:problems]) + config_rows @ of_config


class Ranker:
    """Per-family models of a tuning history on ``device`` (see the module docstring)."""

    def __init__(self, samples: Iterable[Sample], device: DeviceLimits):
        self.device = device
        by_family: dict[str, list[Sample]] = {}
        for sample in samples:
            if sample.family in FAMILY_NAMES and sample.time_ms > 0:
                by_family.setdefault(sample.family, []).append(sample)
        self.samples = {family: len(found) for family, found in by_family.items()}
        #: How many distinct problems the samples are of.
        self.problems = len({sample.problem for found in by_family.values() for sample in found})
        self._models: dict[str, _FamilyModel] = {}
        with threadpool_limits(limits=FIT_THREADS, user_api="blas"):
            for family, found in by_family.items():
                if len(found) < MIN_SAMPLES or len({s.problem for s in found}) < 2:
                    continue
                by_problem: dict[ConvProblem, list[Sample]] = {}
                for sample in found:
                    by_problem.setdefault(sample.problem, []).append(sample)
                rows = numpy.vstack([_design(problem, family, [sample.config for sample in of_problem], device)
                                     for problem, of_problem in by_problem.items()])
                targets = numpy.array([math.log(sample.time_ms / (problem.flops / 1e9))
                                       for problem, of_problem in by_problem.items() for sample in of_problem])
                self._models[family] = _FamilyModel(rows, targets)

    @property
    def families(self) -> tuple[str, ...]:
        """The families with a model."""
        return tuple(self._models)

    def predict_ms(self, problem: ConvProblem, family: str, configs: Sequence[Mapping[str, object]]) -> numpy.ndarray:
        """Predicted time in ms of each of ``configs`` of ``family`` on ``problem``.

        Raises:
            KeyError: the family has no model (:attr:`families`).
        """
        if not configs:
            return numpy.zeros(0)
        return self._predict_rows(problem, family, _config_features(problem, family, configs, self.device))

    def _predict_rows(self, problem: ConvProblem, family: str, rows: numpy.ndarray) -> numpy.ndarray:
        """:meth:`predict_ms` of the configurations whose :func:`_config_features` are ``rows``."""
        return numpy.exp(self._models[family].predict(_problem_row(problem), rows)) * (problem.flops / 1e9)

    def predict_valid(self, problem: ConvProblem, family: str, points: ValidPoints) -> numpy.ndarray:
        """:meth:`predict_ms` of every valid configuration of ``family`` in ``points``, in their
        order, the features read off the points' table (:func:`_table_features`).

        Raises:
            KeyError: the family has no model, or no valid points.
        """
        return self._predict_rows(problem, family, _table_features(problem, family, points.table(family), self.device))

    def best(self, problem: ConvProblem, points: Mapping[str, Sequence[Mapping[str, object]]],
             count: int) -> list[tuple[str, dict[str, object], float]]:
        """The ``count`` configurations of ``points`` (family -> valid configurations)
        predicted fastest, fastest first, as (family, config, predicted ms); families
        without a model are left out. (Only each family's ``count`` fastest are sorted together: a
        problem has up to ~30000 valid points.)"""
        return _fastest({family: (configs, self.predict_ms(problem, family, configs))
                         for family, configs in points.items() if family in self.families and configs}, count)

    def best_valid(self, problem: ConvProblem, points: ValidPoints, count: int,
                   families: Iterable[str] | None = None) -> list[tuple[str, dict[str, object], float]]:
        """:meth:`best` of all the valid ``points`` of ``families`` (default: all of them)
        (:meth:`predict_valid`)."""
        chosen = points.families if families is None else families
        return _fastest({family: (points.points[family], self.predict_valid(problem, family, points))
                         for family in chosen if family in self.families and family in points.families}, count)


def _fastest(predicted: Mapping[str, tuple[Sequence[Mapping[str, object]], numpy.ndarray]],
             count: int) -> list[tuple[str, dict[str, object], float]]:
    """The ``count`` fastest of ``predicted`` (family -> (configurations, their predicted ms)), as
    :meth:`Ranker.best` gives them."""
    ranked = []
    for family, (configs, ms) in predicted.items():
        ranked += [(float(ms[index]), family, configs[index]) for index in numpy.argsort(ms, kind="stable")[:count]]
    ranked.sort(key=lambda item: item[0])
    return [(family, dict(config), ms) for ms, family, config in ranked[:count]]


def history_samples(storage, gpu_name: str, precision: str) -> list[Sample]:
    """The timed candidates (ok trials) of every study in ``storage`` (an Optuna storage)
    made on GPU ``gpu_name`` with these templates, for problems of ``precision``."""
    samples = []
    for name in optuna.get_all_study_names(storage):
        found = parse_study_name(name)
        if found is None or found.gpu_name != gpu_name or found.templates_hash != templates_hash() \
                or found.problem.precision != precision:
            continue
        study = optuna.load_study(study_name=name, storage=storage)
        samples += [Sample(found.problem, record.family, record.config, cast(float, record.time_ms))
                    for record in ok_trials(study)]  # (ok: timed)
    return samples
