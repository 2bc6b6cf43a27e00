"""templates/mma_tf32.cuh: the emulator's model of mma.sync.m16n8k8 (TF32) and cvt.rna.tf32.f32,
on one-tile kernels against NumPy; on the GPU, the same kernels against NumPy and the model.

The kernels load each lane's fragments by the PTX ISA's table ("Matrix Fragments for
mma.m16n8k8", .tf32), written out here independently of the header. A kernel that loads them
in another order must compute something else (in the model exactly what the GPU computes),
and a lane that skips the MMA must be a fault.
"""

from __future__ import annotations

import numpy as np
import pytest

from autoconv.emulator import EmulatedKernelFault, compile_program
from autoconv.kernels.families import Launch
from autoconv.kernels.resources import templates_dir

KERNELS = r"""
// One 16x8x8 tile per warp: a 16x8 and b 8x8 (b[k][n]) and c, d 16x8, all row-major, tile
// number blockIdx.x * warps + warp. VARIANT 0 loads the fragments by the PTX table; 1 swaps a[1]
// and a[2] (A read column-major); 2 reads B transposed.
template <int VARIANT>
__device__ __forceinline__ void tile_product(const float* a, const float* b, const float* c, float* d)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int tile = blockIdx.x * (blockDim.x / 32) + warp;
    a += tile * 128, b += tile * 64, c += tile * 128, d += tile * 128;
    const int g = lane / 4, t = lane % 4;
    float fa[4] = {a[g * 8 + t], a[(g + 8) * 8 + t], a[g * 8 + t + 4], a[(g + 8) * 8 + t + 4]};
    if (VARIANT == 1) {
        fa[1] = a[g * 8 + t + 4];
        fa[2] = a[(g + 8) * 8 + t];
    }
    float fb[2] = {b[t * 8 + g], b[(t + 4) * 8 + g]};
    if (VARIANT == 2) {
        fb[0] = b[g * 8 + t];
        fb[1] = b[g * 8 + t + 4];
    }
    const float fc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
    float fd[4];
    mma_tf32::mma_m16n8k8(fd, fa, fb, fc);
    d[g * 8 + 2 * t] = fd[0];
    d[g * 8 + 2 * t + 1] = fd[1];
    d[(g + 8) * 8 + 2 * t] = fd[2];
    d[(g + 8) * 8 + 2 * t + 1] = fd[3];
}

extern "C" __global__ void tile_by_the_table(const float* __restrict__ a, const float* __restrict__ b,
                                             const float* __restrict__ c, float* __restrict__ d)
{
    tile_product<0>(a, b, c, d);
}

extern "C" __global__ void tile_a_swapped(const float* __restrict__ a, const float* __restrict__ b,
                                          const float* __restrict__ c, float* __restrict__ d)
{
    tile_product<1>(a, b, c, d);
}

extern "C" __global__ void tile_b_transposed(const float* __restrict__ a, const float* __restrict__ b,
                                             const float* __restrict__ c, float* __restrict__ d)
{
    tile_product<2>(a, b, c, d);
}

// Lane 5 returns before the MMA the other 31 lanes execute.
extern "C" __global__ void tile_lane_missing(const float* __restrict__ a, const float* __restrict__ b,
                                             const float* __restrict__ c, float* __restrict__ d)
{
    if (threadIdx.x == 5)
        return;
    tile_product<0>(a, b, c, d);
}

extern "C" __global__ void to_tf32(const float* __restrict__ in, float* __restrict__ out)
{
    out[threadIdx.x] = mma_tf32::round_to_tf32(in[threadIdx.x]);
}
"""

TILE_KERNELS = ("tile_by_the_table", "tile_a_swapped", "tile_b_transposed", "tile_lane_missing")


def source() -> str:
    """The header, as a template's Jinja include pastes it, then the test kernels."""
    return (templates_dir() / "mma_tf32.cuh").read_text() + KERNELS


@pytest.fixture(scope="module")
def program():
    return compile_program(source(), (*TILE_KERNELS, "to_tf32"), name="mma_tf32")


def operands(tiles: int, seed: int = 3):
    """Small integers: every product and sum is exact in float32 and in TF32 operands."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-8, 9, size=(tiles, 16, 8)).astype(np.float32)
    b = rng.integers(-8, 9, size=(tiles, 8, 8)).astype(np.float32)
    c = rng.integers(-50, 51, size=(tiles, 16, 8)).astype(np.float32)
    return a, b, c


def run_tiles(program, kernel: str, a, b, c, warps_per_block: int = 2):
    tiles = a.shape[0]
    launch = Launch(kernel, (tiles // warps_per_block, 1, 1), (32 * warps_per_block, 1, 1), ("a", "b", "c", "d"))
    d = np.full(c.shape, np.nan, np.float32)
    return program.run([launch], {"a": a, "b": b, "c": c, "d": d})["d"]


def test_the_table_gives_the_product(program):
    # 4 tiles, 2 warps per block: each warp's exchange is its own.
    a, b, c = operands(4)
    np.testing.assert_array_equal(run_tiles(program, "tile_by_the_table", a, b, c), a @ b + c)


@pytest.mark.parametrize("kernel", ["tile_a_swapped", "tile_b_transposed"])
def test_fragments_in_another_order_give_another_product(program, kernel):
    a, b, c = operands(2)
    d = run_tiles(program, kernel, a, b, c)
    assert not np.isnan(d).any()
    assert np.abs(d - (a @ b + c)).max() >= 1.0


def test_a_swapped_is_the_product_with_a_permuted(program):
    # Swapping a[1] and a[2] exchanges rows 8-15 of columns 0-3 with rows 0-7 of columns 4-7:
    # exactly that product, so the model places every lane's element by the table.
    a, b, c = operands(2)
    permuted = a.copy()
    permuted[:, 8:, :4], permuted[:, :8, 4:] = a[:, :8, 4:], a[:, 8:, :4]
    np.testing.assert_array_equal(run_tiles(program, "tile_a_swapped", a, b, c), permuted @ b + c)


def test_a_lane_that_skips_the_mma_is_a_fault(program):
    a, b, c = operands(1)
    with pytest.raises(EmulatedKernelFault) as caught:
        run_tiles(program, "tile_lane_missing", a, b, c, warps_per_block=1)
    assert "mma.sync.m16n8k8: only 31 of the 32 lanes of warp 0 execute it" in caught.value.output


def test_operands_are_read_as_tf32_and_the_sum_truncates(program):
    a = np.zeros((2, 16, 8), np.float32)
    b = np.zeros((2, 8, 8), np.float32)
    c = np.zeros((2, 16, 8), np.float32)
    # tile 0: b = 1 + 2^-12 has bits below TF32's mantissa, which the tensor cores ignore
    a[0, :, 0] = 1.0
    b[0, 0, :] = 1 + 2.0**-12
    # tile 1: 1 - 2^-30 lies between two floats; rounding toward zero gives the one below 1
    a[1, :, 0] = -(2.0**-15)
    b[1, 0, :] = 2.0**-15
    c[1] = 1.0
    d = run_tiles(program, "tile_by_the_table", a, b, c)
    np.testing.assert_array_equal(d[0], np.ones((16, 8), np.float32))
    np.testing.assert_array_equal(d[1], np.full((16, 8), np.nextafter(np.float32(1), np.float32(0))))


def test_round_to_tf32_is_to_nearest_ties_away(program):
    ulp = 2.0**-10  # TF32's unit in the last place at 1.0
    values = np.array([1 + ulp / 2, 1 + ulp / 2 - 2.0**-20, -(1 + ulp / 2), 1 + 1.5 * ulp, np.inf, -3.0], np.float32)
    out = program.run([Launch("to_tf32", (1, 1, 1), (6, 1, 1), ("v", "out"))],
                      {"v": values, "out": np.full(6, np.nan, np.float32)})["out"]
    np.testing.assert_array_equal(out, np.array([1 + ulp, 1, -(1 + ulp), 1 + 2 * ulp, np.inf, -3.0], np.float32))


@pytest.mark.gpu
def test_the_gpu_agrees_with_the_model(program):
    """The real mma.sync and cvt: the same kernels give NumPy's product, and the wrongly
    ordered ones exactly the model's wrong products."""
    import cupy

    module = cupy.RawModule(code=source(), options=("-std=c++17",))
    a, b, c = operands(4, seed=11)
    for kernel in ("tile_by_the_table", "tile_a_swapped", "tile_b_transposed"):
        d = cupy.full(c.shape, np.nan, np.float32)
        module.get_function(kernel)((2,), (64,), (cupy.asarray(a), cupy.asarray(b), cupy.asarray(c), d))
        if kernel == "tile_by_the_table":
            np.testing.assert_array_equal(cupy.asnumpy(d), a @ b + c)
        np.testing.assert_array_equal(cupy.asnumpy(d), run_tiles(program, kernel, a, b, c), err_msg=kernel)
    values = np.array([1 + 2.0**-11, 1 + 2.0**-11 - 2.0**-20, -(1 + 2.0**-11), 1 + 1.5 * 2.0**-10, np.inf, -3.0],
                      np.float32)
    out = cupy.full(6, np.nan, np.float32)
    module.get_function("to_tf32")((1,), (6,), (cupy.asarray(values), out))
    expected = program.run([Launch("to_tf32", (1, 1, 1), (6, 1, 1), ("v", "out"))],
                           {"v": values, "out": np.full(6, np.nan, np.float32)})["out"]
    np.testing.assert_array_equal(cupy.asnumpy(out), expected)
