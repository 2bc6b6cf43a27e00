"""Which study runs when (:func:`search_in_turn`): a tuner's problems are searched in turn, with up to
:data:`CONCURRENT_STUDIES` studies in flight sharing the pipeline.

A study waiting on its last candidates (a transfer study between its rounds, a full one draining its
pipeline at its end) leaves the host's compilers idle, so the next problem's study begins then;
a result is taken as soon as it is ready, whichever study it is of.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from autoconv.errors import AutoconvError, StorageError
from autoconv.problems.models import NamedProblem
from autoconv.search.outcome import ProblemOutcome
from autoconv.search.points import ValidPoints
from autoconv.search.strategy import Search
from autoconv.search.study_loop import StudyLoop

#: Studies a tuner keeps in flight at once.
CONCURRENT_STUDIES = 2
#: The next study begins only while the studies in flight hold fewer candidates than this: a
#: transfer study's start is mostly compiled before the next one's joins the queue, and two studies
#: never start at once (the starts of several workers at once queue the compilers for long).
OVERLAP_BELOW = 8

#: What :func:`search_in_turn` calls as each job ends: (tag, item, points, its outcome or the error
#: that ended it).
SearchEnded = Callable[[int, NamedProblem, ValidPoints, "ProblemOutcome | AutoconvError"], None]


def search_in_turn(loop: StudyLoop, jobs: Iterable[tuple[int, NamedProblem, ValidPoints]],
                   ended: SearchEnded) -> None:
    """Search the problem of each of ``jobs`` (``(tag, item, points)``) with ``loop``, taken in turn,
    with up to :data:`CONCURRENT_STUDIES` studies in flight: the next begins when those in flight
    ask nothing until a result comes and hold fewer than :data:`OVERLAP_BELOW` candidates, so that
    the host's compilers work on it while they wait on their last ones. ``ended`` hears of each as
    it ends: its tag, item, points, and its outcome or the error that ended it (its candidates in
    flight then abandoned and queued again). Any other exception, and a failure of the studies'
    storage (:class:`~autoconv.errors.StorageError`: a full disk), abandons every study in flight
    likewise, and is raised."""
    jobs = iter(jobs)
    active: list[Search] = []
    more = True
    depth = loop.pipeline_depth

    def drop(search: Search, error: AutoconvError) -> None:
        active.remove(search)
        loop.abandon(search)
        ended(search.tag, search.item, search.points, error)

    try:
        while True:
            for search in list(active):
                try:
                    loop.ask(search, depth - sum(len(other.in_flight) for other in active if other is not search))
                    outcome = None if search.in_flight else loop.end(search)
                except StorageError:
                    raise  # (the storage of every study: the run ends)
                except AutoconvError as err:  # e.g. its problem does not fit on the GPU
                    drop(search, err)
                    continue
                if outcome is not None:
                    active.remove(search)
                    ended(search.tag, search.item, search.points, outcome)
            # (each asked just now, up to the pipeline's room: fewer in flight than that means
            # that they wait for results)
            if more and len(active) < CONCURRENT_STUDIES \
                    and sum(len(search.in_flight) for search in active) < min(OVERLAP_BELOW, depth):
                job = next(jobs, None)
                if job is None:
                    more = False
                    continue
                tag, item, points = job
                try:
                    begun = loop.begin(item, points)
                except StorageError:
                    raise
                except AutoconvError as err:
                    ended(tag, item, points, err)
                    continue
                if isinstance(begun, ProblemOutcome):  # (nothing to search)
                    ended(tag, item, points, begun)
                else:
                    begun.tag = tag
                    active.append(begun)
                continue  # (a study begun asks first)
            if not active:
                if more:
                    continue
                return
            for search in active:
                search.clock.enter("wait")
            # (the first whose result is ready: a slow compilation holds back no other result)
            waiting_since = time.monotonic()
            flying = [(search, index) for search in active for index in range(len(search.in_flight))]
            search, index = flying[loop.context.backend.first_done([search.in_flight[index][2]
                                                                    for search, index in flying])]
            try:
                loop.record(search, index, waiting_since)
            except StorageError:
                raise
            except AutoconvError as err:
                drop(search, err)
    except BaseException:
        for search in active:
            loop.abandon(search)
        raise
