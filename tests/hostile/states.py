"""Configs and tuned states the hostile cases start from."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from autoconv.commands.main import main

#: Two small problems, one quick family: a full run is a fraction of a second on the fake backend.
CONFIG = """\
problems:
  - name: odd
    spec: "N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1"
  - name: pointwise
    spec: "N=1,C=8,H=9,W=9,K=12,R=1,S=1,bias=1"
families: [direct]
budget: {{trials: {trials}}}
cache: state/cache.sqlite
storage: state/studies.journal
results: results
seed: {seed}
"""

#: Trials per problem in the tuned state.
TUNED_TRIALS = 8


def config(seed: int, trials: int = TUNED_TRIALS, /, **changes: str) -> str:
    """:data:`CONFIG` with its budget and seed, and top-level keys replaced (``changes``: key -> the
    YAML text of its value)."""
    text = CONFIG.format(trials=trials, seed=seed % 1000)
    for key, value in changes.items():
        lines = [line for line in text.splitlines() if not line.startswith(f"{key}:")]
        text = "\n".join(lines) + f"\n{key}: {value}\n"
    return text


def make_tuned(folder: Path, seed: int) -> Path:
    """``folder`` with ``tune.yaml`` tuned by ``autoconv tune`` (fake backend): ``state/`` and
    ``results/tune.json``."""
    (folder / "tune.yaml").write_text(config(seed))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setenv("AUTOCONV_BACKEND", "fake")
        code = main(["tune", "tune.yaml"])
    assert code == 0 and os.path.exists(folder / "results" / "tune.json")
    return folder


def copy_tuned(box) -> None:
    """The session's tuned state, copied into ``box``: ``tune.yaml``, ``state/``, ``results/``."""
    shutil.copytree(box.tuned, box.root, dirs_exist_ok=True)
