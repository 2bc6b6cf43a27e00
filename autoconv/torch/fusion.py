"""Folding each BatchNorm into the convolution before it, for inference.

    folded_model, report = autoconv.torch.fold_batch_norms(model.eval())
    model, report = autoconv.torch.convert(model.eval(), fuse=True)     # the same, then convert

In eval mode a ``BatchNorm2d`` is a per-channel scale and shift with fixed statistics, so a
convolution whose only consumer is that BatchNorm computes the same as one convolution with the
scale folded into its weights and the shift into its bias
(``torch.nn.utils.fusion.fuse_conv_bn_eval``): one pass over the activations fewer, and the bias
added in the kernel's epilogue. The model's dataflow comes from ``torch.fx.symbolic_trace``;
the result is a ``torch.fx.GraphModule`` with the BatchNorms gone. What cannot be proven safe
stays as it is, and the report says why: a BatchNorm that does not read a convolution's output
(DenseNet's and pre-activation blocks normalise a block's input), a convolution whose output or
parameters something else also reads, a convolution module called in several places, one in
training mode or with hooks or parametrizations (which would bypass the folded weights), a
BatchNorm without running statistics, or a model torch.fx cannot trace. A model in training mode
is refused: its statistics change every step. 16-bit layers are folded in float32.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
from torch import fx, nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

from autoconv.errors import ProblemError

#: The module that stands for the whole model in a report (the model cannot be traced).
WHOLE_MODEL = "(model)"

#: The convolution classes whose forward computes ``nn.Conv2d``'s from its weight and bias, so
#: that folding into them is folding into a convolution (autoconv.torch.modules adds its Conv2d).
FOLDABLE_CONVOLUTIONS: set[type[nn.Conv2d]] = {nn.Conv2d}


@dataclass
class FusionReport:
    """What :func:`fold_batch_norms` did: ``folded`` BatchNorm -> the convolution it went into,
    and ``unfused`` BatchNorm (or :data:`WHOLE_MODEL`) -> why it stayed."""
    folded: dict[str, str] = field(default_factory=dict)
    unfused: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [f"autoconv.torch.fold_batch_norms: {len(self.folded)} BatchNorm layers folded into their "
                 f"convolutions, {len(self.unfused)} left as they are"]
        lines += [f"  left: {name}: {why}" for name, why in self.unfused.items()]
        return "\n".join(lines)


def fold_batch_norms(model: nn.Module) -> tuple[nn.Module, FusionReport]:
    """A copy of ``model`` (in eval mode) with each BatchNorm2d that only a convolution's output
    feeds folded into that convolution, as a ``torch.fx.GraphModule``; ``model`` itself is not
    changed. A model torch.fx cannot trace comes back as a plain copy, one that cannot be copied
    as it is (the report says why).

    Raises:
        ProblemError: ``model`` is not a module, or is in training mode.
    """
    if not isinstance(model, nn.Module):
        raise ProblemError("model", type(model).__name__, "expected a torch.nn.Module")
    if model.training:
        raise ProblemError("model", "training mode", "folding BatchNorm needs its running statistics fixed: call "
                           "model.eval() first (training is never fused)")
    report = FusionReport()
    try:
        model = copy.deepcopy(model)   # (the traced module shares its submodules, which folding replaces)
    except Exception as err:  # any model: old-style weight_norm's tensors refuse deepcopy, say
        report.unfused[WHOLE_MODEL] = f"it cannot be copied ({type(err).__name__}: {err}); nothing folded"
        return model, report
    try:
        traced = fx.symbolic_trace(model)
    except Exception as err:  # any model: what torch.fx cannot trace is left as it is, and said
        report.unfused[WHOLE_MODEL] = f"torch.fx cannot trace it ({type(err).__name__}: {err}); nothing folded"
        return model, report
    modules = dict(traced.named_modules())
    calls: dict[str, int] = {}
    for node in traced.graph.nodes:
        if node.op == "call_module":
            calls[str(node.target)] = calls.get(str(node.target), 0) + 1
    for node in list(traced.graph.nodes):
        if node.op != "call_module" or type(modules[str(node.target)]) is not nn.BatchNorm2d:
            continue
        name = str(node.target)
        why = _why_not_foldable(node, modules, calls)
        if why is not None:
            report.unfused[name] = why
            continue
        conv_node = node.args[0]
        assert isinstance(conv_node, fx.Node)   # (_why_not_foldable checked it)
        conv_name = str(conv_node.target)
        conv, batch_norm = modules[conv_name], modules[name]
        assert isinstance(conv, nn.Conv2d) and isinstance(batch_norm, nn.BatchNorm2d)
        # (folded in float32, then in the weights' dtype: 16-bit arithmetic on the statistics cancels)
        folded = fuse_conv_bn_eval(copy.deepcopy(conv).float(), copy.deepcopy(batch_norm).float())
        folded = folded.to(conv.weight.dtype)
        folded.__class__ = type(conv)   # (an autoconv Conv2d stays one)
        _set_submodule(traced, conv_name, folded)
        node.replace_all_uses_with(conv_node)
        traced.graph.erase_node(node)
        report.folded[name] = conv_name
    traced.graph.lint()
    traced.recompile()
    traced.delete_all_unused_submodules()
    return traced, report


def _why_not_foldable(node: fx.Node, modules: dict[str, nn.Module], calls: dict[str, int]) -> str | None:
    """Why the BatchNorm ``node`` cannot be folded into what feeds it, or None when it can."""
    batch_norm = modules[str(node.target)]
    source = node.args[0] if node.args else None
    conv = modules[str(source.target)] if isinstance(source, fx.Node) and source.op == "call_module" else None
    if not isinstance(source, fx.Node) or not isinstance(conv, nn.Conv2d):
        return "its input is not a convolution's output (it normalises a block's input or a concatenation)"
    if len(node.args) != 1 or node.kwargs:
        return "it is called with more than its input"
    if conv.training or batch_norm.training:
        return "it or its convolution is in training mode (call eval() on the whole model)"
    if type(conv) not in FOLDABLE_CONVOLUTIONS or any(_has_hooks(module) for module in (conv, batch_norm)):
        return ("it or its convolution has hooks, parametrizations (weight norm, say) or a forward of its own, "
                "which folding would bypass")
    if len(source.users) != 1:
        return f"the output of {source.target} is read elsewhere too"
    if calls[str(source.target)] != 1 or calls[str(node.target)] != 1:
        return f"{source.target} or the BatchNorm is called in more than one place"
    if any(reader.op == "get_attr" and str(reader.target).startswith(f"{source.target}.")
           for reader in node.graph.nodes):
        return f"the parameters of {source.target} are read elsewhere too"
    running_mean = batch_norm.running_mean
    if not isinstance(running_mean, torch.Tensor) or batch_norm.running_var is None:
        return "it has no running statistics (track_running_stats=False)"
    return None


def _has_hooks(module: nn.Module) -> bool:
    """Whether ``module`` has forward hooks, pre-hooks or parametrizations of its own."""
    return bool(module._forward_hooks or module._forward_pre_hooks or getattr(module, "parametrizations", None))


def _set_submodule(root: nn.Module, target: str, module: nn.Module) -> None:
    parent_name, _, name = target.rpartition(".")
    setattr(root.get_submodule(parent_name) if parent_name else root, name, module)

