"""The valid points of a problem: the configurations of each kernel family that satisfy
its search space's constraints for one problem on one device.

The tuner enumerates them once per problem (:func:`enumerate_in_turn`; all of a depth's
combinations at once, :meth:`~autoconv.kernels.space.SearchSpace.points`) and samples only among
them: a proposal that breaks a constraint, or repeats a configuration, is *repaired* to the
nearest valid point not yet evaluated (:meth:`ValidPoints.nearest_unseen`; see
:mod:`autoconv.search.tuner`).
:func:`sample_valid` draws a few valid configurations without enumerating the space (the
dry run and the GPU tests).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy

from autoconv.errors import AutoconvError
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import DeviceLimits
from autoconv.kernels.space import PointTable
from autoconv.problems.problem import ConvProblem

#: The keys' JSON (sorted keys; one encoder, not one per call: a tune makes ~500 000 keys).
_KEY_ENCODER = json.JSONEncoder(sort_keys=True)


def config_key(family: str, config: Mapping[str, object]) -> str:
    """One configuration of one family as a string (equal configurations, equal keys)."""
    return family + _KEY_ENCODER.encode(dict(config))


def _config_keys(family: str, configs: Sequence[Mapping[str, object]]) -> list[str]:
    """:func:`config_key` of each of ``configs``, valid points of ``family`` (a value for each of
    its parameters, one of its choices): each value's JSON written once, not once per config
    (a problem has up to ~30000 valid points)."""
    params = get_family(family).space.params
    names = sorted(params)
    # (by type and value: 1, 1.0 and True are equal keys of a dict, and JSON writes them apart)
    pieces = {name: {(type(choice), choice): f"{_KEY_ENCODER.encode(name)}: {_KEY_ENCODER.encode(choice)}"
                     for choice in params[name]} for name in names}
    keys = []
    for config in configs:
        try:
            values = ", ".join([pieces[name][type(value := config[name]), value] for name in names])
        except KeyError:  # (a parameter without a value, or a value not among its choices)
            keys.append(config_key(family, config))
            continue
        keys.append(f"{family}{{{values}}}" if len(config) == len(names) else config_key(family, config))
    return keys


def parse_config_key(key: str) -> tuple[str, dict]:
    """(family, config) of a :func:`config_key`."""
    brace = key.index("{")
    return key[:brace], json.loads(key[brace:])


def enumerate_points(problem: ConvProblem, families: Sequence[str], device: DeviceLimits,
                     workspace_limit: int) -> dict[str, list[dict]]:
    """Each family's valid configs for ``problem`` (families that cannot run it: none)."""
    points = {}
    for name in families:
        family = get_family(name)
        points[name] = [] if family.unsupported_reason(problem) else \
            family.space.points(problem, device, workspace_limit)
    return points


def enumerate_in_turn(problems: Sequence[ConvProblem], families: Sequence[str], device: DeviceLimits,
                      workspace_limit: int | Sequence[int],
                      skip: Callable[[int], bool] | None = None) -> Iterator[dict[str, list[dict]] | None]:
    """:func:`enumerate_points` of each of ``problems`` when its turn comes: the tuner takes a
    problem's points when it comes to it, so a tuning worker of a fleet does not enumerate the
    problems other workers will have finished by then. (In this process: a problem's enumeration
    takes a fraction of a second, less than a pool of processes enumerating ahead costs to start.)
    ``workspace_limit`` is one limit for all problems, or one per problem. ``skip(index)``, asked
    when a problem's turn comes, says it is no longer wanted (another worker has finished it):
    None is yielded for it, and it is not enumerated."""
    limits = [workspace_limit] * len(problems) if isinstance(workspace_limit, int) else list(workspace_limit)
    if len(limits) != len(problems):
        raise ValueError(f"{len(limits)} workspace limits for {len(problems)} problems")
    for index, (problem, limit) in enumerate(zip(problems, limits)):
        yield None if skip is not None and skip(index) else enumerate_points(problem, families, device, limit)


class ValidPoints:
    """The valid configs of every family for one problem, and the nearest of them to any
    (possibly invalid) proposal."""

    def __init__(self, points: Mapping[str, list[dict]]):
        self.points = {family: list(configs) for family, configs in points.items() if configs}
        self.families = tuple(self.points)
        self._key_lists = {family: _config_keys(family, configs) for family, configs in self.points.items()}
        self._keys = {family: set(keys) for family, keys in self._key_lists.items()}
        self._tables = {family: PointTable(get_family(family).space.params, configs)
                        for family, configs in self.points.items()}

    def __len__(self) -> int:
        return sum(len(configs) for configs in self.points.values())

    def table(self, family: str) -> PointTable:
        """The valid configurations of ``family`` as a table of choice indices, in :attr:`points`' order."""
        return self._tables[family]

    def is_valid(self, family: str, config: Mapping[str, object]) -> bool:
        return config_key(family, config) in self._keys.get(family, ())

    def default(self, family: str) -> dict:
        """The family's default config, or the valid one nearest to it (as
        :meth:`SearchSpace.default_config`, without enumerating the space again)."""
        return self.nearest(family, get_family(family).space.default)

    def nearest(self, family: str, config: Mapping[str, object]) -> dict:
        """``config`` if valid, else the valid config of ``family`` nearest to it."""
        if self.is_valid(family, config):
            return dict(config)
        found = self.nearest_unseen(family, config, set())
        assert found is not None  # (nothing is seen yet, and the families held have valid points)
        return found[1]

    def variations(self, family: str, config: Mapping[str, object]) -> list[dict]:
        """For each parameter of ``family`` and each of its other choices, the valid config
        with that choice nearest to ``config`` (:class:`PointTable`'s order: the one that
        changes only this parameter where it is valid, else the fewest others too: a larger
        tile may be valid only with fewer blocks per SM); in the search space's order, each
        config once, ``config`` itself never."""
        if family not in self.points:
            return []
        table = self._tables[family]
        distances = table.distances(config)
        found: dict[str, dict] = {config_key(family, config): dict(config)}
        for column, (name, choices) in enumerate(table.params.items()):
            for index, choice in enumerate(choices):
                if choice == config.get(name):
                    continue
                rows = numpy.flatnonzero(table.indices[:, column] == index)
                if len(rows):
                    row = int(rows[numpy.argmin(distances[rows])])
                    found.setdefault(self._key_lists[family][row], self.points[family][row])
        return list(found.values())[1:]

    def nearest_unseen(self, family: str, config: Mapping[str, object], seen: set[str]) -> tuple[str, dict] | None:
        """The valid, unseen config of ``family`` closest to ``config`` (:class:`PointTable`:
        fewest parameters changed, then fewest steps along each parameter's choice list);
        if the family has none left, the first unseen config of another family; None when
        all are seen."""
        if family in self.points:
            keys = self._key_lists[family]
            excluded = numpy.fromiter((key in seen for key in keys), dtype=bool, count=len(keys))
            row = self._tables[family].nearest(config, excluded)
            if row is not None:
                return family, self.points[family][row]
        for other, configs in self.points.items():
            for candidate, key in zip(configs, self._key_lists[other]):
                if key not in seen:
                    return other, candidate
        return None


def sample_valid(family_name: str, problem: ConvProblem, device: DeviceLimits, workspace_limit: int,
                 count: int, seed: int, attempts: int = 20_000) -> list[dict]:
    """Up to ``count`` distinct valid configs of a family: its default first, then
    random valid ones (rejection sampling with a seeded generator; no enumeration)."""
    space = get_family(family_name).space
    rng = random.Random(seed)
    chosen: list[dict] = []
    keys: set[str] = set()
    try:
        default = space.default_config(problem, device, workspace_limit)
    except AutoconvError:
        return []
    for candidate in [default] + [None] * attempts:
        if len(chosen) >= count:
            break
        if candidate is None:
            candidate = {name: rng.choice(choices) for name, choices in space.params.items()}
        key = config_key(family_name, candidate)
        if key not in keys and space.is_valid(candidate, problem, device, workspace_limit):
            keys.add(key)
            chosen.append(candidate)
    return chosen
