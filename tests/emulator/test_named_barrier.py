"""The CPU emulator's model of named barriers (named_barrier::sync of templates/mbarrier.cuh,
bar.sync id, threads): the threads that reach an id wait until that many have, other warps go on
apart; too few is a hang naming the barrier, and threads asking one id for different counts are a
fault."""

from __future__ import annotations

import numpy as np
import pytest

from autoconv.emulator import EmulatedKernelFault, compile_program
from autoconv.kernels.families import Launch
from autoconv.kernels.render import environment

KERNELS = r"""
// 256 threads: warpgroup g (0 or 1) writes its values, syncs on barrier 1 + g (128 threads), then
// reads its neighbour's value of the same warpgroup: right only if the barrier held every writer.
extern "C" __global__ void per_warpgroup(float* out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float* const values = reinterpret_cast<float*>(smem);
    const int tid = threadIdx.x, group = tid / 128;
    values[tid] = static_cast<float>(tid);
    named_barrier::sync(1 + group, 128);
    out[tid] = values[group * 128 + (tid % 128 + 1) % 128];
}

// Thread 0's warp never reaches barrier 1, which counts 64 threads: the other warp waits forever.
extern "C" __global__ void too_few(float* out)
{
    if (threadIdx.x >= 32)
        named_barrier::sync(1, 64);
    out[threadIdx.x] = 1.0f;
}

// 96 threads: the first warp asks barrier 2 for 64 threads, the others for 96.
extern "C" __global__ void counts_disagree(float* out)
{
    named_barrier::sync(2, threadIdx.x < 32 ? 64 : 96);
    out[threadIdx.x] = 1.0f;
}
"""
NAMES = ("per_warpgroup", "too_few", "counts_disagree")


@pytest.fixture(scope="module")
def program():
    return compile_program(environment().get_template("mbarrier.cuh").render() + KERNELS, NAMES, name="named")


def run(program, kernel: str, threads: int):
    out = np.full(threads, np.nan, np.float32)
    launch = Launch(kernel, (1, 1, 1), (threads, 1, 1), ("out",), threads * 4)
    return program.run([launch], {"out": out}, timeout=60)["out"]


@pytest.mark.parametrize("workers", [1, 2])
def test_each_warpgroup_waits_for_its_own_writers(program, workers):
    tid = np.arange(256)
    expected = (tid // 128 * 128 + (tid % 128 + 1) % 128).astype(np.float32)
    np.testing.assert_array_equal(run(program, "per_warpgroup", 256), expected)


def test_too_few_threads_are_a_hang_naming_the_barrier(program):
    with pytest.raises(EmulatedKernelFault) as caught:
        run(program, "too_few", 64)
    assert "hang: thread 32 waits at named barrier 1 for 64 threads; 32 wait there" in caught.value.output


def test_different_counts_for_one_barrier_are_a_fault(program):
    with pytest.raises(EmulatedKernelFault) as caught:
        run(program, "counts_disagree", 96)
    assert "named barrier 2: thread 32 waits for 96 threads there, thread 0 for 64" in caught.value.output
