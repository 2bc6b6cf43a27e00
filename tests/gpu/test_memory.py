"""The device-memory estimate (``autoconv.gpu.memory``): what it counts, and on the
GPU, that it covers what a problem allocates."""

from __future__ import annotations

import pytest

from autoconv.errors import DeviceMemoryError
from autoconv.gpu.memory import RUNTIME_RESERVE_BYTES, check_fits, estimate, timing_set_bytes
from autoconv.problems.problem import parse_spec


def test_memory_estimate_counts_every_buffer():
    # N=2, C=3, 10x8 input, K=5, 3x3 filter, stride 2, pad 1: P=5, Q=4
    problem = parse_spec("N=2,C=3,H=10,W=8,K=5,R=3,S=3,stride=2,pad=1,bias=1")
    x, w, bias, y = 2 * 3 * 10 * 8, 5 * 3 * 3 * 3, 5, 2 * 5 * 5 * 4
    padded, window = 2 * 3 * 12 * 10, 2 * 3 * 5 * 4
    per_set = 4 * (x + w + y + bias)
    sets = -(-2 * 16384 // per_set)  # enough sets to exceed twice a 16 KiB L2
    need = estimate(problem, 16384, workspace_bytes=1000)
    assert (need.inputs, need.reference, need.reference_scratch, need.output) == (
        8 * (x + w + bias), 8 * y, 8 * (x + w + padded + window + y), 4 * y)
    assert (need.buffer_sets, need.timing_sets) == (sets, sets * per_set)
    steady = 8 * (x + w + bias) + 8 * y + 4 * y + sets * per_set
    assert need.total == steady + 1000 + RUNTIME_RESERVE_BYTES
    assert need.fixed == steady + RUNTIME_RESERVE_BYTES
    assert check_fits(problem, need.fixed, "GPU", 16384) is not None
    with pytest.raises(DeviceMemoryError, match=r"2x3x10x8 .*needs about .*timing buffer sets.* but GPU has"):
        check_fits(problem, need.fixed - 1, "GPU", 16384)


def test_memory_estimate_counts_16bit_buffers_at_their_size():
    problem = parse_spec("N=2,C=3,H=10,W=8,K=5,R=3,S=3,stride=2,pad=1,bias=1,precision=bf16,layout=NHWC")
    x, w, bias, y = 2 * 3 * 10 * 8, 5 * 3 * 3 * 3, 5, 2 * 5 * 5 * 4
    padded, window = 2 * 3 * 12 * 10, 2 * 3 * 5 * 4
    assert timing_set_bytes(problem) == 2 * (x + w + y + bias)
    assert timing_set_bytes(problem.with_(out_dtype="float32")) == 2 * (x + w + bias) + 4 * y
    need = estimate(problem, 16384)
    assert (need.inputs, need.output) == (4 * (x + w + bias), 2 * y)
    # the decoding's temporaries, the squares beside the float64 copies, the tolerance's bounds
    assert need.reference_scratch == 8 * (x + w + padded + window + y) + 16 * (x + w) + 6 * 8 * y
    assert estimate(problem.with_(out_dtype="float32"), 16384).output == 4 * y
    assert timing_set_bytes(parse_spec("N=2,C=3,H=10,W=8,K=5,R=3,S=3,stride=2,pad=1,bias=1")) == 4 * (x + w + y + bias)


@pytest.mark.gpu
@pytest.mark.parametrize("spec", ["N=4,C=32,H=40,W=36,K=48,R=3,S=3,pad=1,bias=1",
                                  "N=4,C=32,H=40,W=36,K=48,R=3,S=3,pad=1,bias=1,precision=bf16,layout=NHWC",
                                  "N=4,C=32,H=40,W=36,K=48,R=3,S=3,pad=1,precision=fp16,layout=NHWC,out_dtype=float32"])
def test_memory_estimate_covers_what_a_problem_allocates(spec):
    import cupy

    from autoconv.gpu.device import read_device
    from autoconv.gpu.worker import ProblemBuffers

    limits, _ = read_device(0)
    problem = parse_spec(spec)
    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    before = pool.total_bytes()
    buffers = ProblemBuffers(problem, 0, limits.l2_bytes, 256)
    cupy.cuda.runtime.deviceSynchronize()
    held = pool.total_bytes() - before  # blocks in use plus freed ones kept: about the peak
    need = estimate(problem, limits.l2_bytes)
    del buffers
    pool.free_all_blocks()
    assert held <= need.total, (held, need)
    assert held >= 0.5 * (need.total - need.reserve), (held, need)


@pytest.mark.parametrize("l2_bytes", [50 << 20, 60 << 20, 62914560, (50 << 20) + 1])
@pytest.mark.parametrize("per_set", [1, 4 << 20, 8 << 20, 3 << 20, 100 << 20])
def test_buffer_sets_together_exceed_twice_the_l2(l2_bytes, per_set):
    """Strictly more than twice the L2 (an H200's 60 MiB L2 with 8 MiB sets once gave exactly
    twice), unless capped by max_sets."""
    from autoconv.gpu.timing import buffer_sets_for

    sets = buffer_sets_for(per_set, l2_bytes, max_sets=1 << 30)
    assert sets * per_set > 2 * l2_bytes and (sets - 1) * per_set <= 2 * l2_bytes
