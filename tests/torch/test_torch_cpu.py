"""autoconv.torch without a GPU: the operator's registration and fake shapes, tracing,
padding rules, model conversion and finding a model's problems."""

from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import autoconv.torch as ac  # noqa: E402
from autoconv.config.load import load_config  # noqa: E402
from autoconv.errors import ProblemError  # noqa: E402
from autoconv.torch.functional import resolve  # noqa: E402

#: This module, as `autoconv tune --model MODULE:FACTORY` imports it.
THIS = __name__


def test_the_operator_is_registered_with_its_schema():
    schema = str(torch.ops.autoconv.conv2d.default._schema)
    assert schema.startswith("autoconv::conv2d(Tensor x, Tensor w, Tensor? bias, SymInt[2] stride")
    assert schema.endswith('SymInt[2] dilation, str precision="fp32") -> Tensor')


@pytest.mark.parametrize("shape", [
    ((2, 3, 17, 23), (5, 3, 3, 2), [2, 1], [1, 0, 2, 1], [1, 1]),
    ((1, 8, 9, 40), (4, 8, 1, 5), [3, 1], [0, 0, 2, 2], [1, 2]),
    ((4, 2, 5, 5), (3, 2, 5, 5), [1, 1], [0, 0, 0, 0], [1, 1]),
])
def test_fake_shapes_match_pytorch(shape):
    x_shape, w_shape, stride, padding, dilation = shape
    x, w = torch.empty(x_shape, device="meta"), torch.empty(w_shape, device="meta")
    top, bottom, left, right = padding
    want = F.conv2d(F.pad(x, (left, right, top, bottom)), w, None, stride, 0, dilation)
    for precision in ((), ("fp32",), ("tf32",)):  # the precision changes no shape
        got = torch.ops.autoconv.conv2d(x, w, None, stride, padding, dilation, *precision)
        assert got.shape == want.shape and got.device.type == "meta"


def test_export_traces_the_operator_as_one_node():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(6, 3, 3, 3))

        def forward(self, x):
            return torch.relu(ac.conv2d(x, self.w, None, 1, (1, 0, 1, 0)))

    exported = torch.export.export(Net(), (torch.randn(2, 3, 10, 10),))
    targets = [str(node.target) for node in exported.graph.nodes if node.op == "call_function"]
    assert "autoconv.conv2d.default" in targets
    output = [node for node in exported.graph.nodes if node.op == "output"][0]
    assert tuple(output.args[0][0].meta["val"].shape) == (2, 6, 9, 9)


@pytest.mark.parametrize("kernel", [(3, 3), (4, 2), (1, 5), (2, 2)])
@pytest.mark.parametrize("dilation", [(1, 1), (2, 3)])
def test_same_padding_is_pytorchs(kernel, dilation):
    x = torch.randn(1, 2, 11, 10, dtype=torch.float64)
    w = torch.randn(3, 2, *kernel, dtype=torch.float64)
    _, (top, bottom, left, right), _ = resolve(1, "same", dilation, 11, 10, *kernel)
    ours = F.conv2d(F.pad(x, (left, right, top, bottom)), w, dilation=dilation)
    torch.testing.assert_close(ours, F.conv2d(x, w, padding="same", dilation=dilation))


def test_padding_forms_and_refusals():
    assert resolve(2, 1, 1, 9, 9, 3, 3) == ((2, 2), (1, 1, 1, 1), (1, 1))
    assert resolve((2, 1), (1, 2), (1, 3), 9, 9, 3, 3) == ((2, 1), (1, 1, 2, 2), (1, 3))
    assert resolve(1, (0, 1, 2, 3), 1, 9, 9, 3, 3)[1] == (0, 1, 2, 3)
    assert resolve(1, "valid", 1, 9, 9, 3, 3)[1] == (0, 0, 0, 0)
    for bad, field in [((1, "full", 1), "padding"), ((1, (1, 2, 3), 1), "padding"),
                       ((0.5, 0, 1), "stride"), ((1, 0, (1, 2, 3)), "dilation")]:
        with pytest.raises(ProblemError) as info:
            resolve(*bad, 9, 9, 3, 3)
        assert info.value.field == field


@pytest.mark.parametrize("stride", [2, (3, 2)])
@pytest.mark.parametrize("dilation", [1, (2, 1)])
def test_strided_same_padding_agrees_with_the_cupy_path(stride, dilation):
    """PyTorch refuses padding='same' with a stride; autoconv computes TensorFlow's rule on tensors
    as on CuPy arrays: the same problem, an output of ceil(size / stride)."""
    from autoconv.problems.problem import ceil_div
    from autoconv.runtime.api import problem_of_call

    x, w = torch.empty(2, 3, 17, 12, device="meta"), torch.empty(5, 3, 4, 3, device="meta")
    y = ac.conv2d(x, w, None, stride, "same", dilation)
    on_arrays = problem_of_call(tuple(x.shape), tuple(w.shape), stride, "same", dilation, False, "fp32")
    strides = (stride, stride) if isinstance(stride, int) else stride
    assert tuple(y.shape) == on_arrays.output_shape == (2, 5, ceil_div(17, strides[0]), ceil_div(12, strides[1]))
    assert resolve(stride, "same", dilation, 17, 12, 4, 3)[1] == on_arrays.padding


def test_traced_strided_same_padding_resolves_as_in_eager_calls():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(6, 3, 4, 3))

        def forward(self, x):
            return ac.conv2d(x, self.w, None, (2, 3), "same")

    exported = torch.export.export(Net(), (torch.randn(2, 3, 15, 11),))
    node = next(node for node in exported.graph.nodes if str(node.target) == "autoconv.conv2d.default")
    assert list(node.args[4]) == list(resolve((2, 3), "same", 1, 15, 11, 4, 3)[1])
    output = [node for node in exported.graph.nodes if node.op == "output"][0]
    assert tuple(output.args[0][0].meta["val"].shape) == (2, 6, 8, 4)


def test_groups_and_cpu_tensors_are_refused_by_the_function():
    x, w = torch.randn(1, 4, 8, 8), torch.randn(4, 2, 3, 3)
    with pytest.raises(ProblemError, match="groups"):
        ac.conv2d(x, w, groups=2)



class _CudaTensorStandIn:
    """Passes for a CUDA tensor where autoconv tells arrays apart (its type's module is torch's)."""

    __module__ = "torch.stand_in"
    is_cuda = True


def test_autoconv_conv2d_sends_tensors_to_the_operator_and_the_runtime_refuses_them(monkeypatch):
    """autoconv.conv2d sits above the runtime and the PyTorch operator: tensors go to the operator;
    the runtime's own conv2d (which does not import autoconv.torch) names where they go."""
    import autoconv
    import autoconv.runtime
    import autoconv.torch.functional

    calls = []
    monkeypatch.setattr(autoconv.torch.functional, "conv2d", lambda *args, **kwargs: calls.append((args, kwargs)))
    x, w = _CudaTensorStandIn(), _CudaTensorStandIn()
    autoconv.conv2d(x, w, None, 2, "same", 1, precision="tf32")
    assert calls == [((x, w, None, 2, "same", 1), {"out": None, "precision": "tf32"})]
    with pytest.raises(ProblemError) as info:
        autoconv.runtime.conv2d(x, w)
    assert info.value.field == "x" and "autoconv.torch.conv2d" in str(info.value)
    with pytest.raises(ProblemError, match=r"precision.*did you mean 'tf32'"):  # checked before dispatching
        autoconv.conv2d(x, w, precision="tf33")
    with pytest.raises(ProblemError, match=r"x is in host memory.*x\.cuda\(\)"):
        autoconv.conv2d(torch.randn(1, 2, 5, 5), w)
    assert len(calls) == 1


def test_clear_loaded_forgets_the_operators_calls():
    import autoconv.runtime
    from autoconv.torch import ops

    ops._calls[("a key",)] = None
    autoconv.runtime.clear_loaded()
    assert ops._calls == {}

class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding="same")
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.double = nn.Conv2d(8, 8, 1).to(torch.float64)
        self.reflect = nn.Conv2d(8, 8, (3, 1), padding=(1, 0), padding_mode="reflect")
        self.again = nn.Conv2d(8, 8, (3, 1), padding=(1, 0), padding_mode="reflect")
        self.head = nn.Sequential(nn.Conv2d(8, 4, 1, stride=2, bias=False), nn.ReLU())

    def forward(self, x):
        x = self.depthwise(self.stem(x))
        x = self.again(self.reflect(x))
        return self.head(x)


def test_convert_reports_what_it_left_alone_and_keeps_state(caplog):
    model = Mixed()
    with caplog.at_level(logging.INFO, logger="autoconv.torch.modules"):
        converted, report = ac.convert(model)
    assert [record.getMessage() for record in caplog.records] == [str(report)]  # (a diagnostic, not a print)
    assert report.converted == ["stem", "reflect", "again", "head.0"]
    assert set(report.skipped) == {"depthwise", "double"}
    assert "groups=8" in report.skipped["depthwise"] and "float64" in report.skipped["double"]
    assert type(model.stem) is nn.Conv2d  # a copy was converted
    assert type(converted.stem) is ac.Conv2d and type(converted.depthwise) is nn.Conv2d
    assert converted.state_dict().keys() == model.state_dict().keys()
    assert "left alone: depthwise" in str(report)
    same, _ = ac.convert(model, inplace=True)
    assert same is model and type(model.stem) is ac.Conv2d
    with pytest.raises(ProblemError, match="nn.Module"):
        ac.convert("resnet")


def test_converted_layers_fall_back_to_pytorch_on_cpu():
    layer = nn.Conv2d(3, 5, 3, padding=1, padding_mode="reflect").double()
    x = torch.randn(2, 3, 9, 7, dtype=torch.float64)
    want = layer(x)
    converted, _ = ac.convert(layer)
    torch.testing.assert_close(converted(x), want)


def test_conv_problems_of_a_model_on_the_meta_device(tmp_path):
    model = Mixed().to("meta")
    problems, skipped = ac.conv_problems(model, torch.empty(2, 3, 20, 18, device="meta"))
    assert [p.name for p in problems] == ["stem", "reflect", "head.0"]
    assert [p.count for p in problems] == [1, 2, 1]
    stem, reflect, head = (p.problem for p in problems)
    assert (stem.N, stem.C, stem.H, stem.W, stem.K, stem.padding, stem.bias) == (2, 3, 20, 18, 8, (1, 1, 1, 1), True)
    assert (reflect.H, reflect.W, reflect.padding) == (22, 18, (0, 0, 0, 0))  # padded first, as nn.Conv2d does
    assert (head.stride, head.bias) == ((2, 2), False)
    assert set(skipped) == {"depthwise"}  # self.double never runs
    path = ac.write_config(problems, tmp_path / "mixed.yaml", budget={"trials": 5}, comment="from a test")
    config = load_config(path)
    assert [(p.name, p.problem.key(), p.count) for p in config.problems] == \
        [(p.name, p.problem.key(), p.count) for p in problems]
    assert path.read_text().startswith("# from a test\n")


def mixed_model() -> nn.Module:
    """A factory for ``autoconv tune --model tests.torch.test_torch_cpu:mixed_model``."""
    return Mixed()


@pytest.fixture
def model_tuning(tmp_path, monkeypatch, fake_gpu):
    """`autoconv tune --model` run here in tmp_path, on the fake backend, into an empty cache there."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AUTOCONV_CACHE", str(tmp_path / "cache.sqlite3"))


def test_tune_model_writes_the_config_it_tunes(model_tuning, tmp_path, capsys):
    from autoconv.commands.main import main

    assert main(["tune", "--model", f"{THIS}:mixed_model", "--input", "2x3x20x18", "--trials", "2"]) == 0
    config = load_config(tmp_path / "mixed_model_2x3x20x18.yaml")
    assert [(p.name, p.count) for p in config.problems] == [("stem", 1), ("reflect", 2), ("head.0", 1)]
    err = " ".join(capsys.readouterr().err.split())  # (the terminal output wraps)
    assert "4 convolutions, 3 distinct problems" in err and "left to PyTorch: depthwise" in err
    # What the model runs under PyTorch's defaults: TF32 convolutions, the input's NCHW layout.
    assert {(p.problem.precision, p.problem.layout) for p in config.problems} == {("tf32", "NCHW")}
    assert "tuning in tf32 (what PyTorch's convolutions compute now" in err and "NCHW (the example input's" in err


def test_tune_model_follows_pytorchs_setting_and_the_overrides(model_tuning, tmp_path, capsys, cudnn_flags):
    from autoconv.commands.main import main

    torch.backends.cudnn.conv.fp32_precision = "ieee"
    assert main(["tune", "--model", f"{THIS}:mixed_model", "--input", "2x3x20x18", "--trials", "2"]) == 0
    config = load_config(tmp_path / "mixed_model_2x3x20x18.yaml")
    assert {(p.problem.precision, p.problem.layout) for p in config.problems} == {("fp32", "NCHW")}
    assert main(["tune", "--model", f"{THIS}:mixed_model", "--input", "2x3x20x18", "--trials", "2",
                 "--precision", "tf32", "--layout", "NHWC"]) == 0
    config = load_config(tmp_path / "mixed_model_2x3x20x18.yaml")
    assert {(p.problem.precision, p.problem.layout) for p in config.problems} == {("tf32", "NHWC")}
    assert "tuning in tf32 (--precision), NHWC (--layout)" in " ".join(capsys.readouterr().err.split())
    # autocast's precisions: computed in NHWC whatever the input's layout, as the runtime does
    assert main(["tune", "--model", f"{THIS}:mixed_model", "--input", "2x3x20x18", "--trials", "2",
                 "--precision", "bf16"]) == 0
    config = load_config(tmp_path / "mixed_model_2x3x20x18.yaml")
    assert {(p.problem.precision, p.problem.layout, p.problem.dtype) for p in config.problems} == {
        ("bf16", "NHWC", "bfloat16")}
    assert "--precision bf16" in (tmp_path / "mixed_model_2x3x20x18.yaml").read_text().splitlines()[1]


def test_tune_model_tunes_several_batches_in_one_config(model_tuning, tmp_path, capsys):
    """--input with several batches: one config holding every batch's problems, named by batch."""
    from autoconv.commands.main import main

    assert main(["tune", "--model", f"{THIS}:mixed_model", "--input", "2x3x20x18,1x3x20x18", "--trials", "2"]) == 0
    config = load_config(tmp_path / "mixed_model_2x3x20x18+1x3x20x18.yaml")
    assert [(p.name, p.problem.N, p.count) for p in config.problems] == [
        ("stem_n2", 2, 1), ("reflect_n2", 2, 2), ("head.0_n2", 2, 1),
        ("stem_n1", 1, 1), ("reflect_n1", 1, 2), ("head.0_n1", 1, 1)]
    for shapes in ("2x3x20x18,2x3x20x18", "2x3x20x18,1x3x20x19"):
        assert main(["tune", "--model", f"{THIS}:mixed_model", "--input", shapes]) == 2
        assert "differ in the batch only, each batch once" in " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize("precision, layout", [("fp32", "NCHW"), ("tf32", "NHWC"), ("bf16", "NHWC")])
def test_tune_model_compile_tunes_the_layout_the_compiled_graph_runs(model_tuning, tmp_path, capsys, precision, layout):
    """--compile: the layouts Inductor hands the operator (autoconv.torch.inductor), on a GPU with an
    NHWC tf32 family (what the fake backend stands for), and the flag in the config's command line."""
    from autoconv.commands.main import main

    assert main(["tune", "--model", f"{THIS}:mixed_model", "--input", "2x3x20x18", "--trials", "2",
                 "--precision", precision, "--compile"]) == 0
    written = tmp_path / "mixed_model_2x3x20x18.yaml"
    assert {(p.problem.precision, p.problem.layout) for p in load_config(written).problems} == {(precision, layout)}
    assert written.read_text().splitlines()[1].endswith("--compile")
    assert "(the layout torch.compile's graph runs them in)" in " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize("argv, message", [
    (["tune", "--model", f"{THIS}:mixed_model", "--input", "1x3x8x8", "--compile", "--layout", "NCHW"],
     "give one of --compile and --layout"),
    (["tune", "--model", f"{THIS}:mixed_model"], "--model MODULE:FACTORY and --input NxCxHxW go together"),
    (["tune", "--model", f"{THIS}:mixed_model", "--input", "2x3x0x4"], "--input='2x3x0x4'"),
    (["tune", "--model", "no_such_module:net", "--input", "1x3x8x8"], "cannot import no_such_module"),
    (["tune", "--model", f"{THIS}:Mixed", "--input", "1x5x8x8"], f"running {THIS}:Mixed"),
    (["tune", "x.yaml", "--model", f"{THIS}:Mixed", "--input", "1x3x8x8"], "either a config file or --model"),
    (["tune"], "give a config file, or --model"),
])
def test_tune_model_refuses_bad_arguments_in_one_line(argv, message, tmp_path, monkeypatch, capsys):
    from autoconv.commands.main import main

    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("preset, batch, unique, convs", [("resnet50", 32, 23, 53), ("vgg16", 16, 9, 13)])
def test_a_preset_is_what_torchvision_runs(preset, batch, unique, convs):
    torchvision = pytest.importorskip("torchvision")
    from autoconv.problems.models import MODEL_PRESETS

    with torch.device("meta"):
        model = getattr(torchvision.models, preset)()
    found, skipped = ac.conv_problems(model, torch.empty(batch, 3, 224, 224, device="meta"))
    layers = MODEL_PRESETS[preset](batch)
    assert not skipped and len(layers) == unique and sum(p.count for p in layers) == convs
    assert [(p.name, p.problem.key(), p.count) for p in found] == \
        [(p.name, p.problem.key(), p.count) for p in layers]


def test_tune_model_never_replaces_a_file_it_did_not_write(model_tuning, tmp_path, capsys):
    from autoconv.commands.main import main

    mine = tmp_path / "mine.yaml"
    mine.write_text("problems: []  # my own config\n")
    argv = ["tune", "--model", f"{__name__}:mixed_model", "--input", "2x3x20x18", "--trials", "2"]
    assert main([*argv, "--write-config", str(mine)]) == 2
    assert "did not write is there" in capsys.readouterr().err
    assert mine.read_text() == "problems: []  # my own config\n"
    written = tmp_path / "written.yaml"
    assert main([*argv, "--write-config", str(written)]) == 0
    assert main([*argv, "--write-config", str(written)]) == 0  # its own file is replaced


# ---- precision ----------------------------------------------------------------------------------

@pytest.fixture
def cudnn_flags():
    """PyTorch's TF32 settings for cuDNN put back after the test (the cuDNN-level setter
    reaches cuBLAS's too). The legacy ``allow_tf32`` goes first: PyTorch keeps it apart and
    its getter raises once it disagrees with the conv and RNN settings."""
    get = getattr(torch._C, "_get_fp32_precision_getter", None)
    if get is None:
        pytest.skip("this PyTorch has no torch.backends.cudnn.conv.fp32_precision (before 2.9)")
    legacy = torch.backends.cudnn.allow_tf32
    saved = [(op, get("cuda", op)) for op in ("all", "conv", "rnn", "matmul")]
    yield
    torch.backends.cudnn.allow_tf32 = legacy
    for op, value in saved:
        torch._C._set_fp32_precision_setter("cuda", op, value)


def _allow(value):
    return lambda: setattr(torch.backends.cudnn, "allow_tf32", value)


def _conv(value):
    return lambda: setattr(torch.backends.cudnn.conv, "fp32_precision", value)


def _cudnn(value):
    return lambda: setattr(torch.backends.cudnn, "fp32_precision", value)


@pytest.mark.parametrize("changes, want", [
    ([_allow(True)], "tf32"), ([_allow(False)], "fp32"),  # the legacy flag (conv reads "none" after False)
    ([_conv("tf32")], "tf32"), ([_conv("ieee")], "fp32"),
    ([_conv("none"), _cudnn("ieee")], "fp32"), ([_conv("none"), _cudnn("tf32")], "tf32"),  # conv inherits
    ([_conv("tf32"), _cudnn("ieee")], "tf32"),  # a setting of conv itself wins over the cuDNN level's
])
def test_pytorch_precision_follows_pytorchs_setting_for_cudnn_convolutions(changes, want, cudnn_flags):
    for change in changes:
        change()
    assert ac.pytorch_precision() == want


def test_pytorch_precision_reads_conv_not_the_legacy_flag_where_conv_and_rnn_differ(cudnn_flags):
    torch.backends.cudnn.conv.fp32_precision = "ieee"
    torch.backends.cudnn.rnn.fp32_precision = "tf32"
    assert ac.pytorch_precision() == "fp32"
    torch.backends.cudnn.conv.fp32_precision = "tf32"
    torch.backends.cudnn.rnn.fp32_precision = "ieee"
    assert ac.pytorch_precision() == "tf32"


def test_the_legacy_reader_follows_allow_tf32(cudnn_flags):
    from autoconv.torch.settings import _legacy_fp32_precision

    for allowed, want in ((True, "tf32"), (False, "ieee")):
        torch.backends.cudnn.allow_tf32 = allowed
        assert _legacy_fp32_precision("cuda", "conv") == want


class _RecordOperatorCalls(TorchDispatchMode):
    """Records the precision each call of ``torch.ops.autoconv.conv2d`` receives."""

    def __init__(self):
        super().__init__()
        self.precisions = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.autoconv.conv2d.default:  # (the dispatcher drops an argument at its default)
            self.precisions.append(kwargs.get("precision", args[6] if len(args) > 6 else "fp32"))
        return func(*args, **kwargs)


def test_conv2d_resolves_precision_none_from_pytorch_at_each_call(cudnn_flags):
    x, w = torch.empty(1, 3, 8, 8, device="meta"), torch.empty(4, 3, 3, 3, device="meta")
    with _RecordOperatorCalls() as record:
        torch.backends.cudnn.conv.fp32_precision = "tf32"
        ac.conv2d(x, w, padding=1)
        ac.conv2d(x, w, padding=1, precision="fp32")  # an explicit precision wins
        torch.backends.cudnn.conv.fp32_precision = "ieee"
        ac.conv2d(x, w, padding=1)
        ac.conv2d(x, w, padding=1, precision="tf32")
    assert record.precisions == ["tf32", "fp32", "fp32", "tf32"]


@pytest.mark.parametrize("bad", ["bf17", "TF32", "ieee", 1, ["tf32"]])
def test_an_unknown_precision_is_refused_naming_the_field(bad):
    x, w = torch.empty(1, 3, 8, 8, device="meta"), torch.empty(4, 3, 3, 3, device="meta")
    calls = [lambda: ac.conv2d(x, w, precision=bad), lambda: ac.Conv2d(3, 4, 3, precision=bad),
             lambda: ac.convert(nn.Conv2d(3, 4, 3), precision=bad),
             lambda: ac.conv_problems(nn.Conv2d(3, 4, 3).to("meta"), x, precision=bad)]
    if isinstance(bad, str):  # (the operator's schema takes strings only)
        calls.append(lambda: torch.ops.autoconv.conv2d(x, w, None, [1, 1], [0, 0, 0, 0], [1, 1], bad))
    for call in calls:
        with pytest.raises(ProblemError) as info:
            call()
        assert info.value.field == "precision" and "'fp32'" in str(info.value) and "'tf32'" in str(info.value)


def test_the_operator_under_autocast_casts_float32_tensors_to_the_autocast_dtype():
    """The operator's autocast kernel (what a traced or direct call under torch.autocast runs):
    float32 x, w and bias become the autocast dtype, so the call is the 16-bit NHWC problem
    (channels_last output in that dtype); 16-bit tensors stay as they are. Meta tensors: the
    operator's fake implementation answers below autocast."""
    from autoconv.torch.ops import _conv2d_autocast

    assert torch._C._dispatch_has_kernel_for_dispatch_key("autoconv::conv2d", "AutocastCUDA")
    x, w, bias = (torch.randn(*shape, device="meta") for shape in ((2, 8, 9, 9), (16, 8, 3, 3), (16,)))
    previous = torch.get_autocast_dtype("cuda")
    try:
        for dtype in (torch.bfloat16, torch.float16):
            torch.set_autocast_dtype("cuda", dtype)
            for given in ((x, w, bias), (x.to(dtype), w, None)):
                y = _conv2d_autocast(*given, [1, 1], [1, 1, 1, 1], [1, 1], "tf32")
                assert y.dtype is dtype and y.shape == (2, 16, 9, 9)
                assert y.is_contiguous(memory_format=torch.channels_last)
    finally:
        torch.set_autocast_dtype("cuda", previous)


def test_traced_calls_bake_the_resolved_precision_into_the_graph(cudnn_flags):
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return lambda *args: (torch.empty(0),)  # (the CPU implementation would refuse to run)

    def precisions():
        return [node.args[6] if len(node.args) > 6 else node.kwargs.get("precision", "fp32")
                for node in graphs[-1].graph.nodes if node.target is torch.ops.autoconv.conv2d.default
                or node.target is torch.ops.autoconv.conv2d]

    x, w = torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3)
    for allowed, want in ((True, "tf32"), (False, "fp32")):
        torch.backends.cudnn.allow_tf32 = allowed  # (the legacy flag: torch.export also reads it)
        torch._dynamo.reset()
        torch.compile(lambda x, w: ac.conv2d(x, w, padding=1), backend=backend, fullgraph=True)(x, w)
        assert precisions() == [want]
    torch._dynamo.reset()
    torch.compile(lambda x, w: ac.conv2d(x, w, precision="tf32"), backend=backend, fullgraph=True)(x, w)
    assert precisions() == ["tf32"]
    torch._dynamo.reset()


def test_conv2d_layers_carry_their_precision_and_convert_sets_it(monkeypatch):
    import types

    import autoconv.torch.modules as modules

    layer = ac.Conv2d(3, 4, 3, padding=1, precision="tf32")
    assert layer.precision == "tf32" and "precision='tf32'" in repr(layer)
    assert ac.Conv2d(3, 4, 3).precision is None and "precision" not in repr(ac.Conv2d(3, 4, 3))
    seen = []
    monkeypatch.setattr(modules, "conv2d", lambda *args, precision=None: seen.append(precision))
    cuda_like = types.SimpleNamespace(is_cuda=True)  # (only its is_cuda is read before the call)
    layer._conv_forward(cuda_like, layer.weight, layer.bias)
    reflect = ac.Conv2d(3, 4, 3, padding=1, padding_mode="reflect", precision="fp32")
    monkeypatch.setattr(modules.F, "pad", lambda x, *args, **kwargs: x)
    reflect._conv_forward(cuda_like, reflect.weight, reflect.bias)
    assert seen == ["tf32", "fp32"]

    model = Mixed()
    same, _ = ac.convert(model)
    assert same.stem.precision is None  # PyTorch's setting, per call
    converted, report = ac.convert(model, precision="tf32")
    assert [converted.get_submodule(name).precision for name in report.converted] == ["tf32"] * 4
    assert type(model.stem) is nn.Conv2d  # copies were converted
    again, _ = ac.convert(converted)  # None keeps what autoconv layers have
    assert again.stem.precision == "tf32"
    assert ac.convert(converted, precision="fp32")[0].stem.precision == "fp32"
    assert not hasattr(nn.Conv2d(3, 4, 3), "precision")  # nn.Conv2d itself is untouched


def test_conv_problems_take_a_precision_and_the_config_keeps_it(tmp_path):
    model = Mixed().to("meta")
    x = torch.empty(2, 3, 20, 18, device="meta")
    strict, _ = ac.conv_problems(model, x)
    tf32, _ = ac.conv_problems(model, x, precision="tf32")
    assert {p.problem.precision for p in strict} == {"fp32"} and {p.problem.precision for p in tf32} == {"tf32"}
    assert [p.problem.with_(precision="fp32") for p in tf32] == [p.problem for p in strict]
    with pytest.raises(ProblemError) as info:  # problems have a precision: None is no choice here
        ac.conv_problems(model, x, precision=None)
    assert info.value.field == "precision" and "None" not in str(info.value).partition(": ")[2]
    path = ac.write_config(tf32, tmp_path / "tf32.yaml")
    assert path.read_text().count("precision=tf32") == len(tf32)
    assert [(p.name, p.problem.key(), p.count) for p in load_config(path).problems] == \
        [(p.name, p.problem.key(), p.count) for p in tf32]


def test_model_problems_take_a_precision():
    from autoconv.torch.problems import model_problems

    problems, _ = model_problems(f"{THIS}:mixed_model", (2, 3, 20, 18), precision="tf32")
    assert [p.name for p in problems] == ["stem", "reflect", "head.0"]
    assert all(p.problem.precision == "tf32" for p in problems)
    assert all(p.problem.precision == "fp32" for p in model_problems(f"{THIS}:mixed_model", (2, 3, 20, 18))[0])


def test_channels_last_tf32_layers_are_recorded_as_nhwc_problems():
    """A layer whose input is channels_last gives an NHWC problem in tf32 (what the operator runs on
    Hopper); in fp32, or with an NCHW input, an NCHW one. A one-channel input is both layouts at
    once: NCHW."""
    model = nn.Conv2d(3, 8, 3, padding=1).to("meta").to(memory_format=torch.channels_last)
    x = torch.empty(2, 3, 10, 12, device="meta").to(memory_format=torch.channels_last)
    assert [p.problem.layout for p in ac.conv_problems(model, x, precision="tf32")[0]] == ["NHWC"]
    assert {p.problem.layout for p in ac.conv_problems(model, x, precision="fp32")[0]} == {"NCHW"}
    assert {p.problem.layout for p in ac.conv_problems(model, x.contiguous(), precision="tf32")[0]} == {"NCHW"}
    one_channel = nn.Conv2d(1, 4, 3).to("meta")
    ambiguous = torch.empty(2, 1, 6, 6, device="meta").to(memory_format=torch.channels_last)
    assert ac.conv_problems(one_channel, ambiguous, precision="tf32")[0][0].problem.layout == "NCHW"


def test_a_channels_last_model_on_the_meta_device_records_every_layer_in_nhwc():
    """On the meta device a convolution's output is contiguous; on a GPU (and the CPU) it is
    channels_last when its input or weight is. conv_problems gives the meta outputs the GPU's
    layout, so every layer of a channels_last model is an NHWC problem in tf32, as on the GPU,
    not only the first; and a model whose input is NCHW stays NCHW throughout."""
    def model():
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 16, 1),
                             nn.BatchNorm2d(16), nn.Conv2d(16, 4, 3, stride=2))

    x = torch.empty(2, 3, 10, 12)
    on_cpu = [p.problem.layout for p in ac.conv_problems(model().to(memory_format=torch.channels_last),
                                                         x.to(memory_format=torch.channels_last), precision="tf32")[0]]
    meta = model().to("meta").to(memory_format=torch.channels_last)
    on_meta = [p.problem.layout for p in ac.conv_problems(
        meta, torch.empty(2, 3, 10, 12, device="meta").to(memory_format=torch.channels_last), precision="tf32")[0]]
    assert on_meta == on_cpu == ["NHWC", "NHWC", "NHWC"]
    nchw = [p.problem.layout for p in ac.conv_problems(model().to("meta"), torch.empty(2, 3, 10, 12, device="meta"),
                                                       precision="tf32")[0]]
    assert nchw == ["NCHW", "NCHW", "NCHW"]


# ---- 16-bit tensors (issue 17): dtype -> precision, channels_last outputs, clear refusals ------

def test_16bit_tensors_compute_in_their_own_precision_and_refuse_mixtures():
    from autoconv.torch.ops import _first_call, _sixteen_bit_precision

    bf16 = torch.empty(1, 8, 9, 9, dtype=torch.bfloat16)
    w16 = torch.empty(4, 8, 3, 3, dtype=torch.bfloat16)
    # PyTorch's float32 setting (fp32 or tf32) does not apply; a matching 16-bit precision is fine.
    assert _sixteen_bit_precision(bf16, w16, None, "tf32") == "bf16"
    assert _sixteen_bit_precision(bf16, w16, torch.empty(4, dtype=torch.bfloat16), "bf16") == "bf16"
    assert _sixteen_bit_precision(bf16.half(), w16.half(), None, "fp32") == "fp16"
    refusals = [((bf16, w16.float(), None, "fp32"), "w.dtype", "must have one dtype"),
                ((bf16, w16, torch.empty(4), "fp32"), "bias.dtype", "must have one dtype"),
                ((bf16.double(), w16.double(), None, "fp32"), "x.dtype", "float32, bfloat16 and float16"),
                ((bf16, w16, None, "fp16"), "precision", "computed in precision 'bf16'")]
    for arguments, field, words in refusals:
        with pytest.raises(ProblemError) as info:
            _sixteen_bit_precision(*arguments)
        assert info.value.field == field and words in str(info.value)
    # A 16-bit precision asked of float32 tensors is refused before anything runs.
    with pytest.raises(ProblemError, match="the tensors are float32; 'bf16' computes bfloat16 tensors"):
        _first_call(None, bf16.float(), w16.float(), None, (1, 1), (1, 1, 1, 1), (1, 1), "bf16", "NHWC")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_traced_16bit_calls_see_a_channels_last_output_of_their_dtype(dtype):
    x = torch.empty(2, 8, 9, 11, dtype=dtype, device="meta").contiguous(memory_format=torch.channels_last)
    w = torch.empty(4, 8, 3, 3, dtype=dtype, device="meta")
    y = torch.ops.autoconv.conv2d(x, w, None, [2, 1], [1, 1, 0, 2], [1, 1], "fp32")
    assert y.shape == (2, 4, 5, 11) and y.dtype is dtype
    assert y.is_contiguous(memory_format=torch.channels_last)
    y32 = torch.ops.autoconv.conv2d(x.float(), w.float(), None, [2, 1], [1, 1, 0, 2], [1, 1], "fp32")
    assert y32.dtype is torch.float32 and y32.is_contiguous()


def test_convert_takes_16bit_layers():
    converted, report = ac.convert(nn.Conv2d(8, 8, 3).to(torch.bfloat16))
    assert type(converted) is ac.Conv2d and not report.skipped


def test_16bit_casts_of_parameters_are_kept_while_unchanged():
    from autoconv.torch.ops import CAST_PARAMETERS

    w = nn.Parameter(torch.randn(4, 3, 3, 3))
    with torch.no_grad():
        first = CAST_PARAMETERS.get(w, torch.bfloat16)
        assert first.dtype is torch.bfloat16 and CAST_PARAMETERS.get(w, torch.bfloat16) is first
        w.add_(1.0)  # an in-place change (an optimizer step): cast again
        second = CAST_PARAMETERS.get(w, torch.bfloat16)
        assert second is not first and torch.equal(second, w.bfloat16())
    # Where autograd must see the cast, it is made afresh, with its grad_fn.
    with torch.enable_grad():
        cast = CAST_PARAMETERS.get(w, torch.bfloat16)
        assert cast.grad_fn is not None and cast is not CAST_PARAMETERS.get(w, torch.bfloat16)
    # So it is where autocast's own cache is off (torch.cuda.make_graphed_callables asks for that)
    torch.set_autocast_cache_enabled(False)
    try:
        with torch.no_grad():
            assert CAST_PARAMETERS.get(w, torch.bfloat16) is not CAST_PARAMETERS.get(w, torch.bfloat16)
    finally:
        torch.set_autocast_cache_enabled(True)
    # What autocast does not cast stays as it is: float64, and a tensor already of the dtype
    double = torch.randn(3, dtype=torch.float64)
    assert CAST_PARAMETERS.get(double, torch.bfloat16) is double
    assert CAST_PARAMETERS.get(second, torch.bfloat16) is second
    ac.clear_weight_cache()
    with torch.no_grad():
        assert CAST_PARAMETERS.get(w, torch.bfloat16) is not second


def _python_node(x, w, b, stride, padding, dilation):
    from autoconv.torch import ops

    return ops.EagerConv2d.apply(x, w, b, stride, padding, dilation, "fp32")


def _cxx_node(x, w, b, stride, padding, dilation):
    from autoconv.torch import native

    y = native.conv2d(x, w, b, stride, padding, dilation, "fp32")
    assert y is not None, "the C++ autograd node did not build (see the warning)"
    return y


@pytest.mark.parametrize("node", [_python_node, _cxx_node], ids=["python", "cxx"])
@pytest.mark.parametrize("stride, padding, dilation, bias", [
    ((1, 1), (1, 1, 1, 1), (1, 1), True),
    ((2, 1), (2, 0, 1, 3), (1, 2), True),    # asymmetric padding: applied to x, the gradient cut back
    ((3, 2), (0, 0, 0, 0), (2, 1), False),
])
def test_the_autograd_nodes_give_pytorchs_gradients(monkeypatch, node, stride, padding, dilation, bias):
    """The autograd nodes' backward (aten.convolution_backward with the layer's arguments: the
    Python EagerConv2d and the C++ node of autoconv.torch.native, built here on first use), on the
    CPU in float64 with the forward computed by PyTorch: every gradient PyTorch's own gives, and
    only those asked for."""
    from autoconv.torch import ops

    def reference(x, w, b):
        top, bottom, left, right = padding
        return F.conv2d(F.pad(x, (left, right, top, bottom)), w, b, stride, 0, dilation)

    monkeypatch.setattr(ops, "conv2d_cuda", lambda x, w, b, *args: reference(x, w, b))
    x = torch.randn(2, 3, 11, 9, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 3, 3, 2, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, dtype=torch.float64, requires_grad=True) if bias else None
    grad_y = torch.randn_like(reference(x, w, b))
    leaves = [t for t in (x, w, b) if t is not None]
    want = torch.autograd.grad(reference(x, w, b), leaves, grad_y)
    y = node(x, w, b, stride, padding, dilation)
    torch.testing.assert_close(y, reference(x, w, b))
    for got, expected in zip(torch.autograd.grad(y, leaves, grad_y), want):
        torch.testing.assert_close(got, expected)
    x_only = torch.autograd.grad(node(x, w.detach(), None, stride, padding, dilation), [x], grad_y)
    torch.testing.assert_close(x_only[0], torch.autograd.grad(reference(x, w.detach(), None), [x], grad_y)[0])


def test_the_cxx_node_is_opt_in_and_a_failed_build_falls_back_with_one_warning(monkeypatch):
    import torch.utils.cpp_extension

    from autoconv.torch import native

    monkeypatch.delenv("AUTOCONV_NATIVE_AUTOGRAD", raising=False)
    assert not native.wanted()
    monkeypatch.setenv("AUTOCONV_NATIVE_AUTOGRAD", "on")
    assert native.wanted()
    monkeypatch.setenv("AUTOCONV_NATIVE_AUTOGRAD", "yes")
    with pytest.raises(Exception, match="AUTOCONV_NATIVE_AUTOGRAD='yes': expected 'on' or 'off'"):
        native.wanted()

    def no_compiler(*args, **kwargs):
        raise RuntimeError("Ninja is required to load C++ extensions")

    monkeypatch.setattr(torch.utils.cpp_extension, "load", no_compiler)
    native.module.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="could not be built .*Ninja is required.*the Python node runs"):
            assert native.conv2d(torch.randn(1, 1, 3, 3), torch.randn(1, 1, 1, 1), None, (1, 1), (0, 0, 0, 0),
                                 (1, 1), "fp32") is None
        assert native.module() is None  # (tried once)
    finally:
        native.module.cache_clear()


def test_opcheck_passes_with_pytorchs_convolution_as_the_cpu_kernel():
    """torch.library.opcheck (schema, fake tensors, autograd registration, AOT dispatch with dynamic
    shapes: symbolic sizes reach the autograd context) on the CPU, the operator's CPU kernel replaced
    for the test by PyTorch's convolution; CI has no GPU to run the CUDA kernel's opcheck."""
    def kernel(x, w, bias, stride, padding, dilation, precision="fp32"):
        top, bottom, left, right = padding
        return F.conv2d(F.pad(x, (left, right, top, bottom)), w, bias, list(stride), 0, list(dilation)).contiguous()

    library = torch.library.Library("autoconv", "IMPL")
    library.impl("conv2d", kernel, "CPU")
    try:
        x, w = torch.randn(1, 3, 7, 6, requires_grad=True), torch.randn(4, 3, 3, 2, requires_grad=True)
        bias = torch.randn(4, requires_grad=True)
        torch.library.opcheck(torch.ops.autoconv.conv2d.default, (x, w, bias, [1, 2], [1, 0, 0, 1], [1, 1]))
    finally:
        library._destroy()


@pytest.mark.parametrize("keyword, value", [("inplace", "yes"), ("fuse", 1), ("inplace", None)])
def test_convert_refuses_flags_that_are_not_bools(keyword, value):
    with pytest.raises(ProblemError, match=f"{keyword}.*expected True or False"):
        ac.convert(nn.Conv2d(3, 4, 3), **{keyword: value})
