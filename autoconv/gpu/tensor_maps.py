"""Encoding tensor maps (:mod:`autoconv.kernels.tensor_maps`) for a GPU, through the CUDA driver.

``cuTensorMapEncodeIm2col`` and ``cuTensorMapEncodeTiled`` (libcuda, through ctypes: neither
CuPy nor the CUDA runtime wraps them) fill a 128-byte ``CUtensorMap`` from a map's sizes,
strides, box and swizzle and a buffer's device address. A :class:`MapSlot` holds one encoded map
in 64-byte aligned host memory, where ``cuLaunchKernel``'s parameter array can point, and
re-encodes it only when the buffer's address changes.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from functools import cache

import numpy

from autoconv.errors import AutoconvError
from autoconv.kernels.tensor_maps import (
    TENSOR_MAP_ALIGNMENT,
    TENSOR_MAP_BYTES,
    Im2colMap,
    TensorMap,
    TiledMap,
    check_map,
)

# CUtensorMapDataType, CUtensorMapSwizzle, CUtensorMapL2promotion (cuda.h). TFLOAT32 (11): float32
# in memory, rounded to TF32 by the copy (to nearest, ties to even;
# docs/lab-notes/2026-11-26-tf32-nhwc-through-tma.md).
_DATA_TYPES = {"f16": 6, "f32": 7, "bf16": 9, "tf32": 11}
_INTERLEAVE_NONE = 0
_SWIZZLE_128B = 3
_L2_PROMOTION_128B = 2
_OOB_FILL_ZEROS = 0


class TensorMapError(AutoconvError):
    """The driver refused to encode a tensor map (the message says which and why)."""


@cache
def _driver() -> ctypes.CDLL:
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError as err:
        raise TensorMapError(f"tensor maps need the CUDA driver (libcuda.so.1): {err}") from None
    driver.cuTensorMapEncodeIm2col.restype = ctypes.c_int
    driver.cuTensorMapEncodeTiled.restype = ctypes.c_int
    return driver


def _check(result: int, what: str) -> None:
    if result != 0:
        name = ctypes.c_char_p()
        _driver().cuGetErrorName(result, ctypes.byref(name))
        raise TensorMapError(f"{what} failed: CUresult {result} ({(name.value or b'?').decode()})")


def encode_into(tensor_map: TensorMap, address: int, target: int) -> None:
    """Encode ``tensor_map`` for the buffer at device ``address`` into the 128 bytes at host
    address ``target`` (64-byte aligned)."""
    reason = check_map(tensor_map)
    if reason:
        raise TensorMapError(f"tensor map of {tensor_map.buffer}: {reason}")
    if address % 16:
        raise TensorMapError(f"tensor map of {tensor_map.buffer}: the buffer's address {address:#x} is not "
                             f"16-byte aligned")
    driver = _driver()
    data_type = _DATA_TYPES[tensor_map.element]
    if isinstance(tensor_map, Im2colMap):
        _check(driver.cuTensorMapEncodeIm2col(
            ctypes.c_void_p(target), data_type, 4, ctypes.c_void_p(address),
            (ctypes.c_uint64 * 4)(*tensor_map.sizes), (ctypes.c_uint64 * 3)(*tensor_map.strides),
            (ctypes.c_int * 2)(*tensor_map.lower), (ctypes.c_int * 2)(*tensor_map.upper),
            ctypes.c_uint32(tensor_map.channels), ctypes.c_uint32(tensor_map.pixels),
            (ctypes.c_uint32 * 4)(*tensor_map.element_strides),
            _INTERLEAVE_NONE, _SWIZZLE_128B, _L2_PROMOTION_128B, _OOB_FILL_ZEROS),
            f"cuTensorMapEncodeIm2col({tensor_map})")
    elif isinstance(tensor_map, TiledMap):
        _check(driver.cuTensorMapEncodeTiled(
            ctypes.c_void_p(target), data_type, 3, ctypes.c_void_p(address),
            (ctypes.c_uint64 * 3)(*tensor_map.sizes), (ctypes.c_uint64 * 2)(*tensor_map.strides),
            (ctypes.c_uint32 * 3)(*tensor_map.box), (ctypes.c_uint32 * 3)(1, 1, 1),
            _INTERLEAVE_NONE, _SWIZZLE_128B, _L2_PROMOTION_128B, _OOB_FILL_ZEROS),
            f"cuTensorMapEncodeTiled({tensor_map})")
    else:
        raise TypeError(f"not a tensor map: {tensor_map!r}")


class MapSlot:
    """One kernel argument that is a tensor map: 128 aligned bytes of host memory holding the map
    encoded for the last buffer address given to :meth:`fill`.

    The maps encoded for the last :data:`REMEMBERED` addresses are kept: one problem's layers
    in a network (ResNet-50's six layer3 blocks share three problems) take a different input
    buffer each call, from addresses PyTorch's caching allocator hands out again forward after
    forward, so a copy of 128 bytes replaces most encodings (~10-20 us of host time each)."""

    #: Encoded maps kept per slot, by buffer address.
    REMEMBERED = 32

    def __init__(self, tensor_map: TensorMap):
        self.tensor_map = tensor_map
        self._storage = ctypes.create_string_buffer(TENSOR_MAP_BYTES + TENSOR_MAP_ALIGNMENT)
        base = ctypes.addressof(self._storage)
        #: Host address of the encoded map (what a kernelParams entry points to).
        self.address = base + (-base) % TENSOR_MAP_ALIGNMENT
        self._encoded_for: int | None = None
        self._remembered: OrderedDict[int, bytes] = OrderedDict()   # buffer address -> its encoded map

    def fill(self, buffer_address: int) -> int:
        """Encode the map for the buffer at ``buffer_address`` (its tensor ``offset`` bytes further;
        unless it already is, or was for one of the last addresses); returns :attr:`address`."""
        if buffer_address == self._encoded_for:
            return self.address
        encoded = self._remembered.get(buffer_address)
        if encoded is not None:
            ctypes.memmove(self.address, encoded, TENSOR_MAP_BYTES)
            self._remembered.move_to_end(buffer_address)
        else:
            encode_into(self.tensor_map, buffer_address + self.tensor_map.offset, self.address)
            self._remembered[buffer_address] = ctypes.string_at(self.address, TENSOR_MAP_BYTES)
            if len(self._remembered) > self.REMEMBERED:
                self._remembered.popitem(last=False)
        self._encoded_for = buffer_address
        return self.address

    def bytes(self) -> bytes:
        """The encoded map (for tests and the emulator's comparison)."""
        return ctypes.string_at(self.address, TENSOR_MAP_BYTES)


def encode(tensor_map: TensorMap, address: int) -> numpy.ndarray:
    """``tensor_map`` encoded for the buffer at device ``address`` (plus the map's offset): 128
    bytes (uint8)."""
    slot = MapSlot(tensor_map)
    slot.fill(address)
    return numpy.frombuffer(slot.bytes(), dtype=numpy.uint8).copy()
