"""Compile CUDA source to a cubin with ``nvcc`` and read ptxas's resource report.

Used where CuPy or a GPU may be absent (CI, ``autoconv tune --dry-run``): nvcc alone
tells whether a generated kernel compiles for the target architecture and what it costs
in registers, spills, stack and shared memory.

ptxas's ``-v`` report is text meant for people, so its format is the fragile part: every
pattern that reads it is in :data:`PTXAS_PATTERNS` and nowhere else, and
``tests/kernels/test_compile.py`` checks them on captured reports of CUDA 12 and CUDA 13.

Typical use::

    report = compile_cubin(plan.source, arch="sm_90a")
    for kernel in report.kernels.values():
        print(kernel.name, kernel.registers, kernel.spill_store_bytes)
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from autoconv.errors import AutoconvError, BackendUnavailable
from autoconv.kernels.limits import H100

#: Seconds one nvcc run may take before it is stopped.
DEFAULT_TIMEOUT = 300.0

logger = logging.getLogger(__name__)

#: Every pattern that reads ptxas's ``-v`` report (CUDA 12 and 13 spellings).
#:   entry       ptxas info    : Compiling entry function 'NAME' for 'sm_90'
#:   properties  ptxas info    : Function properties for NAME
#:   frame           0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
#:   usage       ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 380 bytes cmem[0]
#:               (the items of the usage line vary by version; each is matched on its own)
PTXAS_PATTERNS: Mapping[str, re.Pattern] = {
    "entry": re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>[^']+)'"),
    "properties": re.compile(r"Function properties for (?P<name>\S+)"),
    "frame": re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<stores>\d+) bytes spill stores, "
                        r"(?P<loads>\d+) bytes spill loads"),
    "usage": re.compile(r"ptxas info\s*: Used (?P<items>.*)$"),
    "registers": re.compile(r"(\d+) registers"),
    "barriers": re.compile(r"used (\d+) barriers"),
    "shared": re.compile(r"(\d+) bytes smem"),
    "constant": re.compile(r"(\d+) bytes cmem\[0\]"),
}


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reports for one entry function (kernel)."""

    name: str
    arch: str
    registers: int
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    stack_frame_bytes: int = 0
    #: Static shared memory; autoconv's kernels use dynamic shared memory only, so 0.
    shared_bytes: int = 0
    constant_bytes: int = 0  # cmem[0]: kernel parameters and constants
    barriers: int = 0

    @property
    def spills(self) -> bool:
        return self.spill_store_bytes > 0 or self.spill_load_bytes > 0

    def summary(self) -> str:
        spill = (f", spills {self.spill_store_bytes}B stored / {self.spill_load_bytes}B loaded"
                 if self.spills else ", no spills")
        return (f"{self.name}: {self.registers} registers{spill}, stack {self.stack_frame_bytes}B, "
                f"static smem {self.shared_bytes}B, {self.barriers} barrier(s)")


@dataclass(frozen=True)
class CompileReport:
    """A successful compilation: the cubin, each kernel's resources and nvcc's output."""

    arch: str
    kernels: Mapping[str, KernelResources]
    log: str  # everything nvcc and ptxas printed, warnings included
    seconds: float
    cubin: bytes = field(repr=False, default=b"")

    def kernel(self, name: str) -> KernelResources:
        """The resources of kernel ``name``.

        Raises:
            KeyError: no entry function of that name was compiled, listing those that were.
        """
        try:
            return self.kernels[name]
        except KeyError:
            raise KeyError(f"no kernel {name!r} in the ptxas report; compiled: "
                           f"{', '.join(sorted(self.kernels)) or 'none'}") from None

    @property
    def spills(self) -> bool:
        return any(kernel.spills for kernel in self.kernels.values())


class NvccError(AutoconvError):
    """nvcc failed on a source: carries the command and everything the compiler printed."""

    def __init__(self, message: str, command: Sequence[str], output: str, returncode: int | None):
        self.command = list(command)
        self.output = output
        self.returncode = returncode
        super().__init__(f"{message}\ncommand: {' '.join(self.command)}\n{output.rstrip()}")


class NvccTimeout(NvccError):
    """nvcc ran past its time limit."""


def find_nvcc() -> str | None:
    """The nvcc executable: on PATH, else under ``$CUDA_HOME``/``$CUDA_PATH``; None if absent."""
    found = shutil.which("nvcc")
    if found:
        return found
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(variable)
        if root and (Path(root) / "bin" / "nvcc").is_file():
            return str(Path(root) / "bin" / "nvcc")
    return None


def nvcc_available() -> bool:
    return find_nvcc() is not None


def compile_cubin(source: str, arch: str = H100.arch, extra_flags: Sequence[str] = (), *,
                  label: str = "kernel", timeout: float = DEFAULT_TIMEOUT) -> CompileReport:
    """Compile ``source`` with ``nvcc -cubin -arch=ARCH -Xptxas -v`` in a temporary folder.

    Args:
        source: CUDA C++ source, e.g. a :class:`~autoconv.kernels.families.KernelPlan`'s.
        arch: the target, e.g. ``sm_90a`` (:attr:`autoconv.kernels.limits.DeviceLimits.arch`).
        extra_flags: more nvcc flags, e.g. ``("-lineinfo",)``.
        label: the source file's stem, so compiler messages name the kernel.
        timeout: seconds before nvcc is stopped.

    Returns:
        The cubin and every entry function's resources.

    Raises:
        BackendUnavailable: nvcc is not installed.
        NvccTimeout: nvcc ran past ``timeout``.
        NvccError: nvcc failed (the message holds its full output).
    """
    nvcc = find_nvcc()
    if nvcc is None:
        raise BackendUnavailable("nvcc is not on PATH (nor under $CUDA_HOME/bin); install the CUDA "
                                 "toolkit or add its bin folder to PATH")
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", label)[:120] or "kernel"
    with tempfile.TemporaryDirectory(prefix="autoconv-nvcc-") as folder:
        source_path = Path(folder) / f"{stem}.cu"
        cubin_path = Path(folder) / f"{stem}.cubin"
        source_path.write_text(source)
        command = [nvcc, "-cubin", f"-arch={arch}", "-Xptxas", "-v", *extra_flags,
                   "-o", str(cubin_path), str(source_path)]
        logger.debug("running %s", " ".join(command))
        started = time.perf_counter()
        try:
            done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as err:
            output = _text(err.stdout) + _text(err.stderr)
            raise NvccTimeout(f"nvcc did not finish {stem}.cu within {timeout:g} s", command, output,
                              None) from None
        seconds = time.perf_counter() - started
        output = done.stdout + done.stderr
        if done.returncode != 0:
            raise NvccError(f"nvcc failed on {stem}.cu (exit status {done.returncode})", command,
                            output, done.returncode)
        cubin = cubin_path.read_bytes()
    kernels = parse_ptxas_report(output)
    logger.debug("nvcc compiled %s.cu for %s in %.2f s: %s", stem, arch, seconds,
                 "; ".join(kernel.summary() for kernel in kernels.values()) or "no entry functions")
    return CompileReport(arch=arch, kernels=kernels, log=output, seconds=seconds, cubin=cubin)


def parse_ptxas_report(text: str) -> dict[str, KernelResources]:
    """Each entry function's resources from ptxas's ``-v`` output, by kernel name.

    Functions that are not entry points (non-inlined device functions) have a
    "properties" block but no "Compiling entry function" line; they are left out.
    """
    patterns = PTXAS_PATTERNS
    kernels: dict[str, KernelResources] = {}
    frames: dict[str, tuple[int, int, int]] = {}   # name -> (stack, spill stores, spill loads)
    current: tuple[str, str] | None = None          # (entry name, arch) being reported
    properties_of: str | None = None                # the function whose frame line comes next
    for line in text.splitlines():
        if match := patterns["entry"].search(line):
            current = (match["name"], match["arch"])
            continue
        if match := patterns["properties"].search(line):
            properties_of = match["name"]
            continue
        if properties_of is not None and (match := patterns["frame"].search(line)):
            frames[properties_of] = (int(match["stack"]), int(match["stores"]), int(match["loads"]))
            properties_of = None
            continue
        if current is not None and (match := patterns["usage"].search(line)):
            items = match["items"]
            name, arch = current
            stack, stores, loads = frames.get(name, (0, 0, 0))
            kernels[name] = KernelResources(
                name=name, arch=arch, registers=_first_int(patterns["registers"], items),
                spill_store_bytes=stores, spill_load_bytes=loads, stack_frame_bytes=stack,
                shared_bytes=_first_int(patterns["shared"], items),
                constant_bytes=_first_int(patterns["constant"], items),
                barriers=_first_int(patterns["barriers"], items))
            current = None
    return kernels


def _first_int(pattern: re.Pattern, text: str) -> int:
    match = pattern.search(text)
    return int(match.group(1)) if match else 0


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else value
