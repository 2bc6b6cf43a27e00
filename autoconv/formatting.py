"""Short text for people, shared by the command line's tables and the reports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def format_params(params: Mapping[str, Any] | None, limit: int | None = None) -> str:
    """``BM=128 BN=64 ...``: a kernel configuration's parameters in the family's order; with
    ``limit``, the first ``limit`` of them and `` ...`` when there are more."""
    items = [f"{name}={value}" for name, value in (params or {}).items()]
    if limit is not None and len(items) > limit:
        return " ".join(items[:limit]) + " ..."
    return " ".join(items)
