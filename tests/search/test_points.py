"""The valid points of a problem (:mod:`autoconv.search.points`): the nearest valid,
unseen config to a proposal, and sampling valid configs without enumerating."""

from __future__ import annotations

import pytest

from autoconv.kernels.families import FAMILY_NAMES, get_family
from autoconv.kernels.limits import H100
from autoconv.problems.problem import parse_spec
from autoconv.search.options import SearchSettings
from autoconv.search.points import ValidPoints, config_key, enumerate_in_turn, enumerate_points, sample_valid
from tests.helpers import family_spec

PROBLEM = parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1")

FAMILIES = ("direct", "im2col_gemm")


@pytest.fixture(scope="module")
def points():
    return ValidPoints(enumerate_points(PROBLEM, FAMILIES, H100, 1 << 30))


def test_config_keys_ignore_the_order_of_params():
    assert config_key("direct", {"A": 1, "B": 2}) == config_key("direct", {"B": 2, "A": 1})
    assert config_key("direct", {"A": 1}) != config_key("im2col_gemm", {"A": 1})


def test_the_nearest_unseen_point_changes_the_fewest_params(points):
    family = "direct"
    space = get_family(family).space
    configs = points.points[family]
    assert all(space.is_valid(c, PROBLEM, H100) for c in configs) and len(points) > len(configs)
    start = configs[len(configs) // 2]
    assert points.nearest(family, start) == start  # valid: itself

    def changed(a, b):
        return sum(a[name] != b[name] for name in space.params)

    nearest_family, nearest = points.nearest_unseen(family, start, {config_key(family, start)})
    assert nearest_family == family and nearest != start
    assert changed(nearest, start) == min(changed(c, start) for c in configs if c != start)


def test_the_point_table_orders_as_the_rule_says():
    """PointTable (numpy) against the rule in plain Python, for proposals valid and invalid,
    with values outside a parameter's list, and seen points excluded: fewest parameters
    changed, then fewest steps along each list (the list's length for a value not in it),
    the first of equals."""
    import random

    import numpy

    from autoconv.kernels.space import PointTable

    family = "implicit_gemm"   # 11 parameters, thousands of valid points on a ResNet layer
    params = get_family(family).space.params
    configs = get_family(family).space.points(parse_spec("N=8,C=64,H=28,W=28,K=128,R=3,S=3,pad=1"), H100)
    table = PointTable(params, configs)
    rng = random.Random(7)

    def rule(proposal, excluded):
        def distance(c):
            changed = sum(c[n] != proposal.get(n) for n in params)
            steps = sum((abs(params[n].index(c[n]) - params[n].index(proposal[n])) if proposal.get(n) in params[n]
                         else len(params[n])) for n in params if c[n] != proposal.get(n))
            return changed, steps
        kept = [i for i in range(len(configs)) if not excluded[i]]
        return min(kept, key=lambda i: distance(configs[i])) if kept else None

    for _ in range(100):
        proposal = {n: rng.choice(choices) for n, choices in params.items()}
        if rng.random() < 0.3:
            proposal[rng.choice(list(params))] = 999_999   # in no list
        excluded = numpy.array([rng.random() < 0.5 for _ in configs])
        assert table.nearest(proposal, excluded) == rule(proposal, excluded)
        assert table.nearest(proposal) == rule(proposal, numpy.zeros(len(configs), dtype=bool))
    assert table.nearest(configs[3]) == 3
    assert table.nearest(configs[3], numpy.ones(len(configs), dtype=bool)) is None


def test_when_a_family_is_exhausted_another_is_offered_then_none(points):
    seen = {config_key("direct", c) for c in points.points["direct"]}
    other, config = points.nearest_unseen("direct", points.default("direct"), seen)
    assert other == "im2col_gemm" and points.is_valid(other, config)
    seen |= {config_key("im2col_gemm", c) for c in points.points["im2col_gemm"]}
    assert points.nearest_unseen("direct", points.default("direct"), seen) is None


def test_families_without_valid_points_are_left_out():
    # A workspace limit of 0 bytes rules out im2col_gemm (its column buffer).
    points = ValidPoints(enumerate_points(PROBLEM, FAMILIES, H100, 0))
    assert points.families == ("direct",)
    assert not points.is_valid("im2col_gemm", get_family("im2col_gemm").space.default)


def test_enumerate_in_turn_gives_each_problem_with_its_workspace_limit():
    problems = [PROBLEM, parse_spec("N=1,C=8,H=9,W=9,K=12,R=1,S=1"), parse_spec("N=2,C=3,H=7,W=5,K=4,R=2,S=3")]
    assert list(enumerate_in_turn(problems, FAMILIES, H100, 1 << 30)) == \
        [enumerate_points(problem, FAMILIES, H100, 1 << 30) for problem in problems]
    assert list(enumerate_in_turn(problems[:2], FAMILIES, H100, [1 << 30, 0])) == \
        [enumerate_points(PROBLEM, FAMILIES, H100, 1 << 30), enumerate_points(problems[1], FAMILIES, H100, 0)]
    with pytest.raises(ValueError, match="2 workspace limits for 1 problems"):
        list(enumerate_in_turn([PROBLEM], FAMILIES, H100, [1, 2]))


def test_enumerate_in_turn_skips_a_problem_finished_elsewhere_when_its_turn_comes():
    """A problem that ``skip`` says another worker has finished yields None when its turn comes,
    and is asked about only then."""
    problems = [PROBLEM, parse_spec("N=1,C=8,H=9,W=9,K=12,R=1,S=1"), parse_spec("N=2,C=3,H=7,W=5,K=4,R=2,S=3")]
    asked: list[int] = []

    def skip(index: int) -> bool:
        asked.append(index)
        return index == 1

    stream = enumerate_in_turn(problems, FAMILIES, H100, 1 << 30, skip=skip)
    assert next(stream) == enumerate_points(problems[0], FAMILIES, H100, 1 << 30) and asked == [0]
    assert next(stream) is None and asked == [0, 1]
    assert next(stream) == enumerate_points(problems[2], FAMILIES, H100, 1 << 30)


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_valid_points_keys_and_tables_are_those_of_each_config(family):
    """ValidPoints writes the keys of a problem's points a value at a time and reads its tables off
    the configs a column at a time: the same keys as config_key, the same rows as PointTable's
    lookup."""
    from autoconv.search.points import _config_keys

    problem = parse_spec(family_spec(family, "N=2,C=24,H=15,W=13,K=40,R=3,S=3,pad=1"))
    configs = enumerate_points(problem, (family,), H100, 1 << 30)[family]
    points = ValidPoints({family: configs})
    assert _config_keys(family, configs) == [config_key(family, config) for config in configs]
    params = get_family(family).space.params
    assert points.table(family).indices.tolist() == [
        [list(choices).index(config[name]) for name, choices in params.items()] for config in configs]
    # (a value of another type than the choice it equals keeps its own JSON: 1.0 is not written 1)
    odd = {**configs[0], next(iter(params)): float(configs[0][next(iter(params))])}
    assert _config_keys(family, [odd]) == [config_key(family, odd)]


def test_a_tuner_does_not_enumerate_a_problem_another_worker_finished_meanwhile(points, monkeypatch):
    """Its turn come, a problem whose winner another process has cached since this one started is
    reported from the cache; its valid points are not waited for."""
    import optuna

    from autoconv.backends.fake import FakeBackend
    from autoconv.config.budget import Budget
    from autoconv.problems.models import NamedProblem
    from autoconv.search.outcome import ProblemOutcome
    from autoconv.search.tuner import Tuner

    first, second = NamedProblem("first", PROBLEM), NamedProblem("second", parse_spec("N=1,C=8,H=9,W=9,K=12,R=1,S=1"))
    tuner = Tuner(FakeBackend(), SearchSettings(FAMILIES, Budget(trials=4), seed=1),
                  storage=optuna.storages.InMemoryStorage())
    tuned: list[str] = []
    finished_elsewhere = ProblemOutcome(name="second", problem=second.problem, source="cache", time_ms=1.0)

    def cached(item, quiet=False):  # (nothing cached when the run starts; `second` once `first` is tuned)
        return finished_elsewhere if item is second and tuned else None

    original = tuner.loop.begin

    def begin(item, valid):
        tuned.append(item.name)
        return original(item, valid)

    import autoconv.search.tuner as tuner_module

    yielded: list[object] = []

    def recorded(*args, **kwargs):
        for points in enumerate_in_turn(*args, **kwargs):
            yielded.append(points)
            yield points

    monkeypatch.setattr(tuner, "_cached", cached)
    monkeypatch.setattr(tuner.loop, "begin", begin)
    monkeypatch.setattr(tuner_module, "enumerate_in_turn", recorded)
    outcomes = tuner.tune([first, second])
    assert tuned == ["first"] and outcomes[1] is finished_elsewhere
    assert isinstance(yielded[0], dict) and yielded[1] is None  # (skipped, not enumerated)


def test_sample_valid_starts_with_the_default_and_repeats_nothing(points):
    sampled = sample_valid("direct", PROBLEM, H100, 1 << 30, count=5, seed=3)
    assert sampled[0] == get_family("direct").space.default_config(PROBLEM, H100, 1 << 30)
    assert len(sampled) == 5 and len({config_key("direct", c) for c in sampled}) == 5
    assert all(points.is_valid("direct", c) for c in sampled)
    assert sampled == sample_valid("direct", PROBLEM, H100, 1 << 30, count=5, seed=3)  # seeded


def test_variations_take_each_other_choice_at_the_nearest_valid_point(points):
    family = points.families[0]
    config = points.default(family)
    variations = points.variations(family, config)
    assert variations and config not in variations
    assert len({config_key(family, v) for v in variations}) == len(variations)
    singles = [c for c in points.points[family] if sum(c[n] != config[n] for n in config) == 1]
    for single in singles:  # every valid one-parameter change is there
        assert single in variations
    params = get_family(family).space.params
    for name, choices in params.items():
        for choice in choices:
            with_choice = [c for c in points.points[family] if c[name] == choice]
            if choice == config[name] or not with_choice:
                continue
            # the variation for this choice changes as few parameters as any valid point with it
            fewest = min(sum(c[n] != config[n] for n in config) for c in with_choice)
            assert any(v[name] == choice and sum(v[n] != config[n] for n in config) == fewest
                       for v in variations)
