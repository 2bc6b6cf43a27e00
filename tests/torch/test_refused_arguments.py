"""Issue 65: ``autoconv.torch.conv2d`` and the operator refuse on meta tensors (and while tracing)
what a GPU call refuses, naming the argument: channels that disagree returned a shape, a stride
of 0 raised ZeroDivisionError twelve frames deep, and ``conv2d(None, None)`` an AttributeError."""

from __future__ import annotations

import pytest
import torch

import autoconv
import autoconv.torch as ac
from autoconv.errors import ProblemError


def _meta(*shape):
    return torch.empty(shape, device="meta")


X, W = _meta(1, 4, 8, 8), _meta(3, 4, 3, 3)


@pytest.mark.parametrize("args, kwargs, field, fragment", [
    ((X, _meta(3, 5, 3, 3)), {}, "w.shape", "w has 5 input channels but x has 4"),
    ((_meta(1, 4, 8), W), {}, "x.shape", "expected 4 dimensions (N, C, H, W)"),
    ((X, W, _meta(4)), {}, "bias.shape", "expected (3,): one value per filter"),
    ((X, W), {"stride": 0}, "stride (height)", "must be >= 1"),
    ((X, W), {"stride": (1, 0), "padding": "valid"}, "stride (width)", "must be >= 1"),
    ((X, W), {"dilation": (0, 1)}, "dilation (height)", "must be >= 1"),
    ((X, W), {"padding": -1}, "padding (top)", "must be >= 0"),
    ((X, _meta(3, 4, 9, 3)), {}, "R", "filter height with dilation (9) exceeds the padded input height"),
    ((None, None), {}, "x", "expected a (N, C, H, W) torch.Tensor"),
    ((X, None), {}, "w", "expected a (K, C, R, S) torch.Tensor"),
    ((X, W, 3.0), {}, "bias", "expected a (K,) torch.Tensor on a CUDA device (or None)"),
])
def test_meta_calls_refuse_what_a_gpu_call_refuses(args, kwargs, field, fragment):
    with pytest.raises(ProblemError) as info:
        ac.conv2d(*args, **kwargs)
    assert info.value.field == field and fragment in str(info.value), str(info.value)


@pytest.mark.parametrize("w, stride, padding, dilation, field", [
    (_meta(3, 5, 3, 3), [1, 1], [0, 0, 0, 0], [1, 1], "w.shape"),
    (W, [0, 1], [0, 0, 0, 0], [1, 1], "stride (height)"),
    (W, [1, 1], [0, 0, 0, -1], [1, 1], "padding (right)"),
    (W, [1, 1], [0, 0, 0, 0], [1, 0], "dilation (width)"),
    (_meta(3, 4, 3, 12), [1, 1], [1, 1, 1, 1], [1, 1], "S"),
])
def test_the_operator_refuses_them_too(w, stride, padding, dilation, field):
    with pytest.raises(ProblemError) as info:
        torch.ops.autoconv.conv2d(X, w, None, stride, padding, dilation)
    assert info.value.field == field


def test_good_meta_calls_still_give_the_shape():
    assert ac.conv2d(X, W, _meta(3), stride=(2, 1), padding=(1, 0)).shape == (1, 3, 4, 6)
    assert torch.ops.autoconv.conv2d(X, W, None, [1, 1], [0, 0, 0, 0], [1, 1]).shape == (1, 3, 6, 6)


def test_autoconv_conv2d_without_arrays_says_what_they_must_be():
    with pytest.raises(ProblemError, match=r"^x=None: x is required: a \(N, C, H, W\) array in GPU memory"):
        autoconv.conv2d(None, None)
