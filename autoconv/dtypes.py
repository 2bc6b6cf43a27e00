"""Element types as kernels store them: float32, and bfloat16 and float16 as their bit
patterns in uint16 arrays (bfloat16: the high half of a float32; float16: IEEE half), since
neither NumPy nor CuPy has a bfloat16 type. :func:`encode` turns float32 values into a
type's storage (round to nearest, ties to even), :func:`decode` storage back into float32
values (exactly), :func:`rounded` both, so that a reference computes from the numbers a
16-bit kernel reads. A problem's tensors in these types are :mod:`autoconv.problems.buffers`.

Every function takes ``xp``, the array module (``numpy`` or ``cupy``), as autoconv.verify does.
"""

from __future__ import annotations

from typing import Any

import numpy

#: The array dtype of a buffer of each element type.
STORAGE_DTYPES = {"float32": numpy.float32, "bfloat16": numpy.uint16, "float16": numpy.uint16}
#: A NaN in each element type's storage: unwritten outputs read back as NaN.
POISON_BITS = {"float32": float("nan"), "bfloat16": 0xFFFF, "float16": 0xFFFF}


def encode(values, dtype: str, xp: Any = numpy):
    """``values`` (float32) in ``dtype``'s storage, each rounded to nearest, ties to even."""
    values = xp.asarray(values, dtype=xp.float32)
    if dtype == "float32":
        return values
    if dtype == "float16":
        with numpy.errstate(over="ignore"):  # beyond 65504 is infinite, as intended
            return values.astype(xp.float16).view(xp.uint16)
    if dtype == "bfloat16":  # add half an ulp of the high half, plus one when its last bit is odd
        bits = values.view(xp.uint32).astype(xp.uint64)
        rounded = ((bits + 0x7FFF + (bits >> 16 & 1)) >> 16).astype(xp.uint16)
        quiet_nan = ((bits >> 16) & 0x8000 | 0x7FC0).astype(xp.uint16)
        return xp.where(xp.isnan(values), quiet_nan, rounded)
    raise ValueError(f"unknown dtype {dtype!r}")


def decode(stored, dtype: str, xp: Any = numpy):
    """The float32 values of a buffer of ``dtype`` (exact: float32 holds every bfloat16 and
    float16 number, subnormals, infinities and NaN included).

    Raises:
        ValueError: a 16-bit ``dtype`` with ``stored`` not uint16 (values, not bit patterns).
    """
    if dtype == "float32":
        return xp.asarray(stored, dtype=xp.float32)
    if dtype in ("bfloat16", "float16") and numpy.dtype(stored.dtype) != numpy.uint16:
        raise ValueError(f"a {dtype} buffer holds bit patterns (uint16), not {stored.dtype}: values need no "
                         f"decoding")
    if dtype == "float16":
        return stored.view(xp.float16).astype(xp.float32)
    if dtype == "bfloat16":
        return (stored.astype(xp.uint32) << 16).view(xp.float32)
    raise ValueError(f"unknown dtype {dtype!r}")


def rounded(values, dtype: str, xp: Any = numpy):
    """``values`` rounded to ``dtype`` and back: float32 numbers the format holds exactly."""
    return decode(encode(values, dtype, xp), dtype, xp)


def holds_exactly(values, dtype: str, xp: Any = numpy) -> bool:
    """Whether every one of ``values`` is a number of ``dtype`` (rounding leaves it unchanged;
    NaN counts as held)."""
    values = xp.asarray(values)
    return bool(xp.all((rounded(values, dtype, xp) == values) | xp.isnan(values)))
