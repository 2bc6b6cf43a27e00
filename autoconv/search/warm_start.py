"""What a study starts from (:class:`WarmStart`): the winners of the nearest problems already tuned
on this GPU (:mod:`autoconv.cache.neighbours`), each family's default configuration and its seeds
(the search space's configurations measured best elsewhere), and the configurations the tuning
history's model predicts fastest (``--rank``); each queued as the valid point nearest to it,
unless evaluated or queued already. The model of the tuning history (:mod:`~autoconv.search.ranker`)
is fitted here too, for the strategies that use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from autoconv.cache.neighbours import Neighbour, nearest_winners
from autoconv.kernels.families import get_family
from autoconv.problems.problem import ConvProblem
from autoconv.search.context import SearchContext
from autoconv.search.points import ValidPoints, config_key
from autoconv.search.ranker import Ranker, Sample, history_samples
from autoconv.search.study import SearchHistory, enqueue

#: Winners of the nearest tuned problems a new study tries first.
TRANSFERRED_WINNERS = 3


def enqueue_new(study, starts: Sequence[tuple[str, Mapping[str, object], str]], known: set[str]) -> set[str]:
    """Queue each (family, config, origin) of ``starts`` whose config key is not in ``known``
    (evaluated, queued or in flight), once; the keys queued (added to ``known``)."""
    queued = set()
    for family, config, origin in starts:
        key = config_key(family, config)
        if key not in known:
            known.add(key)
            enqueue(study, family, config, origin)
            queued.add(key)
    return queued


class WarmStart:
    """A tuner's source of first candidates and of the tuning history's model."""

    def __init__(self, context: SearchContext):
        self.context = context

    def neighbours(self, problem: ConvProblem) -> list[Neighbour]:
        """The cache's winners of the problems nearest to ``problem`` (none without a cache)."""
        if self.context.cache is None:
            return []
        return nearest_winners(problem, self.context.cache.entries(),
                               gpu_name=self.context.backend.identity.gpu_name, limit=TRANSFERRED_WINNERS)

    def neighbour_starts(self, problem: ConvProblem, points: ValidPoints,
                         note: str = "") -> list[tuple[str, dict, str]]:
        """The winners of the problems nearest to ``problem`` in the cache, each as the valid
        point nearest to it: (family, config, origin), ``note`` ending the origin."""
        return [(n.entry.family, points.nearest(n.entry.family, n.entry.config),
                 f"winner of {n.problem.spec()} (distance {n.distance:.2f}){note}")
                for n in self.neighbours(problem) if n.entry.family in points.families]

    def history_samples(self, problem: ConvProblem) -> list[Sample]:
        """The timed candidates of this storage's tuning history on this GPU, in ``problem``'s precision."""
        return history_samples(self.context.storage, self.context.backend.identity.gpu_name, problem.precision)

    def history_model(self, problem: ConvProblem) -> Ranker:
        """The model of this storage's tuning history on this GPU, for ``problem``'s precision."""
        return self.model(self.history_samples(problem))

    def model(self, samples: list[Sample]) -> Ranker:
        """The model of ``samples`` (:meth:`history_samples`) on this GPU."""
        return Ranker(samples, self.context.backend.device)

    def enqueue_defaults(self, study, problem: ConvProblem, points: ValidPoints, ranker: Ranker | None) -> None:
        """The winners of the nearest tuned problems in the cache, then each family's default
        config and its seeds, each as the valid point nearest to it, then the ``ranked`` valid
        points the history's model (``ranker``) predicts fastest; unless evaluated or queued already."""
        known = SearchHistory.of(study).known()
        starts = self.neighbour_starts(problem, points)
        for family in points.families:
            starts.append((family, points.default(family), "family default"))
            starts += [(family, points.nearest(family, seed), "family seed")
                       for seed in get_family(family).space.seeds]
        ranked = max(0, self.context.settings.search.ranked)
        if ranked and ranker is not None:
            best = ranker.best_valid(problem, points, ranked)
            starts += [(family, config, f"ranked {place} by the tuning history's model ({ms:.4g} ms predicted)")
                       for place, (family, config, ms) in enumerate(best, 1)]
        enqueue_new(study, starts, known)

    def late_neighbours(self, study, problem: ConvProblem, points: ValidPoints, history: SearchHistory,
                        flying: set[str]) -> set[str]:
        """Before a study ends: queue the winners of the nearest tuned problems that its warm start
        did not have (cached since it began, by another worker of the run), as the warm start queues
        them; the keys queued, and those of neighbours' winners queued before and not yet asked for
        (a study tuned again at the run's end: its warm start queued them). Why: with several
        workers, the first problems each one takes start with a cache empty of their neighbours,
        and a neighbour's winner can hold the configuration (a split-K factor) that such a study's
        search would not come to."""
        starts = self.neighbour_starts(problem, points, ", cached since the study began")
        still_queued = {key for key in (config_key(family, config) for family, config, _ in starts)
                        if key in history.waiting}
        known = history.known() | flying
        return enqueue_new(study, starts, known) | still_queued
