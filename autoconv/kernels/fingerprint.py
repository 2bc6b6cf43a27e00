"""The fingerprint of the kernels: one hash of everything that decides what a (family,
config) compiles to and how it launches.

A cached winner and a tuning study are valid only for the kernels they were measured
with, so the winners' cache keys its entries by it and the search names its studies
with it: editing a template, a search space or a family's launch code retires both.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from autoconv.kernels.resources import search_spaces_dir, templates_dir

#: The families' launch code (one module per family).
_FAMILIES_DIR = Path(__file__).resolve().parent / "families"


@lru_cache(maxsize=1)
def templates_hash() -> str:
    """A hash of everything that decides what a (family, config) compiles to and how it
    launches: the templates, the search spaces and the families' launch code."""
    files = sorted([*templates_dir().glob("*.j2"), *templates_dir().glob("*.cuh"),
                    *search_spaces_dir().glob("*.yaml"), *_FAMILIES_DIR.glob("*.py")],
                   key=lambda p: (p.parent.name, p.name))
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.parent.name}/{path.name}\0".encode())
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]
