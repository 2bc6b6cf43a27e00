"""Which candidates are worth compiling: the tuning history's model as a filter in front of
the compiler.

A candidate costs ~0.5 CPU-seconds of NVRTC before its time is known, and most of what a
study evaluates is far from its best. Most of it is not even what the sampler proposed: for
a convolution most proposals break a constraint, and the tuner evaluates their *repair*, the
nearest valid point (:mod:`autoconv.search.proposals`). :class:`PreFilter` judges the candidate
about to be compiled, a proposal or a repair: it predicts its time with the
:class:`~autoconv.search.ranker.Ranker` and skips it when that prediction ranks among the
slowest of the problem's valid points (of the families the history models): above the
fraction :data:`KEEP_FRACTION`, or, if the study's best so far ranks worse than that, above
:data:`BEST_MARGIN` times the best's rank. The ranks come from the predictions of a sample
of :data:`SAMPLED_POINTS` valid points, so a problem with tens of thousands of them costs no
more than one with a few thousand. A skipped candidate is told ``predicted_slow`` (pruned:
the sampler learns to avoid the region) and counts towards the patience like a trial that
did not improve.

The model ranks well but cannot resolve a few percent (its log residuals spread by tens of
percent), so the filter only removes the bulk of the slow
candidates, and only in a study whose own timed candidates it ranks well
(:meth:`PreFilter.observe`): at least :data:`MIN_CHECKED` of them, with a rank correlation
of at least :data:`MIN_RANK_CORRELATION`. Enqueued candidates (the warm start, a best's
variations) are never filtered: they are what the model is checked on, and the polish works
at the resolution the model lacks.

Replayed on past journals, every study's fastest candidate ranked among the fastest few percent
of its valid points by prediction; in real tunes the filter skipped far fewer candidates than
that promised, saved no time beyond the runs' spread, and could lose a layer. So it is off unless
asked for (``autoconv tune --prefilter``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy

from autoconv.problems.problem import ConvProblem
from autoconv.search.points import ValidPoints, parse_config_key
from autoconv.search.ranker import Ranker

#: Candidates predicted faster than this fraction of the problem's valid points are always kept.
KEEP_FRACTION = 0.10
#: ... and so are those ranked within this many times the study's best's own rank, where the
#: model ranks that best worse than :data:`KEEP_FRACTION` (a problem it knows less well).
BEST_MARGIN = 3.0
#: Timed candidates of the study the model must have ranked before the filter acts.
MIN_CHECKED = 12
#: Spearman rank correlation between predicted and measured times those must reach.
MIN_RANK_CORRELATION = 0.6
#: Valid points whose predictions stand for all of them when a candidate is ranked.
SAMPLED_POINTS = 2048


class PreFilter:
    """The history's model on one problem, and the verdict on a candidate (see the module
    docstring).

    Args:
        ranker: the tuning history's model.
        problem: the problem tuned.
        points: its valid configurations.
        seed: picks the sampled points.
    """

    def __init__(self, ranker: Ranker, problem: ConvProblem, points: ValidPoints, seed: int = 0):
        self._ranker = ranker
        self._problem = problem
        modelled = [(family, config) for family, configs in points.points.items() if family in ranker.families
                    for config in configs]
        self.modelled = len(modelled)
        chosen = numpy.random.default_rng(seed).choice(len(modelled), min(len(modelled), SAMPLED_POINTS),
                                                       replace=False) if modelled else numpy.zeros(0, dtype=int)
        by_family: dict[str, list[dict]] = {}
        for index in sorted(chosen):
            family, config = modelled[index]
            by_family.setdefault(family, []).append(config)
        self._sample = numpy.sort(numpy.concatenate(
            [ranker.predict_ms(problem, family, configs) for family, configs in by_family.items()]
            or [numpy.zeros(0)]))
        self._predicted: dict[str, float] = {}
        #: Valid points it skipped as repairs of invalid proposals: no later repair picks them,
        #: so each is judged (and counted towards the patience) once.
        self.skipped: set[str] = set()
        #: The rank correlation on the study's own timed candidates (None: too few yet).
        self.rank_correlation: float | None = None
        #: How many of those it was computed on.
        self.checked = 0

    @property
    def active(self) -> bool:
        """Whether the filter skips candidates now: the model ranked enough of the study's
        timed candidates well enough."""
        return (self.checked >= MIN_CHECKED and self.rank_correlation is not None
                and self.rank_correlation >= MIN_RANK_CORRELATION)

    def predicted_ms(self, key: str) -> float | None:
        """The model's time for the configuration ``key`` (:func:`config_key`); None for a
        family it does not model."""
        if key not in self._predicted:
            family, config = parse_config_key(key)
            if family not in self._ranker.families:
                return None
            self._predicted[key] = float(self._ranker.predict_ms(self._problem, family, [config])[0])
        return self._predicted[key]

    def fraction(self, key: str) -> float | None:
        """Where ``key``'s prediction ranks among the problem's modelled valid points (by the
        sample): 0 the fastest, 1 the slowest; None without a prediction."""
        predicted = self.predicted_ms(key)
        if predicted is None or not len(self._sample):
            return None
        return float(numpy.searchsorted(self._sample, predicted)) / len(self._sample)

    def observe(self, timed: Mapping[str, float]) -> None:
        """Check the model on the study's timed candidates (config key -> measured ms)."""
        pairs = [(predicted, ms) for predicted, ms in ((self.predicted_ms(key), ms) for key, ms in timed.items())
                 if predicted is not None]
        self.checked = len(pairs)
        if len(pairs) < 3:
            self.rank_correlation = None
            return
        predicted, measured = numpy.array(pairs).T
        self.rank_correlation = _spearman(predicted, measured)

    def threshold(self, best_key: str | None) -> float:
        """The rank fraction above which a candidate is skipped, given the study's best."""
        best = self.fraction(best_key) if best_key is not None else None
        return max(KEEP_FRACTION, BEST_MARGIN * best) if best is not None else KEEP_FRACTION

    def verdict(self, key: str, best_key: str | None) -> str | None:
        """Why the candidate ``key`` is not worth compiling, or None (keep it)."""
        if not self.active:
            return None
        fraction = self.fraction(key)
        limit = self.threshold(best_key)
        if fraction is None or fraction <= limit:
            return None
        return (f"predicted slow by the tuning history's model: {self.predicted_ms(key):.4g} ms, slower than "
                f"{fraction:.0%} of the valid configurations (kept: the fastest {limit:.0%}; rank correlation "
                f"{self.rank_correlation:.2f} on {self.checked} timed candidates)")


def _spearman(a: numpy.ndarray, b: numpy.ndarray) -> float:
    """Spearman's rank correlation (ties broken by order; 0 when either side is constant)."""
    ranks_a = numpy.argsort(numpy.argsort(a)).astype(float)
    ranks_b = numpy.argsort(numpy.argsort(b)).astype(float)
    if ranks_a.std() == 0 or ranks_b.std() == 0:
        return 0.0
    return float(numpy.corrcoef(ranks_a, ranks_b)[0, 1])
