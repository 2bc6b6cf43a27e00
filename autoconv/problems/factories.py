"""A model named as ``module:factory`` (``torchvision.models:resnet50``), resolved to the callable
that builds it: what ``autoconv tune --model`` and ``autoconv bench --end-to-end`` take. Only
imports the named module; building the model is the caller's."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from autoconv.errors import UsageError


def resolve_factory(spec: str, option: str) -> Callable[[], Any]:
    """The callable ``spec`` (``module:factory``, the factory may be a dotted attribute) names.

    Raises:
        UsageError: naming ``option`` (the command-line flag that gave ``spec``): not
            ``module:factory``, the module does not import, it has no such attribute, or that
            attribute is not callable.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise UsageError(option, spec, "expected module:factory, e.g. torchvision.models:resnet50")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise UsageError(option, spec, f"cannot import {module_name} ({err})") from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise UsageError(option, spec, f"{module_name} has no attribute {attribute}")
        target = getattr(target, part)
    if not callable(target):
        raise UsageError(option, spec, f"{attribute} is not callable")
    return target
