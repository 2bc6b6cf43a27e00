"""templates/wgmma_f16.cuh: the emulator's model of wgmma.mma_async with 16-bit operands (bf16 and
fp16, m64nNk16, A and B in shared memory through 128-byte-swizzle descriptors, float32
accumulators), on one-warpgroup kernels against NumPy; on the GPU, the same kernels against NumPy
and the model; statically, that each format runs the asm of its PTX types and that nvcc assembles
every width (the asm's operand order: test_inline_ptx.py).

The kernels lay A and B out by the PTX ISA's description, written out here independently of the
header (only the descriptor and the instructions come from it). A kernel that lays an operand
out unswizzled, reads the operands in the other 16-bit format, or overwrites B before waiting
must compute something else (in the model exactly what the GPU computes, where the GPU defines
it); a lane that skips a product is a fault.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from autoconv.emulator import EmulatedKernelFault, compile_program
from autoconv.kernels.families import Launch
from autoconv.kernels.render import environment
from autoconv.kernels.resources import templates_dir
from tests.emulator.ptx_probe import requires_nvcc, sm90a_ptx
from tests.emulator.warpgroup_gpu import load_module, roundings_apart, run_warpgroup

N_COLUMNS = 16   # D is 64 x 16: two 8-row atoms of B
K_DEPTH = 64     # four k steps of 16: one 128-byte row per row of A and column of B
WIDTHS = (16, 32, 64, 104, 128, 192, 208, 224, 256)

KERNELS = r"""
constexpr int M = 64, NC = 16, KD = 64;

// D (64 x 16) = A (64 x 64, row-major) * B (64 x 16; bt = B^T, 16 x 64 row-major) + (c or 0),
// A and B as 16-bit bits. VARIANT 0 follows the ISA; 1 stores B^T unswizzled; 2 stores A
// unswizzled; 3 overwrites B after committing the products, before waiting; 4 has lane 5 skip
// the products. READ is the format the products are told (the data's may differ).
template <int VARIANT, int READ>
__device__ __forceinline__ void warpgroup_product(const unsigned short* a, const unsigned short* bt, const float* c,
                                                  float* d, bool accumulate)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const unsigned misalignment = wgmma_f16::shared_address(smem) % 1024;
    unsigned char* const aligned = smem + (misalignment == 0 ? 0 : 1024 - misalignment);
    unsigned short* const b_tile = reinterpret_cast<unsigned short*>(aligned);
    unsigned short* const a_tile = b_tile + NC * KD;   // whole 1024-byte atoms after B's two
    const int tid = threadIdx.x;
    for (int i = tid; i < NC * KD; i += 128) {
        const int row = i / KD, k = i % KD;   // row = n
        const int chunk = VARIANT == 1 ? k / 8 : (k / 8) ^ (row % 8);
        b_tile[row * KD + chunk * 8 + k % 8] = bt[i];
    }
    for (int i = tid; i < M * KD; i += 128) {
        const int row = i / KD, k = i % KD;   // row = m
        const int chunk = VARIANT == 2 ? k / 8 : (k / 8) ^ (row % 8);
        a_tile[row * KD + chunk * 8 + k % 8] = a[i];
    }
    wgmma_f16::fence_shared_for_tensor_cores();
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
    if (VARIANT == 4 && tid == 5)
        return;
    wgmma_f16::fence();
    const unsigned b_address = wgmma_f16::shared_address(b_tile);
    const unsigned a_address = wgmma_f16::shared_address(a_tile);
    for (int step = 0; step < KD / 16; ++step)
        wgmma_f16::mma_ss_m64nNk16<NC, READ>(acc, wgmma_f16::make_descriptor(a_address + 32 * step),
                                            wgmma_f16::make_descriptor(b_address + 32 * step), step > 0 || accumulate);
    wgmma_f16::commit();
    if (VARIANT == 3) {
        for (int i = tid; i < NC * KD; i += 128)
            b_tile[i] = 0x3F80;   // bf16 1.0
    }
    wgmma_f16::wait<0>();
    wgmma_f16::fence_registers(acc);
    for (int j = 0; j < NC / 8; ++j) {
        d[row * NC + 8 * j + 2 * t] = acc[4 * j + 0];
        d[row * NC + 8 * j + 2 * t + 1] = acc[4 * j + 1];
        d[(row + 8) * NC + 8 * j + 2 * t] = acc[4 * j + 2];
        d[(row + 8) * NC + 8 * j + 2 * t + 1] = acc[4 * j + 3];
    }
}

#define KERNEL(NAME, VARIANT, READ, ACCUMULATE) \
    extern "C" __global__ void NAME(const unsigned short* a, const unsigned short* bt, const float* c, float* d) \
    { \
        warpgroup_product<VARIANT, READ>(a, bt, c, d, ACCUMULATE); \
    }
KERNEL(bf16_by_the_isa, 0, wgmma_f16::BF16, true)
KERNEL(f16_by_the_isa, 0, wgmma_f16::F16, true)
KERNEL(bf16_from_zero, 0, wgmma_f16::BF16, false)
KERNEL(bf16_b_unswizzled, 1, wgmma_f16::BF16, true)
KERNEL(f16_a_unswizzled, 2, wgmma_f16::F16, true)
KERNEL(bf16_b_overwritten_before_wait, 3, wgmma_f16::BF16, true)
KERNEL(bf16_lane_missing, 4, wgmma_f16::BF16, true)
"""

KERNEL_NAMES = ("bf16_by_the_isa", "f16_by_the_isa", "bf16_from_zero", "bf16_b_unswizzled", "f16_a_unswizzled",
                "bf16_b_overwritten_before_wait", "bf16_lane_missing")
#: The kernels whose result the GPU defines (no race, every lane), compared with the model there.
DEFINED_ON_THE_GPU = ("bf16_by_the_isa", "f16_by_the_isa", "bf16_from_zero", "bf16_b_unswizzled", "f16_a_unswizzled")
SHARED_BYTES = (N_COLUMNS + 64) * K_DEPTH * 2 + 1024   # B^T and A, and room to align them to 1024 bytes


def source() -> str:
    return environment().get_template("wgmma_f16.cuh").render() + KERNELS


@pytest.fixture(scope="module")
def program():
    return compile_program(source(), KERNEL_NAMES, name="wgmma_f16")


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """bfloat16 bits of float32 values that bfloat16 holds exactly (checked)."""
    bits = (np.asarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)
    assert np.array_equal(bf16_values(bits), values), "not exact in bfloat16"
    return bits


def bf16_values(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f16_bits(values: np.ndarray) -> np.ndarray:
    half = np.asarray(values, np.float32).astype(np.float16)
    assert np.array_equal(half.astype(np.float32), values), "not exact in float16"
    return half.view(np.uint16)


def integers(seed: int = 3):
    """Small integers: exact in both formats, and every product and sum exact in float32."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-8, 9, size=(64, K_DEPTH)).astype(np.float32)
    bt = rng.integers(-8, 9, size=(N_COLUMNS, K_DEPTH)).astype(np.float32)
    c = rng.integers(-50, 51, size=(64, N_COLUMNS)).astype(np.float32)
    return a, bt, c


def bits_of(kernel: str):
    return bf16_bits if kernel.startswith("bf16") else f16_bits


def run(program, kernel: str, a_bits, bt_bits, c):
    launch = Launch(kernel, (1, 1, 1), (128, 1, 1), ("a", "bt", "c", "d"), SHARED_BYTES)
    d = np.full(c.shape, np.nan, np.float32)
    return program.run([launch], {"a": a_bits, "bt": bt_bits, "c": c, "d": d})["d"]


@pytest.mark.parametrize("kernel", ["bf16_by_the_isa", "f16_by_the_isa"])
def test_the_isa_layout_gives_the_product(program, kernel):
    a, bt, c = integers()
    bits = bits_of(kernel)
    np.testing.assert_array_equal(run(program, kernel, bits(a), bits(bt), c), a @ bt.T + c)


def test_from_zero_drops_the_accumulator(program):
    a, bt, c = integers()
    np.testing.assert_array_equal(run(program, "bf16_from_zero", bf16_bits(a), bf16_bits(bt), c), a @ bt.T)


def swizzle_reads(tile: np.ndarray) -> np.ndarray:
    """What the swizzle reads from a tile stored unswizzled: chunk c of row r from chunk c ^ (r % 8)."""
    seen = np.empty_like(tile)
    for r in range(tile.shape[0]):
        for k in range(tile.shape[1]):
            seen[r, k] = tile[r, ((k // 8) ^ (r % 8)) * 8 + k % 8]
    return seen


def test_unswizzled_operands_are_read_through_the_swizzle(program):
    a, bt, c = integers()
    np.testing.assert_array_equal(run(program, "bf16_b_unswizzled", bf16_bits(a), bf16_bits(bt), c),
                                  a @ swizzle_reads(bt).T + c)
    np.testing.assert_array_equal(run(program, "f16_a_unswizzled", f16_bits(a), f16_bits(bt), c),
                                  swizzle_reads(a) @ bt.T + c)


def test_the_format_read_is_the_format_told(program):
    """fp16 bits read as bf16 (and back) are other numbers: a kernel told the wrong format fails."""
    a, bt, c = integers()
    wrong = run(program, "bf16_by_the_isa", f16_bits(a), f16_bits(bt), c)
    expected = bf16_values(f16_bits(a)).astype(np.float64) @ bf16_values(f16_bits(bt)).astype(np.float64).T + c
    assert np.abs(wrong - (a @ bt.T + c)).max() >= 1.0
    np.testing.assert_allclose(wrong, expected, rtol=1e-4)  # (huge sums, truncated per k step)


def test_overwriting_b_before_the_wait_gives_another_product(program):
    a, bt, c = integers()
    d = run(program, "bf16_b_overwritten_before_wait", bf16_bits(a), bf16_bits(bt), c)
    assert not np.isnan(d).any() and np.abs(d - (a @ bt.T + c)).max() >= 1.0


def test_a_lane_that_skips_the_product_is_a_fault(program):
    a, bt, c = integers()
    with pytest.raises(EmulatedKernelFault) as caught:
        run(program, "bf16_lane_missing", bf16_bits(a), bf16_bits(bt), c)
    assert "wgmma.mma_async: only 31 of the 32 lanes of warp 0 execute it" in caught.value.output


def accumulation_operands():
    """c = 1, and every k step adds 16 products of 2^-16, 2^-12: float32 keeps each (1 + 2^-10
    after the four steps); a 16-bit accumulator would lose every step's (2^-12 is below half the
    ulp of 1 in fp16, 2^-10, and in bf16, 2^-7) and stay at 1."""
    a = np.full((64, K_DEPTH), 2.0**-8, np.float32)
    bt = np.full((N_COLUMNS, K_DEPTH), 2.0**-8, np.float32)
    c = np.ones((64, N_COLUMNS), np.float32)
    return a, bt, c


@pytest.mark.parametrize("kernel", ["bf16_by_the_isa", "f16_by_the_isa"])
def test_the_accumulation_is_float32(program, kernel):
    a, bt, c = accumulation_operands()
    bits = bits_of(kernel)
    np.testing.assert_array_equal(run(program, kernel, bits(a), bits(bt), c),
                                  np.full(c.shape, 1 + 2.0**-10, np.float32))


def test_subnormal_and_negative_f16_operands_are_read_exactly(program):
    a, bt, c = integers()
    a[:, 0] = -(2.0**-24)   # the smallest fp16 subnormal
    a[:, 1] = 3 * 2.0**-20
    bt[:, 0] = -(2.0**10)
    bt[:, 1] = 2.0**8
    expected = a.astype(np.float64) @ bt.astype(np.float64).T + c
    np.testing.assert_array_equal(run(program, "f16_by_the_isa", f16_bits(a), f16_bits(bt), c), expected)


# ---- on the GPU --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_module():
    return load_module(source(), "wgmma_f16_test")


def run_on_gpu(module, kernel: str, a_bits, bt_bits, c):
    return run_warpgroup(module, kernel, a_bits, bt_bits, c, SHARED_BYTES)


@pytest.mark.gpu
def test_the_gpu_agrees_with_the_model(program, gpu_module):
    """The real wgmma.mma_async: the ISA-ordered kernels give NumPy's product, the others exactly
    the model's other products, and the accumulation keeps float32's bits."""
    a, bt, c = integers(seed=11)
    for kernel in DEFINED_ON_THE_GPU:
        bits = bits_of(kernel)
        np.testing.assert_array_equal(run_on_gpu(gpu_module, kernel, bits(a), bits(bt), c),
                                      run(program, kernel, bits(a), bits(bt), c), err_msg=kernel)
    np.testing.assert_array_equal(run_on_gpu(gpu_module, "bf16_by_the_isa", bf16_bits(a), bf16_bits(bt), c),
                                  a @ bt.T + c)
    # fp16 bits read as bf16: huge, inexact sums, which the GPU adds as the model does to within
    # a few float32 roundings (below), and both far from the product of the fp16 values.
    wrong_format = f16_bits(a), f16_bits(bt), c
    gpu = run_on_gpu(gpu_module, "bf16_by_the_isa", *wrong_format)
    assert np.abs(gpu - (a @ bt.T + c)).max() >= 1.0
    assert roundings_apart(gpu, run(program, "bf16_by_the_isa", *wrong_format),
                           bf16_values(wrong_format[0]), bf16_values(wrong_format[1]), c) <= 8
    for kernel in ("bf16_by_the_isa", "f16_by_the_isa"):
        a1, bt1, c1 = accumulation_operands()
        bits = bits_of(kernel)
        np.testing.assert_array_equal(run_on_gpu(gpu_module, kernel, bits(a1), bits(bt1), c1),
                                      np.full(c1.shape, 1 + 2.0**-10, np.float32), err_msg=kernel)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["bf16_by_the_isa", "f16_by_the_isa"])
def test_the_gpu_rounds_like_the_model_to_float32_precision(program, gpu_module, kernel):
    """Random operands in each format: the model rounds each k step's sum toward zero once; the
    hardware's adder may keep another number of bits, so the two may differ by a few float32
    roundings of the magnitudes summed, |c| + sum |a*b|, and no more."""
    rng = np.random.default_rng(5)
    to_bits = bf16_bits if kernel.startswith("bf16") else f16_bits
    exact = ((lambda x: bf16_values((x.view(np.uint32) >> 16).astype(np.uint16))) if kernel.startswith("bf16")
             else (lambda x: x.astype(np.float16).astype(np.float32)))
    a = exact(rng.uniform(-1, 1, (64, K_DEPTH)).astype(np.float32))
    bt = exact(rng.uniform(-1, 1, (N_COLUMNS, K_DEPTH)).astype(np.float32))
    c = rng.uniform(-1, 1, (64, N_COLUMNS)).astype(np.float32)
    gpu, model = (run_on_gpu(gpu_module, kernel, to_bits(a), to_bits(bt), c),
                  run(program, kernel, to_bits(a), to_bits(bt), c))
    apart = roundings_apart(gpu, model, a, bt, c)
    print(f"{kernel}: {np.count_nonzero(gpu != model)} of {gpu.size} results differ from the model, by at most "
          f"{apart:.2f} x 2^-24 of the magnitudes summed")
    assert apart <= 8



# ---- the asm statements (static) ---------------------------------------------------------------

def test_the_format_names_the_ptx_types():
    """Each (N, FORMAT) branch of the product runs the asm of width N with FORMAT's PTX types."""
    text = (templates_dir() / "wgmma_f16.cuh").read_text()
    dispatcher = re.search(r"__device__ __forceinline__ void mma_ss_m64nNk16\(.*?\n\}", text, re.S).group(0)
    branches = re.findall(r"if constexpr \(N == (\d+) && FORMAT == (BF16|F16)\)\n\s+"
                          r"AUTOCONV_WGMMA_SS_M64N(\d+)K16\(\"(\w+)\.(\w+)\"\);", dispatcher)
    assert sorted(branches) == sorted((str(n), fmt, str(n), fmt.lower(), fmt.lower())
                                      for n in WIDTHS for fmt in ("BF16", "F16"))



@requires_nvcc
def test_ptxas_accepts_every_width_and_format(tmp_path):
    """Every width in both formats assembles for sm_90a, as one wgmma each with the types told."""
    cases = [(n, fmt) for n in WIDTHS for fmt in ("BF16", "F16")]
    calls = "\n".join(f"    {{ float d[{n // 2}] = {{}}; "
                      f"wgmma_f16::mma_ss_m64nNk16<{n}, wgmma_f16::{fmt}>(d, a, b, true); "
                      f"wgmma_f16::commit(); wgmma_f16::wait<0>(); out[{i}] = d[{n // 2 - 1}]; }}"
                      for i, (n, fmt) in enumerate(cases))
    ptx = sm90a_ptx(source().split("constexpr int M = 64")[0] + f"""
extern "C" __global__ void probe(float* out, unsigned long long a, unsigned long long b)
{{
{calls}
}}
""", tmp_path)
    found = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\.f32\.(bf16|f16)\.(bf16|f16)", ptx)
    assert sorted(found) == sorted((str(n), t, t) for n in WIDTHS for t in ("bf16", "f16"))


# ---- the conversions: to_float and pack_rounded ---------------------------------------------------

CONVERSIONS = r"""
// pairs[i] = pack_rounded<F>(values[2i], values[2i+1]) for each format; floats[i] = to_float<F>(bits[i]).
extern "C" __global__ void convert(const float* values, const unsigned short* bits, unsigned* bf16_pairs,
                                   unsigned* f16_pairs, float* bf16_floats, float* f16_floats)
{
    for (int i = threadIdx.x; i < COUNT / 2; i += blockDim.x) {
        bf16_pairs[i] = wgmma_f16::pack_rounded<wgmma_f16::BF16>(values[2 * i], values[2 * i + 1]);
        f16_pairs[i] = wgmma_f16::pack_rounded<wgmma_f16::F16>(values[2 * i], values[2 * i + 1]);
    }
    for (int i = threadIdx.x; i < COUNT; i += blockDim.x) {
        bf16_floats[i] = wgmma_f16::to_float<wgmma_f16::BF16>(bits[i]);
        f16_floats[i] = wgmma_f16::to_float<wgmma_f16::F16>(bits[i]);
    }
}
"""


def conversion_values() -> np.ndarray:
    """Floats that test rounding to nearest even in both formats: ties each way, carries into
    the exponent, overflow, fp16 subnormals and their ties, signed zeros, inf, NaN, and random
    floats over the exponents that matter."""
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan,
               1 + 2.0**-8, 1 + 3 * 2.0**-8, 1 + 2.0**-8 + 2.0**-20,   # bf16: ties to 1.0, to 1+2^-6; above the tie
               1 + 2.0**-11, 1 + 3 * 2.0**-11, 2 - 2.0**-9, 2 - 2.0**-12,   # fp16 ties; carries into the exponent
               65504.0, 65519.0, 65520.0, -65536.0, 3.4e38, -3.4e38,    # fp16 max, its last tie, overflow
               2.0**-24, 2.0**-25, 3 * 2.0**-25, 2.0**-14 - 2.0**-25, 5 * 2.0**-26, 2.0**-30,   # fp16 subnormals
               1e-40, -1e-45]                                            # float32 subnormals
    rng = np.random.default_rng(9)
    random = (rng.uniform(-1, 1, 2000) * 2.0 ** rng.integers(-30, 20, 2000)).astype(np.float32)
    values = np.concatenate([np.array(special, np.float32), random])
    return values[: len(values) // 2 * 2]


def bf16_rounded(values: np.ndarray) -> np.ndarray:
    """NumPy's bfloat16 rounding to nearest even (NaN to the quiet NaN of its sign)."""
    bits = values.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + (bits >> 16 & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), (bits >> 16 & 0x8000).astype(np.uint16) | 0x7FC0, rounded).astype(np.uint16)


def f16_rounded(values: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        half = values.astype(np.float16)
    return np.where(np.isnan(values), (values.view(np.uint32) >> 16 & 0x8000).astype(np.uint16) | 0x7E00,
                    half.view(np.uint16)).astype(np.uint16)


def conversion_buffers(values: np.ndarray) -> dict[str, np.ndarray]:
    spread = (np.arange(len(values), dtype=np.uint32) * 32749 % 65536).astype(np.uint16)   # every exponent, NaNs too
    named = np.array([0x0001, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0x8001, 0x3C00, 0x3F80], np.uint16)
    bits = np.concatenate([named, spread])[: len(values)]
    return {"values": values, "bits": bits.astype(np.uint16),
            "bf16_pairs": np.zeros(len(values) // 2, np.uint32), "f16_pairs": np.zeros(len(values) // 2, np.uint32),
            "bf16_floats": np.zeros(len(values), np.float32), "f16_floats": np.zeros(len(values), np.float32)}


def conversion_source(count: int) -> str:
    return environment().get_template("wgmma_f16.cuh").render() + f"constexpr int COUNT = {count};\n" + CONVERSIONS


def unpacked(pairs: np.ndarray) -> np.ndarray:
    """The 16-bit values of packed pairs, low half first (the order in memory)."""
    return pairs.view(np.uint16)


def same_bits_or_both_nan(got: np.ndarray, want: np.ndarray, decode) -> bool:
    nan = np.isnan(decode(got)) & np.isnan(decode(want))
    return bool(np.all((got == want) | nan))


def test_the_model_converts_like_numpy():
    values = conversion_values()
    program = compile_program(conversion_source(len(values)), ("convert",), name="wgmma_f16_convert")
    buffers = conversion_buffers(values)
    out = program.run([Launch("convert", (1, 1, 1), (128, 1, 1), tuple(buffers))], buffers)
    np.testing.assert_array_equal(unpacked(out["bf16_pairs"]), bf16_rounded(values))
    np.testing.assert_array_equal(unpacked(out["f16_pairs"]), f16_rounded(values))
    bits = buffers["bits"]
    np.testing.assert_array_equal(out["bf16_floats"], bf16_values(bits))
    np.testing.assert_array_equal(out["f16_floats"], bits.view(np.float16).astype(np.float32))
    # the ties, named: bf16(1 + 2^-8) = 1.0, bf16(1 + 3*2^-8) = 1 + 2^-6; fp16 65520 -> inf
    assert unpacked(out["bf16_pairs"])[7] == 0x3F80 and unpacked(out["bf16_pairs"])[8] == 0x3F82
    assert unpacked(out["f16_pairs"])[list(values).index(np.float32(65520.0))] == 0x7C00


@pytest.mark.gpu
def test_the_gpu_converts_like_the_model():
    """cvt.rn.{bf16,f16}x2.f32 and cvt.f32.f16 on the GPU give the model's bits exactly (which
    NumPy's rounding defines, above); NaNs may differ in payload only."""
    import cupy

    values = conversion_values()
    module = load_module(conversion_source(len(values)), "wgmma_f16_convert")
    buffers = conversion_buffers(values)
    on_gpu = {name: cupy.asarray(array) for name, array in buffers.items()}
    module.get_function("convert")((1,), (128,), tuple(on_gpu.values()))
    out = {name: cupy.asnumpy(array) for name, array in on_gpu.items()}
    assert same_bits_or_both_nan(unpacked(out["bf16_pairs"]), bf16_rounded(values), bf16_values)
    assert same_bits_or_both_nan(unpacked(out["f16_pairs"]), f16_rounded(values),
                                 lambda b: b.view(np.float16).astype(np.float32))
    bits = buffers["bits"]
    np.testing.assert_array_equal(out["bf16_floats"], bf16_values(bits))
    np.testing.assert_array_equal(out["f16_floats"], bits.view(np.float16).astype(np.float32))


def test_the_packing_asm_puts_the_low_value_in_the_low_half():
    """cvt.rn.*x2.f32 d, a, b puts a in d's upper half (PTX ISA): pack_rounded(low, high) must
    pass high first, in both formats."""
    text = (templates_dir() / "wgmma_f16.cuh").read_text()
    packs = re.findall(r'asm\("cvt\.rn\.(bf16|f16)x2\.f32 %0, %1, %2;\\n" : "=r"\(packed\) : '
                       r'"f"\((\w+)\), "f"\((\w+)\)\);', text)
    assert sorted(packs) == [("bf16", "high", "low"), ("f16", "high", "low")]
