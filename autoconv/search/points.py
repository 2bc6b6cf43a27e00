"""The valid points of a problem: the configurations of each kernel family that satisfy
its search space's constraints for one problem on one device.

The tuner enumerates them once per problem (:func:`enumerate_ahead`, in worker processes, a few
problems ahead of the one it tunes: a large space takes seconds) and samples only among them: a proposal that breaks a
constraint, or repeats a configuration, is *repaired* to the nearest valid point not yet
evaluated (:meth:`ValidPoints.nearest_unseen`; see :mod:`autoconv.search.tuner`).
:func:`sample_valid` draws a few valid configurations without enumerating the space (the
dry run and the GPU tests).
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import cast

import numpy

from autoconv.errors import AutoconvError
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import DeviceLimits
from autoconv.kernels.space import PointTable
from autoconv.problems.problem import ConvProblem
from autoconv.processes import exit_with_parent

#: The keys' JSON (sorted keys; one encoder, not one per call: a tune makes ~500 000 keys).
_KEY_ENCODER = json.JSONEncoder(sort_keys=True)


def config_key(family: str, config: Mapping[str, object]) -> str:
    """One configuration of one family as a string (equal configurations, equal keys)."""
    return family + _KEY_ENCODER.encode(dict(config))


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


def _enumerate_job(args) -> list[dict]:
    problem, family, device, workspace_limit = args
    return enumerate_points(problem, (family,), device, workspace_limit)[family]


def enumerate_all(problems: Sequence[ConvProblem], families: Sequence[str], device: DeviceLimits,
                  workspace_limit: int | Sequence[int], workers: int = 1) -> list[dict[str, list[dict]]]:
    """:func:`enumerate_points` for several problems, one (problem, family) per job in
    ``workers`` processes (a large space takes seconds to enumerate). ``workspace_limit``
    is one limit for all problems, or one per problem."""
    return [cast(dict, points)  # (nothing skipped)
            for points in enumerate_ahead(problems, families, device, workspace_limit, workers, ahead=len(problems))]


def enumerate_ahead(problems: Sequence[ConvProblem], families: Sequence[str], device: DeviceLimits,
                    workspace_limit: int | Sequence[int], workers: int = 1, ahead: int = 2,
                    skip: Callable[[int], bool] | None = None) -> Iterator[dict[str, list[dict]] | None]:
    """:func:`enumerate_points` of each of ``problems`` in turn, as soon as it is done, while the
    next ``ahead`` problems are enumerated in the background (one (problem, family) per job in
    ``workers`` processes; the first problem in this one, while they start). The tuner takes a
    problem's points when it comes to it: tuning starts after the first problem's enumeration
    instead of everyone's, and a tuning worker of a fleet does not enumerate far ahead the problems
    other workers will have finished by then.
    ``workspace_limit`` is one limit for all problems, or one per problem. ``skip(index)``, asked
    when a problem's turn comes, says it is no longer wanted (another worker has finished it):
    None is yielded for it at once, and its enumeration is dropped instead of waited for."""
    limits = [workspace_limit] * len(problems) if isinstance(workspace_limit, int) else list(workspace_limit)
    if len(limits) != len(problems):
        raise ValueError(f"{len(limits)} workspace limits for {len(problems)} problems")
    jobs = [[(problem, family, device, limit) for family in families] for problem, limit in zip(problems, limits)]
    if workers <= 1 or sum(map(len, jobs)) <= 1:
        for index, problem_jobs in enumerate(jobs):
            if skip is not None and skip(index):
                yield None
                continue
            yield {family: _enumerate_job(job) for family, job in zip(families, problem_jobs)}
        return
    with concurrent.futures.ProcessPoolExecutor(
            max_workers=min(workers, sum(map(len, jobs))), mp_context=multiprocessing.get_context("spawn"),
            initializer=exit_with_parent, initargs=(os.getpid(),)) as pool:
        # The first problem is enumerated here, while the pool's processes start (spawning them
        # takes longer than enumerating one problem: ~1 s against 0.3-0.6 s for a VGG-16 layer).
        submitted: list[list[concurrent.futures.Future]] = [[]]

        def submit_through(last: int) -> None:
            while len(submitted) <= min(last, len(jobs) - 1):
                submitted.append([pool.submit(_enumerate_job, job) for job in jobs[len(submitted)]])

        try:
            for index in range(len(jobs)):
                submit_through(index + ahead)
                if skip is not None and skip(index):
                    for future in submitted[index]:
                        future.cancel()
                    yield None
                elif index == 0:
                    yield {family: _enumerate_job(job) for family, job in zip(families, jobs[0])}
                else:
                    yield {family: future.result() for family, future in zip(families, submitted[index])}
        finally:  # the caller stopped early (an error, an interrupt): drop what was not started
            for futures in submitted:
                for future in futures:
                    future.cancel()


class ValidPoints:
    """The valid configs of every family for one problem, and the nearest of them to any
    (possibly invalid) proposal."""

    def __init__(self, points: Mapping[str, list[dict]]):
        self.points = {family: list(configs) for family, configs in points.items() if configs}
        self.families = tuple(self.points)
        self._key_lists = {family: [config_key(family, c) for c in configs]
                           for family, configs in self.points.items()}
        self._keys = {family: set(keys) for family, keys in self._key_lists.items()}
        self._tables = {family: PointTable(get_family(family).space.params, configs)
                        for family, configs in self.points.items()}

    def __len__(self) -> int:
        return sum(len(configs) for configs in self.points.values())

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
