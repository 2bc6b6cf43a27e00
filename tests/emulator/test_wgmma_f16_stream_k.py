"""implicit_gemm_wgmma_f16 with SCHEDULE stream_k: a persistent grid shares the (tile, K tile)
iterations evenly; parts of a tile meet in the workspace, the last block to arrive adds them and
writes the tile. Run in the CPU emulator against the float64 reference, on devices of a few SMs
so that the grid is small and every multi-segment path is taken: segments that start in the
middle of a tile, a tile split over 3+ blocks, a block covering parts of 3 tiles; in both block
orders (the emulator's blocks in index order and reversed: other blocks arrive last), which must
give the same bits. Also: the arrival counters are 0 after every launch (poisoned workspace in,
zeroes out), so a launch without the clearing kernel before it is right too.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from autoconv.emulator import compile_program, emulate_plan
from autoconv.errors import SearchSpaceError
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.problems.problem import parse_spec
from autoconv.verify.compare import POISON, check_result
from autoconv.verify.reference import conv2d_reference, random_inputs
from autoconv.verify.tolerance import tolerance

FAMILY = get_family("implicit_gemm_wgmma_f16")
SMALL_TILE = {"BM": 64, "BN": 32, "WGN": 32, "BK": 64, "STAGES": 2, "MMA_PENDING": 0, "MIN_BLOCKS": 1,
              "SPLIT_K": 1, "SCHEDULE": "stream_k", "PAD_CHANNELS": 0}


def segments(values) -> list[list[tuple[int, int, int]]]:
    """The schedule the template computes, per block: its (tile, first K tile, end K tile)."""
    iterations, ctas, k_tiles = values["ITERATIONS"], values["STREAM_K_CTAS"], values["K_TILES"]
    schedule = []
    for cta in range(ctas):
        begin, end = cta * iterations // ctas, (cta + 1) * iterations // ctas
        parts = []
        while begin < end:
            tile = begin // k_tiles
            stop = min(end, (tile + 1) * k_tiles)
            parts.append((tile, begin - tile * k_tiles, stop - tile * k_tiles))
            begin = stop
        schedule.append(parts)
    return schedule


def shape_of(values) -> set[str]:
    """The multi-segment situations a schedule has."""
    k_tiles, found = values["K_TILES"], set()
    per_tile: dict[int, int] = {}
    for parts in segments(values):
        for tile, first, _ in parts:
            per_tile[tile] = per_tile.get(tile, 0) + 1
            if 0 < first:
                found.add("starts mid-tile")
        if len(parts) >= 3 and parts[0][1] > 0 and parts[-1][2] < k_tiles:
            found.add("parts of 3 tiles")
    if max(per_tile.values()) >= 3:
        found.add("tile over 3+ blocks")
    return found


#: (problem, SM count, config changes, the situations its schedule must have). The grid is
#: STREAM_K_CTAS = SMs x RESIDENT_BLOCKS; the small tile's blocks fit 4 to an SM (registers), the
#: 1x1 case's 3.
CASES = {
    # 2 x 2 tiles (90 pixels, 40 filters: neither divides), 9 K tiles, 8 blocks of 4-5 iterations
    "3x3-bias-bf16": ("N=1,C=64,H=10,W=9,K=40,R=3,S=3,pad=1,bias=1,precision=bf16", 2, {},
                      {"starts mid-tile"}),
    # the same 36 iterations over 12 blocks: each tile over 3-4 blocks; fp16, float32 output
    "3x3-fp16-f32out": ("N=1,C=64,H=10,W=9,K=40,R=3,S=3,pad=1,precision=fp16,out_dtype=float32", 3, {},
                        {"starts mid-tile", "tile over 3+ blocks"}),
    # strided, padded 3x3: 3 x 3 tiles of 3 K tiles over 4 blocks: block 2 takes the end of
    # tile 4, tile 5, the start of tile 6
    "3x3-stride2-pad": ("N=4,C=16,H=13,W=11,K=70,R=3,S=3,stride=2,pad=1,bias=1,precision=bf16,out_dtype=float32",
                        1, {}, {"starts mid-tile", "parts of 3 tiles"}),
    # A_PIXEL_ROWS (1x1, stride 1, no padding): 2 x 2 tiles of 4 K tiles over 3 blocks; MMA_PENDING 1
    "1x1-pixel-rows-fp16": ("N=2,C=256,H=7,W=7,K=96,R=1,S=1,bias=1,precision=fp16", 1,
                            {"BN": 64, "WGN": 64, "STAGES": 3, "MMA_PENDING": 1}, {"starts mid-tile"}),
    # odd C and R*S*C: A and B copied one value at a time; 2 x 3 tiles of 6 K tiles over 16 blocks
    "odd-C-scalar": ("N=1,C=13,H=9,W=8,K=70,R=5,S=5,pad=2,precision=bf16", 4, {},
                     {"starts mid-tile", "tile over 3+ blocks"}),
}


def plan_for(case: str):
    spec, sm_count, changes, _ = CASES[case]
    problem = parse_spec(spec + ",layout=NHWC")
    device = dataclasses.replace(H100, sm_count=sm_count)
    return FAMILY.plan(problem, {**SMALL_TILE, **changes}, device)


@pytest.mark.parametrize("case", list(CASES))
def test_stream_k_matches_reference_in_either_block_order(case, seed):
    plan = plan_for(case)
    values = plan.values
    assert shape_of(values) >= CASES[case][3], shape_of(values)
    assert plan.launches[-1].grid == (values["STREAM_K_CTAS"], 1, 1)
    problem = plan.problem
    x, w, bias = random_inputs(problem, np.random.default_rng(seed))
    reference = conv2d_reference(problem, x, w, bias)
    forward = emulate_plan(plan, x, w, bias)
    outcome = check_result(forward, reference, tolerance(problem, x, w, reference))
    assert outcome.ok, f"{plan.name} on {problem.spec()}: {outcome}"
    reverse = emulate_plan(plan, x, w, bias, reverse_blocks=True)
    # the parts are added in segment order whichever block adds them: the same bits
    np.testing.assert_array_equal(reverse, forward)


def test_the_cases_cover_both_formats_outputs_and_bias():
    problems = [plan_for(case).problem for case in CASES]
    assert {p.precision for p in problems} == {"bf16", "fp16"}
    assert {p.output_dtype == "float32" for p in problems} == {True, False}
    assert {p.bias for p in problems} == {True, False}
    assert {plan_for(case).values["A_PIXEL_ROWS"] for case in CASES} == {0, 1}
    assert {plan_for(case).values["A_VECTOR"] for case in CASES} == {0, 1}


@pytest.mark.parametrize("reverse", [False, True])
def test_counters_are_zero_after_every_launch(reverse):
    """Workspace poisoned with NaN: the clearing kernel zeroes the counters, the GEMM leaves
    them 0; a second GEMM launch without the clear (counters as the first left them) computes
    the same y."""
    plan = plan_for("3x3-stride2-pad")
    clear, gemm = plan.launches
    assert clear.args == ("workspace",) and gemm.args[-1] == "workspace"
    problem = plan.problem
    x, w, bias = random_inputs(problem, np.random.default_rng(0))
    y_once = emulate_plan(plan, x, w, bias)
    from autoconv.problems.buffers import kernel_buffer, output_buffer
    buffers = {"x": kernel_buffer(problem, "x", x), "w": kernel_buffer(problem, "w", w),
               "bias": kernel_buffer(problem, "bias", bias), "y": output_buffer(problem),
               "workspace": np.full(plan.workspace_elements, POISON, dtype=np.float32)}
    program = compile_program(plan.source, (launch.kernel for launch in plan.launches), name=plan.name)
    counters_at = 2 * plan.values["STREAM_K_CTAS"] * plan.values["BM"] * plan.values["BN"]
    tiles = plan.values["TILES"]
    assert counters_at + tiles == plan.workspace_elements
    for launches in ([clear, gemm], [clear, gemm, gemm]):
        result = program.run(launches, buffers, reverse_blocks=reverse)
        counters = result["workspace"][counters_at:].view(np.uint32)
        assert (counters == 0).all(), counters
        from autoconv.problems.buffers import buffer_values
        np.testing.assert_array_equal(buffer_values(problem, result["y"]), y_once)


def test_stream_k_takes_no_split_k_and_sizes_its_workspace():
    problem = parse_spec("N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1,precision=bf16,layout=NHWC")
    config = {"BM": 64, "BN": 128, "WGN": 128, "BK": 64, "STAGES": 4, "MMA_PENDING": 1, "MIN_BLOCKS": 1,
              "SPLIT_K": 1, "SCHEDULE": "stream_k", "PAD_CHANNELS": 0}
    plan = FAMILY.plan(problem, config)
    # ResNet-50 layer4.x.conv2 at batch 32: 25 x 4 tiles of 72 K tiles on the H100's 132 SMs, two
    # blocks to an SM (each takes 4 x (64 + 128) x 64 x 2 bytes of pipeline, ~97 KiB)
    assert plan.values["TILES"] == 100 and plan.values["K_TILES"] == 72
    assert plan.values["RESIDENT_BLOCKS"] == 2 and plan.launches[-1].grid == (264, 1, 1)
    assert plan.workspace_bytes == 2 * 264 * 64 * 128 * 4 + 100 * 4
    with pytest.raises(SearchSpaceError, match="stream-K splits the reduction itself"):
        FAMILY.plan(problem, {**config, "SPLIT_K": 2})
    tiles_plan = FAMILY.plan(problem, {**config, "SCHEDULE": "tiles"})
    assert tiles_plan.workspace_bytes == 0 and len(tiles_plan.launches) == 1
    assert "stream_k" not in tiles_plan.source and "atomicAdd" not in tiles_plan.source


@pytest.mark.gpu
@pytest.mark.parametrize("case", [*CASES, "layer4-conv2-whole-gpu"])
def test_stream_k_on_the_gpu_gives_the_same_bits_every_launch(case, seed):
    """On the GPU the blocks of a stream-K launch really run at once, and which one arrives last
    at a tile differs between launches. Each case's plan (the emulator's small grids, and
    ResNet-50's layer4.x.conv2 at batch 32 on the device's own SM count: 100 tiles x 72 K tiles
    over the whole GPU) is launched five times on a poisoned output and workspace: every result
    within the format's tolerance of the float64 reference, and all five bit for bit equal."""
    import cupy

    from autoconv.gpu.compiler import compile_source
    from autoconv.gpu.device import read_device
    from autoconv.gpu.kernels import LoadedPlan
    from autoconv.gpu.worker import ProblemBuffers

    limits, _ = read_device(0)
    if case in CASES:
        plan = plan_for(case)
        plan = FAMILY.plan(plan.problem, plan.config, dataclasses.replace(limits, sm_count=CASES[case][1]))
    else:
        problem = parse_spec("N=32,C=512,H=7,W=7,K=512,R=3,S=3,pad=1,precision=bf16,layout=NHWC")
        plan = FAMILY.plan(problem, {**SMALL_TILE, "BN": 128, "WGN": 128, "STAGES": 4, "MMA_PENDING": 1}, limits)
        assert plan.values["ITERATIONS"] % plan.values["STREAM_K_CTAS"] != 0
    compiled = compile_source(plan.source, limits.arch, plan.name)
    assert compiled.ok, compiled.log
    loaded = LoadedPlan(plan, compiled.cubin)
    assert loaded.resource_problem(limits) is None
    buffers = ProblemBuffers(plan.problem, seed, limits.l2_bytes, 1)
    workspace = cupy.empty(plan.workspace_elements, dtype=cupy.float32)
    results = []
    for _ in range(5):
        loaded.launch(buffers.verification(workspace))
        cupy.cuda.runtime.deviceSynchronize()
        values = buffers.output_values()
        error = float(cupy.linalg.norm(values - buffers.reference) / cupy.linalg.norm(buffers.reference))
        assert error <= buffers.tolerance, f"{plan.name} on {plan.problem.spec()}: error {error:.3g}"
        results.append(cupy.asnumpy(buffers.y))
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])
