"""templates/tma.cuh: the emulator's model of Hopper's TMA copies (im2col and tiled boxes into the
128-byte swizzle, completing on an mbarrier by transaction bytes, mbarrier::arrive_expect_bytes),
on hand-written kernels that copy boxes and write them out un-swizzled, against a NumPy walk of
the box written from the CUDA driver's description: convolutions with H != W, strides (2, 1) and
(1, 2), padding whose lower and upper corners differ, dilation, walks that wrap into the next row
and image and run past the last image, channels past C, tiled boxes past the tensor's ends. Also
the faults a wrong kernel or map gets instead of a wrong result: a copy whose bytes no
arrive_expect_bytes announced (a hang, named), a read before the wait (poison), an unaligned
destination, a map that is not the emulator's. Statically, that nvcc assembles the header's PTX;
on the GPU, that the real copies give the model's boxes.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, replace
from types import SimpleNamespace

import numpy as np
import pytest

from autoconv.emulator import EmulatedKernelFault, compile_program
from autoconv.emulator import tensor_maps as emulated_maps
from autoconv.kernels.families import Launch
from autoconv.kernels.render import environment
from autoconv.kernels.tensor_maps import ELEMENT_BYTES, Im2colMap, TiledMap, im2col_corners
from tests.emulator.ptx_probe import requires_nvcc, sm90a_ptx
from tests.helpers import round_mantissa

THREADS = 128
ROW_BYTES = 128     # a box row: one row of the 128-byte swizzle
ROW_VALUES = 64     # a box row's 16-bit values (the kernels write rows out as 64 of them)

KERNELS = r"""
constexpr int BY_THE_BOOK = 0, COPY_FIRST = 1, READ_BEFORE_WAIT = 2, MISSING_EXPECT = 3, UNALIGNED = 4;

// The block's dynamic shared memory from its first 1024-byte aligned byte (the emulator's starts
// aligned; the GPU's need not).
__device__ __forceinline__ unsigned char* aligned_shared()
{
    extern __shared__ __align__(16) unsigned char smem[];
#ifdef AUTOCONV_EMULATOR
    return smem;
#else
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    return smem + (1024 - address % 1024) % 1024;
#endif
}

// Box rows 0..rows-1 at `box` (1024-byte aligned, 128-byte swizzle: 16-byte chunk c of row r at
// chunk position c ^ r % 8) to out[row][0..63], un-swizzled, 16 bytes a thread.
__device__ __forceinline__ void unswizzle(const unsigned char* box, int rows, unsigned short* out)
{
    for (int chunk = threadIdx.x; chunk < rows * 8; chunk += blockDim.x) {
        const int row = chunk / 8, column = chunk % 8;
        *reinterpret_cast<uint4*>(out + row * 64 + column * 8) =
            *reinterpret_cast<const uint4*>(box + row * 128 + (column ^ row % 8) * 16);
    }
}

// coordinates: rows of a box, copies per block, then 6 ints per copy (c, w, h, n, offset_w,
// offset_h; a tiled copy uses the first 3, x0, x1, x2). Block b makes copies b * copies ..., one
// after the other into one box through one barrier (phase i for its copy i), and writes box i to
// out[b * copies + i]. COPY_FIRST issues the copy before the arrival that expects its bytes;
// READ_BEFORE_WAIT reads the box before waiting; MISSING_EXPECT arrives without expecting the
// bytes; UNALIGNED puts the box 128 bytes past a 1024-byte boundary.
template <int VARIANT, bool IM2COL>
__device__ __forceinline__ void boxes(const tma::TensorMap* map, const int* coordinates, unsigned short* out)
{
    unsigned char* const shared = aligned_shared();
    unsigned long long* const barrier = reinterpret_cast<unsigned long long*>(shared);
    unsigned char* const box = shared + 1024 + (VARIANT == UNALIGNED ? 128 : 0);
    const int rows = coordinates[0], copies = coordinates[1];
    if (threadIdx.x == 0) {
        if (VARIANT == BY_THE_BOOK)
            tma::prefetch(map);   // (as the family's producer does before its barriers' init)
        mbarrier::init(barrier, 1);
    }
    __syncthreads();
    for (int i = 0; i < copies; ++i) {
        const int copy = blockIdx.x * copies + i;
        const int* const at = coordinates + 2 + 6 * copy;
        unsigned short* const box_out = out + copy * rows * 64;
        if (threadIdx.x == 0) {
            if (VARIANT != COPY_FIRST && VARIANT != MISSING_EXPECT)
                mbarrier::arrive_expect_bytes(barrier, rows * 128);
            if (IM2COL)
                tma::copy_im2col(box, map, barrier, at[0], at[1], at[2], at[3], static_cast<unsigned short>(at[4]),
                                 static_cast<unsigned short>(at[5]));
            else
                tma::copy_tiled(box, map, barrier, at[0], at[1], at[2]);
            if (VARIANT == COPY_FIRST)
                mbarrier::arrive_expect_bytes(barrier, rows * 128);
            if (VARIANT == MISSING_EXPECT)
                mbarrier::arrive(barrier);
        }
        if (VARIANT == READ_BEFORE_WAIT)
            unswizzle(box, rows, box_out);
        mbarrier::wait(barrier, i & 1);
        if (VARIANT != READ_BEFORE_WAIT)
            unswizzle(box, rows, box_out);
        __syncthreads();   // the box is read before the next copy overwrites it
    }
}

#define IM2COL_BOXES(NAME, VARIANT)                                                                 \
    extern "C" __global__ void NAME(const __grid_constant__ tma::TensorMap x_map, const int* coordinates, \
                                    unsigned short* out)                                            \
    {                                                                                               \
        boxes<VARIANT, true>(&x_map, coordinates, out);                                             \
    }
#define TILED_BOXES(NAME, VARIANT)                                                                  \
    extern "C" __global__ void NAME(const __grid_constant__ tma::TensorMap w_map, const int* coordinates, \
                                    unsigned short* out)                                            \
    {                                                                                               \
        boxes<VARIANT, false>(&w_map, coordinates, out);                                            \
    }
IM2COL_BOXES(im2col_boxes, BY_THE_BOOK)
IM2COL_BOXES(im2col_copy_first, COPY_FIRST)
IM2COL_BOXES(im2col_read_before_wait, READ_BEFORE_WAIT)
IM2COL_BOXES(im2col_missing_expect, MISSING_EXPECT)
IM2COL_BOXES(im2col_unaligned, UNALIGNED)
TILED_BOXES(tiled_boxes, BY_THE_BOOK)
TILED_BOXES(tiled_copy_first, COPY_FIRST)

// A stage of the convolution: one arrival expecting both boxes' bytes, then an im2col box of x
// (a_rows rows) and a tiled box of w (b_rows rows) on the same barrier. coordinates: a_rows,
// b_rows, c, w, h, n, offset_w, offset_h, x0, x1, x2; out: A's rows, then B's.
extern "C" __global__ void stage(const __grid_constant__ tma::TensorMap x_map,
                                 const __grid_constant__ tma::TensorMap w_map, const int* coordinates,
                                 unsigned short* out)
{
    unsigned char* const shared = aligned_shared();
    unsigned long long* const barrier = reinterpret_cast<unsigned long long*>(shared);
    const int a_rows = coordinates[0], b_rows = coordinates[1];
    const int* const at = coordinates + 2;
    unsigned char* const a = shared + 1024;
    unsigned char* const b = a + a_rows * 128;
    if (threadIdx.x == 0)
        mbarrier::init(barrier, 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        mbarrier::arrive_expect_bytes(barrier, (a_rows + b_rows) * 128);
        tma::copy_im2col(a, &x_map, barrier, at[0], at[1], at[2], at[3], static_cast<unsigned short>(at[4]),
                         static_cast<unsigned short>(at[5]));
        tma::copy_tiled(b, &w_map, barrier, at[6], at[7], at[8]);
    }
    mbarrier::wait(barrier, 0);
    unswizzle(a, a_rows, out);
    unswizzle(b, b_rows, out + a_rows * 64);
}
"""

IM2COL_KERNELS = ("im2col_boxes", "im2col_copy_first", "im2col_read_before_wait", "im2col_missing_expect",
                  "im2col_unaligned")
TILED_KERNELS = ("tiled_boxes", "tiled_copy_first")
KERNEL_NAMES = (*IM2COL_KERNELS, *TILED_KERNELS, "stage")


def source() -> str:
    env = environment()
    return env.get_template("mbarrier.cuh").render() + env.get_template("tma.cuh").render() + KERNELS


@pytest.fixture(scope="module")
def program():
    return compile_program(source(), KERNEL_NAMES, name="tma")


# ---- the problems and the NumPy walk --------------------------------------------------------------

@dataclass(frozen=True)
class Conv:
    """A convolution's x (N, H, W, C) and filter taps, for an im2col map of x."""

    n: int
    h: int
    w: int
    c: int
    r: int
    s: int
    stride: tuple[int, int]        # H, W
    pad: tuple[int, int, int, int]  # top, bottom, left, right
    dilation: tuple[int, int]      # H, W

    def im2col_map(self, pixels: int, element: str = "bf16") -> Im2colMap:
        top, bottom, left, right = self.pad
        lower_w, upper_w = im2col_corners(left, right, self.dilation[1], self.s)
        lower_h, upper_h = im2col_corners(top, bottom, self.dilation[0], self.r)
        return Im2colMap("x", element, (self.c, self.w, self.h, self.n), (lower_w, lower_h), (upper_w, upper_h),
                         ROW_BYTES // ELEMENT_BYTES[element], pixels, (1, self.stride[1], self.stride[0], 1))

    @property
    def output(self) -> tuple[int, int]:
        top, bottom, left, right = self.pad
        p = (self.h + top + bottom - self.dilation[0] * (self.r - 1) - 1) // self.stride[0] + 1
        q = (self.w + left + right - self.dilation[1] * (self.s - 1) - 1) // self.stride[1] + 1
        return p, q

    def x(self, seed: int) -> np.ndarray:
        """Distinct nonzero bit patterns (a zero in the box is the map's fill, never data)."""
        rng = np.random.default_rng(seed)
        return rng.integers(1, 2**16, size=(self.n, self.h, self.w, self.c)).astype(np.uint16)

    def base(self, image: int, p: int, q: int) -> tuple[int, int, int, int, int, int]:
        """The copy coordinates of output pixel (image, p, q) at tap (0, 0), channels from 0:
        (c, w, h, n, offset_w, offset_h)."""
        top, _, left, _ = self.pad
        return 0, q * self.stride[1] - left, p * self.stride[0] - top, image, 0, 0


def im2col_box(x: np.ndarray, tensor_map: Im2colMap, c: int, w: int, h: int, n: int, offset_w: int,
               offset_h: int) -> np.ndarray:
    """The box, as the CUDA driver describes im2col mode: row j is the j-th base position of the
    walk from (w, h, n) through the bounding box (W fastest, then H, then N), plus the offsets;
    elements outside x are 0."""
    size_c, size_w, size_h, size_n = tensor_map.sizes
    first_w, last_w = tensor_map.lower[0], size_w - 1 + tensor_map.upper[0]
    first_h, last_h = tensor_map.lower[1], size_h - 1 + tensor_map.upper[1]
    stride_w, stride_h = tensor_map.element_strides[1], tensor_map.element_strides[2]
    box = np.zeros((tensor_map.pixels, tensor_map.channels), x.dtype)
    for j in range(tensor_map.pixels):
        xw, xh = w + offset_w, h + offset_h
        if 0 <= n < size_n and 0 <= xh < size_h and 0 <= xw < size_w:
            for e in range(tensor_map.channels):
                if 0 <= c + e < size_c:
                    box[j, e] = x[n, xh, xw, c + e]
        w += stride_w
        if w > last_w:
            w, h = first_w, h + stride_h
            if h > last_h:
                h, n = first_h, n + 1
    return box


def tiled_box(tensor: np.ndarray, tensor_map: TiledMap, x0: int, x1: int, x2: int) -> np.ndarray:
    """Row k * b1 + j: tensor[x2 + k][x1 + j][x0 ..x0 + b0 - 1], 0 outside."""
    b0, b1, b2 = tensor_map.box
    s0, s1, s2 = tensor_map.sizes
    box = np.zeros((b2, b1, b0), tensor.dtype)
    for k in range(b2):
        for j in range(b1):
            for i in range(b0):
                if 0 <= x2 + k < s2 and 0 <= x1 + j < s1 and 0 <= x0 + i < s0:
                    box[k, j, i] = tensor[x2 + k, x1 + j, x0 + i]
    return box.reshape(b1 * b2, b0)


# Strides (2, 1), padding top 1 bottom 0 left 2 right 1, dilation (1, 2): P x Q = 2 x 6, 12 base
# positions an image. Channels 80: a box from channel 64 runs past C.
CONV_A = Conv(n=2, h=5, w=7, c=80, r=3, s=3, stride=(2, 1), pad=(1, 0, 2, 1), dilation=(1, 2))
# Strides (1, 2), padding top 0 bottom 2 left 1 right 0, dilation (2, 1): P x Q = 4 x 3.
CONV_B = Conv(n=3, h=4, w=6, c=64, r=2, s=3, stride=(1, 2), pad=(0, 2, 1, 0), dilation=(2, 1))


def im2col_cases(conv: Conv) -> list[tuple[int, int, int, int, int, int]]:
    """Copies from several output pixels and taps: the first, mid-row ones, the last pixel of the
    last image (the walk runs past it), channel blocks past C, the last tap."""
    p_last, q_last = conv.output[0] - 1, conv.output[1] - 1
    cases = []
    for (image, p, q), (r, s), c0 in [
        ((0, 0, 0), (0, 0), 0),
        ((0, 0, 1), (conv.r - 1, conv.s - 1), 64),
        ((0, p_last, q_last - 1), (1, 0), 16),
        ((conv.n - 1, p_last, q_last), (conv.r - 1, 1), 0),
        ((conv.n - 1, 0, 2), (0, conv.s - 1), 64),
        ((1, 1, 0), (conv.r - 1, conv.s - 1), 8),
    ]:
        _, w, h, n, _, _ = conv.base(image, p, q)
        cases.append((c0, w, h, n, s * conv.dilation[1], r * conv.dilation[0]))
    return cases


def coordinates(rows: int, copies: int, cases) -> np.ndarray:
    flat = [rows, copies]
    for case in cases:
        flat.extend(case)
        flat.extend([0] * (6 - len(case)))
    return np.array(flat, np.int32)


def shared_bytes(rows: int) -> int:
    return 2048 + rows * 128   # alignment slack (GPU), the barrier's 1024 bytes, the box


def run_boxes(program, kernel: str, map_name: str, tensor_map, tensor: np.ndarray, cases, copies_per_block: int,
              **options) -> np.ndarray:
    rows = tensor_map.pixels if isinstance(tensor_map, Im2colMap) else tensor_map.box[1] * tensor_map.box[2]
    out = np.full((len(cases), rows, ROW_VALUES), 0xABCD, np.uint16)
    launch = Launch(kernel, (len(cases) // copies_per_block, 1, 1), (THREADS, 1, 1),
                    (map_name, "coordinates", "out"), shared_bytes(rows))
    buffers = {tensor_map.buffer: tensor, "coordinates": coordinates(rows, copies_per_block, cases), "out": out}
    return program.run([launch], buffers, tensor_maps={map_name: tensor_map}, **options)["out"]


# ---- im2col boxes -------------------------------------------------------------------------------

@pytest.mark.parametrize("conv", [CONV_A, CONV_B], ids=["stride21_pad1021_dil12", "stride12_pad0210_dil21"])
@pytest.mark.parametrize("pixels", [16, 64])
@pytest.mark.parametrize("kernel", ["im2col_boxes", "im2col_copy_first"])
def test_im2col_boxes_walk_the_bounding_box(program, conv, pixels, kernel):
    """Each box is the driver's walk: base positions through the bounding box (W fastest, then H,
    then N) from the given one, the tap's offsets added, zero outside x; 64 pixels walk through
    several rows and images and past the last image. Two copies per block: the barrier's second
    phase counts its bytes afresh. Issued before the arrival that expects its bytes or after, a
    copy lands when the wait returns."""
    tensor_map = conv.im2col_map(pixels)
    x = conv.x(seed=pixels)
    cases = im2col_cases(conv)
    out = run_boxes(program, kernel, "x_map", tensor_map, x, cases, copies_per_block=2)
    for index, case in enumerate(cases):
        np.testing.assert_array_equal(out[index], im2col_box(x, tensor_map, *case), err_msg=f"copy {case}")


def test_the_walk_reaches_zeros_past_the_last_image_and_channels_past_c(program):
    """The NumPy walk itself, on CONV_A's boxes: a box from the last pixel has one row of data and
    zeros after; a box from channel 64 has data in its first 16 channels (C = 80) only."""
    tensor_map = CONV_A.im2col_map(16)
    x = CONV_A.x(seed=1)
    last = im2col_box(x, tensor_map, *im2col_cases(CONV_A)[3])
    assert (last[0] != 0).any() and not last[1:].any()
    past_c = im2col_box(x, tensor_map, *im2col_cases(CONV_A)[1])
    assert not past_c[:, 16:].any() and (past_c[:, :16] != 0).any()


def test_a_read_before_the_wait_sees_the_poison(program):
    """The copy lands when a wait sees its phase complete: a thread that reads the box before its
    wait reads the 0xFF poison the first time, and the box before the next time."""
    tensor_map = CONV_A.im2col_map(16)
    x = CONV_A.x(seed=3)
    cases = im2col_cases(CONV_A)[:2]
    out = run_boxes(program, "im2col_read_before_wait", "x_map", tensor_map, x, cases, copies_per_block=2)
    assert (out[0] == 0xFFFF).all()
    np.testing.assert_array_equal(out[1], im2col_box(x, tensor_map, *cases[0]))


# ---- tiled boxes --------------------------------------------------------------------------------

W_TENSOR = (20, 9, 80)     # w as [K][R*S][C]: sizes (C, R*S, K) = (80, 9, 20)
W_CASES = [(0, 0, 0), (64, 8, 16), (-8, 3, 4), (16, 4, -2)]


@pytest.mark.parametrize("box", [(64, 1, 16), (64, 2, 8), (64, 3, 3)])
@pytest.mark.parametrize("kernel", TILED_KERNELS)
def test_tiled_boxes_are_the_tensor_with_zeros_outside(program, box, kernel):
    """Row k * b1 + j of a box holds tensor[x2 + k][x1 + j][x0 ...]; past C, R*S or K (and before
    0) it is zero."""
    rng = np.random.default_rng(11)
    tensor = rng.integers(1, 2**16, size=W_TENSOR).astype(np.uint16)
    tensor_map = TiledMap("w", "bf16", W_TENSOR[::-1], box)
    out = run_boxes(program, kernel, "w_map", tensor_map, tensor, W_CASES, copies_per_block=2)
    for index, case in enumerate(W_CASES):
        np.testing.assert_array_equal(out[index], tiled_box(tensor, tensor_map, *case), err_msg=f"copy {case}")


def test_a_stage_of_two_boxes_completes_on_one_barrier(program):
    """The convolution's stage: one arrival expecting both boxes' bytes, an im2col box of x and a
    tiled box of w on one barrier; each map describes a part of its buffer (an offset)."""
    x = CONV_B.x(seed=5)
    x_buffer = np.concatenate([np.zeros(64, np.uint16), x.reshape(-1)])
    x_map = replace(CONV_B.im2col_map(32), offset=128)
    tensor = np.random.default_rng(2).integers(1, 2**16, size=(20, 9, 64)).astype(np.uint16)
    w_map = TiledMap("w", "bf16", (64, 9, 20), (64, 1, 16))
    im2col, tiled = im2col_cases(CONV_B)[2], (0, 5, 8)
    values = np.array([32, 16, *im2col, *tiled], np.int32)
    out = np.full((48, ROW_VALUES), 0xABCD, np.uint16)
    result = program.run([Launch("stage", (1, 1, 1), (THREADS, 1, 1), ("x_map", "w_map", "coordinates", "out"),
                                 shared_bytes(48))],
                         {"x": x_buffer, "w": tensor, "coordinates": values, "out": out},
                         tensor_maps={"x_map": x_map, "w_map": w_map})["out"]
    np.testing.assert_array_equal(result[:32], im2col_box(x, x_map, *im2col))
    np.testing.assert_array_equal(result[32:], tiled_box(tensor, w_map, *tiled))


# ---- TF32 maps: float32 in memory, rounded by the copy ---------------------------------------------

def tf32_bits(shape, seed: int) -> np.ndarray:
    """float32 bit patterns (uint32) whose dropped 13 bits are exactly half (ties, on kept mantissas
    both even and odd), just above or below half, zero, or random; nonzero kept bits throughout."""
    rng = np.random.default_rng(seed)
    bits = rng.standard_normal(shape).astype(np.float32).view(np.uint32) | np.uint32(0x2000)
    dropped = rng.choice(np.array([0x1000, 0x1001, 0x0FFF, 0, 0x1FFF], np.uint32), size=shape)
    random = rng.random(shape) < 0.4
    return np.where(random, bits, (bits & np.uint32(0xFFFFE000)) | dropped).astype(np.uint32)


def round_to_tf32_even(bits: np.ndarray) -> np.ndarray:
    """float32 bit patterns rounded to TF32 (10 mantissa bits), to nearest, ties to even."""
    return round_mantissa(np.ascontiguousarray(bits).view(np.float32), 10, ties="even").view(np.uint32)


#: w as [K][R*S][C] of float32: sizes (C, R*S, K) = (40, 9, 20); a box row is 32 values.
W_TF32 = (20, 9, 40)
W_TF32_CASES = [(0, 0, 0), (32, 8, 16), (-4, 3, 4), (8, 4, -2)]


def as_values(out: np.ndarray) -> np.ndarray:
    """The kernels' 16-bit output rows as the 32-bit values they hold."""
    return out.view(np.uint32)


def test_tf32_tiled_boxes_round_to_nearest_even(program):
    """A map of TF32 elements: each float32 lands rounded to 10 mantissa bits, to nearest with ties
    to even (as the H100's TMA does: docs/lab-notes/2026-11-26-tf32-nhwc-through-tma.md), zeros outside
    the tensor."""
    bits = tf32_bits(W_TF32, seed=3)
    tensor_map = TiledMap("w", "tf32", W_TF32[::-1], (32, 2, 8))
    out = as_values(run_boxes(program, "tiled_boxes", "w_map", tensor_map, bits, W_TF32_CASES, copies_per_block=2))
    for index, case in enumerate(W_TF32_CASES):
        np.testing.assert_array_equal(out[index], round_to_tf32_even(tiled_box(bits, tensor_map, *case)),
                                      err_msg=f"copy {case}")
    assert (out != as_values(run_boxes(program, "tiled_boxes", "w_map", replace(tensor_map, element="f32"), bits,
                                       W_TF32_CASES, copies_per_block=2))).any()   # rounding is not a no-op


def test_tf32_im2col_boxes_round_to_nearest_even(program):
    conv = replace(CONV_A, c=40)
    bits = tf32_bits((conv.n, conv.h, conv.w, conv.c), seed=4)
    tensor_map = conv.im2col_map(16, "tf32")
    cases = [(c0 // 2, *rest) for c0, *rest in im2col_cases(conv)]   # channel blocks of 32
    out = as_values(run_boxes(program, "im2col_boxes", "x_map", tensor_map, bits, cases, copies_per_block=2))
    for index, case in enumerate(cases):
        np.testing.assert_array_equal(out[index], round_to_tf32_even(im2col_box(bits, tensor_map, *case)),
                                      err_msg=f"copy {case}")


# ---- faults -------------------------------------------------------------------------------------

def _fault(program, kernel: str, tensor_map, tensor, cases, *, map_name: str = "x_map", **options) -> str:
    with pytest.raises(EmulatedKernelFault) as caught:
        run_boxes(program, kernel, map_name, tensor_map, tensor, cases, copies_per_block=1, timeout=60, **options)
    return caught.value.output


def test_a_copy_without_arrive_expect_bytes_is_a_hang(program):
    """The copy's 2048 bytes complete on a barrier that expects none: the phase never completes."""
    output = _fault(program, "im2col_missing_expect", CONV_A.im2col_map(16), CONV_A.x(seed=0),
                    im2col_cases(CONV_A)[:1])
    assert ("hang: thread 0 waits for the phase of parity 0 of the mbarrier at shared offset 0, which never "
            "completes (transaction bytes missing?): 0 of its 1 arrivals are pending and its TMA copies brought "
            "2048 bytes more than mbarrier::arrive_expect_bytes announced") in output


def test_an_unaligned_destination_is_a_fault(program):
    output = _fault(program, "im2col_unaligned", CONV_A.im2col_map(16), CONV_A.x(seed=0), im2col_cases(CONV_A)[:1])
    assert ("tma::copy_im2col (map x_map): the destination is at shared offset 1152, not 1024-byte aligned"
            in output)


@pytest.mark.parametrize("kernel, operation", [("im2col_boxes", "tma::prefetch"),
                                               ("im2col_copy_first", "tma::copy_im2col")])
def test_a_map_without_the_tag_is_a_fault(program, kernel, operation):
    """128 bytes that are not the emulator's encoding (a driver's map, say) passed as the map: the
    prefetch (a hint on the GPU) checks it too, so a wrong pointer faults at the first use."""
    out = np.zeros((1, 16, ROW_VALUES), np.uint16)
    launch = Launch(kernel, (1, 1, 1), (THREADS, 1, 1), ("x_map", "coordinates", "out"), shared_bytes(16))
    with pytest.raises(EmulatedKernelFault) as caught:
        program.run([launch], {"x_map": np.zeros(128, np.uint8), "coordinates": coordinates(16, 1, [(0,) * 6]),
                               "out": out})
    assert f"{operation}: " in caught.value.output
    assert "is not a tensor map in the emulator's encoding" in caught.value.output


def test_a_tiled_map_given_to_copy_im2col_is_a_fault(program):
    tensor = np.ones(W_TENSOR, np.uint16)
    output = _fault(program, "im2col_boxes", TiledMap("w", "bf16", W_TENSOR[::-1], (64, 1, 16)), tensor,
                    [(0,) * 6])
    assert "tma::copy_im2col: tensor map x_map is not an im2col map (kind 2)" in output


def test_rows_narrower_than_the_swizzle_are_not_modelled(program):
    conv = Conv(n=1, h=4, w=4, c=32, r=1, s=1, stride=(1, 1), pad=(0, 0, 0, 0), dilation=(1, 1))
    narrow = replace(conv.im2col_map(16), channels=32)
    output = _fault(program, "im2col_boxes", narrow, conv.x(seed=0), [(0,) * 6])
    assert "tensor map x_map has box rows of 64 bytes (32 elements); the model covers rows of exactly 128" in output


def test_a_start_off_the_walk_is_a_fault(program):
    """CONV_A's base positions along H are -1 and 1 (stride 2): a copy from h = 0 is none."""
    output = _fault(program, "im2col_boxes", CONV_A.im2col_map(16), CONV_A.x(seed=0), [(0, 0, 0, 0, 0, 0)])
    assert ("tma::copy_im2col (map x_map): the base position (w 0, h 0) is not one of the bounding box's: w from -2 "
            "to 3 stepping 1, h from -1 to 2 stepping 2") in output


def test_a_by_value_parameter_needs_a_buffer_of_its_size(program):
    launch = Launch("im2col_boxes", (1, 1, 1), (THREADS, 1, 1), ("x_map", "coordinates", "out"), shared_bytes(16))
    with pytest.raises(EmulatedKernelFault) as caught:
        program.run([launch], {"x_map": np.zeros(64, np.uint8), "coordinates": np.zeros(8, np.int32),
                               "out": np.zeros(8, np.uint16)})
    assert "parameter 0 is a 128-byte struct passed by value (a tensor map?), and buffer x_map has 64 bytes" in (
        caught.value.output)


def test_maps_are_checked_before_the_program_runs(program):
    tensor_map = CONV_A.im2col_map(16)
    launch = Launch("im2col_boxes", (1, 1, 1), (THREADS, 1, 1), ("x_map", "coordinates", "out"), shared_bytes(16))
    buffers = {"coordinates": np.zeros(8, np.int32), "out": np.zeros(8, np.uint16)}
    with pytest.raises(ValueError, match="describes buffer 'x', which is not among the buffers"):
        program.run([launch], buffers, tensor_maps={"x_map": tensor_map})
    with pytest.raises(ValueError, match="covers bytes 0 to 11200 of buffer x, which has 11198"):
        program.run([launch], {**buffers, "x": np.zeros(5599, np.uint16)}, tensor_maps={"x_map": tensor_map})
    with pytest.raises(ValueError, match="names both a buffer and a tensor map"):
        program.run([launch], {**buffers, "x": CONV_A.x(0), "x_map": np.zeros(128, np.uint8)},
                    tensor_maps={"x_map": tensor_map})


# ---- the encoding -------------------------------------------------------------------------------

def test_the_encoding_is_the_runtime_layout():
    encoded = emulated_maps.encode(CONV_A.im2col_map(64), "x_map")
    assert encoded.dtype == np.uint8 and encoded.shape == (128,)
    assert bytes(encoded[:8]) == emulated_maps.MAGIC
    assert int.from_bytes(bytes(encoded[8:16]), "little") == 0   # the address, written by the program
    fields = np.frombuffer(bytes(encoded[16:108]), np.uint8)
    assert np.frombuffer(fields[:2].tobytes(), "<u2")[0] == emulated_maps.KIND_IM2COL
    assert list(np.frombuffer(bytes(encoded[24:40]), "<u4")) == [80, 7, 5, 2]
    assert list(np.frombuffer(bytes(encoded[40:64]), "<u8")) == [160, 1120, 5600]
    assert list(np.frombuffer(bytes(encoded[64:80]), "<i4")) == [-2, -1, -3, -2]
    assert list(np.frombuffer(bytes(encoded[80:96]), "<u4")) == [1, 1, 2, 1]
    assert list(np.frombuffer(bytes(encoded[96:108]), "<u4")) == [64, 64, 0]
    assert bytes(encoded[108:]).rstrip(b"\0") == b"x_map"


def test_a_map_the_driver_refuses_is_not_encoded():
    with pytest.raises(ValueError, match="strides of x"):
        emulated_maps.encode(Im2colMap("x", "bf16", (12, 4, 4, 1), (0, 0), (0, 0), 12, 16, (1, 1, 1, 1)))


# ---- the PTX (static) ---------------------------------------------------------------------------


@requires_nvcc
def test_ptxas_accepts_every_function(tmp_path):
    """The test kernels, which use every function of tma.cuh and arrive_expect_bytes, compile to
    sm_90a machine code, with each PTX instruction as the headers spell it."""
    ptx = sm90a_ptx(source(), tmp_path)
    for instruction in ("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes",
                        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                        "mbarrier.arrive.expect_tx.shared::cta.b64 _,",
                        "prefetch.tensormap ["):
        assert instruction in ptx, instruction


# ---- on the GPU ---------------------------------------------------------------------------------

def _gpu_boxes(module, kernel: str, tensor_map, tensor: np.ndarray, cases, copies_per_block: int) -> np.ndarray:
    """``kernel`` on the GPU, its map encoded by the driver for ``tensor``'s device copy."""
    import cupy
    from cupy.cuda import driver

    from autoconv.gpu.tensor_maps import encode as encode_for_gpu

    rows = tensor_map.pixels if isinstance(tensor_map, Im2colMap) else tensor_map.box[1] * tensor_map.box[2]
    device_tensor = cupy.asarray(tensor)
    device_coordinates = cupy.asarray(coordinates(rows, copies_per_block, cases))
    out = cupy.full((len(cases), rows, ROW_VALUES), 0xABCD, np.uint16)
    encoded = encode_for_gpu(tensor_map, int(device_tensor.data.ptr))
    storage = ctypes.create_string_buffer(128 + 64)
    map_address = ctypes.addressof(storage) + (-ctypes.addressof(storage)) % 64
    ctypes.memmove(map_address, encoded.tobytes(), 128)
    pointers = [ctypes.c_uint64(int(device_coordinates.data.ptr)), ctypes.c_uint64(int(out.data.ptr))]
    params = (ctypes.c_void_p * 3)(map_address, *(ctypes.addressof(p) for p in pointers))
    function = module.get_function(kernel)
    driver.launchKernel(function.ptr, len(cases) // copies_per_block, 1, 1, THREADS, 1, 1, shared_bytes(rows),
                        cupy.cuda.get_current_stream().ptr, ctypes.addressof(params), 0)
    cupy.cuda.get_current_stream().synchronize()
    return cupy.asnumpy(out)


@pytest.mark.gpu
def test_the_gpu_agrees_with_the_model(program):
    """The real TMA: every box of the CPU tests, the driver's maps, bit for bit the model's (and
    the NumPy walk's)."""
    from tests.emulator.warpgroup_gpu import load_module

    module = load_module(source(), "tma_test")
    for conv in (CONV_A, CONV_B):
        for pixels in (16, 64):
            tensor_map = conv.im2col_map(pixels)
            x = conv.x(seed=pixels)
            cases = im2col_cases(conv)
            for kernel in ("im2col_boxes", "im2col_copy_first"):
                gpu = _gpu_boxes(module, kernel, tensor_map, x, cases, 2)
                model = run_boxes(program, kernel, "x_map", tensor_map, x, cases, copies_per_block=2)
                np.testing.assert_array_equal(gpu, model, err_msg=f"{kernel} {conv} {pixels} pixels")
                for index, case in enumerate(cases):
                    np.testing.assert_array_equal(gpu[index], im2col_box(x, tensor_map, *case))
    tensor = np.random.default_rng(11).integers(1, 2**16, size=W_TENSOR).astype(np.uint16)
    for box in [(64, 1, 16), (64, 2, 8), (64, 3, 3)]:
        tensor_map = TiledMap("w", "bf16", W_TENSOR[::-1], box)
        gpu = _gpu_boxes(module, "tiled_boxes", tensor_map, tensor, W_CASES, 2)
        model = run_boxes(program, "tiled_boxes", "w_map", tensor_map, tensor, W_CASES, copies_per_block=2)
        np.testing.assert_array_equal(gpu, model, err_msg=f"tiled box {box}")


@pytest.mark.gpu
def test_the_gpu_rounds_tf32_maps_as_the_model(program):
    """TF32 maps on the real TMA: ties, near-ties and random float32 values land bit for bit as
    the model rounds them (to nearest, ties to even), through im2col and tiled boxes; an f32 map
    copies the bits."""
    from tests.emulator.warpgroup_gpu import load_module

    module = load_module(source(), "tma_test")
    bits = tf32_bits(W_TF32, seed=3)
    for element in ("tf32", "f32"):
        tensor_map = TiledMap("w", element, W_TF32[::-1], (32, 2, 8))
        gpu = _gpu_boxes(module, "tiled_boxes", tensor_map, bits, W_TF32_CASES, 2)
        model = run_boxes(program, "tiled_boxes", "w_map", tensor_map, bits, W_TF32_CASES, copies_per_block=2)
        np.testing.assert_array_equal(gpu, model, err_msg=f"tiled {element} box")
    conv = replace(CONV_A, c=40)
    x = tf32_bits((conv.n, conv.h, conv.w, conv.c), seed=4)
    tensor_map = conv.im2col_map(16, "tf32")
    cases = [(c0 // 2, *rest) for c0, *rest in im2col_cases(conv)]
    gpu = _gpu_boxes(module, "im2col_boxes", tensor_map, x, cases, 2)
    model = run_boxes(program, "im2col_boxes", "x_map", tensor_map, x, cases, copies_per_block=2)
    np.testing.assert_array_equal(gpu, model, err_msg="im2col tf32 box")


def test_emulate_plan_passes_the_plans_tensor_maps(monkeypatch):
    """``emulate_plan`` (and so ``verify --emulate``) hands a plan's maps to the program, which
    encodes them for the buffers they name; a plan without maps passes none."""
    import autoconv.emulator
    from autoconv.problems.problem import parse_spec

    problem = parse_spec("N=1,C=64,H=4,W=4,K=8,R=1,S=1,stride=1,pad=0,dilation=1").in_precision("bf16").with_(
        layout="NHWC")
    tensor_map = Im2colMap("x", "bf16", (64, 4, 4, 1), (0, 0), (0, 0), 64, 16, (1, 1, 1, 1))
    seen = []

    class Program:
        def run(self, launches, buffers, **options):
            seen.append(options["tensor_maps"])
            return dict(buffers)

    monkeypatch.setattr(autoconv.emulator, "compile_program", lambda *args, **kwargs: Program())
    x = np.zeros(problem.input_shape, np.float32)
    w = np.zeros(problem.weight_shape, np.float32)
    plan = SimpleNamespace(problem=problem, source="", launches=(), name="plan", workspace_bytes=0,
                           tensor_maps={"x_map": tensor_map})
    autoconv.emulator.emulate_plan(plan, x, w)
    autoconv.emulator.emulate_plan(SimpleNamespace(**{**plan.__dict__, "tensor_maps": {}}), x, w)
    del plan.tensor_maps
    autoconv.emulator.emulate_plan(plan, x, w)
    assert seen == [{"x_map": tensor_map}, {}, {}]
