"""Folding BatchNorm into the convolution before it (autoconv.torch.fusion): the folded model
computes what the model computes in eval mode, only provably safe BatchNorms are folded (the
report says why the others are not), the model given is never changed, training mode is refused,
and ``convert(fuse=True)`` / ``tune --model --fuse`` run and tune the folded convolutions."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

import autoconv.torch as ac  # noqa: E402
from autoconv.config.load import load_config  # noqa: E402
from autoconv.errors import ProblemError  # noqa: E402
from autoconv.torch.fusion import WHOLE_MODEL  # noqa: E402

THIS = __name__


class Blocks(nn.Module):
    """Every case the folding decides: conv -> bn (folded, and the conv has no bias of its own),
    conv -> bn whose conv output is also read by a skip (not folded), bn of a sum (not a conv),
    a conv module called twice before its bn (not folded), a bn without running statistics."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.shared_out = nn.Conv2d(8, 8, 1)
        self.bn_shared_out = nn.BatchNorm2d(8)
        self.bn_of_sum = nn.BatchNorm2d(8)
        self.twice = nn.Conv2d(8, 8, 3, padding=1)
        self.bn_twice = nn.BatchNorm2d(8)
        self.last = nn.Conv2d(8, 4, 1)
        self.bn_no_stats = nn.BatchNorm2d(4, track_running_stats=False)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        y = self.shared_out(x)
        x = self.bn_shared_out(y) + y
        x = self.bn_of_sum(x + 1.0)
        x = self.bn_twice(self.twice(self.twice(x)))
        return self.bn_no_stats(self.last(x))


def blocks() -> nn.Module:
    """A factory for ``autoconv tune --model tests.torch.test_fusion:blocks``."""
    model = Blocks()
    for module in model.modules():   # statistics other than the initial ones, so folding shows
        if isinstance(module, nn.BatchNorm2d) and module.running_mean is not None:
            module.running_mean.uniform_(-1.0, 1.0)
            module.running_var.uniform_(0.5, 2.0)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.5, 0.5)
    return model


def test_only_provably_safe_batch_norms_are_folded_and_the_output_stays():
    model = blocks().eval()
    before = {name: value.clone() for name, value in model.state_dict().items()}
    folded, report = ac.fold_batch_norms(model)
    assert report.folded == {"bn": "conv"}
    assert set(report.unfused) == {"bn_shared_out", "bn_of_sum", "bn_twice", "bn_no_stats"}
    assert "read elsewhere" in report.unfused["bn_shared_out"]
    assert "not a convolution's output" in report.unfused["bn_of_sum"]
    assert "more than one place" in report.unfused["bn_twice"]
    assert "no running statistics" in report.unfused["bn_no_stats"]
    assert not hasattr(folded, "bn") and isinstance(folded.conv.bias, torch.Tensor)
    x = torch.randn(2, 3, 9, 7)
    with torch.no_grad():
        assert torch.allclose(folded(x), model(x), rtol=1e-5, atol=1e-5)
    # the model given is not changed: its modules, their classes and values
    assert isinstance(model.bn, nn.BatchNorm2d) and model.conv.bias is None
    assert all(torch.equal(value, before[name]) for name, value in model.state_dict().items())


def test_what_folding_would_bypass_or_change_stays_unfolded():
    """A convolution with a hook (weight norm's pre-hook recomputes the weights each call), a
    BatchNorm left in training mode inside an eval model, and 16-bit layers, folded in float32."""
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.Conv2d(8, 8, 1), nn.BatchNorm2d(8),
                          nn.Conv2d(8, 4, 1), nn.BatchNorm2d(4)).eval()
    model[0] = torch.nn.utils.parametrizations.weight_norm(model[0])
    model[3].train()
    _, report = ac.fold_batch_norms(model)
    assert set(report.unfused) == {"1", "3"} and report.folded == {"5": "4"}
    assert "hooks, parametrizations" in report.unfused["1"] and "training mode" in report.unfused["3"]
    half = blocks().eval().to(torch.bfloat16)
    folded, report = ac.fold_batch_norms(half)
    assert report.folded == {"bn": "conv"} and folded.conv.weight.dtype is torch.bfloat16
    want = ac.fold_batch_norms(blocks().eval())[0].conv   # (the same statistics: blocks() is seeded below)
    assert want.weight.shape == folded.conv.weight.shape


def test_torchvision_models_fold_what_follows_a_convolution():
    torchvision = pytest.importorskip("torchvision")
    x = torch.randn(1, 3, 64, 64)
    for factory, folded_count, unfused_count in ((torchvision.models.resnet18, 20, 0),
                                                 (torchvision.models.densenet121, 59, 62)):
        model = factory().eval()
        folded, report = ac.fold_batch_norms(model)
        assert (len(report.folded), len(report.unfused)) == (folded_count, unfused_count), factory.__name__
        with torch.no_grad():
            want = model(x)
            assert (folded(x) - want).norm() <= 1e-5 * want.norm()


def test_training_mode_and_non_modules_are_refused():
    with pytest.raises(ProblemError) as info:
        ac.fold_batch_norms(blocks())   # (a new module is in training mode)
    assert info.value.field == "model" and "model.eval()" in str(info.value)
    with pytest.raises(ProblemError):
        ac.convert(blocks(), fuse=True)
    with pytest.raises(ProblemError):
        ac.fold_batch_norms("resnet50")


class DataDependent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4)

    def forward(self, x):
        if x.sum() > 0:   # (control flow on values: torch.fx cannot trace it)
            x = -x
        return self.bn(self.conv(x))


def test_a_model_torch_fx_cannot_trace_comes_back_unfolded_and_said():
    model = DataDependent().eval()
    folded, report = ac.fold_batch_norms(model)
    assert folded is not model and type(folded) is DataDependent and not report.folded
    assert "torch.fx cannot trace it" in report.unfused[WHOLE_MODEL]


def test_convert_with_fuse_folds_then_converts_a_copy():
    model = blocks().eval()
    converted, report = ac.convert(model, fuse=True)
    assert report.folded == {"bn": "conv"} and "bn_of_sum" in report.unfused
    assert type(converted.conv) is ac.Conv2d and isinstance(converted.conv.bias, torch.Tensor)
    assert type(model.conv) is nn.Conv2d and isinstance(model.bn, nn.BatchNorm2d)   # (untouched)
    text = str(report)
    assert "1 BatchNorm layers folded into their convolutions, 4 not" in text and "not folded: bn_twice" in text
    with torch.no_grad():   # (CPU inputs run nn.Conv2d's own forward)
        x = torch.randn(2, 3, 9, 7)
        assert torch.allclose(converted(x), model(x), rtol=1e-5, atol=1e-5)


def test_tune_model_with_fuse_tunes_the_folded_convolutions(tmp_path, monkeypatch):
    from autoconv.commands.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")
    monkeypatch.setenv("AUTOCONV_CACHE", str(tmp_path / "cache.sqlite3"))
    assert main(["tune", "--model", f"{THIS}:blocks", "--input", "2x3x9x7", "--trials", "2", "--fuse"]) == 0
    path = tmp_path / "blocks_2x3x9x7.yaml"
    fused = {p.name: p.problem.bias for p in load_config(path).problems}
    assert fused["conv"] is True and "--fuse" in path.read_text().splitlines()[1]
    assert main(["tune", "--model", f"{THIS}:blocks", "--input", "2x3x9x7", "--trials", "2"]) == 0
    assert {p.name: p.problem.bias for p in load_config(path).problems}["conv"] is False
