"""The comparison's sums and the bit check on the host (NumPy); tests/gpu/test_gpu.py checks the
device kernels of autoconv.verify.device_sums against these."""

from __future__ import annotations

import math

import numpy as np

from autoconv.verify.compare import check_result, comparison_sums, relative_l2_error, same_bits


def test_sums_count_nonfinite_values_and_leave_them_out():
    ref = np.array([1.0, 2.0, -2.0, 4.0])
    out = np.array([1.5, np.nan, -np.inf, 4.0], dtype=np.float32)
    assert comparison_sums(out, ref) == (2, 0.25, 25.0)
    assert relative_l2_error(out, ref) == math.inf
    outcome = check_result(out, ref)
    assert not outcome.ok and outcome.message.startswith("2 of 4 output elements are NaN or infinite (first at [1]")


def test_error_is_relative_and_absolute_against_zeros():
    ref = np.array([[3.0, 4.0]])
    assert relative_l2_error(ref + np.array([[0.0, 0.5]]), ref) == 0.1
    assert relative_l2_error(np.array([0.0, 2.0]), np.zeros(2)) == 2.0
    assert check_result(np.float32(ref + 1e-7), ref).ok


def test_same_bits_sees_one_changed_bit_and_nan_payloads():
    words = np.arange(1000, dtype=np.uint16)
    changed = words.copy()
    changed[999] ^= 1 << 15
    assert same_bits(words, words.copy()) and not same_bits(words, changed)
    quiet = np.array([np.nan], np.float32)
    payload = np.array([0x7FC00001], np.uint32).view(np.float32)
    assert same_bits(quiet, quiet.copy()) and not same_bits(quiet, payload)
    assert not same_bits(words, words[:999].copy())
