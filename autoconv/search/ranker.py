"""A learned ranking of configurations before any is compiled: what the tuning history
says a configuration's time will be on a problem never tuned.

The history is the Optuna storage: every timed trial of every study of the same GPU,
templates and precision (:func:`history_samples`). A :class:`Ranker` fits, per kernel
family, a ridge regression of log(time per FLOP) on features of the problem (those of
:mod:`autoconv.cache.neighbours`: the implicit GEMM's sizes, the output image, filter,
stride, dilation), of the configuration (each parameter's value as a category, and the
log2 of numeric ones) and their products (a tile that suits a large GEMM may not suit a
small one). It then orders a problem's valid configurations by predicted time; the tuner
tries the best few right after the warm start (``autoconv tune --rank K``).

Why so simple a model: a few thousand timed trials per GPU and family are all there is,
the features are few, and the ranking has to be computed for up to ~30000 valid points in
well under a second. Offline, on the journal of a ResNet-50 run (results/h100/NOTES.md), a
model of this kind ranked a study's candidates with a median rank correlation of 0.85 when
the study's own layer was left out of its training.
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
from autoconv.cache.winners import templates_hash
from autoconv.kernels.families import FAMILY_NAMES, get_family
from autoconv.kernels.space import PointTable, choice_places
from autoconv.problems.problem import ConvProblem
from autoconv.search.points import ValidPoints
from autoconv.search.study import ok_trials, parse_study_name

#: Ridge penalty on the standardised features (the intercept is not penalised).
RIDGE = 1.0
#: Timed trials a family needs (over at least two problems) before it is modelled.
MIN_SAMPLES = 30
#: BLAS threads for fitting the models. One: a tuning host's cores are busy compiling, and
#: OpenBLAS's threads, one per core, then wait on each other. On an H100 host with 16 busy
#: processes a ResNet-50 history's fit took 12 s with the default threads and 0.09 s with one
#: (idle: 0.07 s), and every study's start waited for it (results/h100/NOTES.md, sixteenth session).
FIT_THREADS = 1


@dataclass(frozen=True)
class Sample:
    """One timed candidate of the history."""

    problem: ConvProblem
    family: str
    config: Mapping[str, object]
    time_ms: float


def _log2_or_zero(value: object) -> float:
    return math.log2(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0.0


def config_rows(family: str, configs: Sequence[Mapping[str, object]]) -> numpy.ndarray:
    """One row per config: one 0/1 indicator per (parameter, choice) of the family's search
    space, then the log2 of each numeric parameter (0 for other types). Built a parameter at a
    time, not a config at a time: a problem's valid points number up to ~30000, and the start of a
    transfer study (:mod:`autoconv.search.transfer`) ranks them all."""
    params = get_family(family).space.params
    places, logs = [], []
    for name, choices in params.items():
        values = [config.get(name) for config in configs]
        place = choice_places(choices)
        places.append(numpy.array([place.get(value, -1) for value in values], dtype=int))  # (-1: no indicator)
        known_logs = {value: _log2_or_zero(value) for value in set(values)}
        logs.append(numpy.array([known_logs[value] for value in values], dtype=float))
    return _feature_rows(params, places, logs, len(configs))


def table_rows(table: PointTable) -> numpy.ndarray:
    """:func:`config_rows` of every configuration of ``table`` (a family's valid points), from its
    choice indices rather than from the configurations' values."""
    places = [table.indices[:, column] for column in range(len(table.params))]
    logs = [numpy.array([_log2_or_zero(choice) for choice in choices])[column_places]
            for choices, column_places in zip(table.params.values(), places)]
    return _feature_rows(table.params, places, logs, len(table.indices))


def _feature_rows(params: Mapping[str, Sequence[object]], places: Sequence[numpy.ndarray],
                  logs: Sequence[numpy.ndarray], count: int) -> numpy.ndarray:
    """:func:`config_rows`' layout: per parameter, the indicators of each row's choice (its index in
    ``places``), then per parameter each row's log2 (``logs``)."""
    indicators = [(column_places[:, None] == numpy.arange(len(choices))[None, :]).astype(float)
                  for choices, column_places in zip(params.values(), places)]
    return numpy.hstack(indicators + [column_logs[:, None] for column_logs in logs]).reshape(count, -1)


def _problem_row(problem: ConvProblem) -> numpy.ndarray:
    return numpy.array(list(problem_features(problem).values()))


def _design(problem: ConvProblem, family: str, configs: Sequence[Mapping[str, object]]) -> numpy.ndarray:
    """Rows of [problem features, config features, their products] for ``configs``."""
    p = _problem_row(problem)
    c = config_rows(family, configs)
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
    """Per-family models of a tuning history (see the module docstring)."""

    def __init__(self, samples: Iterable[Sample]):
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
                rows = numpy.vstack([_design(problem, family, [sample.config for sample in of_problem])
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
        return self._predict_rows(problem, family, config_rows(family, configs))

    def _predict_rows(self, problem: ConvProblem, family: str, rows: numpy.ndarray) -> numpy.ndarray:
        """:meth:`predict_ms` of the configurations whose :func:`config_rows` are ``rows``."""
        return numpy.exp(self._models[family].predict(_problem_row(problem), rows)) * (problem.flops / 1e9)

    def predict_valid(self, problem: ConvProblem, family: str, points: ValidPoints) -> numpy.ndarray:
        """:meth:`predict_ms` of every valid configuration of ``family`` in ``points``, in their
        order, the features read off the points' table (:func:`table_rows`).

        Raises:
            KeyError: the family has no model, or no valid points.
        """
        return self._predict_rows(problem, family, table_rows(points.table(family)))

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
