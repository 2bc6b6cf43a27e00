"""A test's CUDA probe compiled for sm_90a by nvcc: its PTX, to look for the instructions a
header spells, once ptxas has assembled it to machine code too (the static half of the checks
that inline PTX matches its emulator model)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

NVCC = shutil.which("nvcc")
#: Marks a test that needs nvcc (the CI machines have it; the tests skip elsewhere).
requires_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")


def sm90a_ptx(source: str, folder: Path) -> str:
    """``source`` (a .cu's text) compiled for sm_90a in ``folder``: asserts that nvcc makes its PTX
    and that ptxas assembles it to a cubin, and returns the PTX."""
    assert NVCC is not None
    probe = folder / "probe.cu"
    probe.write_text(source)
    for kind in ("ptx", "cubin"):
        done = subprocess.run([NVCC, "-arch=sm_90a", f"-{kind}", "-o", str(folder / f"probe.{kind}"), str(probe)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    return (folder / "probe.ptx").read_text()
