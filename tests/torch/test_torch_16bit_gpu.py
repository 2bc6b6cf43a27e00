"""autoconv.torch on bfloat16 / float16 tensors on a GPU (issue 17): NHWC kernels on
channels_last tensors against float64 at the precision's bound, other layouts copied, modules
under torch.autocast, autograd, CUDA graphs and torch.compile."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("cupy")

from torch import nn  # noqa: E402

import autoconv  # noqa: E402
import autoconv.torch as ac  # noqa: E402
from autoconv.problems.problem import ConvProblem, parse_spec  # noqa: E402
from autoconv.runtime import UntunedWarning  # noqa: E402
from autoconv.verify.tolerance import tolerance  # noqa: E402
from tests.torch.float64 import reference, relative_error  # noqa: E402

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="gpu test: no CUDA device for PyTorch")]

CHANNELS_LAST = torch.channels_last
PRECISION = {torch.bfloat16: "bf16", torch.float16: "fp16"}


@pytest.fixture(autouse=True)
def _empty_cache_and_quiet_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOCONV_CACHE", str(tmp_path / "empty.sqlite3"))
    autoconv.runtime.set_cache(None)
    autoconv.runtime.clear_loaded()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UntunedWarning)
        yield
    autoconv.runtime.clear_loaded()


def bound(dtype, x, w, bias, stride, padding, dilation, want) -> float:
    """The relative L2 error autoconv's verification allows this 16-bit convolution (float32
    sums, one rounding to ``dtype``), for these inputs and float64 result ``want``."""
    N, C, H, W = x.shape
    K, _, R, S = w.shape
    problem = ConvProblem(N=N, C=C, H=H, W=W, K=K, R=R, S=S, stride=stride, padding=padding, dilation=dilation,
                          bias=bias is not None, precision=PRECISION[dtype], dtype=str(dtype).replace("torch.", ""),
                          layout="NHWC")
    import cupy

    as_cupy = [None if t is None else cupy.from_dlpack(t.detach().double().contiguous()) for t in (x, w)]
    return tolerance(problem, as_cupy[0], as_cupy[1], cupy.from_dlpack(want.contiguous()), xp=cupy)


# N, C, H, W, K, R, S, stride, (top, bottom, left, right), dilation, bias
SHAPES = [
    (1, 3, 17, 23, 5, 3, 2, (2, 1), (1, 0, 2, 1), (1, 1), True),     # odd C (scalar copies), asymmetric pad
    (2, 16, 15, 9, 24, 3, 3, (1, 1), (1, 1, 1, 1), (2, 2), False),   # dilation
    (3, 32, 14, 14, 64, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), True),   # 1x1 stride 1 (pixel rows)
    (2, 24, 21, 19, 40, 3, 5, (2, 2), (1, 1, 2, 2), (1, 1), False),  # non-square filter, stride 2
]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", SHAPES)
def test_16bit_channels_last_against_float64(shape, dtype):
    N, C, H, W, K, R, S, stride, padding, dilation, has_bias = shape
    g = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randn(N, C, H, W, device="cuda", generator=g).to(dtype).contiguous(memory_format=CHANNELS_LAST)
    w = torch.randn(K, C, R, S, device="cuda", generator=g).to(dtype).contiguous(memory_format=CHANNELS_LAST)
    bias = torch.randn(K, device="cuda", generator=g).to(dtype) if has_bias else None
    y = ac.conv2d(x, w, bias, stride, padding, dilation)
    assert y.dtype is dtype and y.is_contiguous(memory_format=CHANNELS_LAST)
    want = reference(x, w, bias, stride, padding, dilation)
    assert y.shape == want.shape
    assert relative_error(y, want) <= bound(dtype, x, w, bias, stride, padding, dilation, want)
    # The tensors were read where they lie: no copy. NCHW tensors are copied and give the same.
    again = ac.conv2d(x.contiguous(), w.contiguous(), bias, stride, padding, dilation)
    assert torch.equal(again, y)
    loaded = autoconv.runtime.loaded_kernels()
    assert loaded and loaded[-1]["kernel"].startswith("implicit_gemm_wgmma_tma")   # the NHWC default


def test_module_under_autocast_with_gradients():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 8, 1)).cuda()
    model = model.to(memory_format=CHANNELS_LAST)
    converted, report = ac.convert(model)
    assert len(report.converted) == 2
    x = torch.randn(4, 16, 12, 12, device="cuda").contiguous(memory_format=CHANNELS_LAST)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        want = model(x)
        got = converted(x)
    assert got.dtype is torch.bfloat16 and want.dtype is torch.bfloat16
    assert relative_error(got, want.double()) < 2e-2  # two bf16 layers against PyTorch's own
    got.float().square().sum().backward()
    assert converted[0].weight.grad is not None and torch.isfinite(converted[0].weight.grad).all()


def test_cuda_graph_replays_a_16bit_call():
    x = torch.randn(2, 16, 10, 10, device="cuda").bfloat16().contiguous(memory_format=CHANNELS_LAST)
    w = torch.randn(32, 16, 3, 3, device="cuda").bfloat16().contiguous(memory_format=CHANNELS_LAST)
    eager = ac.conv2d(x, w, padding=1)  # the warm-up call loads the kernel
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = ac.conv2d(x, w, padding=1)
    x.copy_(torch.randn_like(x))
    graph.replay()
    assert torch.equal(captured, ac.conv2d(x, w, padding=1)) and not torch.equal(captured, eager)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_compiled_model_under_autocast_asks_for_the_16bit_problems(dtype):
    """torch.compile of a converted float32 model run under torch.autocast: the operator's autocast
    kernel casts in the traced graph as PyTorch's convolution is cast, so the graph runs the 16-bit
    NHWC problems that `tune --model` tunes for autocast (not float32 ones), with the output of
    PyTorch's own compiled model within the format's error."""
    import torch._functorch.config
    import torch._inductor.config

    # In PyTorch 2.11 neither Dynamo's guards (pytorch/pytorch#112260) nor Inductor's and AOTAutograd's
    # caches key on the ambient autocast dtype: the float16 case would run the graph compiled for bfloat16.
    torch._dynamo.reset()
    model = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 8, 1)).cuda()
    model = model.to(memory_format=CHANNELS_LAST)
    converted, _ = ac.convert(model)
    x = torch.randn(2, 8, 12, 10, device="cuda").contiguous(memory_format=CHANNELS_LAST)
    with (torch.no_grad(), torch.autocast("cuda", dtype=dtype), torch._inductor.config.patch(fx_graph_cache=False),
          torch._functorch.config.patch(enable_autograd_cache=False)):
        got = torch.compile(converted, fullgraph=True)(x)
        want = model(x)
    precisions = {parse_spec(kernel["problem"]).precision for kernel in autoconv.runtime.loaded_kernels()}
    assert precisions == {PRECISION[dtype]} and got.dtype is dtype
    assert relative_error(got.float(), want.float()) < 1e-2


def test_torch_compile_traces_a_16bit_call():
    x = torch.randn(2, 8, 11, 9, device="cuda").half().contiguous(memory_format=CHANNELS_LAST)
    w = torch.randn(16, 8, 3, 3, device="cuda").half().contiguous(memory_format=CHANNELS_LAST)

    def f(x, w):
        return ac.conv2d(x, w, padding=1).relu()

    compiled = torch.compile(f, fullgraph=True)
    got = compiled(x, w)
    assert got.dtype is torch.float16
    assert torch.equal(got, f(x, w))
