"""autoconv.dtypes: 16-bit codecs (round to nearest even, exact decoding)."""

from __future__ import annotations

import numpy as np
import pytest

from autoconv.dtypes import decode, encode, rounded


def test_known_bit_patterns_and_ties_to_even():
    assert encode(np.float32([1.0]), "bfloat16")[0] == 0x3F80
    assert encode(np.float32([1.0]), "float16")[0] == 0x3C00
    # bf16 keeps 7 mantissa bits: 1 + 2^-8 is a tie, to even (1.0); 1 + 3*2^-8 ties up to 1 + 2^-6
    assert encode(np.float32([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20]), "bfloat16").tolist() == [
        0x3F80, 0x3F82, 0x3F81]
    # fp16: 2^-24 is the smallest subnormal, 2^-25 ties to 0, 65520 overflows
    assert encode(np.float32([2**-24, 2**-25, 3 * 2**-25, 65504, 65520]), "float16").tolist() == [
        0x0001, 0x0000, 0x0002, 0x7BFF, 0x7C00]
    assert np.isnan(decode(encode(np.float32([np.nan]), "bfloat16"), "bfloat16")[0])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_round_trips_are_exact_and_rounding_is_idempotent(dtype):
    bits = np.arange(0, 1 << 16, dtype=np.uint32).astype(np.uint16)
    values = decode(bits, dtype)
    finite = np.isfinite(values)
    assert np.array_equal(encode(values[finite], dtype), bits[finite])
    data = np.random.default_rng(0).uniform(-3, 3, 1000).astype(np.float32)
    once = rounded(data, dtype)
    assert np.array_equal(rounded(once, dtype), once)
    unit = 2.0**-8 if dtype == "bfloat16" else 2.0**-11
    assert np.all(np.abs(once - data) <= unit * np.abs(data))


def test_specials_and_subnormals():
    specials = np.float32([np.inf, -np.inf, -0.0, 0.0])
    assert encode(specials, "bfloat16").tolist() == [0x7F80, 0xFF80, 0x8000, 0x0000]
    assert encode(specials, "float16").tolist() == [0x7C00, 0xFC00, 0x8000, 0x0000]
    # NaN stays NaN, whatever its payload: 0x7F800001's high half alone would be infinity
    nans = np.array([0x7FC00000, 0x7F800001, 0xFFFFFFFF], np.uint32).view(np.float32)
    for dtype in ("bfloat16", "float16"):
        assert np.isnan(decode(encode(nans, dtype), dtype)).all()
    assert np.isnan(decode(np.uint16([0xFFFF]), "bfloat16")[0]) and np.isnan(decode(np.uint16([0xFFFF]), "float16")[0])
    # ties to even below zero too, and the largest float32 overflows bf16 (beyond its largest + half an ulp)
    assert encode(np.float32([-(1 + 2**-8), -(1 + 3 * 2**-8), np.finfo(np.float32).max]), "bfloat16").tolist() == [
        0xBF80, 0xBF82, 0x7F80]
    # fp16 subnormals: exact both ways, and 1.5 * 2^-24 ties to even (2^-23)
    assert decode(np.uint16([0x0001, 0x03FF, 0x8001]), "float16").tolist() == [2**-24, 1023 * 2**-24, -(2**-24)]
    assert encode(np.float32([1.5 * 2**-24, 2.5 * 2**-24]), "float16").tolist() == [0x0002, 0x0002]
    # bf16 keeps float32's subnormals' high halves
    assert decode(np.uint16([0x0001]), "bfloat16")[0] == np.float32(2**-133)


def test_decoding_values_is_refused():
    with pytest.raises(ValueError, match="bit patterns .uint16., not float32"):
        decode(np.float32([1.0]), "bfloat16")
    with pytest.raises(ValueError, match="unknown dtype 'float64'"):
        encode(np.float32([1.0]), "float64")
