"""Tuning by transfer: the choices of a study that searches only where the tuning history points
(``autoconv tune``'s default; ``--no-transfer`` turns it off; the study itself is
:mod:`~autoconv.search.transfer_study`'s).

A full study (:mod:`~autoconv.search.full_study`) samples until ``patience`` candidates after its
best have not beaten it, and most of its candidates come after the best is found. With a history of
other problems' studies, a transfer study spends its candidates only where the history points:

1. **Its start**: the winners of the nearest tuned problems (as a full study's warm start), and
   what the history's model (:class:`~autoconv.search.ranker.Ranker`) predicts fastest: the best
   configuration of each family it models (:func:`starts`); each family it does not model gets its
   default. Every modelled family gets its predicted best because the model ranks a family's tiles
   better than it ranks the families. Once the start is timed, the next :data:`PICKS_PER_FAMILY` - 1
   of each modelled family whose fastest time so far is within :data:`FAMILY_MARGIN` of the study's
   best (:func:`more_picks`): the measured times, not the model's, decide which families are worth
   more picks.
2. **Its polish**: once the start's candidates are timed, variations of the best (each other
   choice of each parameter, at the nearest valid configuration:
   :meth:`~autoconv.search.points.ValidPoints.variations`): for each parameter, the variation of
   it the model predicts fastest (of :data:`EVERY_CHOICE`'s, each other choice's fastest), and the
   fastest others up to :data:`VARIATIONS_PER_BEST` (:func:`best_variations`); all of them for a
   family it does not model. Then those of each new best as soon as it is found,
   :data:`POLISHED_BESTS` bests at most. Each parameter gets a variation because the model can rate
   all of one parameter's other choices below the rest.
3. **Its end**: the best's variations, and the other splits of the next tiles' fastest
   configurations (:mod:`~autoconv.search.runners_up`), are timed and none was faster, or the
   budget's trials or seconds are spent. The sampler proposes nothing and the patience plays no part.

A study transfers only where the model is trained on at least :data:`MIN_PROBLEMS` problems of
the same precision on this GPU (a model of a few problems extrapolates to any other):
:func:`untrusted_reason`; else it is a full study. So a first tune from empty storage runs full
studies until enough of its own problems are tuned (the model counts a problem once its study has
timed candidates, so a few more studies begin full while the first ones run), and each of those
still running then becomes a transfer study
(:meth:`~autoconv.search.full_study.FullStudy.becomes_transfer`). Where new layers are unlike the
history, a transfer can keep a family the model misjudges, or stop a split of the reduction away
from a faster configuration: what the polish's :data:`EVERY_CHOICE` and the runner-up tiles are for.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy

from autoconv.problems.problem import ConvProblem
from autoconv.search.points import ValidPoints, config_key, parse_config_key
from autoconv.search.ranker import Ranker

#: Problems the history's model must be trained on before a study transfers from it.
MIN_PROBLEMS = 8
#: Configurations of each modelled family, predicted fastest, that a transfer study times where
#: the family's fastest time is within :data:`FAMILY_MARGIN` of the study's best...
PICKS_PER_FAMILY = 3
#: ... (a ratio of measured times); each other modelled family gets its predicted best only.
FAMILY_MARGIN = 2.0
#: Variations of a best that a transfer study times, at least: each parameter's fastest predicted,
#: then the fastest of the rest up to this many.
VARIATIONS_PER_BEST = 6
#: Bests whose variations a transfer study times, at most.
POLISHED_BESTS = 4
#: Parameters each of whose other choices a polish times (the variation with it the model predicts
#: fastest), not the fastest one alone: the model misjudges which split of the reduction pays, and
#: the time is not monotonic in it (a layer's time can drop from split 1 to 4 and rise again at 6);
#: it costs a few more candidates.
EVERY_CHOICE = ("SPLIT_K",)


def untrusted_reason(ranker: Ranker, points: ValidPoints) -> str | None:
    """Why a problem with these valid ``points`` cannot be tuned by transfer from ``ranker``, or
    None when it can."""
    if not set(points.families) & set(ranker.families):
        return "the tuning history models none of its kernel families"
    if ranker.problems < MIN_PROBLEMS:
        return (f"the tuning history holds fewer than the {MIN_PROBLEMS} tuned problems of its precision on "
                f"this GPU that a transfer needs")
    return None


def starts(ranker: Ranker, problem: ConvProblem, points: ValidPoints) -> list[tuple[str, dict, str]]:
    """The model's picks for the start of a transfer study (see the module docstring): the
    predicted best of each family it models, as (family, config, origin), fastest predicted first;
    then the default of each family the model does not model."""
    picks = []
    for family in points.families:
        if family in ranker.families:
            (_, config, ms), = ranker.best_valid(problem, points, 1, families=(family,))
            picks.append((ms, family, config, _pick_origin(1, family, ms)))
    picks.sort(key=lambda pick: pick[0])
    found = [(family, dict(config), origin) for _, family, config, origin in picks]
    found += [(family, points.default(family), "family default (not modelled by the tuning history)")
              for family in points.families if family not in ranker.families]
    return found


def more_picks(ranker: Ranker, problem: ConvProblem, points: ValidPoints,
               timed: Mapping[str, float]) -> list[tuple[str, dict, str]]:
    """Once a transfer study's start is timed (``timed``: config key -> ms): the picks after the
    first, up to :data:`PICKS_PER_FAMILY`, of each modelled family whose fastest timed configuration
    is within :data:`FAMILY_MARGIN` of the fastest of all, as (family, config, origin); fastest
    predicted first."""
    fastest_of: dict[str, float] = {}
    for key, ms in timed.items():
        family = parse_config_key(key)[0]
        fastest_of[family] = min(ms, fastest_of.get(family, ms))
    if not fastest_of:
        return []
    best = min(fastest_of.values())
    picks = []
    for family in points.families:
        if family in ranker.families and fastest_of.get(family, math.inf) <= FAMILY_MARGIN * best:
            for place, (_, config, ms) in enumerate(ranker.best_valid(problem, points, PICKS_PER_FAMILY,
                                                                       families=(family,)), 1):
                if place > 1:
                    picks.append((ms, family, config, _pick_origin(place, family, ms)))
    picks.sort(key=lambda pick: pick[0])
    return [(family, dict(config), origin) for _, family, config, origin in picks]


def _pick_origin(place: int, family: str, ms: float) -> str:
    return f"predicted {place} of {family} by the tuning history's model ({ms:.4g} ms)"


def best_variations(ranker: Ranker, problem: ConvProblem, points: ValidPoints, family: str,
                    config: Mapping[str, object], exclude: set[str]) -> list[dict]:
    """The variations of ``config`` (:meth:`ValidPoints.variations`) a transfer study polishes, fastest
    predicted first: for each parameter, the fastest of those that change it (for each other choice,
    for those of :data:`EVERY_CHOICE`), then the fastest of the rest up to :data:`VARIATIONS_PER_BEST`
    in all; less those whose keys are in ``exclude`` (so a best polished again queues nothing new).
    All of them, in the space's order, for a family the model does not model."""
    variations = points.variations(family, config)
    if family in ranker.families and variations:
        predicted = ranker.predict_ms(problem, family, variations)
        by_speed = [variations[index] for index in numpy.argsort(predicted, kind="stable")]
        chosen = set()  # places in by_speed (each variation is there once)
        for name in config:
            place = next((place for place, variation in enumerate(by_speed) if variation[name] != config[name]), None)
            if place is not None:
                chosen.add(place)
        for name in EVERY_CHOICE:
            for value in {variation.get(name) for variation in by_speed} - {config.get(name)}:
                chosen.add(next(place for place, variation in enumerate(by_speed) if variation.get(name) == value))
        for place in range(len(by_speed)):
            if len(chosen) >= VARIATIONS_PER_BEST:
                break
            chosen.add(place)
        variations = [by_speed[place] for place in sorted(chosen)]
    return [variation for variation in variations if config_key(family, variation) not in exclude]
