"""The other tiles a study times at every split of the reduction, after its best's polish.

A polish (:meth:`~autoconv.search.tuner.Tuner._polish`, and a transfer study's,
:func:`~autoconv.search.transfer.best_variations`) times the variations of a study's best one
parameter at a time. Two parameters that interact defeat it: the tile sets the grid, and the grid
decides which split of the reduction (SPLIT_K) fills the GPU, so a tile that loses at the split it
was timed with can win at another, two parameters from the best. On an H200, 2 of 11 ResNet-50 runs
from empty kept layer3.1.conv2 at BN 64 SPLIT_K 1 (0.112 ms), having timed BN 128 at SPLIT_K 1
(1.08x that) and 6 (1.06x) but not at 4 (0.105 ms, the fastest of the eleven runs), and its
neighbour layer3.0.conv2, which started from that winner, 1.11x the fastest so
(results/h100/thirtyeighth).

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
#: against each other. Replayed on the journals of 10 ResNet-50 bf16 NHWC runs from empty on an H200
#: (results/h100/thirtyninth): 10 studies ended over 1.08x the fastest time measured for their layer
#: (layer4.0.conv3 and layer4.0.downsample.0 in 4 runs each: BN 128 STAGES 5 or BN 256 STAGES 3
#: against BN 208 STAGES 4); the runner-up tiles' other stages reach all 10, their splits none. In
#: the FP32 and TF32 NCHW families' runs other stages reached no such study. Measured
#: (results/h100/fortieth), bf16, 8 runs from empty alternated in one call: no run lost a layer by
#: over 1.05x with the stages, 2 of 4 did by 1.12-1.16x without; +6% candidates, the same wall
#: time. TF32 NHWC, 8 runs in two calls: no run without the stages lost a layer over 1.03x, and
#: with them the runs cost +9-18% candidates and +5-13% time (~120-150 more candidates: TF32 has
#: more valid stages), so there the split alone. fp16 (bf16's kernel), 8 runs alternated in one
#: call (results/h100/fortyfirst): 2 of 4 runs without the stages lost layers by 1.08-1.10x
#: (STAGES apart), none with them over 1.06x; +11% candidates, the same wall time.
PARTNERS: dict[tuple[str, str], tuple[str, ...]] = {
    ("implicit_gemm_wgmma_tma", "bf16"): (SPLIT, "STAGES"),
    ("implicit_gemm_wgmma_tma", "fp16"): (SPLIT, "STAGES"),
}
#: Tiles other than the best's whose fastest configuration gets every split, at most.
RUNNER_UP_TILES = 2
#: ... those whose fastest configuration is within this multiple of the best's time. (Replayed on
#: the journals of 32 ResNet-50 runs on an H200: 1.10 reaches the fastest configuration in 6 studies
#: that missed it, at most ~56 candidates a run more; 1.05 reaches 1, 1.15 no more than 1.10 at 1.8x
#: the candidates; results/h100/thirtyeighth.)
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
