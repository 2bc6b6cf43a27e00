"""The other tiles a study times at every split of the reduction, after its best's polish.

A polish (:meth:`~autoconv.search.full_study.FullStudy.polish`, and a transfer study's,
:func:`~autoconv.search.transfer.best_variations`) times the variations of a study's best one
parameter at a time. Two parameters that interact defeat it: the tile sets the grid, and the grid
decides which split of the reduction (SPLIT_K) fills the GPU, so a tile that loses at the split it
was timed with can win at another, two parameters from the best (and a neighbour that starts from
such a winner inherits the loss).

So once its best's variations are timed, a study times every other split of the fastest
configuration of each of the next :data:`RUNNER_UP_TILES` tiles of the best's family, those within
:data:`RUNNER_UP_MARGIN` of the best (each such configuration once); in implicit_gemm_wgmma_tma's
bf16 and fp16 every other number of pipeline stages too (:data:`PARTNERS`). Two configurations are
of one tile when they cut the problem's output into the same grid (:func:`output_grid`): the block
tile sets it in most families, the consumers, schedule and operand order too in
implicit_gemm_wgmma_tma, whose tile has no BM parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from autoconv.kernels.families import get_family
from autoconv.kernels.limits import DeviceLimits
from autoconv.problems.problem import ConvProblem
from autoconv.search.points import ValidPoints
from autoconv.search.study import TrialRecord

#: The parameter that splits the reduction.
SPLIT = "SPLIT_K"
#: The derived values that make a configuration's grid: its tiles along the GEMM's M and N. Every
#: family with :data:`SPLIT` derives them (tests/search/test_runners_up.py holds them to it).
GRID = ("GRID_M", "GRID_N")
#: The parameters each other value of which a runner-up tile's fastest configuration is timed with,
#: by family and precision (others: :data:`SPLIT` alone). implicit_gemm_wgmma_tma's shared memory
#: holds STAGES x (BM + BN) rows of 128 bytes, so its tiles' widths (BN 32-256) and depths trade
#: against each other: in bf16 and fp16 a study could end a few stages away from its layer's fastest
#: tile, which the runner-up tiles' other stages reach at the cost of a few more candidates; in TF32
#: (more valid stages) they cost more than they found, so there the split alone.
PARTNERS: dict[tuple[str, str], tuple[str, ...]] = {
    ("implicit_gemm_wgmma_tma", "bf16"): (SPLIT, "STAGES"),
    ("implicit_gemm_wgmma_tma", "fp16"): (SPLIT, "STAGES"),
}
#: Tiles other than the best's whose fastest configuration gets every split, at most.
RUNNER_UP_TILES = 2
#: ... those whose fastest configuration is within this multiple of the best's time (a tighter
#: margin reached fewer of the studies' missed fastest configurations, a wider one no more of them
#: for many more candidates).
RUNNER_UP_MARGIN = 1.10

#: A configuration's :data:`GRID` values.
Grid = tuple[object, ...]
#: A trial's grid, or None where its family has no split of the reduction (:func:`output_grid`).
GridOf = Callable[[TrialRecord], Grid | None]


def output_grid(family: str, config: Mapping[str, object], problem: ConvProblem, device: DeviceLimits,
                workspace_limit: int) -> Grid | None:
    """The grid of tiles ``config`` of ``family`` cuts ``problem``'s output into (its :data:`GRID`
    values); None for a family without :data:`SPLIT`."""
    space = get_family(family).space
    if SPLIT not in space.params:
        return None
    values = space.context(config, problem, device, workspace_limit)
    return tuple(values[name] for name in GRID)


def tile_runners_up(fastest_first: Sequence[TrialRecord], grid_of: GridOf) -> list[TrialRecord]:
    """The fastest trial of each of the next :data:`RUNNER_UP_TILES` tiles (grids, ``grid_of``) of
    the best's family (the first of ``fastest_first``, a study's ok trials, fastest first), those
    timed within :data:`RUNNER_UP_MARGIN` of the best; none for a family without splits."""
    if not fastest_first:
        return []
    best = fastest_first[0]
    best_grid = grid_of(best)
    if best_grid is None:
        return []
    best_ms = best.time_ms
    assert best_ms is not None  # (an ok trial: timed)
    grids = {best_grid}
    runners_up: list[TrialRecord] = []
    for record in fastest_first[1:]:
        if len(runners_up) == RUNNER_UP_TILES or record.time_ms is None \
                or record.time_ms > best_ms * RUNNER_UP_MARGIN:
            break
        if record.family != best.family:
            continue
        grid = grid_of(record)
        if grid is not None and grid not in grids:
            grids.add(grid)
            runners_up.append(record)
    return runners_up


def partners(family: str, precision: str) -> tuple[str, ...]:
    """The parameters a runner-up tile of ``family`` is timed at every value of, in ``precision``
    (:data:`PARTNERS`)."""
    return PARTNERS.get((family, precision), (SPLIT,))


def partner_variations(points: ValidPoints, family: str, precision: str,
                       config: Mapping[str, object]) -> list[tuple[str, dict]]:
    """The variations of ``config`` (:meth:`ValidPoints.variations`) that change one of its family's
    :func:`partners` in ``precision``: one for each other value of each, at the nearest valid
    configuration; each with the first partner it changes."""
    found = []
    names = partners(family, precision)
    for variation in points.variations(family, config):
        changed = next((name for name in names if variation.get(name) != config.get(name)), None)
        if changed is not None:
            found.append((changed, variation))
    return found
