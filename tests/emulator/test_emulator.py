"""The CPU emulator's CUDA semantics, on hand-written kernels with known results.

Most kernels live in one source compiled once per module (compiling costs ~1 s; running
a launch ~20 ms). Kernels that must not compile get sources of their own.
"""

from __future__ import annotations

import numpy as np
import pytest

from autoconv.emulator import (
    MAX_SHARED_BYTES,
    EmulatedKernelFault,
    EmulationTimeout,
    EmulatorCompileError,
    compile_program,
)
from autoconv.kernels.families import Launch

# Every kernel below follows autoconv's template conventions: pointers only, dynamic
# shared memory named smem.
SEMANTICS_SOURCE = r"""
extern "C" __global__ void reverse_with_barrier(const float* __restrict__ in, float* __restrict__ out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float* tile = reinterpret_cast<float*>(smem);
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = in[i];
    __syncthreads();
    out[i] = tile[blockDim.x - 1 - threadIdx.x];
}

// The same without the barrier: a thread reads a slot another thread has not written yet.
extern "C" __global__ void reverse_without_barrier(const float* __restrict__ in, float* __restrict__ out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float* tile = reinterpret_cast<float*>(smem);
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = in[i];
    out[i] = tile[blockDim.x - 1 - threadIdx.x];
}

// Tree reduction: log2(blockDim.x) barriers inside a loop, half the threads idle each step.
extern "C" __global__ void block_sum(const float* __restrict__ in, float* __restrict__ out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float* partial = reinterpret_cast<float*>(smem);
    const unsigned t = threadIdx.x;
    partial[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride)
            partial[t] += partial[t + stride];
        __syncthreads();
    }
    if (t == 0)
        out[blockIdx.x] = partial[0];
}

// Each block fills its shared memory (dynamic and static) with its own index; after the
// barrier every thread counts the entries that are not.
extern "C" __global__ void block_private(float* __restrict__ out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ int static_tag;
    int* seen = reinterpret_cast<int*>(smem);
    seen[threadIdx.x] = blockIdx.x;
    if (threadIdx.x == 0)
        static_tag = blockIdx.x;
    __syncthreads();
    int foreign = static_tag != (int)blockIdx.x;
    for (unsigned j = 0; j < blockDim.x; ++j)
        foreign += seen[j] != (int)blockIdx.x;
    out[blockIdx.x * blockDim.x + threadIdx.x] = foreign;
}

// A third of the threads return before the first barrier, another third between the
// barriers; the rest must still get through both.
extern "C" __global__ void early_return(const float* __restrict__ in, float* __restrict__ out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float* tile = reinterpret_cast<float*>(smem);
    const unsigned t = threadIdx.x;
    if (t % 3 == 0)
        return;
    tile[t] = 2.0f * in[t];
    __syncthreads();
    if (t % 3 == 1)
        return;
    __syncthreads();
    out[t] = tile[t] + tile[t - 1];
}

// Reads shared memory before anything wrote it, then writes it (for the next block to not see).
extern "C" __global__ void read_before_write(float* __restrict__ out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float* tile = reinterpret_cast<float*>(smem);
    out[blockIdx.x * blockDim.x + threadIdx.x] = tile[threadIdx.x];
    tile[threadIdx.x] = 1.0f;
}

extern "C" __global__ void indices(unsigned* __restrict__ out)
{
    const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned* o = out + 12 * (block * blockDim.x * blockDim.y * blockDim.z + thread);
    o[0] = blockIdx.x; o[1] = blockIdx.y; o[2] = blockIdx.z;
    o[3] = threadIdx.x; o[4] = threadIdx.y; o[5] = threadIdx.z;
    o[6] = blockDim.x; o[7] = blockDim.y; o[8] = blockDim.z;
    o[9] = gridDim.x; o[10] = gridDim.y; o[11] = gridDim.z;
}

__device__ __forceinline__ float twice(float v) { return 2.0f * v; }

constexpr int VECTOR_THREADS = 8;

extern "C" __global__ void __launch_bounds__(VECTOR_THREADS)
vector_ops(const float* __restrict__ a, float* __restrict__ out)
{
    const int i = threadIdx.x;
    const float4 v = __ldg(reinterpret_cast<const float4*>(a) + i);
    auto clamp = [](float value) { return max(min(value, 0.5f), -0.5f); };
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k)
        sum = fmaf(a[4 * i + k], 3.0f, sum);
    reinterpret_cast<float4*>(out)[i] = make_float4(twice(v.x), clamp(v.y), sum, (float)(min(i, 3) + max(i, 5)));
}

extern "C" __global__ void write_past_end(float* __restrict__ out)
{
    out[blockIdx.x * blockDim.x + threadIdx.x + 1] = 1.0f;  // the last thread writes one past the end
}

extern "C" __global__ void read_past_end(const float* __restrict__ in, float* __restrict__ out)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i + blockDim.x];  // the last block reads past the end
}

extern "C" __global__ void misaligned_float4(const float* __restrict__ in, float* __restrict__ out)
{
    const float4 v = *reinterpret_cast<const float4*>(in + 1);  // 4 bytes past a 256-byte boundary
    out[threadIdx.x] = v.x;
}

extern "C" __global__ void shared_past_launch_size(float* __restrict__ out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float* tile = reinterpret_cast<float*>(smem);
    tile[threadIdx.x + blockDim.x] = 1.0f;  // the launch gives blockDim.x floats
    out[threadIdx.x] = 0.0f;
}

// Lanes exchange values through shared memory within their warp, behind __syncwarp().
// Each warp publishes its slots and reads the next warp's, with only warp-level syncs: a
// missing __syncthreads(), which the GPU's warps, drifting apart after the first sync, expose.
extern "C" __global__ void warps_without_block_barrier(const float* __restrict__ in, float* __restrict__ out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float* tile = reinterpret_cast<float*>(smem);
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    __syncwarp();
    tile[threadIdx.x] = in[i];
    __syncwarp();
    out[i] = tile[(threadIdx.x + 32) % blockDim.x];
}

extern "C" __global__ void warp_reverse(const float* __restrict__ in, float* __restrict__ out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float* tile = reinterpret_cast<float*>(smem);
    const unsigned t = threadIdx.x, warp0 = t / 32 * 32;
    tile[t] = in[t];
    __syncwarp();
    out[t] = tile[warp0 + 31 - t % 32];
}

// Lane 0 waits at __syncthreads() while the rest of its warp waits at __syncwarp().
extern "C" __global__ void divergent_barriers(float* __restrict__ out)
{
    if (threadIdx.x == 0)
        __syncthreads();
    else
        __syncwarp();
    out[threadIdx.x] = 1.0f;
}

extern "C" __global__ void spin_forever(float* __restrict__ out)
{
    volatile float* flag = out;
    while (flag[0] != 1.0f) {
    }
}
"""

SEMANTICS_KERNELS = ("reverse_with_barrier", "reverse_without_barrier", "block_sum", "block_private",
                     "early_return", "read_before_write", "indices", "vector_ops", "write_past_end",
                     "read_past_end", "misaligned_float4", "shared_past_launch_size", "warp_reverse",
                     "warps_without_block_barrier",
                     "divergent_barriers", "spin_forever")


@pytest.fixture(scope="module")
def program():
    return compile_program(SEMANTICS_SOURCE, SEMANTICS_KERNELS, name="semantics")


def launch(kernel, grid, block, args, shared_bytes=0):
    return Launch(kernel, tuple(grid) + (1,) * (3 - len(grid)), tuple(block) + (1,) * (3 - len(block)),
                  tuple(args), shared_bytes)


def nan_floats(count):
    return np.full(count, np.nan, dtype=np.float32)


# ---- barriers ----------------------------------------------------------------------------------

def test_barrier_orders_shared_memory_writes_before_reads(program):
    data = np.arange(4 * 64, dtype=np.float32)
    out = program.run([launch("reverse_with_barrier", [4], [64], ["data", "out"], 64 * 4)],
                      {"data": data, "out": nan_floats(data.size)}, workers=2)["out"]
    np.testing.assert_array_equal(out, data.reshape(4, 64)[:, ::-1].ravel())


def test_missing_barrier_shows_as_poison(program):
    data = np.arange(2 * 64, dtype=np.float32)
    out = program.run([launch("reverse_without_barrier", [2], [64], ["data", "out"], 64 * 4)],
                      {"data": data, "out": nan_floats(data.size)}, workers=1)["out"]
    # Threads run in index order up to the next barrier: the first half of each block reads
    # slots the second half has not written yet (still the NaN poison).
    rows = out.reshape(2, 64)
    assert np.isnan(rows[:, :32]).all()
    np.testing.assert_array_equal(rows[:, 32:], data.reshape(2, 64)[:, 31::-1])


def test_barriers_in_a_loop(program):
    rng = np.random.default_rng(7)
    data = rng.integers(-100, 100, size=(5, 128)).astype(np.float32)  # exact sums in float32
    out = program.run([launch("block_sum", [5], [128], ["data", "out"], 128 * 4)],
                      {"data": data.ravel(), "out": nan_floats(5)}, workers=2)["out"]
    np.testing.assert_array_equal(out, data.sum(axis=1))


def test_returned_threads_do_not_hold_up_a_barrier(program):
    data = np.arange(96, dtype=np.float32) + 1
    out = program.run([launch("early_return", [1], [96], ["data", "out"], 96 * 4)],
                      {"data": data, "out": nan_floats(96)}, timeout=60)["out"]
    t = np.arange(96)
    writers = t % 3 == 2
    np.testing.assert_array_equal(out[writers], 2 * data[writers] + 2 * data[t[writers] - 1])
    assert np.isnan(out[~writers]).all()


def test_syncwarp_is_a_barrier_of_the_warp(program):
    data = np.arange(64, dtype=np.float32)
    out = program.run([launch("warp_reverse", [1], [64], ["data", "out"], 64 * 4)],
                      {"data": data, "out": nan_floats(64)})["out"]
    np.testing.assert_array_equal(out, data.reshape(2, 32)[:, ::-1].ravel())


def test_warps_run_skewed_between_block_barriers(program):
    """Warp-level syncs release one warp at a time, the same one while it can go on (the first
    in even blocks, the last in odd ones): a missing __syncthreads() between warps shows even
    where every warp syncs as often as the others (lockstep would hide it)."""
    data = np.arange(2 * 64, dtype=np.float32)
    out = program.run([launch("warps_without_block_barrier", [2], [64], ["data", "out"], 64 * 4)],
                      {"data": data, "out": nan_floats(data.size)}, workers=1)["out"].reshape(2, 2, 32)
    expected = data.reshape(2, 2, 32)[:, ::-1]
    assert np.isnan(out[0, 0]).all() and np.isnan(out[1, 1]).all()   # the warp ahead reads poison
    np.testing.assert_array_equal(out[0, 1], expected[0, 1])
    np.testing.assert_array_equal(out[1, 0], expected[1, 0])


def test_lanes_at_different_barriers_are_a_fault(program):
    with pytest.raises(EmulatedKernelFault, match="a kernel fault") as caught:
        program.run([launch("divergent_barriers", [1], [32], ["out"])], {"out": nan_floats(32)}, timeout=60)
    assert "divergent barriers: thread 1 waits at a warp-level sync" in caught.value.output


# ---- shared memory -------------------------------------------------------------------------------

@pytest.mark.parametrize("workers", [1, 2])
def test_shared_memory_is_private_to_a_block(program, workers):
    out = program.run([launch("block_private", [16], [32], ["out"], 32 * 4)],
                      {"out": nan_floats(16 * 32)}, workers=workers)["out"]
    np.testing.assert_array_equal(out, np.zeros(16 * 32, dtype=np.float32))


def test_unwritten_shared_memory_reads_as_poison_in_every_block(program):
    # One OS thread runs the three blocks one after the other: a block must not see what
    # the previous one wrote.
    out = program.run([launch("read_before_write", [3], [16], ["out"], 16 * 4)],
                      {"out": np.zeros(48, dtype=np.float32)}, workers=1)["out"]
    assert (out.view(np.uint32) == 0xFFFFFFFF).all()


# ---- built-in variables and device functions ----------------------------------------------------

def test_index_variables(program):
    grid, block = (3, 2, 2), (4, 3, 2)
    threads = np.prod(grid) * np.prod(block)
    out = program.run([launch("indices", grid, block, ["out"])],
                      {"out": np.zeros(12 * threads, dtype=np.uint32)}, workers=2)["out"]
    expected = [
        (bx, by, bz, tx, ty, tz, *block, *grid)
        for bz in range(grid[2]) for by in range(grid[1]) for bx in range(grid[0])
        for tz in range(block[2]) for ty in range(block[1]) for tx in range(block[0])
    ]
    np.testing.assert_array_equal(out.reshape(threads, 12), np.array(expected, dtype=np.uint32))


def test_vector_loads_and_math(program):
    a = np.linspace(-1.5, 1.5, 32, dtype=np.float32)
    out = program.run([launch("vector_ops", [1], [8], ["a", "out"])],
                      {"a": a, "out": nan_floats(32)})["out"].reshape(8, 4)
    quads = a.reshape(8, 4)
    i = np.arange(8)
    np.testing.assert_array_equal(out[:, 0], 2 * quads[:, 0])
    np.testing.assert_array_equal(out[:, 1], np.clip(quads[:, 1], -0.5, 0.5))
    np.testing.assert_allclose(out[:, 2], 3 * quads.sum(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(out[:, 3], np.minimum(i, 3) + np.maximum(i, 5))


# ---- faults the GPU would have: AddressSanitizer and UBSan -------------------------------------

def test_out_of_bounds_write_is_caught(program):
    with pytest.raises(EmulatedKernelFault) as caught:
        program.run([launch("write_past_end", [2], [32], ["out"])], {"out": nan_floats(64)})
    output = caught.value.output
    assert "heap-buffer-overflow" in output
    assert "WRITE of size 4" in output
    assert "in kernel write_past_end, block (1,0,0), thread (31,0,0)" in output


def test_out_of_bounds_read_is_caught(program):
    with pytest.raises(EmulatedKernelFault) as caught:
        program.run([launch("read_past_end", [2], [32], ["data", "out"])],
                    {"data": np.ones(64, dtype=np.float32), "out": nan_floats(64)})
    assert "heap-buffer-overflow" in caught.value.output
    assert "READ of size 4" in caught.value.output


def test_misaligned_float4_load_is_caught(program):
    with pytest.raises(EmulatedKernelFault) as caught:
        program.run([launch("misaligned_float4", [1], [4], ["data", "out"])],
                    {"data": np.ones(64, dtype=np.float32), "out": nan_floats(4)})
    assert "misaligned address" in caught.value.output
    assert "16 byte alignment" in caught.value.output


def test_shared_memory_past_the_launch_size_is_caught(program):
    with pytest.raises(EmulatedKernelFault) as caught:
        program.run([launch("shared_past_launch_size", [1], [32], ["out"], 32 * 4)], {"out": nan_floats(32)})
    assert "use-after-poison" in caught.value.output
    assert "in kernel shared_past_launch_size" in caught.value.output


def test_kernel_that_never_returns_times_out(program):
    with pytest.raises(EmulationTimeout):
        program.run([launch("spin_forever", [1], [1], ["out"])], {"out": np.zeros(1, dtype=np.float32)},
                    timeout=1)


# ---- launches the GPU would refuse --------------------------------------------------------------

@pytest.mark.parametrize("bad_launch, message", [
    (launch("reverse_with_barrier", [1], [32], ["data", "out"], MAX_SHARED_BYTES + 4),
     f"a block may use at most {MAX_SHARED_BYTES}"),
    (launch("reverse_with_barrier", [1], [1025], ["data", "out"]), "at most 1024 threads"),
    (launch("reverse_with_barrier", [1], [32], ["out"]), "the kernel takes 2 pointer arguments; the launch passes 1"),
    (launch("reverse_with_barrier", [1], [32], ["data", "missing"]), "no buffer named missing"),
    (launch("no_such_kernel", [1], [32], ["out"]), "no such kernel in this program"),
])
def test_refused_launches_say_why(program, bad_launch, message):
    with pytest.raises(EmulatedKernelFault, match="a launch the GPU would refuse") as caught:
        program.run([bad_launch], {"data": np.ones(32, dtype=np.float32), "out": nan_floats(32)})
    assert message in caught.value.output


# ---- integer atomics and __threadfence (blocks run concurrently) ----------------------------------

ATOMIC_SOURCE = r"""
// Every thread counts itself; the last block to arrive (after a fence) writes the total it saw.
extern "C" __global__ void count_arrivals(unsigned* __restrict__ counter, unsigned* __restrict__ seen)
{
    atomicAdd(&counter[0], 1u);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && atomicAdd(&counter[1], 1u) + 1 == gridDim.x)
        seen[0] = atomicAdd(&counter[0], 0u);
}
"""


@pytest.mark.parametrize("reverse", [False, True])
def test_integer_atomics_count_every_thread_of_concurrent_blocks(reverse):
    program = compile_program(ATOMIC_SOURCE, ["count_arrivals"], name="atomics")
    result = program.run([launch("count_arrivals", [64], [32], ["counter", "seen"])],
                         {"counter": np.zeros(2, dtype=np.uint32), "seen": np.zeros(1, dtype=np.uint32)},
                         workers=4, reverse_blocks=reverse)
    assert result["counter"].tolist() == [64 * 32, 64]
    assert result["seen"].tolist() == [64 * 32]


# ---- what the emulator does not model fails by name ---------------------------------------------

@pytest.mark.parametrize("statement, feature", [
    ("value = __shfl_sync(0xffffffffu, value, 0);", "__shfl_sync"),
    ("atomicAdd(out, value);", "atomicAdd"),
    ("value = __ballot_sync(0xffffffffu, value > 0);", "__ballot_sync"),
    ('asm("mov.u32 %0, %%laneid;" : "=r"(lane));', "asm"),
    ('asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));', "asm"),
])
def test_unmodelled_feature_is_named(statement, feature):
    source = ("extern \"C\" __global__ void uses_it(float* __restrict__ out)\n{\n"
              "    float value = out[threadIdx.x];\n    unsigned lane = 0;\n"
              f"    {statement}\n    out[threadIdx.x] = value + lane;\n}}\n")
    with pytest.raises(EmulatorCompileError) as caught:
        compile_program(source, ["uses_it"], name="unmodelled")
    assert f"autoconv emulator: {feature} (" in caught.value.output
    assert caught.value.unmodelled == (feature,)
    assert f"it uses {feature}, which the CPU emulator does not model" in str(caught.value)


def test_misnamed_dynamic_shared_memory_is_explained():
    source = ('extern "C" __global__ void other_name(float* __restrict__ out)\n{\n'
              '    extern __shared__ __align__(16) unsigned char buffer[];\n'
              '    buffer[threadIdx.x] = 1;\n    out[threadIdx.x] = buffer[0];\n}\n')
    with pytest.raises(EmulatorCompileError, match=r"must be declared exactly `extern __shared__"):
        compile_program(source, ["other_name"], name="misnamed_smem")


# ---- cp.async (cuda_pipeline.h) ---------------------------------------------------------------------

PIPELINE_SOURCE = r"""
#include <cuda_pipeline.h>

// Copies 16 floats per thread into shared memory with cp.async, then reads them back.
template <bool WAIT>
__device__ void copy_through_shared(const float* __restrict__ in, float* __restrict__ out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float* tile = reinterpret_cast<float*>(smem);
    const int t = threadIdx.x;
    __pipeline_memcpy_async(&tile[4 * t], &in[4 * t], 16);
    __pipeline_commit();
    // the last 4 bytes of this copy are zero-filled instead of read
    __pipeline_memcpy_async(&tile[4 * (t + blockDim.x)], &in[4 * (t + blockDim.x)], 16, 4);
    __pipeline_commit();
    if (WAIT)
        __pipeline_wait_prior(0);
    __syncthreads();
    for (int k = 0; k < 4; ++k) {
        out[4 * t + k] = tile[4 * t + k];
        out[4 * (t + blockDim.x) + k] = tile[4 * (t + blockDim.x) + k];
    }
}

extern "C" __global__ void copy_waited(const float* __restrict__ in, float* __restrict__ out)
{
    copy_through_shared<true>(in, out);
}

extern "C" __global__ void copy_not_waited(const float* __restrict__ in, float* __restrict__ out)
{
    copy_through_shared<false>(in, out);
}
"""


def test_async_copies_complete_when_waited_for():
    program = compile_program(PIPELINE_SOURCE, ["copy_waited", "copy_not_waited"], name="pipeline")
    data = np.arange(1, 65, dtype=np.float32)
    buffers = {"data": data, "out": nan_floats(64)}
    waited = program.run([launch("copy_waited", [1], [8], ["data", "out"], 64 * 4)], buffers)["out"]
    expected = data.copy()
    expected[32 + 3::4] = 0.0  # zero-filled tails of the second copies
    np.testing.assert_array_equal(waited, expected)

    not_waited = program.run([launch("copy_not_waited", [1], [8], ["data", "out"], 64 * 4)], buffers)["out"]
    assert np.isnan(not_waited).all(), "a read before __pipeline_wait_prior must see the poison"


def test_pipeline_functions_need_the_header():
    source = PIPELINE_SOURCE.replace("#include <cuda_pipeline.h>", "")
    with pytest.raises(EmulatorCompileError, match="does not compile") as caught:
        compile_program(source, ["copy_waited"], name="pipeline_without_header")
    assert "__pipeline_memcpy_async" in caught.value.output


# ---- WMMA (mma.h), TF32 -------------------------------------------------------------------------------

WMMA_SOURCE = r"""
#include <mma.h>
using namespace nvcuda;

// d = a * b + c for one 16x16x8 tile per warp: a row-major from global memory, b column-
// major, c loaded row-major; d stored column-major through shared memory.
extern "C" __global__ void tile_mma(const float* __restrict__ a, const float* __restrict__ b,
                                    const float* __restrict__ c, float* __restrict__ d)
{
    extern __shared__ __align__(128) unsigned char smem[];
    float* staging = reinterpret_cast<float*>(smem);
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
    wmma::load_matrix_sync(fa, a, 8);
    wmma::load_matrix_sync(fb, b, 8);
    wmma::load_matrix_sync(fc, c, 16, wmma::mem_row_major);
    for (int i = 0; i < fa.num_elements; ++i)
        fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(staging, fc, 16, wmma::mem_col_major);
    __syncthreads();
    for (int e = threadIdx.x; e < 256; e += blockDim.x)
        d[e] = staging[e];
}

extern "C" __global__ void to_tf32(const float* __restrict__ in, float* __restrict__ out)
{
    out[threadIdx.x] = wmma::__float_to_tf32(in[threadIdx.x]);
}

extern "C" __global__ void misaligned_tile(const float* __restrict__ a, float* __restrict__ out)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::load_matrix_sync(fa, a + 4, 8);  // 16 bytes past a 256-byte boundary
    out[threadIdx.x] = fa.x[0];
}
"""


@pytest.fixture(scope="module")
def wmma_program():
    return compile_program(WMMA_SOURCE, ["tile_mma", "to_tf32", "misaligned_tile"], name="wmma")


def test_wmma_tile_product(wmma_program):
    rng = np.random.default_rng(5)
    a = rng.integers(-8, 9, size=(16, 8)).astype(np.float32)   # small integers: exact in TF32
    b = rng.integers(-8, 9, size=(8, 16)).astype(np.float32)
    c = rng.integers(-50, 51, size=(16, 16)).astype(np.float32)
    d = wmma_program.run([launch("tile_mma", [1], [32], ["a", "b", "c", "d"], 256 * 4)],
                         {"a": a, "b": np.ascontiguousarray(b.T), "c": c, "d": nan_floats(256)})["d"]
    np.testing.assert_array_equal(d.reshape(16, 16).T, a @ b + c)  # stored column-major


def test_wmma_operands_are_read_as_tf32(wmma_program):
    # b = 1 + 2^-12 has bits below TF32's 10-bit mantissa: the tensor cores ignore them.
    a = np.zeros((16, 8), np.float32)
    a[:, 0] = 1.0
    b = np.full((16, 8), 1 + 2.0**-12, np.float32)  # b^T, column-major b
    d = wmma_program.run([launch("tile_mma", [1], [32], ["a", "b", "c", "d"], 256 * 4)],
                         {"a": a, "b": b, "c": np.zeros((16, 16), np.float32), "d": nan_floats(256)})["d"]
    np.testing.assert_array_equal(d, np.ones(256, np.float32))


def test_float_to_tf32_rounds_to_nearest_ties_away(wmma_program):
    ulp = 2.0**-10  # TF32's unit in the last place at 1.0
    values = np.array([1 + ulp / 2, 1 + ulp / 2 - 2.0**-20, -(1 + ulp / 2), 1 + 1.5 * ulp, np.inf], np.float32)
    out = wmma_program.run([launch("to_tf32", [1], [5], ["v", "out"])], {"v": values, "out": nan_floats(5)})["out"]
    np.testing.assert_array_equal(out, np.array([1 + ulp, 1, -(1 + ulp), 1 + 2 * ulp, np.inf], np.float32))


def test_wmma_misaligned_pointer_is_a_fault(wmma_program):
    with pytest.raises(EmulatedKernelFault) as caught:
        wmma_program.run([launch("misaligned_tile", [1], [32], ["a", "out"])],
                         {"a": np.ones(256, np.float32), "out": nan_floats(32)})
    assert "wmma::load_matrix_sync: pointer" in caught.value.output and "32-byte) aligned" in caught.value.output


def test_unmodelled_wmma_shape_is_named():
    source = ('#include <mma.h>\nusing namespace nvcuda;\nextern "C" __global__ void half_mma(float* out)\n{\n'
              '    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;\n'
              '    wmma::fill_fragment(acc, 0.0f);\n    out[0] = acc.x[0];\n}\n')
    with pytest.raises(EmulatorCompileError) as caught:
        compile_program(source, ["half_mma"], name="half_mma")
    assert "autoconv emulator: wmma (shapes other than m16n16k8, the TF32 one) is not modelled" in caught.value.output
    assert caught.value.unmodelled == ("wmma",)
