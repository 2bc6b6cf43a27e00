"""Hostile calls of the Python API: ``autoconv.conv2d`` on what is not a GPU array,
``autoconv.torch.conv2d`` on meta and CPU tensors with bad strides, paddings, dilations,
shapes, dtypes and devices, and ``autoconv.torch.convert`` of what is not a model or holds
layers it cannot run. Each returns, or raises :class:`~autoconv.errors.AutoconvError` naming
the argument; nothing else (the harness), and nothing is written."""

from __future__ import annotations

import math

import pytest

import autoconv
from tests.hostile.harness import Case, params

torch = pytest.importorskip("torch")
nn = torch.nn
ac = pytest.importorskip("autoconv.torch")

BIG = 2**63


def meta(*shape, dtype=None):
    return torch.empty(shape, device="meta", dtype=dtype or torch.float32)


X, W = (1, 4, 8, 8), (3, 4, 3, 3)

#: (id, args, kwargs) of autoconv.torch.conv2d; shapes are meta tensors' unless a tensor is given
TORCH_CALLS = [
    ("good", (X, W), {}),
    ("stride-zero", (X, W), {"stride": 0}),
    ("stride-negative", (X, W), {"stride": -1}),
    ("stride-2**63", (X, W), {"stride": BIG}),
    ("stride-float", (X, W), {"stride": 1.5}),
    ("stride-text", (X, W), {"stride": "2"}),
    ("stride-none", (X, W), {"stride": None}),
    ("stride-three", (X, W), {"stride": (1, 1, 1)}),
    ("stride-nan", (X, W), {"stride": math.nan}),
    ("padding-negative", (X, W), {"padding": -1}),
    ("padding-2**63", (X, W), {"padding": BIG}),
    ("padding-bogus", (X, W), {"padding": "bogus"}),
    ("padding-three", (X, W), {"padding": (1, 2, 3)}),
    ("padding-same-stride-2", (X, W), {"padding": "same", "stride": 2}),
    ("dilation-zero", (X, W), {"dilation": 0}),
    ("dilation-2**63", (X, W), {"dilation": BIG}),
    ("groups-2", (X, W), {"groups": 2}),
    ("groups-zero", (X, W), {"groups": 0}),
    ("channels-4-vs-5", (X, (3, 5, 3, 3)), {}),
    ("x-3d", ((4, 8, 8), W), {}),
    ("x-5d", ((1, 1, 4, 8, 8), W), {}),
    ("w-2d", (X, (3, 4)), {}),
    ("filter-larger", ((1, 4, 2, 2), (3, 4, 5, 5)), {}),
    ("batch-zero", ((0, 4, 8, 8), W), {}),
    ("channels-zero", ((1, 0, 8, 8), (3, 0, 3, 3)), {}),
    ("huge-shape", ((2**20, 4, 2**10, 2**10), W), {}),
    ("bias-wrong-shape", (X, W, (4,)), {}),
    ("bias-2d", (X, W, (3, 1)), {}),
    ("bias-number", (X, W, 3.0), {}),
    ("precision-fp64", (X, W), {"precision": "fp64"}),
    ("precision-number", (X, W), {"precision": 32}),
    ("out-wrong-shape", (X, W), {"out": (1, 3, 7, 7)}),
    ("out-text", (X, W), {"out": "y"}),
    ("none-none", (None, None), {}),
    ("numbers", (1, 2), {}),
    ("lists", ([[1.0]], [[1.0]]), {}),
]


def _tensor(spec, dtype=None):
    return meta(*spec, dtype=dtype) if isinstance(spec, tuple) else spec


def _torch_case(name, args, kwargs, device="meta", dtype=None):
    def act(box):
        made = [(_tensor(a, dtype) if device == "meta" else torch.zeros(a, dtype=dtype or torch.float32))
                if isinstance(a, tuple) else a for a in args]
        extra = {k: _tensor(v, dtype) if k == "out" and isinstance(v, tuple) else v for k, v in kwargs.items()}
        box.api(ac.conv2d, *made, **extra)
    return Case(f"torch-conv2d-{device}-{name}" + (f"-{dtype}".replace("torch.", "") if dtype else ""), act=act)


#: Mixed devices and dtypes: (id, x, w)
MIXED = [
    ("x-cpu-w-meta", lambda: torch.zeros(X), lambda: meta(*W)),
    ("float64", lambda: meta(*X, dtype=torch.float64), lambda: meta(*W, dtype=torch.float64)),
    ("int32", lambda: meta(*X, dtype=torch.int32), lambda: meta(*W, dtype=torch.int32)),
    ("bf16-and-fp32", lambda: meta(*X, dtype=torch.bfloat16), lambda: meta(*W)),
    ("complex", lambda: meta(*X, dtype=torch.complex64), lambda: meta(*W, dtype=torch.complex64)),
    ("nan-cpu", lambda: torch.full(X, math.nan), lambda: torch.full(W, math.inf)),
    ("non-contiguous", lambda: meta(1, 8, 8, 4).permute(0, 3, 1, 2)[:, :, ::2], lambda: meta(*W)),
    ("requires-grad-cpu", lambda: torch.zeros(X, requires_grad=True), lambda: torch.zeros(W, requires_grad=True)),
]


def _mixed_case(name, x, w):
    return Case(f"torch-conv2d-mixed-{name}", act=lambda box: box.api(ac.conv2d, x(), w()))


def _numpy(*shape, fill=0.0):
    import numpy
    return numpy.full(shape, fill, dtype=numpy.float32)


#: autoconv.conv2d: (id, args, kwargs)
ARRAY_CALLS = [
    ("none-none", lambda: (None, None), {}),
    ("numpy", lambda: (_numpy(*X), _numpy(*W)), {}),
    ("numpy-nan", lambda: (_numpy(*X, fill=math.nan), _numpy(*W)), {}),
    ("lists", lambda: ([[1.0]], [[2.0]]), {}),
    ("numbers", lambda: (1, 2), {}),
    ("text", lambda: ("x", "w"), {}),
    ("stride-zero", lambda: (_numpy(*X), _numpy(*W)), {"stride": 0}),
    ("precision-fp64", lambda: (_numpy(*X), _numpy(*W)), {"precision": "fp64"}),
    ("torch-cpu", lambda: (torch.zeros(X), torch.zeros(W)), {}),
    ("torch-meta", lambda: (meta(*X), meta(*W)), {}),
    ("out-text", lambda: (_numpy(*X), _numpy(*W)), {"out": "y"}),
]


def _array_case(name, args, kwargs):
    return Case(f"conv2d-{name}", act=lambda box: box.api(autoconv.conv2d, *args(), **kwargs))


class _Reflect(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 3, 3, padding=1, padding_mode="reflect")

    def forward(self, x):
        return self.conv(x)


def _bn_with_nan():
    model = nn.Sequential(nn.Conv2d(4, 3, 3), nn.BatchNorm2d(3))
    model[1].running_var.fill_(math.nan)
    return model.eval()


def _self_containing():
    model = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1))
    model.add_module("again", model[0])  # one layer reached twice
    return model


#: autoconv.torch.convert: (id, the model, kwargs)
MODELS = [
    ("none", lambda: None, {}),
    ("a-tensor", lambda: torch.zeros(3), {}),
    ("a-linear", lambda: nn.Linear(3, 4), {}),
    ("groups-2", lambda: nn.Sequential(nn.Conv2d(4, 4, 3, groups=2)), {}),
    ("depthwise", lambda: nn.Sequential(nn.Conv2d(4, 4, 3, groups=4)), {}),
    ("reflect-padding", _Reflect, {}),
    ("conv3d", lambda: nn.Sequential(nn.Conv3d(2, 2, 3)), {}),
    ("conv1d", lambda: nn.Sequential(nn.Conv1d(2, 2, 3)), {}),
    ("transposed", lambda: nn.Sequential(nn.ConvTranspose2d(2, 2, 3)), {}),
    ("precision-fp64", lambda: nn.Sequential(nn.Conv2d(4, 3, 3)), {"precision": "fp64"}),
    ("fuse-nan-batchnorm", _bn_with_nan, {"fuse": True}),
    ("one-layer-twice", _self_containing, {}),
    ("meta-model", lambda: nn.Sequential(nn.Conv2d(4, 3, 3, device="meta")), {}),
    ("float64-model", lambda: nn.Sequential(nn.Conv2d(4, 3, 3)).double(), {}),
    ("inplace-text", lambda: nn.Sequential(nn.Conv2d(4, 3, 3)), {"inplace": "yes"}),
]


#: The converted models called on a (1, 4, 8, 8) input.
RUN = {"groups-2", "depthwise", "reflect-padding", "fuse-nan-batchnorm", "one-layer-twice", "float64-model"}


def _convert_case(name, model, kwargs):
    def act(box):
        outcome = box.api(ac.convert, model(), **kwargs)
        if outcome.code is None and name in RUN:  # converted: called on the CPU, it runs or refuses
            converted, _ = outcome.value
            box.api(converted, torch.zeros(1, 4, 8, 8, dtype=next(converted.parameters()).dtype))
    return Case(f"convert-{name}", act=act)


CASES = ([_torch_case(*c) for c in TORCH_CALLS]
         + [_torch_case(*c, device="cpu") for c in TORCH_CALLS[:12]]
         + [_torch_case(*c, dtype=torch.bfloat16) for c in TORCH_CALLS[:6]]
         + [_mixed_case(*m) for m in MIXED] + [_array_case(*a) for a in ARRAY_CALLS]
         + [_convert_case(*m) for m in MODELS])


@pytest.mark.parametrize("case", params(CASES))
def test_api(hostile, case):
    hostile(case)
