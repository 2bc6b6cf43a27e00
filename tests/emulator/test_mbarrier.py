"""templates/mbarrier.cuh: the emulator's model of Hopper's mbarriers (init, arrive, the arrival of
cp.async copies, waits by phase parity), on hand-written kernels: a producer warp filling a ring of
shared-memory stages with cp.async for a consumer warp, against NumPy; the parity rule on a fresh
barrier; and the faults a wrong kernel gets instead of a wrong result: a missing arrival (a hang,
named), a read without the wait (poison), a barrier used before init or before the __syncthreads()
that publishes its init. Statically, that nvcc assembles the header's PTX; on the GPU, that the
pipeline gives the model's result.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from autoconv.emulator import EmulatedKernelFault, compile_program
from autoconv.kernels.families import Launch
from autoconv.kernels.render import environment
from tests.emulator.ptx_probe import requires_nvcc, sm90a_ptx

TILE = 128               # floats per stage: the producer's 32 lanes copy 16 bytes each
TILES_PER_BLOCK = 10     # more than the stages: each stage's barriers go through several phases
BLOCKS = 2               # the second block runs its warps in the other order (the scheduler's skew)
BARRIER_BYTES = 64       # full[0..2] and empty[0..2], then the stages (16-byte aligned)

KERNELS = r"""
constexpr int TILE = 128, TILES_PER_BLOCK = 10, BARRIER_BYTES = 64;
constexpr int BY_THE_BOOK = 0, NO_WAIT = 1, MISSING_ARRIVAL = 2;

// Warp 0 copies tile t of this block's part of `in` into stage t % STAGES with cp.async (4 floats
// a lane) and arrives on full[stage] when its copy lands; warp 1 waits for full[stage], writes
// out[t][lane] = the sum of the stage's floats lane, 32 + lane, 64 + lane, 96 + lane (copied by
// four other lanes), and arrives on empty[stage]; the producer waits for empty[stage] before it
// refills it. NO_WAIT: the consumer reads the stage before it waits for full (and then waits,
// keeping the barriers' phases in step). MISSING_ARRIVAL: producer lane 7 does not arrive on full
// for tile 4.
template <int STAGES, int VARIANT>
__device__ __forceinline__ void ring(const float* in, float* out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    unsigned long long* const full = reinterpret_cast<unsigned long long*>(smem);
    unsigned long long* const empty = full + STAGES;
    float* const stages = reinterpret_cast<float*>(smem + BARRIER_BYTES);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const float* const block_in = in + blockIdx.x * TILES_PER_BLOCK * TILE;
    float* const block_out = out + blockIdx.x * TILES_PER_BLOCK * 32;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier::init(&full[s], 32);    // the producer's lanes, each when its copy lands
            mbarrier::init(&empty[s], 32);   // the consumer's lanes
        }
    }
    __syncthreads();
    for (int t = 0; t < TILES_PER_BLOCK; ++t) {
        const int s = t % STAGES;
        const unsigned round = t / STAGES;
        if (warp == 0) {
            mbarrier::wait(&empty[s], (round & 1) ^ 1);   // round 0: the fresh barrier's parity 1, at once
            __pipeline_memcpy_async(&stages[s * TILE + 4 * lane], &block_in[t * TILE + 4 * lane], 16);
            __pipeline_commit();
            if (!(VARIANT == MISSING_ARRIVAL && t == 4 && lane == 7))
                mbarrier::arrive_when_copies_land(&full[s]);
        } else {
            if (VARIANT != NO_WAIT)
                mbarrier::wait(&full[s], round & 1);
            float sum = 0.0f;
            for (int j = 0; j < 4; ++j)
                sum += stages[s * TILE + 32 * j + lane];
            if (VARIANT == NO_WAIT)
                mbarrier::wait(&full[s], round & 1);
            block_out[t * 32 + lane] = sum;
            mbarrier::arrive(&empty[s]);
        }
    }
}

#define RING(NAME, STAGES, VARIANT) \
    extern "C" __global__ void NAME(const float* in, float* out) { ring<STAGES, VARIANT>(in, out); }
RING(ring_of_3, 3, BY_THE_BOOK)
RING(ring_of_2, 2, BY_THE_BOOK)
RING(ring_read_before_wait, 3, NO_WAIT)
RING(ring_missing_arrival, 3, MISSING_ARRIVAL)

// 64 threads, one barrier counting 32 arrivals. Warp 0 waits with parity 1 (a fresh barrier: at
// once); after a __syncthreads() (so that no arrival comes before: that would complete phase 0,
// and phase 1 would be the one to wait for), warp 1 arrives and warp 0 waits with parity 0. Each
// event takes a ticket from one counter: tickets[tid] after the first wait, tickets[32 + tid]
// after the second (warp 0), tickets[64 + lane] before the arrival (warp 1).
extern "C" __global__ void parity_semantics(unsigned* tickets, unsigned* counter)
{
    extern __shared__ __align__(16) unsigned char smem[];
    unsigned long long* const barrier = reinterpret_cast<unsigned long long*>(smem);
    if (threadIdx.x == 0)
        mbarrier::init(barrier, 32);
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (warp == 0) {
        mbarrier::wait(barrier, 1);
        tickets[lane] = atomicAdd(counter, 1u);
    }
    __syncthreads();
    if (warp == 0) {
        mbarrier::wait(barrier, 0);
        tickets[32 + lane] = atomicAdd(counter, 1u);
    } else {
        tickets[64 + lane] = atomicAdd(counter, 1u);
        mbarrier::arrive(barrier);
    }
}

// The barrier (at shared offset 8) expects every thread's arrival; thread 37 forgets.
extern "C" __global__ void missing_arrival(float* out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    unsigned long long* const barrier = reinterpret_cast<unsigned long long*>(smem) + 1;
    if (threadIdx.x == 0)
        mbarrier::init(barrier, blockDim.x);
    __syncthreads();
    if (threadIdx.x != 37)
        mbarrier::arrive(barrier);
    mbarrier::wait(barrier, 0);
    out[threadIdx.x] = 1.0f;
}

extern "C" __global__ void used_before_init(float* out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    unsigned long long* const barrier = reinterpret_cast<unsigned long long*>(smem);
    mbarrier::arrive(barrier);
    out[threadIdx.x] = 1.0f;
}

// Thread 0 initialises the barrier; the others use it without the __syncthreads() in between.
extern "C" __global__ void used_before_the_init_is_published(float* out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    unsigned long long* const barrier = reinterpret_cast<unsigned long long*>(smem);
    if (threadIdx.x == 0)
        mbarrier::init(barrier, blockDim.x);
    mbarrier::arrive(barrier);
    mbarrier::wait(barrier, 0);
    out[threadIdx.x] = 1.0f;
}
"""

RINGS = ("ring_of_3", "ring_of_2", "ring_read_before_wait", "ring_missing_arrival")
KERNEL_NAMES = (*RINGS, "parity_semantics", "missing_arrival", "used_before_init",
                "used_before_the_init_is_published")
STAGES = {"ring_of_3": 3, "ring_of_2": 2, "ring_read_before_wait": 3, "ring_missing_arrival": 3}


def source() -> str:
    return "#include <cuda_pipeline.h>\n" + environment().get_template("mbarrier.cuh").render() + KERNELS


@pytest.fixture(scope="module")
def program():
    return compile_program(source(), KERNEL_NAMES, name="mbarrier")


def ring_input(seed: int = 7) -> np.ndarray:
    """Small integers: every sum exact in float32, so any order of adding gives NumPy's."""
    rng = np.random.default_rng(seed)
    return rng.integers(-100, 101, size=BLOCKS * TILES_PER_BLOCK * TILE).astype(np.float32)


def ring_expected(values: np.ndarray) -> np.ndarray:
    """out[tile][lane] = the sum of the tile's floats lane, 32 + lane, 64 + lane, 96 + lane."""
    return values.reshape(BLOCKS * TILES_PER_BLOCK, 4, 32).sum(axis=1).reshape(-1)


def ring_launch(kernel: str) -> Launch:
    return Launch(kernel, (BLOCKS, 1, 1), (64, 1, 1), ("in", "out"), BARRIER_BYTES + STAGES[kernel] * TILE * 4)


def run_ring(program, kernel: str, values: np.ndarray, **options) -> np.ndarray:
    out = np.full(BLOCKS * TILES_PER_BLOCK * 32, np.nan, np.float32)
    return program.run([ring_launch(kernel)], {"in": values, "out": out}, **options)["out"]


@pytest.mark.parametrize("kernel", ["ring_of_3", "ring_of_2"])
@pytest.mark.parametrize("workers", [1, 2])
def test_the_producer_consumer_ring_gives_the_sums(program, kernel, workers):
    values = ring_input()
    np.testing.assert_array_equal(run_ring(program, kernel, values, workers=workers), ring_expected(values))


def test_a_read_before_the_wait_sees_the_poison_or_the_last_round(program):
    """The copies land only when a wait sees their phase complete: a consumer that reads a stage
    before its wait reads the 0xFF poison (NaN) in the first round, though the producer has filled
    every stage before the consumer runs, and the tile of the round before in the second; in
    every block, whichever warp runs first. (Later reads may see the right tile: the producer's
    copies all land when it returns.)"""
    values = ring_input()
    out = run_ring(program, "ring_read_before_wait", values).reshape(BLOCKS, TILES_PER_BLOCK, 32)
    expected = ring_expected(values).reshape(BLOCKS, TILES_PER_BLOCK, 32)
    assert np.isnan(out[:, :3]).all()
    np.testing.assert_array_equal(out[:, 3:6], expected[:, :3])


def test_a_missing_arrival_is_a_hang_that_names_the_barrier(program):
    with pytest.raises(EmulatedKernelFault) as caught:
        run_ring(program, "ring_missing_arrival", ring_input(), timeout=60)
    output = caught.value.output
    assert "hang: thread" in output and "which never completes (arrivals missing?)" in output
    offset = int(re.search(r"of the mbarrier at shared offset (\d+)", output).group(1))
    assert offset in range(0, 6 * 8, 8)   # one of full[0..2], empty[0..2]


def test_the_hang_message_names_thread_phase_and_arrivals(program):
    with pytest.raises(EmulatedKernelFault) as caught:
        program.run([Launch("missing_arrival", (1, 1, 1), (64, 1, 1), ("out",), 16)],
                    {"out": np.zeros(64, np.float32)}, timeout=60)
    assert ("hang: thread 0 waits for the phase of parity 0 of the mbarrier at shared offset 8, which never "
            "completes (arrivals missing?): 1 of its 64 arrivals are pending") in caught.value.output


def test_a_fresh_barrier_has_completed_parity_1_and_parity_0_waits_for_the_arrivals(program):
    """Warp 0's wait(parity 1) returns at once (tickets 0-31, before any arrival); its wait(parity
    0) returns only after all 32 arrivals of warp 1 (tickets 32-63), though warp 0 runs first
    after the __syncthreads() (the scheduler's odd phases run the threads in reverse order, its
    even ones in order: the waits come first)."""
    buffers = {"tickets": np.full(96, 0xFFFFFFFF, np.uint32), "counter": np.zeros(1, np.uint32)}
    out = program.run([Launch("parity_semantics", (1, 1, 1), (64, 1, 1), ("tickets", "counter"), 16)], buffers)
    tickets = out["tickets"]
    after_parity_1, after_parity_0, arrivals = tickets[:32], tickets[32:64], tickets[64:]
    assert sorted(tickets) == list(range(96))
    assert after_parity_1.max() < arrivals.min(), "wait(parity 1) on a fresh barrier must not block"
    assert arrivals.max() < after_parity_0.min(), "wait(parity 0) must block until the 32 arrivals"


def test_a_barrier_used_before_init_is_a_fault(program):
    with pytest.raises(EmulatedKernelFault) as caught:
        program.run([Launch("used_before_init", (1, 1, 1), (32, 1, 1), ("out",), 16)],
                    {"out": np.zeros(32, np.float32)})
    assert ("mbarrier::arrive: mbarrier used before init: the 8 bytes at shared offset 0 hold "
            "0xffffffffffffffff") in caught.value.output


def test_a_barrier_used_before_the_syncthreads_after_init_is_a_fault(program):
    with pytest.raises(EmulatedKernelFault) as caught:
        program.run([Launch("used_before_the_init_is_published", (1, 1, 1), (32, 1, 1), ("out",), 16)],
                    {"out": np.zeros(32, np.float32)})
    assert ("the mbarrier at shared offset 0 is used by thread 1 before a __syncthreads() has made its init by "
            "thread 0 visible") in caught.value.output


# ---- the PTX (static) ---------------------------------------------------------------------------


@requires_nvcc
def test_ptxas_accepts_every_function(tmp_path):
    """The test kernels, which use every function of the header, compile to sm_90a machine code,
    with each PTX instruction as the header spells it."""
    ptx = sm90a_ptx(source(), tmp_path)
    for instruction in ("mbarrier.init.shared::cta.b64", "mbarrier.arrive.shared::cta.b64 _,",
                        "cp.async.mbarrier.arrive.noinc.shared::cta.b64",
                        "mbarrier.try_wait.parity.shared::cta.b64"):
        assert instruction in ptx, instruction


# ---- on the GPU ---------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["ring_of_3", "ring_of_2"])
def test_the_gpu_agrees_with_the_model(program, kernel):
    """The real mbarriers and cp.async: the producer/consumer ring gives NumPy's sums and the
    model's, bit for bit."""
    import cupy

    from tests.emulator.warpgroup_gpu import load_module

    module = load_module(source(), "mbarrier_test")
    values = ring_input(seed=13)
    out = cupy.full(BLOCKS * TILES_PER_BLOCK * 32, np.nan, np.float32)
    launch = ring_launch(kernel)
    module.get_function(kernel)(launch.grid, launch.block, (cupy.asarray(values), out),
                                shared_mem=launch.shared_bytes)
    gpu = cupy.asnumpy(out)
    np.testing.assert_array_equal(gpu, ring_expected(values))
    np.testing.assert_array_equal(gpu, run_ring(program, kernel, values))
