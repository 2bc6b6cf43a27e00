"""autoconv.torch on a GPU: the operator against float64 on awkward shapes, autograd, CUDA
graphs, torch.compile, the kept weights transform, streams and devices."""

from __future__ import annotations

import copy
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("cupy")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import autoconv  # noqa: E402
import autoconv.torch as ac  # noqa: E402
from autoconv.errors import ProblemError  # noqa: E402
from autoconv.runtime import UntunedWarning  # noqa: E402
from tests.torch.float64 import reference, relative_error  # noqa: E402

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="gpu test: no CUDA device for PyTorch")]

#: Relative L2 error allowed against float64 (autoconv's float32 tolerance, see autoconv.verify).
TOLERANCE = 1e-5
#: The same for tf32 problems: inputs rounded to TF32 (10 mantissa bits), float32 accumulation.
TF32_TOLERANCE = 5e-3


@pytest.fixture(autouse=True)
def _strict_torch_and_quiet_defaults(tmp_path, monkeypatch):
    """Float32 references from PyTorch run strict; untuned shapes run defaults quietly; an
    empty cache so the test does not depend on what was tuned."""
    monkeypatch.setenv("AUTOCONV_CACHE", str(tmp_path / "empty.sqlite3"))
    autoconv.runtime.set_cache(None)
    autoconv.runtime.clear_loaded()
    cudnn, matmul = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UntunedWarning)
        yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = cudnn, matmul
    autoconv.runtime.clear_loaded()


# N, C, H, W, K, R, S, stride, (top, bottom, left, right), dilation, bias
AWKWARD = [
    (1, 3, 17, 23, 5, 3, 2, (2, 1), (1, 0, 2, 1), (1, 1), True),
    (2, 13, 31, 29, 17, 3, 3, (1, 1), (1, 1, 1, 1), (2, 1), False),
    (1, 64, 14, 14, 96, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), True),
    (3, 7, 9, 40, 33, 1, 5, (3, 1), (0, 0, 2, 2), (1, 2), True),
    (2, 32, 28, 28, 64, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), False),
]


@pytest.mark.parametrize("shape", AWKWARD, ids=[f"case{i}" for i in range(len(AWKWARD))])
def test_op_matches_float64_on_awkward_shapes(shape):
    N, C, H, W, K, R, S, stride, padding, dilation, has_bias = shape
    x = torch.randn(N, C, H, W, device="cuda")
    w = torch.randn(K, C, R, S, device="cuda")
    bias = torch.randn(K, device="cuda") if has_bias else None
    want = reference(x, w, bias, stride, padding, dilation)
    for call in (lambda: ac.conv2d(x, w, bias, stride, padding, dilation),
                 lambda: torch.ops.autoconv.conv2d(x, w, bias, list(stride), list(padding), list(dilation)),
                 lambda: autoconv.conv2d(x, w, bias, stride, padding, dilation)):
        got = call()
        assert got.shape == want.shape and got.dtype == torch.float32
        assert relative_error(got, want) < TOLERANCE


def test_same_padding_follows_pytorch_and_layouts_are_copied():
    x = torch.randn(2, 6, 15, 12, device="cuda").to(memory_format=torch.channels_last)
    w = torch.randn(8, 6, 4, 3, device="cuda")
    got = ac.conv2d(x, w, padding="same", dilation=(1, 2))
    want = F.conv2d(x.double(), w.double(), padding="same", dilation=(1, 2))
    assert relative_error(got, want) < TOLERANCE
    sliced = torch.randn(2, 6, 15, 24, device="cuda")[..., ::2]  # not contiguous
    assert relative_error(ac.conv2d(sliced, w, padding=1), F.conv2d(sliced.double(), w.double(), padding=1)) < TOLERANCE


def test_strided_same_padding_is_tensorflows_as_on_cupy_arrays():
    """PyTorch refuses padding='same' with a stride; autoconv computes TensorFlow's rule, the
    padding autoconv.conv2d gives CuPy arrays (the odd pixel at the bottom/right)."""
    from autoconv.runtime.api import problem_of_call

    x = torch.randn(2, 6, 15, 12, device="cuda")
    w = torch.randn(8, 6, 4, 3, device="cuda")
    top, bottom, left, right = problem_of_call(tuple(x.shape), tuple(w.shape), 2, "same", 1, False, "fp32").padding
    got = ac.conv2d(x, w, stride=2, padding="same")
    want = F.conv2d(F.pad(x.double(), (left, right, top, bottom)), w.double(), stride=2)
    assert got.shape == (2, 8, 8, 6) and relative_error(got, want) < TOLERANCE


def test_bad_arguments_are_refused_clearly():
    x = torch.randn(1, 4, 8, 8, device="cuda")
    w = torch.randn(4, 4, 3, 3, device="cuda")
    with pytest.raises(ProblemError, match=r"x\.dtype.*float32, bfloat16 and float16.*x\.float\(\)"):
        ac.conv2d(x.double(), w.double())
    with pytest.raises(ProblemError, match=r"w\.dtype.*must have one dtype"):
        ac.conv2d(x.half(), w)
    with pytest.raises(ProblemError, match="groups"):
        ac.conv2d(x, w[:, :2], groups=2)
    with pytest.raises(ProblemError, match=r"w\.device"):
        ac.conv2d(x, w.cpu())


def test_backward_matches_float64_autograd():
    for N, C, H, W, K, R, S, stride, padding, dilation, has_bias in AWKWARD[:4]:
        x = torch.randn(N, C, H, W, device="cuda", requires_grad=True)
        w = torch.randn(K, C, R, S, device="cuda", requires_grad=True)
        bias = torch.randn(K, device="cuda", requires_grad=True) if has_bias else None
        y = ac.conv2d(x, w, bias, stride, padding, dilation)
        grad = torch.randn_like(y)
        y.backward(grad)
        x64, w64 = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
        b64 = bias.detach().double().requires_grad_() if has_bias else None
        reference(x64, w64, b64, stride, padding, dilation).backward(grad.double())
        assert relative_error(x.grad, x64.grad) < TOLERANCE
        assert relative_error(w.grad, w64.grad) < TOLERANCE
        if has_bias:
            assert relative_error(bias.grad, b64.grad) < TOLERANCE


def test_opcheck_schema_fake_tensor_and_autograd_registration():
    x = torch.randn(1, 3, 7, 6, device="cuda", requires_grad=True)
    w = torch.randn(4, 3, 3, 2, device="cuda", requires_grad=True)
    bias = torch.randn(4, device="cuda", requires_grad=True)
    torch.library.opcheck(torch.ops.autoconv.conv2d.default, (x, w, bias, [1, 2], [1, 0, 0, 1], [1, 1]))


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 24, (3, 1), stride=(2, 1), padding=(1, 0), bias=False)
        self.conv3 = nn.Conv2d(24, 8, 1)
        self.reflect = nn.Conv2d(8, 8, 3, padding=1, padding_mode="reflect")

    def forward(self, x):
        return self.reflect(self.conv3(torch.relu(self.conv2(torch.relu(self.conv1(x))))))


def float64_twin(model: nn.Module) -> nn.Module:
    """A plain PyTorch SmallNet in float64 with ``model``'s current parameters."""
    twin = SmallNet().cuda()
    twin.load_state_dict(model.state_dict())
    return twin.double()


def test_converted_model_matches_and_keeps_parameters():
    model = SmallNet().cuda().eval()
    converted, report = ac.convert(model)
    assert report.converted == ["conv1", "conv2", "conv3", "reflect"] and not report.skipped
    assert isinstance(converted.conv1, ac.Conv2d) and converted.conv1.weight is not model.conv1.weight
    x = torch.randn(2, 3, 19, 21, device="cuda")
    with torch.no_grad():
        want = model.double()(x.double())
        assert relative_error(converted(x), want) < TOLERANCE


def test_weights_changed_in_place_are_not_served_stale():
    model, _ = ac.convert(SmallNet().cuda())
    x = torch.randn(2, 3, 16, 16, device="cuda")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        with torch.no_grad():
            got = model(x)
            want = float64_twin(model)(x.double())
        assert relative_error(got, want) < TOLERANCE
        loss = model(x).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()  # in place: the version counters move
        with torch.no_grad():
            model.conv2.weight.mul_(0.5)


def _capture(fn, static_input):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn(static_input)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_output = fn(static_input)
    return graph, static_output


def test_cuda_graph_capture_and_replay_follow_new_inputs_and_weights():
    model, _ = ac.convert(SmallNet().cuda().eval())
    static_input = torch.randn(2, 3, 16, 16, device="cuda")
    with torch.no_grad():
        graph, static_output = _capture(model, static_input)
        for step in range(3):
            static_input.copy_(torch.randn_like(static_input))
            if step == 2:
                model.conv1.weight.mul_(-1.5)  # the captured weights transform must see this
            graph.replay()
            want = float64_twin(model)(static_input.double())
            assert relative_error(static_output, want) < TOLERANCE


def test_first_call_during_capture_raises_and_leaves_the_context_usable():
    x = torch.randn(1, 5, 11, 11, device="cuda")
    w = torch.randn(7, 5, 3, 3, device="cuda")
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(ac.CaptureError, match="warm-up"):
        with torch.cuda.graph(graph):
            ac.conv2d(x, w, padding=1)
    torch.cuda.synchronize()
    assert relative_error(ac.conv2d(x, w, padding=1), reference(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1))) < TOLERANCE


def test_torch_compile_fullgraph_traces_the_op():
    model, _ = ac.convert(SmallNet().cuda().eval())
    compiled = torch.compile(model, fullgraph=True)
    x = torch.randn(2, 3, 16, 16, device="cuda")
    with torch.no_grad():
        want = model(x)
        assert relative_error(compiled(x), want.double()) < TOLERANCE
    # and with autograd through the compiled graph
    y = compiled(x.requires_grad_())
    y.sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()


def test_two_streams_run_one_layer_at_once():
    layer, _ = ac.convert(nn.Conv2d(32, 48, 3, padding=1).cuda())
    inputs = [torch.randn(4, 32, 40, 40, device="cuda") for _ in range(2)]
    streams = [torch.cuda.Stream() for _ in range(2)]
    outputs = [None, None]
    with torch.no_grad():
        for _ in range(5):
            for i, stream in enumerate(streams):
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    outputs[i] = layer(inputs[i])
            for stream in streams:
                torch.cuda.current_stream().wait_stream(stream)
            for i in range(2):
                want = F.conv2d(inputs[i].double(), layer.weight.double(), layer.bias.double(), padding=1)
                assert relative_error(outputs[i], want) < TOLERANCE


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_another_device_run_there():
    x = torch.randn(2, 8, 12, 12, device="cuda:1")
    w = torch.randn(16, 8, 3, 3, device="cuda:1")
    with torch.cuda.device(0):
        got = ac.conv2d(x, w, padding=1)
    assert got.device == x.device
    assert relative_error(got, reference(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1))) < TOLERANCE


def test_compiled_kernels_are_kept_on_disk_and_a_damaged_file_is_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOCONV_CUBIN_CACHE", str(tmp_path / "cubins"))
    x = torch.randn(1, 6, 13, 11, device="cuda")
    w = torch.randn(5, 6, 3, 3, device="cuda")
    want = reference(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1))
    assert relative_error(ac.conv2d(x, w, padding=1), want) < TOLERANCE
    files = list((tmp_path / "cubins").glob("*.cubin"))
    assert len(files) == 1
    files[0].write_bytes(b"not a cubin")
    autoconv.runtime.clear_loaded()
    assert relative_error(ac.conv2d(x, w, padding=1), want) < TOLERANCE
    assert files[0].read_bytes() != b"not a cubin"  # compiled again and stored


def test_make_graphed_callables_trains_like_eager():
    torch.manual_seed(0)
    eager, _ = ac.convert(SmallNet().cuda())
    graphed_model, _ = ac.convert(SmallNet().cuda())
    graphed_model.load_state_dict(eager.state_dict())
    x = torch.randn(2, 3, 16, 16, device="cuda", requires_grad=True)
    graphed = torch.cuda.make_graphed_callables(graphed_model, (x,))
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.05) for m in (eager, graphed_model)]
    for _ in range(3):
        data = torch.randn(2, 3, 16, 16, device="cuda")
        for forward, optimizer in zip((eager, graphed), optimizers):
            optimizer.zero_grad()
            forward(data.clone().requires_grad_()).square().mean().backward()
            optimizer.step()
    for mine, theirs in zip(graphed_model.parameters(), eager.parameters()):
        assert relative_error(mine.detach(), theirs.detach().double()) < 1e-5


def test_precision_follows_pytorch_unless_given_and_precisions_are_kept_apart():
    from autoconv.torch import ops

    x = torch.randn(2, 32, 14, 14, device="cuda")
    w = torch.randn(48, 32, 3, 3, device="cuda")
    want = reference(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1))
    assert ac.pytorch_precision() == "fp32"  # (the fixture turned TF32 off for cuDNN)
    strict = ac.conv2d(x, w, padding=1)
    torch.backends.cudnn.allow_tf32 = True  # (put back by the fixture)
    assert ac.pytorch_precision() == "tf32"
    tf32 = ac.conv2d(x, w, padding=1)
    through_runtime = autoconv.conv2d(x, w, padding=1)  # PyTorch tensors follow PyTorch there too
    explicit = ac.conv2d(x, w, padding=1, precision="fp32")  # an explicit precision wins
    assert relative_error(strict, want) < TOLERANCE and relative_error(explicit, want) < TOLERANCE
    assert relative_error(tf32, want) < TF32_TOLERANCE and relative_error(through_runtime, want) < TF32_TOLERANCE
    specs = sorted(kernel["problem"] for kernel in autoconv.runtime.loaded_kernels())
    assert [spec.endswith(",precision=tf32") for spec in specs] == [False, True]
    # one prepared call each (keys end with the precision and the layout)
    assert sorted(key[-2] for key in ops._calls) == ["fp32", "tf32"]


def test_tf32_layers_train_and_compile():
    model, _ = ac.convert(SmallNet().cuda(), precision="tf32")
    x = torch.randn(2, 3, 16, 16, device="cuda")
    with torch.no_grad():
        want = float64_twin(model)(x.double())
        assert relative_error(model(x), want) < TF32_TOLERANCE
        compiled = torch.compile(model, fullgraph=True)
        assert relative_error(compiled(x), want) < TF32_TOLERANCE
    loss = model(x.requires_grad_()).square().mean()  # autograd: PyTorch's backward
    loss.backward()
    assert torch.isfinite(x.grad).all() and all(torch.isfinite(p.grad).all() for p in model.parameters())
    assert {kernel["problem"].endswith("precision=tf32") for kernel in autoconv.runtime.loaded_kernels()} == {True}


def test_a_compiled_nchw_model_runs_its_tf32_layers_in_nhwc():
    """torch.compile of a converted NCHW model in tf32: Inductor hands every layer channels_last
    tensors (autoconv.torch.inductor) on a Hopper GPU, so the graph runs the NHWC problems that
    `tune --model --compile` tunes; elsewhere NCHW ones. fp32 layers stay NCHW."""
    from autoconv.problems.problem import parse_spec
    from autoconv.torch.layouts import compiled_layout

    torch._dynamo.reset()
    net = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.Conv2d(16, 12, 3, stride=2),
                        nn.ReLU(), nn.Conv2d(12, 8, 1)).cuda().eval()
    x = torch.randn(2, 8, 15, 13, device="cuda")
    for precision in ("tf32", "fp32"):
        autoconv.runtime.clear_loaded()
        model, _ = ac.convert(net, precision=precision)
        with torch.no_grad():
            got = torch.compile(model, fullgraph=True)(x)
            want = copy.deepcopy(net).double()(x.double())
        layouts = {parse_spec(kernel["problem"]).layout for kernel in autoconv.runtime.loaded_kernels()}
        assert layouts == {compiled_layout(precision, 0)}, precision
        assert relative_error(got, want) < (TF32_TOLERANCE if precision == "tf32" else TOLERANCE)
    assert compiled_layout("tf32", 0) == ("NHWC" if torch.cuda.get_device_capability() == (9, 0) else "NCHW")


def test_tf32_on_channels_last_runs_nhwc_kernels_and_returns_channels_last():
    """In tf32 on a Hopper GPU, a channels_last float32 x goes to the NHWC kernels (the TMA
    family's, no copy of x) and the output is channels_last, as PyTorch's own convolution's is,
    eager, through the operator, under torch.compile and into out=; the fake implementation
    promises that format. An NCHW x, or fp32, stays NCHW."""
    from autoconv.torch import ops

    x = torch.randn(2, 24, 13, 11, device="cuda").to(memory_format=torch.channels_last)
    w = torch.randn(40, 24, 3, 3, device="cuda").to(memory_format=torch.channels_last)
    bias = torch.randn(40, device="cuda")
    want = reference(x, w, bias, (2, 1), (1, 1, 1, 1), (1, 1))
    hopper = torch.cuda.get_device_capability() == (9, 0)
    assert ops.kernel_layout(x, "tf32") == ("NHWC" if hopper else "NCHW")
    assert ops.kernel_layout(x, "fp32") == ops.kernel_layout(x.contiguous(), "tf32") == "NCHW"
    y = ac.conv2d(x, w, bias, stride=(2, 1), padding=1, precision="tf32")
    assert relative_error(y, want) < TF32_TOLERANCE
    assert y.is_contiguous(memory_format=torch.channels_last) == hopper
    fake = ops.conv2d_fake(x, w, bias, (2, 1), (1, 1, 1, 1), (1, 1), "tf32")
    assert fake.stride() == y.stride()
    if hopper:
        specs = [kernel["problem"] for kernel in autoconv.runtime.loaded_kernels()]
        assert any("layout=NHWC" in spec and "precision=tf32" in spec for spec in specs), specs
    compiled = torch.compile(lambda a: ac.conv2d(a, w, bias, stride=(2, 1), padding=1, precision="tf32"),
                             fullgraph=True)
    assert relative_error(compiled(x), want) < TF32_TOLERANCE
    out = torch.empty_like(y)
    ac.conv2d(x, w, bias, stride=(2, 1), padding=1, precision="tf32", out=out)
    assert relative_error(out, want) < TF32_TOLERANCE
    strict = ac.conv2d(x, w, bias, stride=(2, 1), padding=1, precision="fp32")
    assert strict.is_contiguous() and relative_error(strict, want) < TOLERANCE


def test_tf32_channels_last_patch_embedding_and_padding_past_the_maps():
    """tf32 channels_last: a ViT's patch embedding (16 x 16, stride 16, more than the im2col map
    walks) runs an NHWC kernel (the TMA family's copy of x holds every tap), channels_last out;
    padding past the map's box (130) has no NHWC kernel and runs NCHW kernels on copies, the
    output still channels_last. Both against float64."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the NHWC tf32 kernels are Hopper's")
    x = torch.randn(2, 3, 48, 40, device="cuda").to(memory_format=torch.channels_last)
    w = torch.randn(24, 3, 16, 16, device="cuda").to(memory_format=torch.channels_last)
    bias = torch.randn(24, device="cuda")
    y = ac.conv2d(x, w, bias, stride=16, precision="tf32")
    assert relative_error(y, reference(x, w, bias, (16, 16), (0, 0, 0, 0), (1, 1))) < TF32_TOLERANCE
    assert y.shape == (2, 24, 3, 2) and y.is_contiguous(memory_format=torch.channels_last)
    small = torch.randn(1, 8, 5, 6, device="cuda").to(memory_format=torch.channels_last)
    w3 = torch.randn(16, 8, 3, 3, device="cuda").to(memory_format=torch.channels_last)
    far = ac.conv2d(small, w3, None, padding=130, precision="tf32")
    assert relative_error(far, reference(small, w3, None, (1, 1), (130, 130, 130, 130), (1, 1))) < TF32_TOLERANCE
    assert far.is_contiguous(memory_format=torch.channels_last)
    specs = [kernel["problem"] for kernel in autoconv.runtime.loaded_kernels()]
    assert any("R=16" in spec and "layout=NHWC" in spec for spec in specs), specs
    assert any("pad=130" in spec and "layout=NHWC" not in spec for spec in specs), specs


def test_opcheck_with_tf32():
    x = torch.randn(1, 3, 7, 6, device="cuda", requires_grad=True)
    w = torch.randn(4, 3, 3, 2, device="cuda", requires_grad=True)
    torch.library.opcheck(torch.ops.autoconv.conv2d.default, (x, w, None, [1, 2], [1, 0, 0, 1], [1, 1], "tf32"))


class _PlanStandIn:
    """Stands for a cuDNN plan the runtime would run (autoconv.runtime.cudnn.CudnnConv): records calls."""
    plan_name, workspace_bytes = "stand-in", 0

    def __init__(self):
        self.calls = 0

    def __call__(self, x, w, y, bias, *, stream, workspace):
        self.calls += 1


def test_where_cudnns_plan_runs_eager_calls_run_pytorchs_convolution():
    """Where `autoconv bench` measured cuDNN's plan faster than the tuned kernel, an eager call
    runs PyTorch's own convolution (cuDNN through ATen: a fraction of the frontend's host cost)
    when that computes the call's precision: 16-bit tensors, or float32 at PyTorch's current
    setting. The plan runs where PyTorch would compute another precision, where PyTorch cannot
    pad the problem (asymmetric padding), with out=, and in a captured CUDA graph (no host cost
    on replay)."""
    from autoconv.problems.problem import parse_spec
    from autoconv.runtime.selection import Runner
    from autoconv.torch.ops import _Call

    def call_of(spec):
        problem, plan = parse_spec(spec), _PlanStandIn()
        return _Call(problem, Runner(problem, 0, None, None, "cudnn", cudnn=plan), torch.device("cuda", 0)), plan

    x = torch.randn(2, 16, 9, 11, device="cuda")
    w, bias = torch.randn(24, 16, 3, 3, device="cuda"), torch.randn(24, device="cuda")
    x16, w16, bias16 = (t.to(torch.bfloat16) for t in (x, w, bias))
    x16, w16 = x16.contiguous(memory_format=torch.channels_last), w16.contiguous(memory_format=torch.channels_last)
    bf16, plan = call_of("N=2,C=16,H=9,W=11,K=24,R=3,S=3,stride=2,pad=1,bias=1,layout=NHWC,precision=bf16")
    y = bf16(x16, w16, bias16)
    assert plan.calls == 0 and y.is_contiguous(memory_format=torch.channels_last)
    assert torch.allclose(y.float(), F.conv2d(x16, w16, bias16, 2, 1).float(), rtol=1e-2, atol=1e-2)

    fp32, plan = call_of("N=2,C=16,H=9,W=11,K=24,R=3,S=3,stride=2,pad=1,bias=1")   # PyTorch strict (fixture)
    assert relative_error(fp32(x, w, bias), reference(x, w, bias, (2, 2), (1, 1, 1, 1), (1, 1))) < TOLERANCE
    assert plan.calls == 0
    tf32, plan = call_of("N=2,C=16,H=9,W=11,K=24,R=3,S=3,stride=2,pad=1,bias=1,precision=tf32")
    tf32(x, w, bias)
    assert plan.calls == 1   # PyTorch would compute strict FP32: the plan runs
    asymmetric, plan = call_of("N=2,C=16,H=9,W=11,K=24,R=3,S=3,stride=2,pad=1:0:1:1,bias=1")
    asymmetric(x, w, bias)
    assert plan.calls == 1
    fp32, plan = call_of("N=2,C=16,H=9,W=11,K=24,R=3,S=3,stride=2,pad=1,bias=1")
    fp32(x, w, bias, out=torch.empty(2, 24, 5, 6, device="cuda"))
    assert plan.calls == 1
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream), torch.cuda.graph(graph):
        fp32(x, w, bias)
    assert plan.calls == 2


def test_the_cxx_autograd_node_trains_like_the_python_one(monkeypatch):
    """AUTOCONV_NATIVE_AUTOGRAD=on: a converted model's gradients through the C++ node equal those
    through the Python node (the same forward kernels, PyTorch's backward either way)."""
    torch.manual_seed(0)
    model, _ = ac.convert(SmallNet().cuda(), precision="tf32")
    x = torch.randn(2, 3, 16, 16, device="cuda")
    grads = {}
    for setting in ("off", "on"):
        monkeypatch.setenv("AUTOCONV_NATIVE_AUTOGRAD", setting)
        model.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        grads[setting] = [p.grad.clone() for p in model.parameters()]
    for python_grad, cxx_grad in zip(grads["off"], grads["on"]):
        torch.testing.assert_close(cxx_grad, python_grad)
