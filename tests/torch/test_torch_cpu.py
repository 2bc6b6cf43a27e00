"""autoconv.torch without a GPU: the operator's registration and fake shapes, tracing,
padding rules, model conversion and finding a model's problems."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import autoconv.torch as ac  # noqa: E402
from autoconv.errors import ProblemError  # noqa: E402
from autoconv.problems.config import load_config  # noqa: E402
from autoconv.torch.functional import resolve  # noqa: E402

#: This module, as `autoconv tune --model MODULE:FACTORY` imports it.
THIS = __name__


def test_the_operator_is_registered_with_its_schema():
    schema = str(torch.ops.autoconv.conv2d.default._schema)
    assert schema.startswith("autoconv::conv2d(Tensor x, Tensor w, Tensor? bias, SymInt[2] stride")


@pytest.mark.parametrize("shape", [
    ((2, 3, 17, 23), (5, 3, 3, 2), [2, 1], [1, 0, 2, 1], [1, 1]),
    ((1, 8, 9, 40), (4, 8, 1, 5), [3, 1], [0, 0, 2, 2], [1, 2]),
    ((4, 2, 5, 5), (3, 2, 5, 5), [1, 1], [0, 0, 0, 0], [1, 1]),
])
def test_fake_shapes_match_pytorch(shape):
    x_shape, w_shape, stride, padding, dilation = shape
    x, w = torch.empty(x_shape, device="meta"), torch.empty(w_shape, device="meta")
    got = torch.ops.autoconv.conv2d(x, w, None, stride, padding, dilation)
    top, bottom, left, right = padding
    want = F.conv2d(F.pad(x, (left, right, top, bottom)), w, None, stride, 0, dilation)
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
    _, (top, bottom, left, right), _ = resolve(1, "same", dilation, *kernel)
    ours = F.conv2d(F.pad(x, (left, right, top, bottom)), w, dilation=dilation)
    torch.testing.assert_close(ours, F.conv2d(x, w, padding="same", dilation=dilation))


def test_padding_forms_and_refusals():
    assert resolve(2, 1, 1, 3, 3) == ((2, 2), (1, 1, 1, 1), (1, 1))
    assert resolve((2, 1), (1, 2), (1, 3), 3, 3) == ((2, 1), (1, 1, 2, 2), (1, 3))
    assert resolve(1, (0, 1, 2, 3), 1, 3, 3)[1] == (0, 1, 2, 3)
    assert resolve(1, "valid", 1, 3, 3)[1] == (0, 0, 0, 0)
    for bad, field in [((2, "same", 1), "padding"), ((1, "full", 1), "padding"), ((1, (1, 2, 3), 1), "padding"),
                       ((0.5, 0, 1), "stride"), ((1, 0, (1, 2, 3)), "dilation")]:
        with pytest.raises(ProblemError) as info:
            resolve(*bad, 3, 3)
        assert info.value.field == field


def test_groups_and_cpu_tensors_are_refused_by_the_function():
    x, w = torch.randn(1, 4, 8, 8), torch.randn(4, 2, 3, 3)
    with pytest.raises(ProblemError, match="groups"):
        ac.conv2d(x, w, groups=2)


class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding="same")
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.half = nn.Conv2d(8, 8, 1).to(torch.bfloat16)
        self.reflect = nn.Conv2d(8, 8, (3, 1), padding=(1, 0), padding_mode="reflect")
        self.again = nn.Conv2d(8, 8, (3, 1), padding=(1, 0), padding_mode="reflect")
        self.head = nn.Sequential(nn.Conv2d(8, 4, 1, stride=2, bias=False), nn.ReLU())

    def forward(self, x):
        x = self.depthwise(self.stem(x))
        x = self.again(self.reflect(x))
        return self.head(x)


def test_convert_reports_what_it_left_alone_and_keeps_state():
    model = Mixed()
    converted, report = ac.convert(model)
    assert report.converted == ["stem", "reflect", "again", "head.0"]
    assert set(report.skipped) == {"depthwise", "half"}
    assert "groups=8" in report.skipped["depthwise"] and "bfloat16" in report.skipped["half"]
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
    assert set(skipped) == {"depthwise"}  # self.half never runs
    path = ac.write_config(problems, tmp_path / "mixed.yaml", budget={"trials": 5}, comment="from a test")
    config = load_config(path)
    assert [(p.name, p.problem.key(), p.count) for p in config.problems] == \
        [(p.name, p.problem.key(), p.count) for p in problems]
    assert path.read_text().startswith("# from a test\n")


def mixed_model() -> nn.Module:
    """A factory for ``autoconv tune --model tests.torch.test_torch_cpu:mixed_model``."""
    return Mixed()


def test_tune_model_writes_the_config_it_tunes(tmp_path, monkeypatch, capsys):
    from autoconv.commands.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")
    monkeypatch.setenv("AUTOCONV_CACHE", str(tmp_path / "cache.sqlite3"))
    assert main(["tune", "--model", f"{THIS}:mixed_model", "--input", "2x3x20x18", "--trials", "2"]) == 0
    config = load_config(tmp_path / "mixed_model_2x3x20x18.yaml")
    assert [(p.name, p.count) for p in config.problems] == [("stem", 1), ("reflect", 2), ("head.0", 1)]
    err = " ".join(capsys.readouterr().err.split())  # (the terminal output wraps)
    assert "4 convolutions, 3 distinct problems" in err and "left to PyTorch: depthwise" in err


@pytest.mark.parametrize("argv, message", [
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


def test_the_resnet50_preset_is_what_torchvision_runs():
    torchvision = pytest.importorskip("torchvision")
    from autoconv.problems.models import resnet50

    with torch.device("meta"):
        model = torchvision.models.resnet50()
    found, skipped = ac.conv_problems(model, torch.empty(32, 3, 224, 224, device="meta"))
    preset = resnet50(32)
    assert not skipped
    assert [(p.name, p.problem.key(), p.count) for p in found] == \
        [(p.name, p.problem.key(), p.count) for p in preset]


def test_tune_model_never_replaces_a_file_it_did_not_write(tmp_path, monkeypatch, capsys):
    from autoconv.commands.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")
    monkeypatch.setenv("AUTOCONV_CACHE", str(tmp_path / "cache.sqlite3"))
    mine = tmp_path / "mine.yaml"
    mine.write_text("problems: []  # my own config\n")
    argv = ["tune", "--model", f"{__name__}:mixed_model", "--input", "2x3x20x18", "--trials", "2"]
    assert main([*argv, "--write-config", str(mine)]) == 2
    assert "did not write is there" in capsys.readouterr().err
    assert mine.read_text() == "problems: []  # my own config\n"
    written = tmp_path / "written.yaml"
    assert main([*argv, "--write-config", str(written)]) == 0
    assert main([*argv, "--write-config", str(written)]) == 0  # its own file is replaced
