"""The CPU emulator's encoding of TMA tensor maps (:mod:`autoconv.kernels.tensor_maps`).

On a GPU a tensor map is the driver's opaque 128 bytes (:mod:`autoconv.gpu.tensor_maps`); under
emulation it is this module's 128 bytes, which the emulator's model of ``templates/tma.cuh``
(``emulator_runtime.cpp``'s ``EmulatedTensorMap``, the same layout) reads. A map that does not
start with :data:`MAGIC` is a kernel fault there, so a map the driver encoded (or garbage) never
passes for one. Little-endian fields, innermost dimension first:

====== ========================= ======================================================
offset field                     meaning
====== ========================= ======================================================
0      magic (8 bytes)           :data:`MAGIC`
8      address (u64)             the tensor's first element: 0 here; the emulated program
                                 writes its buffer's address plus the map's ``offset`` (the
                                 manifest's ``address`` line)
16     kind (u16)                1 im2col, 2 tiled
18     element bytes (u16)       2 (bf16, f16) or 4 (tf32)
20     swizzle bytes (u16)       :data:`~autoconv.kernels.tensor_maps.SWIZZLE_BYTES`
22     rounding (u16)            0: the copy moves the bits; :data:`ROUND_TO_TF32`: it rounds
                                 each float32 to TF32 (to nearest, ties to even), as the
                                 driver's TFLOAT32 maps do
24     sizes (u32 x 4)           im2col: C, W, H, N; tiled: dimensions 0, 1, 2, then 1
40     strides (u64 x 3)         bytes from one index of dimension 1, 2, 3 to the next
64     lower, upper (i32 x 4)    im2col: the bounding box's corners (W, H each); tiled: 0
80     element strides (u32 x 4) im2col: 1, stride W, stride H, 1; tiled: 1, 1, 1, 1
96     box (u32 x 3)             im2col: channels, pixels, 0; tiled: the box
108    name (20 bytes)           the map's name, NUL-terminated (for fault messages)
====== ========================= ======================================================
"""

from __future__ import annotations

import numpy

from autoconv.kernels.tensor_maps import (
    ELEMENT_BYTES,
    SWIZZLE_BYTES,
    TENSOR_MAP_BYTES,
    Im2colMap,
    TensorMap,
    TiledMap,
    check_map,
)

#: The first 8 bytes of every map the emulator encodes.
MAGIC = b"acemuTMA"
#: Offset of the address field (the emulated program writes the buffer's address there).
ADDRESS_OFFSET = 8
#: Bytes of the name field, its NUL included: longer names are cut short in messages.
NAME_BYTES = 20

KIND_IM2COL = 1
KIND_TILED = 2
#: The rounding field of a map whose copies round float32 elements to TF32.
ROUND_TO_TF32 = 1
#: Elements whose copies round (the others copy bits).
ROUNDING = {"tf32": ROUND_TO_TF32}

_LAYOUT = numpy.dtype({
    "names": ["magic", "address", "kind", "element_bytes", "swizzle_bytes", "rounding", "sizes", "strides",
              "lower", "upper", "element_strides", "box", "name"],
    "formats": ["S8", "<u8", "<u2", "<u2", "<u2", "<u2", ("<u4", 4), ("<u8", 3), ("<i4", 2), ("<i4", 2),
                ("<u4", 4), ("<u4", 3), f"S{NAME_BYTES}"],
    "offsets": [0, 8, 16, 18, 20, 22, 24, 40, 64, 72, 80, 96, 108],
    "itemsize": TENSOR_MAP_BYTES,
})


def encode(tensor_map: TensorMap, name: str = "") -> numpy.ndarray:
    """``tensor_map`` in the emulator's encoding: 128 bytes (uint8), address 0.

    Args:
        tensor_map: the map, as a plan lists it.
        name: the map's name (the plan's key for it), which the emulator's faults quote.

    Raises:
        ValueError: the driver would refuse the map (:func:`autoconv.kernels.tensor_maps.check_map`).
    """
    problem = check_map(tensor_map)
    if problem is not None:
        raise ValueError(f"tensor map {name or tensor_map.buffer!r}: {problem}")
    record = numpy.zeros((), dtype=_LAYOUT)
    record["magic"] = MAGIC
    record["element_bytes"] = ELEMENT_BYTES[tensor_map.element]
    record["swizzle_bytes"] = SWIZZLE_BYTES
    record["rounding"] = ROUNDING.get(tensor_map.element, 0)
    record["name"] = name.encode("ascii", "replace")[:NAME_BYTES - 1]
    if isinstance(tensor_map, Im2colMap):
        record["kind"] = KIND_IM2COL
        record["sizes"] = tensor_map.sizes
        record["strides"] = tensor_map.strides
        record["lower"] = tensor_map.lower
        record["upper"] = tensor_map.upper
        record["element_strides"] = tensor_map.element_strides
        record["box"] = (tensor_map.channels, tensor_map.pixels, 0)
    elif isinstance(tensor_map, TiledMap):
        record["kind"] = KIND_TILED
        record["sizes"] = (*tensor_map.sizes, 1)
        record["strides"] = (*tensor_map.strides, tensor_map.strides[-1] * tensor_map.sizes[2])
        record["element_strides"] = (1, 1, 1, 1)
        record["box"] = tensor_map.box
    else:
        raise TypeError(f"not a tensor map: {tensor_map!r}")
    return numpy.frombuffer(record.tobytes(), dtype=numpy.uint8).copy()


def extent_bytes(tensor_map: TensorMap) -> int:
    """Bytes of the buffer the map covers, from its first element past its last."""
    sizes = tensor_map.sizes
    return tensor_map.strides[-1] * sizes[-1]


__all__ = ["ADDRESS_OFFSET", "MAGIC", "NAME_BYTES", "ROUND_TO_TF32", "encode", "extent_bytes"]
