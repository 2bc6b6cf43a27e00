"""A real model's convolution problems, found by running it once on an example input.

    problems, skipped = autoconv.torch.conv_problems(model, torch.randn(32, 3, 224, 224))
    autoconv.torch.write_config(problems, "my_model.yaml", budget={"trials": 160})
    tf32, _ = autoconv.torch.conv_problems(model, example, precision="tf32")   # to tune for TF32

Forward pre-hooks on every ``nn.Conv2d`` record each call's input shape; identical
problems are merged (named after the first layer that runs them, with a count), and
layers autoconv cannot run are listed with the reason. The model may live on any device,
``meta`` included (shapes only, no memory, no arithmetic): the command line
(``autoconv tune --model torchvision.models:resnet50 --input 32x3x224x224``) runs it so.
The problems have the ``precision`` asked (``"fp32"`` unless told): tune the precision the
model will run at (``autoconv.torch.pytorch_precision()`` tells what PyTorch's current
setting gives layers whose precision is None). The config names it in each spec string.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
import yaml
from torch import nn

from autoconv.errors import ProblemError, UsageError
from autoconv.files import write_atomically
from autoconv.problems.factories import resolve_factory
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import ConvProblem
from autoconv.runtime.arguments import check_precision
from autoconv.torch.functional import resolve
from autoconv.torch.fusion import fold_batch_norms
from autoconv.torch.layouts import is_channels_last
from autoconv.torch.modules import ineligible_reason


def conv_problems(model: nn.Module, *inputs: Any, precision: str = "fp32",
                  **kwargs: Any) -> tuple[list[NamedProblem], dict[str, str]]:
    """Run ``model(*inputs, **kwargs)`` once (no gradient) and return the unique problems
    of its eligible convolutions, in the order they first ran, and ``{layer: why}`` for
    the convolutions autoconv would leave to PyTorch. Every problem has ``precision``
    (``"fp32"`` or ``"tf32"``; the keyword is not passed on to the model)."""
    precision = check_precision(precision, none_allowed=False)
    found: dict[str, NamedProblem] = {}
    skipped: dict[str, str] = {}

    def record(name: str):
        def hook(module: nn.Conv2d, args) -> None:
            why = ineligible_reason(module)
            if why is not None:
                skipped.setdefault(name, why)
                return
            problem = problem_of(module, args[0], precision)
            key = problem.key()
            seen = found.get(key)
            found[key] = (NamedProblem(name, problem, 1) if seen is None
                          else NamedProblem(seen.name, seen.problem, seen.count + 1))
        return hook

    convolutions = [(name, module) for name, module in model.named_modules() if isinstance(module, nn.Conv2d)]
    hooks = [module.register_forward_pre_hook(record(name or type(module).__name__)) for name, module in convolutions]
    hooks += [module.register_forward_hook(_output_layout_as_on_cuda) for _, module in convolutions]
    try:
        with torch.no_grad():
            model(*inputs, **kwargs)
    finally:
        for hook in hooks:
            hook.remove()
    return list(found.values()), skipped


def _output_layout_as_on_cuda(module: nn.Conv2d, args, output):
    """On the meta device a convolution's output is contiguous whatever its operands' layout; on
    a GPU it is channels_last when the input or the weight is. Gives the meta output the GPU's
    layout, so that the layers after it see the inputs they would see on the GPU (and a
    channels_last model's later layers are recorded in NHWC, not only its first)."""
    if (isinstance(output, torch.Tensor) and output.device.type == "meta" and output.dim() == 4
            and (is_channels_last(args[0]) or is_channels_last(module.weight))):
        return output.contiguous(memory_format=torch.channels_last)
    return None


def problem_of(module: nn.Conv2d, x: torch.Tensor, precision: str = "fp32") -> ConvProblem:
    """The problem ``module`` computes on input ``x`` at ``precision`` (non-zero padding
    modes pad first): in NHWC for tf32 on a channels_last ``x`` (what the operator runs on a
    Hopper GPU: :func:`autoconv.torch.layouts.kernel_layout`), else NCHW."""
    N, C, H, W = (int(v) for v in x.shape)
    K, _, R, S = (int(v) for v in module.weight.shape)
    stride, padding, dilation = resolve(tuple(module.stride), _padding(module.padding), tuple(module.dilation),
                                        H, W, R, S)
    if module.padding_mode != "zeros":
        top, bottom, left, right = padding
        H, W, padding = H + top + bottom, W + left + right, (0, 0, 0, 0)
    channels_last = is_channels_last(x)
    return ConvProblem(N=N, C=C, H=H, W=W, K=K, R=R, S=S, stride=stride, dilation=dilation, padding=padding,
                       bias=module.bias is not None, precision=precision,
                       layout="NHWC" if precision == "tf32" and channels_last else "NCHW")


def _padding(value):
    return tuple(value) if isinstance(value, (list, tuple)) else value


def config_text(problems: list[NamedProblem], *, budget: dict | None = None, comment: str = "") -> str:
    """A tuning config (YAML) for ``problems``: one spec string per problem (``precision=tf32``
    in it for a tf32 problem), with its count."""
    document: dict[str, Any] = {"problems": [{"name": named.name, "spec": named.problem.spec(),
                                              "count": named.count} for named in problems]}
    if budget:
        document["budget"] = dict(budget)
    header = "".join(f"# {line}\n" for line in comment.splitlines())
    return header + yaml.safe_dump(document, sort_keys=False)


def write_config(problems: list[NamedProblem], path: str | Path, *, budget: dict | None = None,
                 comment: str = "") -> Path:
    """Write :func:`config_text` to ``path`` (atomically) and return the path."""
    path = Path(path)
    write_atomically(path, config_text(problems, budget=budget, comment=comment))
    return path


def parse_input_shape(text: str) -> tuple[int, ...]:
    """``"32x3x224x224"`` -> ``(32, 3, 224, 224)``: the example input's shape."""
    if not re.fullmatch(r"[1-9][0-9]*(x[1-9][0-9]*)+", text.strip()):
        raise UsageError("--input", text, "expected the example input's shape as positive integers joined "
                           "by x, e.g. 32x3x224x224")
    return tuple(int(part) for part in text.strip().split("x"))


def load_model(spec: str) -> nn.Module:
    """The model ``spec`` names, ``module:factory`` (e.g. ``torchvision.models:resnet50``),
    built by calling the factory without arguments on the ``meta`` device (shapes only:
    no memory is allocated and no weights are initialised or downloaded)."""
    target = resolve_factory(spec, "--model")
    attribute = spec.partition(":")[2]
    try:
        with torch.device("meta"):
            model = target()
    except Exception as err:  # the user's factory: any failure is reported, not raised on
        raise UsageError("--model", spec, f"calling {attribute}() failed: {type(err).__name__}: {err}") from None
    if not isinstance(model, nn.Module):
        raise UsageError("--model", spec, f"{attribute}() returned a {type(model).__name__}, not a torch.nn.Module")
    return model.eval()


def model_problems(spec: str, input_shape: tuple[int, ...], precision: str = "fp32",
                   fuse: bool = False) -> tuple[list[NamedProblem], dict[str, str]]:
    """:func:`conv_problems` of the model ``spec`` names on a random input of ``input_shape``,
    both on the ``meta`` device, as problems of ``precision``; with ``fuse``, of the model with
    its BatchNorms folded (:func:`autoconv.torch.fusion.fold_batch_norms`)."""
    precision = check_precision(precision, none_allowed=False)  # (before running the user's code)
    model = load_model(spec)
    if fuse:
        model, _ = fold_batch_norms(model)
    try:
        return conv_problems(model, torch.empty(input_shape, device="meta"), precision=precision)
    except (ProblemError, UsageError):
        raise
    except Exception as err:  # the user's model: a wrong input shape usually
        raise UsageError("--input", "x".join(map(str, input_shape)),
                           f"running {spec} on an input of this shape failed: {type(err).__name__}: {err}") from None
