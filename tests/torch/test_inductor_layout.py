"""How Inductor lays out the operator's tensors in a compiled graph (autoconv.torch.inductor), run
on the CPU: the operator's CPU kernel is replaced, for the test, by PyTorch's convolution that notes
the memory format it was handed, and the rule that says "channels_last here" is forced either way."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

import autoconv.torch as ac  # noqa: E402
from autoconv.torch import inductor  # noqa: E402

CHANNELS_LAST = torch.channels_last


@pytest.fixture
def recording_cpu_kernel():
    """The memory formats (x channels_last, w channels_last) of each call of the operator on the
    CPU, which computes it with F.conv2d (contiguous output, as the fake implementation promises
    for CPU tensors) while the fixture lives."""
    seen: list[tuple[bool, bool]] = []

    def kernel(x, w, bias, stride, padding, dilation, precision="fp32"):
        seen.append((x.is_contiguous(memory_format=CHANNELS_LAST) and not x.is_contiguous(),
                     w.is_contiguous(memory_format=CHANNELS_LAST) and not w.is_contiguous()))
        top, bottom, left, right = padding
        padded = F.pad(x, (left, right, top, bottom))
        return F.conv2d(padded, w, bias, list(stride), 0, list(dilation)).contiguous()

    library = torch.library.Library("autoconv", "IMPL")
    library.impl("conv2d", kernel, "CPU")
    torch._dynamo.reset()
    yield seen
    library._destroy()  # (the operator's own CPU kernel again)
    torch._dynamo.reset()


def _two_layers(x, w1, w2):
    hidden = torch.relu(ac.conv2d(x * 2.0, w1, padding=1, precision="tf32")) + 1.0
    return ac.conv2d(hidden, w2, stride=2, precision="tf32").sigmoid()


@pytest.mark.parametrize("channels_last", [True, False])
def test_inductor_hands_the_operator_the_layout_it_computes_in(recording_cpu_kernel, monkeypatch, channels_last):
    """Where the operator computes NHWC, both calls get channels_last x and w although the graph's
    input and weights are NCHW (the producer of the second call's x writes it channels_last);
    elsewhere contiguous ones; the result is the same either way."""
    monkeypatch.setattr(inductor, "wants_channels_last", lambda device, dtype, precision: channels_last)
    x, w1, w2 = torch.randn(2, 5, 9, 7), torch.randn(6, 5, 3, 3), torch.randn(4, 6, 3, 2)
    with torch._inductor.config.patch(fx_graph_cache=False):  # (lowered here, not read from a cache)
        got = torch.compile(_two_layers, fullgraph=True)(x, w1, w2)
    want = torch.sigmoid(F.conv2d(torch.relu(F.conv2d(x * 2.0, w1, padding=1)) + 1.0, w2, stride=2))
    assert recording_cpu_kernel == [(channels_last, channels_last)] * 2
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("hopper", [True, False])
def test_the_layout_rule_follows_dtype_precision_and_device(monkeypatch, hopper):
    """16-bit calls are NHWC anywhere on CUDA, tf32 ones only on a GPU with an NHWC tf32 family,
    fp32 ones never, CPU calls never; compiled_layout (what `tune --compile` tunes) agrees."""
    from autoconv.torch import layouts

    monkeypatch.setattr(layouts, "computes_tf32_in_nhwc", lambda device: hopper)
    cuda, cpu = torch.device("cuda", 0), torch.device("cpu")
    wants = inductor.wants_channels_last
    assert wants(cuda, torch.bfloat16, "bf16") and wants(cuda, torch.float16, "fp16")
    assert wants(cuda, torch.float32, "tf32") is hopper
    assert not wants(cuda, torch.float32, "fp32") and not wants(cpu, torch.bfloat16, "bf16") and not wants(
        None, torch.float32, "tf32")
    assert [layouts.compiled_layout(p, 0) for p in ("fp32", "tf32", "bf16", "fp16")] == [
        "NCHW", "NHWC" if hopper else "NCHW", "NHWC", "NHWC"]
    assert [layouts.compiled_layout(p) for p in ("fp32", "tf32", "bf16")] == ["NCHW", "NHWC", "NHWC"]


class _Node:
    """A stand-in for an Inductor IR node: its device and dtype, and what was required of it."""

    def __init__(self, name, device="cuda", dtype=torch.float32):
        self.name, self.device, self.dtype = name, torch.device(device, 0 if device == "cuda" else None), dtype

    def get_device(self):
        return self.device

    def get_dtype(self):
        return self.dtype


@pytest.mark.parametrize("form", ["positional", "keywords", "default precision"])
def test_the_constraint_lays_out_x_and_w_however_the_call_passes_them(monkeypatch, form):
    """x and w are required channels_last (or contiguous) whether passed by position or by name,
    with the precision given or left to its default ("fp32": contiguous); the other arguments
    pass through untouched."""
    from torch._inductor import ir

    monkeypatch.setattr(ir.ExternKernel, "require_channels_last", classmethod(lambda cls, n: ("channels_last", n.name)))
    monkeypatch.setattr(ir.ExternKernel, "require_contiguous", classmethod(lambda cls, n: ("contiguous", n.name)))
    monkeypatch.setattr(inductor, "wants_channels_last", lambda device, dtype, precision: precision == "tf32")
    x, w, bias = _Node("x"), _Node("w"), _Node("bias")
    geometry = ([1, 1], [0, 0, 0, 0], [1, 1])
    if form == "positional":
        args, kwargs = inductor._operator_layout(None, x, w, bias, *geometry, "tf32")
        assert args[:3] == (("channels_last", "x"), ("channels_last", "w"), bias) and args[3:] == (*geometry, "tf32")
    elif form == "keywords":
        args, kwargs = inductor._operator_layout(None, x, w=w, bias=bias, stride=geometry[0], padding=geometry[1],
                                                 dilation=geometry[2], precision="tf32")
        assert args == (("channels_last", "x"),) and kwargs["w"] == ("channels_last", "w") and kwargs["bias"] is bias
    else:
        args, kwargs = inductor._operator_layout(None, x, w, bias, *geometry)
        assert args[:2] == (("contiguous", "x"), ("contiguous", "w")) and kwargs == {}
