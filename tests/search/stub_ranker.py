"""A stand-in for the tuning history's model (:class:`autoconv.search.ranker.Ranker`) whose
predictions a test sets: for the tests of what a transfer study does with them."""

from __future__ import annotations

import numpy

from autoconv.search import transfer
from autoconv.search.points import config_key
from autoconv.search.ranker import Ranker


class OrderRanker:
    """Models ``families``; predicts each configuration's ``order[config key]`` ms, and claims to be
    trained on ``problems`` problems (enough to be trusted by default)."""

    def __init__(self, families: tuple[str, ...], order: dict[str, float], problems: int = transfer.MIN_PROBLEMS):
        self.families, self.order, self.problems = families, order, problems

    def predict_ms(self, problem, family, configs):
        return numpy.array([self.order[config_key(family, c)] for c in configs])

    def predict_valid(self, problem, family, points):
        return self.predict_ms(problem, family, points.points[family])

    best = Ranker.best
    best_valid = Ranker.best_valid
