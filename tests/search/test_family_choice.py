"""The family of each sampler proposal: drawn from the study's results (autoconv.search.family_choice)."""

from __future__ import annotations

from collections import Counter

import optuna
import pytest

from autoconv.backends.base import Status
from autoconv.search.family_choice import FAMILY_SHARPNESS, UNTIMED_FAILURE_FACTOR, FamilyChooser, family_weights
from autoconv.search.points import config_key


def results(*rows):
    """SearchHistory.results from (family, BM, status, ms) rows."""
    return {config_key(family, {"BM": bm}): (number, status, ms)
            for number, (family, bm, status, ms) in enumerate(rows)}


def test_a_familys_share_falls_with_its_best_time():
    weights = family_weights(["fast", "slow"], results(("fast", 64, Status.OK, 2.0), ("fast", 128, Status.OK, 1.0),
                                                       ("slow", 64, Status.OK, 2.0), ("slow", 128, Status.OK, 4.0)))
    assert weights == {"fast": 1.0, "slow": pytest.approx(0.5 ** FAMILY_SHARPNESS)}


def test_an_untimed_family_counts_as_the_best_until_its_candidates_fail():
    rows = [("timed", 64, Status.OK, 1.0), ("broken", 64, Status.COMPILE_FAILED, None),
            ("broken", 128, Status.SPILLS, None)]
    weights = family_weights(["timed", "broken", "new"], results(*rows))
    assert weights == {"timed": 1.0, "broken": UNTIMED_FAILURE_FACTOR ** 2, "new": 1.0}
    assert family_weights(["a", "b"], {}) == {"a": 1.0, "b": 1.0}


def test_only_the_given_families_are_weighed_and_drawn():
    rows = results(("gone", 64, Status.OK, 0.5), ("fast", 64, Status.OK, 1.0), ("slow", 64, Status.OK, 1.5))
    assert set(family_weights(["fast", "slow"], rows)) == {"fast", "slow"}
    chooser = FamilyChooser(optuna.samplers.RandomSampler(seed=0), ["fast", "slow"], seed=1)
    draws = Counter(chooser.choose(rows) for _ in range(4000))
    slow_share = 1.5 ** -FAMILY_SHARPNESS / (1 + 1.5 ** -FAMILY_SHARPNESS)
    assert set(draws) == {"fast", "slow"}
    assert draws["slow"] / 4000 == pytest.approx(slow_share, abs=0.02)


def test_the_sampler_proposes_the_chosen_family_and_samples_the_rest():
    chooser = FamilyChooser(optuna.samplers.RandomSampler(seed=0), ["slow"], seed=1)
    study = optuna.create_study(sampler=chooser.sampler_for({}))
    trial = study.ask()
    assert trial.suggest_categorical("family", ["fast", "slow"]) == "slow"
    assert trial.suggest_int("slow.BM", 16, 256) in range(16, 257)
