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


def test_compiled_layout_is_nhwc_for_tensor_core_precisions_only():
    assert [inductor.compiled_layout(p) for p in ("fp32", "tf32", "bf16", "fp16")] == ["NCHW", "NHWC", "NHWC", "NHWC"]
