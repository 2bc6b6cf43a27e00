"""The sums a verification on the GPU needs, by two kernels of our own that compile once per
machine whatever the arrays' sizes.

Why not CuPy's reductions: with its default accelerator (CUB) CuPy compiles a reduction for a
block size it picks from the array's size, so on a machine whose CuPy kernel cache is empty
every new size class costs seconds of NVRTC. The tuner paid that in the GPU worker, under the
GPU's lock, for the first candidate of such a problem, many times over in a first tune on a fresh
machine. Without CUB, CuPy reduces a whole array in one block of threads (tens of milliseconds
for a large layer's output, per candidate).

Both kernels run a fixed grid over a grid-stride loop and write one partial result per block;
the host adds the partials in block order, so a result does not depend on which block ends first.
"""

from __future__ import annotations

import functools

import numpy

#: Blocks and threads per block of both kernels (fixed: the partials' order, and so the sums'
#: rounding, is the same on every GPU).
BLOCKS = 1024
THREADS = 256

SOURCE = r"""
// Each block reduces its threads' values in shared memory, halving the active threads each step.
template <typename T>
__device__ T block_sum(T value, T* shared) {
    shared[threadIdx.x] = value;
    __syncthreads();
    for (int active = THREADS / 2; active > 0; active /= 2) {
        if (threadIdx.x < active) shared[threadIdx.x] += shared[threadIdx.x + active];
        __syncthreads();
    }
    T total = shared[0];
    __syncthreads();  // (shared is reused by the caller's next sum)
    return total;
}

// Per block, into partials[3 * block + 0..2]: how many values of out are NaN or infinite, the
// sum of (out - ref)^2 over the finite ones, and the sum of ref^2.
extern "C" __global__ void __launch_bounds__(THREADS)
comparison_partials(const double* out, const double* ref, long long count, double* partials) {
    __shared__ double shared[THREADS];
    double nonfinite = 0.0, difference_squares = 0.0, reference_squares = 0.0;
    for (long long i = (long long)blockIdx.x * THREADS + threadIdx.x; i < count;
         i += (long long)gridDim.x * THREADS) {
        const double value = out[i], expected = ref[i];
        if (isfinite(value)) {
            difference_squares += (value - expected) * (value - expected);
        } else {
            nonfinite += 1.0;
        }
        reference_squares += expected * expected;
    }
    nonfinite = block_sum(nonfinite, shared);
    difference_squares = block_sum(difference_squares, shared);
    reference_squares = block_sum(reference_squares, shared);
    if (threadIdx.x == 0) {
        partials[3 * blockIdx.x + 0] = nonfinite;
        partials[3 * blockIdx.x + 1] = difference_squares;
        partials[3 * blockIdx.x + 2] = reference_squares;
    }
}

// Per block, into partials[block]: how many 16-bit words of a and b differ.
extern "C" __global__ void __launch_bounds__(THREADS)
differing_word_partials(const unsigned short* a, const unsigned short* b, long long count,
                        unsigned long long* partials) {
    __shared__ unsigned long long shared[THREADS];
    unsigned long long differing = 0;
    for (long long i = (long long)blockIdx.x * THREADS + threadIdx.x; i < count;
         i += (long long)gridDim.x * THREADS) {
        differing += a[i] != b[i];
    }
    differing = block_sum(differing, shared);
    if (threadIdx.x == 0) partials[blockIdx.x] = differing;
}
"""


@functools.cache
def _module():
    import cupy

    return cupy.RawModule(code=f"#define THREADS {THREADS}\n{SOURCE}", options=("--std=c++17",))


def comparison_sums(out, ref) -> tuple[int, float, float]:
    """For two CuPy arrays of one shape (any float dtype, any strides): how many values of ``out``
    are NaN or infinite, the sum of ``(out - ref)**2`` over its finite values, and the sum of
    ``ref**2``, in float64."""
    import cupy

    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"comparison_sums: shapes {tuple(out.shape)} and {tuple(ref.shape)} differ")
    out = cupy.ascontiguousarray(out, dtype=cupy.float64)
    ref = cupy.ascontiguousarray(ref, dtype=cupy.float64)
    partials = cupy.empty(3 * BLOCKS, dtype=cupy.float64)
    _module().get_function("comparison_partials")(
        (BLOCKS,), (THREADS,), (out, ref, numpy.int64(out.size), partials))
    nonfinite, difference_squares, reference_squares = partials.get().reshape(BLOCKS, 3).sum(axis=0)
    return int(nonfinite), float(difference_squares), float(reference_squares)


def differing_words(a, b) -> int:
    """How many 16-bit words of CuPy arrays ``a`` and ``b`` (C-contiguous, of one size in bytes, an
    even number) differ: 0 when they hold the same bits (NaN payloads included)."""
    import cupy

    for name, array in (("a", a), ("b", b)):
        if not array.flags.c_contiguous or array.nbytes % 2:
            raise ValueError(f"differing_words: {name} must be C-contiguous with an even number of bytes "
                             f"(shape {tuple(array.shape)}, {array.dtype})")
    if a.nbytes != b.nbytes:
        raise ValueError(f"differing_words: {a.nbytes} bytes against {b.nbytes}")
    words_a, words_b = a.reshape(-1).view(cupy.uint16), b.reshape(-1).view(cupy.uint16)
    partials = cupy.empty(BLOCKS, dtype=cupy.uint64)
    _module().get_function("differing_word_partials")(
        (BLOCKS,), (THREADS,), (words_a, words_b, numpy.int64(words_a.size), partials))
    return int(partials.get().sum())
