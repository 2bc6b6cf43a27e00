"""templates/wgmma_tf32.cuh: the emulator's model of wgmma.mma_async (TF32, A in registers or in
shared memory, B in shared memory, through 128-byte-swizzle descriptors), on one-warpgroup kernels against NumPy;
on the GPU, the same kernels against NumPy and the model.

The kernels lay B out and load each lane's A fragment by the PTX ISA's description, written
out here independently of the header (only the descriptor and the instructions come from it).
A kernel that loads A in another order, or lays B out unswizzled, must compute something else
(in the model exactly what the GPU computes); one that overwrites B before waiting for the
products must not get the right answer in the model; a lane that skips a product is a fault.
"""

from __future__ import annotations

import numpy as np
import pytest

from autoconv.emulator import EmulatedKernelFault, compile_program
from autoconv.kernels.families import Launch
from autoconv.kernels.render import environment
from tests.emulator.warpgroup_gpu import load_module, roundings_apart, run_warpgroup

N_COLUMNS = 16   # D is 64 x 16: two 8-row atoms of B
K_DEPTH = 32     # four k steps of 8: one 128-byte row of B per column n

KERNELS = r"""
constexpr int M = 64, NC = 16, KD = 32;

// D (64 x 16) = A (64 x 32, row-major) * B (32 x 16; bt = B^T, 16 x 32 row-major) + (c or 0).
// VARIANT 0 follows the ISA; 1 swaps a[1] and a[2]; 2 stores B^T unswizzled; 3 overwrites B in
// shared memory after committing the products, before waiting; 4 has lane 5 skip the products.
// VARIANT 5 reads A from shared memory too (mma_ss, A stored as B is: K-major, swizzled); 6 the
// same with A stored unswizzled; 7 overwrites A in shared memory before waiting.
template <int VARIANT>
__device__ __forceinline__ void warpgroup_product(const float* a, const float* bt, const float* c, float* d,
                                                  bool accumulate)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const unsigned misalignment = wgmma_tf32::shared_address(smem) % 1024;
    float* const b_tile = reinterpret_cast<float*>(smem + (misalignment == 0 ? 0 : 1024 - misalignment));
    const int tid = threadIdx.x;
    for (int i = tid; i < NC * KD; i += 128) {
        const int row = i / KD, k = i % KD;   // row = n
        const int chunk = VARIANT == 2 ? k / 4 : (k / 4) ^ (row % 8);
        b_tile[row * KD + chunk * 4 + k % 4] = bt[i];
    }
    float* const a_tile = b_tile + NC * KD;   // 64 rows of 32 k: whole 1024-byte atoms after B's two
    if (VARIANT >= 5) {
        for (int i = tid; i < M * KD; i += 128) {
            const int row = i / KD, k = i % KD;   // row = m
            const int chunk = VARIANT == 6 ? k / 4 : (k / 4) ^ (row % 8);
            a_tile[row * KD + chunk * 4 + k % 4] = a[i];
        }
    }
    wgmma_tf32::fence_shared_for_tensor_cores();
    __syncthreads();

    const int warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int row = 16 * warp + g;
    float acc[NC / 2];
    for (int j = 0; j < NC / 8; ++j) {
        acc[4 * j + 0] = c[row * NC + 8 * j + 2 * t];
        acc[4 * j + 1] = c[row * NC + 8 * j + 2 * t + 1];
        acc[4 * j + 2] = c[(row + 8) * NC + 8 * j + 2 * t];
        acc[4 * j + 3] = c[(row + 8) * NC + 8 * j + 2 * t + 1];
    }
    float frag[KD / 8][4];
    for (int step = 0; step < KD / 8; ++step) {
        const int k = 8 * step + t;
        frag[step][0] = a[row * KD + k];
        frag[step][1] = a[(row + 8) * KD + k];
        frag[step][2] = a[row * KD + k + 4];
        frag[step][3] = a[(row + 8) * KD + k + 4];
        if (VARIANT == 1) {
            frag[step][1] = a[row * KD + k + 4];
            frag[step][2] = a[(row + 8) * KD + k];
        }
    }
    if (VARIANT == 4 && tid == 5)
        return;
    wgmma_tf32::fence();
    const unsigned b_address = wgmma_tf32::shared_address(b_tile);
    const unsigned a_address = wgmma_tf32::shared_address(a_tile);
    for (int step = 0; step < KD / 8; ++step) {
        if (VARIANT >= 5)
            wgmma_tf32::mma_ss_m64n16k8(acc, wgmma_tf32::make_descriptor(a_address + 32 * step),
                                        wgmma_tf32::make_descriptor(b_address + 32 * step), step > 0 || accumulate);
        else
            wgmma_tf32::mma_m64n16k8(acc, frag[step], wgmma_tf32::make_descriptor(b_address + 32 * step),
                                     step > 0 || accumulate);
    }
    wgmma_tf32::commit();
    if (VARIANT == 3) {
        for (int i = tid; i < NC * KD; i += 128)
            b_tile[i] = 1.0f;
    }
    if (VARIANT == 7) {
        for (int i = tid; i < M * KD; i += 128)
            a_tile[i] = 1.0f;
    }
    wgmma_tf32::wait<0>();
    wgmma_tf32::fence_registers(acc);
    for (int j = 0; j < NC / 8; ++j) {
        d[row * NC + 8 * j + 2 * t] = acc[4 * j + 0];
        d[row * NC + 8 * j + 2 * t + 1] = acc[4 * j + 1];
        d[(row + 8) * NC + 8 * j + 2 * t] = acc[4 * j + 2];
        d[(row + 8) * NC + 8 * j + 2 * t + 1] = acc[4 * j + 3];
    }
}

extern "C" __global__ void by_the_isa(const float* a, const float* bt, const float* c, float* d)
{
    warpgroup_product<0>(a, bt, c, d, true);
}
extern "C" __global__ void from_zero(const float* a, const float* bt, const float* c, float* d)
{
    warpgroup_product<0>(a, bt, c, d, false);
}
extern "C" __global__ void a_swapped(const float* a, const float* bt, const float* c, float* d)
{
    warpgroup_product<1>(a, bt, c, d, true);
}
extern "C" __global__ void b_unswizzled(const float* a, const float* bt, const float* c, float* d)
{
    warpgroup_product<2>(a, bt, c, d, true);
}
extern "C" __global__ void b_overwritten_before_wait(const float* a, const float* bt, const float* c, float* d)
{
    warpgroup_product<3>(a, bt, c, d, true);
}
extern "C" __global__ void lane_missing(const float* a, const float* bt, const float* c, float* d)
{
    warpgroup_product<4>(a, bt, c, d, true);
}
extern "C" __global__ void a_shared(const float* a, const float* bt, const float* c, float* d)
{
    warpgroup_product<5>(a, bt, c, d, true);
}
extern "C" __global__ void a_shared_unswizzled(const float* a, const float* bt, const float* c, float* d)
{
    warpgroup_product<6>(a, bt, c, d, true);
}
extern "C" __global__ void a_shared_overwritten_before_wait(const float* a, const float* bt, const float* c,
                                                            float* d)
{
    warpgroup_product<7>(a, bt, c, d, true);
}
"""

KERNEL_NAMES = ("by_the_isa", "from_zero", "a_swapped", "b_unswizzled", "b_overwritten_before_wait", "lane_missing",
                "a_shared", "a_shared_unswizzled", "a_shared_overwritten_before_wait")
#: The kernels whose result the GPU defines (no race, every lane), compared with the model there.
DEFINED_ON_THE_GPU = ("by_the_isa", "from_zero", "a_swapped", "b_unswizzled", "a_shared", "a_shared_unswizzled")
SHARED_BYTES = (N_COLUMNS + 64) * K_DEPTH * 4 + 1024   # B^T and A, and room to align them to 1024 bytes


def source() -> str:
    """The header rendered as a template's include renders it (for the widths used), then the kernels."""
    header = environment().get_template("wgmma_tf32.cuh").render(WGMMA_N=[N_COLUMNS])
    return header + KERNELS


@pytest.fixture(scope="module")
def program():
    return compile_program(source(), KERNEL_NAMES, name="wgmma_tf32")


def operands(seed: int = 3):
    """Small integers: every product and sum is exact in float32 and in TF32 operands."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-8, 9, size=(64, K_DEPTH)).astype(np.float32)
    bt = rng.integers(-8, 9, size=(N_COLUMNS, K_DEPTH)).astype(np.float32)
    c = rng.integers(-50, 51, size=(64, N_COLUMNS)).astype(np.float32)
    return a, bt, c


def run(program, kernel: str, a, bt, c):
    launch = Launch(kernel, (1, 1, 1), (128, 1, 1), ("a", "bt", "c", "d"), SHARED_BYTES)
    d = np.full(c.shape, np.nan, np.float32)
    return program.run([launch], {"a": a, "bt": bt, "c": c, "d": d})["d"]


def test_the_isa_layouts_give_the_product(program):
    a, bt, c = operands()
    np.testing.assert_array_equal(run(program, "by_the_isa", a, bt, c), a @ bt.T + c)
    np.testing.assert_array_equal(run(program, "from_zero", a, bt, c), a @ bt.T)
    np.testing.assert_array_equal(run(program, "a_shared", a, bt, c), a @ bt.T + c)


@pytest.mark.parametrize("kernel", ["a_swapped", "b_unswizzled", "b_overwritten_before_wait", "a_shared_unswizzled",
                                    "a_shared_overwritten_before_wait"])
def test_other_layouts_and_an_early_overwrite_give_another_product(program, kernel):
    a, bt, c = operands()
    d = run(program, kernel, a, bt, c)
    assert not np.isnan(d).any()
    assert np.abs(d - (a @ bt.T + c)).max() >= 1.0


def test_a_swapped_is_the_product_with_a_permuted(program):
    # Swapping a[1] and a[2] exchanges, within each 16-row band and k step, rows 8-15 of
    # columns 0-3 with rows 0-7 of columns 4-7: exactly that product.
    a, bt, c = operands()
    permuted = a.copy().reshape(4, 16, 4, 8)   # (band, row, step, k)
    permuted[:, 8:, :, :4], permuted[:, :8, :, 4:] = a.reshape(4, 16, 4, 8)[:, :8, :, 4:], \
        a.reshape(4, 16, 4, 8)[:, 8:, :, :4]
    expected = permuted.reshape(64, K_DEPTH) @ bt.T + c
    np.testing.assert_array_equal(run(program, "a_swapped", a, bt, c), expected)


def test_unswizzled_b_is_read_through_the_swizzle(program):
    # Stored unswizzled, chunk c of row n is found where the swizzle looks for chunk c ^ (n % 8).
    a, bt, c = operands()
    seen = np.empty_like(bt)
    for n in range(N_COLUMNS):
        for k in range(K_DEPTH):
            seen[n, k] = bt[n, ((k // 4) ^ (n % 8)) * 4 + k % 4]
    np.testing.assert_array_equal(run(program, "b_unswizzled", a, bt, c), a @ seen.T + c)


def test_a_lane_that_skips_the_product_is_a_fault(program):
    a, bt, c = operands()
    with pytest.raises(EmulatedKernelFault) as caught:
        run(program, "lane_missing", a, bt, c)
    assert "wgmma.mma_async: only 31 of the 32 lanes of warp 0 execute it" in caught.value.output


def rounding_operands():
    """Rows 0-31: an operand with bits below TF32's mantissa, which the tensor cores ignore
    (the product is 1). Rows 32-63: 1 - 2^-15 (exact), then a second k step adds -2^-30, which
    a sum rounded toward zero takes to the float below."""
    a = np.zeros((64, K_DEPTH), np.float32)
    bt = np.zeros((N_COLUMNS, K_DEPTH), np.float32)
    c = np.zeros((64, N_COLUMNS), np.float32)
    a[:32, 0] = 1.0
    a[32:, 0] = -(2.0**-15)
    bt[:, 0] = 1 + 2.0**-12
    c[32:] = 1.0
    a[32:, 8] = -(2.0**-15)
    bt[:, 8] = 2.0**-15
    return a, bt, c


def test_operands_are_read_as_tf32_and_each_step_truncates(program):
    d = run(program, "by_the_isa", *rounding_operands())
    np.testing.assert_array_equal(d[:32], np.ones((32, N_COLUMNS), np.float32))
    below = np.nextafter(np.float32(1 - 2.0**-15), np.float32(0))
    np.testing.assert_array_equal(d[32:], np.full((32, N_COLUMNS), below, np.float32))


@pytest.fixture(scope="module")
def gpu_module():
    return load_module(source(), "wgmma_tf32_test")


def run_on_gpu(module, kernel: str, a, bt, c):
    return run_warpgroup(module, kernel, a, bt, c, SHARED_BYTES)


@pytest.mark.gpu
def test_the_gpu_agrees_with_the_model(program, gpu_module):
    """The real wgmma.mma_async: the ISA-ordered kernels give NumPy's product, and the wrongly
    ordered ones exactly the model's wrong products."""
    a, bt, c = operands(seed=11)
    np.testing.assert_array_equal(run_on_gpu(gpu_module, "by_the_isa", a, bt, c), a @ bt.T + c)
    np.testing.assert_array_equal(run_on_gpu(gpu_module, "a_shared", a, bt, c), a @ bt.T + c)
    for kernel in DEFINED_ON_THE_GPU:
        np.testing.assert_array_equal(run_on_gpu(gpu_module, kernel, a, bt, c), run(program, kernel, a, bt, c),
                                      err_msg=kernel)


@pytest.mark.gpu
def test_the_gpu_rounds_like_the_model_to_float32_precision(program, gpu_module):
    """Operand truncation and the sums of the k steps, on the crafted values and on random
    floats. The model rounds each k step's sum toward zero once; the hardware's adder keeps
    another number of bits (on the crafted rows it drops an addend 2^-6 of the accumulator's
    ulp that the model's rounding counts), so the two may differ by a few float32 roundings of
    the magnitudes summed, |c| + sum |a*b| (an H100 gave up to 32 ulp of a result that
    cancellation made small: docs/lab-notes/2026-11-23-wgmma-3xtf32-family.md), and no more."""
    rng = np.random.default_rng(5)
    random = (rng.uniform(-1, 1, (64, K_DEPTH)).astype(np.float32),
              rng.uniform(-1, 1, (N_COLUMNS, K_DEPTH)).astype(np.float32),
              rng.uniform(-1, 1, (64, N_COLUMNS)).astype(np.float32))
    for name, (a, bt, c) in (("crafted", rounding_operands()), ("random", random)):
        gpu, model = run_on_gpu(gpu_module, "by_the_isa", a, bt, c), run(program, "by_the_isa", a, bt, c)
        apart = roundings_apart(gpu, model, a, bt, c)
        print(f"{name}: {np.count_nonzero(gpu != model)} of {gpu.size} results differ from the model, by at most "
              f"{apart:.2f} x 2^-24 of the magnitudes summed")
        assert apart <= 8, name
    crafted = run_on_gpu(gpu_module, "by_the_isa", *rounding_operands())
    np.testing.assert_array_equal(crafted[:32], np.ones((32, N_COLUMNS), np.float32))  # operands truncated
