"""Tensor maps: what a kernel fed by Hopper's tensor memory accelerator (TMA) needs to know
about a buffer, as plain data.

A TMA copy reads a box of a tensor through a *tensor map*, a 128-byte descriptor built on the
host (``cuTensorMapEncodeIm2col`` / ``cuTensorMapEncodeTiled``) from the buffer's address, its
sizes and strides, the box, and the shared-memory swizzle, and passed to the kernel by value
(a ``__grid_constant__`` parameter). A plan lists the maps its launches take
(:attr:`autoconv.kernels.families.KernelPlan.tensor_maps`): a launch argument named like a map
is that map, encoded for the buffer the map names at each launch, by whoever launches
(:mod:`autoconv.gpu.tensor_maps` on a GPU, the CPU emulator's own encoding under emulation).

Sizes, strides and corners are listed innermost dimension first, as the driver API takes them.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Bytes of an encoded tensor map (CUtensorMap), and its alignment.
TENSOR_MAP_BYTES = 128
TENSOR_MAP_ALIGNMENT = 64

#: Element types a map may describe: name -> bytes per element. Copies move the bits, except of
#: "tf32" elements: float32 in memory that the copy rounds to TF32 (10 mantissa bits, to nearest,
#: ties to even: the driver's CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, measured on an H100:
#: docs/lab-notes/2026-11-26-tf32-nhwc-through-tma.md), landing as float32 values whose low 13
#: bits are zero.
ELEMENT_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "tf32": 4}

#: The shared-memory swizzle the maps use: 16-byte chunks swizzled within 128-byte rows, the
#: layout wgmma reads (templates/wgmma_f16.cuh); a box row may be at most this many bytes.
SWIZZLE_BYTES = 128

#: Limits of the im2col mode for a 4-d (NHWC) tensor (CUDA driver API,
#: cuTensorMapEncodeIm2col): corners within [-128, 127], at most 256 channels and 1024 pixels
#: per box. (Its im2col offsets, per copy, are 16-bit: the family's search space checks them.)
IM2COL_CORNER_RANGE = (-128, 127)
IM2COL_MAX_PIXELS = 1024
#: Limits shared by both modes: box sizes up to 256, traversal strides up to 8, strides
#: multiples of 16 bytes.
MAX_BOX = 256
MAX_ELEMENT_STRIDE = 8
STRIDE_ALIGNMENT = 16


@dataclass(frozen=True)
class Im2colMap:
    """An im2col map of an N x H x W x C tensor (NHWC): a box is ``pixels`` output pixels walked
    from a base position, ``channels`` channels each, at one filter tap's offset.

    The walk: output pixel j of the box reads the input pixel at base + j-th position of the
    bounding box grid (``lower`` to size - 1 + ``upper`` in each spatial dimension, stepping
    ``element_strides``, wrapping into the next row and image), plus the tap's offsets; what
    falls outside the tensor reads as zero (the convolution's padding).
    """

    buffer: str                              # the buffer it describes (x, or the workspace)
    element: str                             # "bf16", "f16", "f32" or "tf32" (ELEMENT_BYTES)
    sizes: tuple[int, int, int, int]         # C, W, H, N
    lower: tuple[int, int]                   # the bounding box's lower corner: W, H
    upper: tuple[int, int]                   # its upper corner (relative to the last pixel): W, H
    channels: int                            # channels per pixel of a box
    pixels: int                              # pixels per box
    element_strides: tuple[int, int, int, int]   # 1, stride W, stride H, 1
    offset: int = 0                          # bytes from the buffer's start to the tensor's

    @property
    def strides(self) -> tuple[int, int, int]:
        """Bytes from one W, H and N index to the next."""
        c, w, h, _ = self.sizes
        pixel = c * ELEMENT_BYTES[self.element]
        return pixel, pixel * w, pixel * w * h


@dataclass(frozen=True)
class TiledMap:
    """A tiled map of a 3-d tensor (dimension 0 innermost): a box is ``box`` elements, from a
    starting coordinate; outside the tensor reads as zero."""

    buffer: str                              # the buffer it describes (w, or the workspace)
    element: str
    sizes: tuple[int, int, int]
    box: tuple[int, int, int]
    offset: int = 0                          # bytes from the buffer's start to the tensor's

    @property
    def strides(self) -> tuple[int, int]:
        """Bytes from one index of dimensions 1 and 2 to the next."""
        row = self.sizes[0] * ELEMENT_BYTES[self.element]
        return row, row * self.sizes[1]


TensorMap = Im2colMap | TiledMap


def im2col_corners(pad_low: int, pad_high: int, dilation: int, taps: int) -> tuple[int, int]:
    """The bounding box corners of one spatial dimension (of size D) for a convolution: the base
    positions run from -pad_low to D - 1 + pad_high - dilation * (taps - 1), so that the last
    base plus the last tap's offset is the last padded position."""
    return -pad_low, pad_high - dilation * (taps - 1)


def check_map(tensor_map: TensorMap) -> str | None:
    """Why the driver would refuse ``tensor_map`` (None if it would not): the limits above."""
    if tensor_map.element not in ELEMENT_BYTES:
        return f"tensor maps of {tensor_map.element!r} elements are not supported"
    if tensor_map.offset % STRIDE_ALIGNMENT:
        return f"the tensor starts {tensor_map.offset} bytes into {tensor_map.buffer}: not 16-byte aligned"
    if any(stride % STRIDE_ALIGNMENT for stride in tensor_map.strides):
        return (f"the strides of {tensor_map.buffer} ({', '.join(map(str, tensor_map.strides))} bytes) are not "
                f"multiples of {STRIDE_ALIGNMENT} bytes")
    element = ELEMENT_BYTES[tensor_map.element]
    if isinstance(tensor_map, Im2colMap):
        low, high = IM2COL_CORNER_RANGE
        if not all(low <= corner <= high for corner in tensor_map.lower + tensor_map.upper):
            return (f"the im2col corners of {tensor_map.buffer} ({tensor_map.lower}, {tensor_map.upper}) are "
                    f"outside [{low}, {high}] (padding or dilated filter too large)")
        if not 1 <= tensor_map.pixels <= IM2COL_MAX_PIXELS or not 1 <= tensor_map.channels <= MAX_BOX:
            return f"an im2col box of {tensor_map.pixels} pixels x {tensor_map.channels} channels is too large"
        if tensor_map.channels * element > SWIZZLE_BYTES:
            return f"a box row of {tensor_map.channels * element} bytes is wider than the {SWIZZLE_BYTES}-byte swizzle"
        if any(not 1 <= s <= MAX_ELEMENT_STRIDE for s in tensor_map.element_strides):
            return f"traversal strides {tensor_map.element_strides} are outside 1..{MAX_ELEMENT_STRIDE}"
        return None
    if any(not 1 <= b <= MAX_BOX for b in tensor_map.box):
        return f"a tiled box of {tensor_map.box} elements exceeds {MAX_BOX} in some dimension"
    if tensor_map.box[0] * element > SWIZZLE_BYTES:
        return f"a box row of {tensor_map.box[0] * element} bytes is wider than the {SWIZZLE_BYTES}-byte swizzle"
    return None
