"""Which kernel family the sampler's next proposal is for.

TPE picks a categorical parameter by the ratio of two Parzen estimates, of the best trials
(the fastest ~10%) over the rest, and proposes the argmax among a few samples. For the family
that ratio is nearly flat: a study has few best trials, and its in-flight candidates (the
constant liar) and invalid proposals fill the rest. So TPE proposed one family again and again
while the ratio's noise favoured it. Replayed on a ResNet-50 tune's journal (H100, twenty-first
session; results/h100/tuning_cost/family_choice), at the moment of conv1's 60th trial TPE
proposed implicit_gemm_wgmma_tma, which has no valid configuration for a float32 problem, 89
times in 100; over that tune 22% of the sampler's proposals were for the two 16-bit-only
families (each repaired into another family's first configuration), and 34% of the compile CPU
went to the five families that won no layer.

Here the family is chosen from the study's own results instead, and TPE proposes only the
chosen family's parameters (:class:`optuna.samplers.PartialFixedSampler`): a family's share of
the proposals is ``(study's best / family's best) ** FAMILY_SHARPNESS``, relative to the others'.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy
import optuna

from autoconv.backends.base import Status
from autoconv.search.points import parse_config_key
from autoconv.search.study import FAMILY_PARAM

#: How fast a family's share of the proposals falls with its best time: a family whose best is
#: 1.3x the study's best gets 0.35 of the best family's share, 1.5x gets 0.2, 2x gets 0.06. Its
#: default and seeds were timed in the warm start, and its best only improves as it is searched.
FAMILY_SHARPNESS = 4.0
#: The weight of a family with no timed candidate yet is 1 (as promising as the best), halved by
#: each of its candidates that failed (a compile error, spills, a wrong result).
UNTIMED_FAILURE_FACTOR = 0.5


def family_weights(families: Iterable[str],
                   results: Mapping[str, tuple[int, Status, float | None]]) -> dict[str, float]:
    """Each of ``families``' relative share of the next proposals, from a study's evaluated
    trials (:attr:`SearchHistory.results <autoconv.search.study.SearchHistory.results>`: config
    key -> (trial, status, ms))."""
    best_of: dict[str, float] = {}
    failed: Counter[str] = Counter()
    for key, (_, status, ms) in results.items():
        family = parse_config_key(key)[0]
        if status is Status.OK and ms is not None:
            best_of[family] = min(ms, best_of.get(family, ms))
        else:
            failed[family] += 1
    best = min(best_of.values(), default=None)
    return {family: (best / best_of[family]) ** FAMILY_SHARPNESS if best is not None and family in best_of
            else UNTIMED_FAILURE_FACTOR ** failed[family]
            for family in families}


class FamilyChooser:
    """Draws the family of each proposal (:func:`family_weights`, seeded) and gives the
    sampler that proposes that family's parameters.

    Args:
        sampler: the study's sampler (TPE), which proposes the chosen family's parameters.
        families: the families with a valid configuration for the problem.
        seed: seeds the draws.
    """

    def __init__(self, sampler: optuna.samplers.BaseSampler, families: Sequence[str], seed: int):
        self.sampler = sampler
        self.families = list(families)
        self._rng = numpy.random.default_rng(seed)

    def choose(self, results: Mapping[str, tuple[int, Status, float | None]]) -> str:
        """The family of the next proposal, given the study's evaluated trials."""
        weights = family_weights(self.families, results)
        shares = numpy.array([weights[family] for family in self.families])
        return self.families[int(self._rng.choice(len(shares), p=shares / shares.sum()))]

    def sampler_for(self, results: Mapping[str, tuple[int, Status, float | None]]) -> optuna.samplers.BaseSampler:
        """The sampler for the next proposal: :attr:`sampler` with the family fixed to
        :meth:`choose`'s."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.PartialFixedSampler({FAMILY_PARAM: self.choose(results)}, self.sampler)
