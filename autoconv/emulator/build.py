"""Compile CUDA source into an emulated program: a host executable built with g++ and the
sanitizers, cached by content.

A program is the rendered source, unchanged, compiled as C++ with ``cuda_emulation.h``
included ahead of it, plus a generated main file listing its kernels by name, linked with
the emulator's runtime (``emulator_runtime.cpp``, compiled once per compiler, flags and
header version). Everything is built with AddressSanitizer and UBSan, so an
out-of-bounds or misaligned access in a kernel ends the program with a report, as
compute-sanitizer would on a GPU.

Built programs are cached under ``$AUTOCONV_EMU_CACHE`` (default
``~/.cache/autoconv/emulator``) by a hash of everything that goes into them, one folder
each with the source it was built from (sanitizer reports point at its lines).
Concurrent builders (pytest workers, threads) each build in a temporary folder and rename
it into place. The cache keeps the :data:`CACHE_PROGRAMS` most recently used programs.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from autoconv import settings
from autoconv.emulator.errors import EmulatorCompileError, EmulatorUnavailable
from autoconv.emulator.program import EmulatedProgram
from autoconv.files import user_cache_dir
from autoconv.kernels.limits import H100

HEADER_DIR = Path(__file__).resolve().parent

#: Dynamic shared memory a block may use: the H100's opt-in maximum, which the search
#: spaces are evaluated against on a machine without a GPU.
MAX_SHARED_BYTES = H100.max_shared_bytes

#: -O1: what AddressSanitizer's documentation advises for reasonable speed with exact
#: reports; -g1 gives the reports file:line; -fno-strict-aliasing because CUDA code views
#: shared memory through several types, which nvcc allows.
CXX_FLAGS = (
    "-std=gnu++17", "-O1", "-g1", "-fno-omit-frame-pointer", "-fno-strict-aliasing", "-pthread",
    "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
    f"-DAUTOCONV_EMU_MAX_SHARED_BYTES={MAX_SHARED_BYTES}",
)

#: Programs kept in the cache; the least recently used beyond this are deleted.
CACHE_PROGRAMS = 100

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_runtime_lock = threading.Lock()


def cache_dir() -> Path:
    """Where built programs live: ``$AUTOCONV_EMU_CACHE`` or ``~/.cache/autoconv/emulator``."""
    configured = settings.EMU_CACHE.value()
    if configured:
        return Path(configured)
    return user_cache_dir() / "emulator"


def compiler() -> str:
    """The host C++ compiler: ``$AUTOCONV_EMU_CXX`` or ``g++``."""
    return settings.EMU_CXX.value() or "g++"


@cache
def _compiler_identity(cxx: str) -> str:
    path = shutil.which(cxx)
    if path is None:
        raise EmulatorUnavailable(
            f"the CPU emulator needs a C++ compiler with AddressSanitizer, and {cxx!r} is not on PATH; "
            "install g++ (e.g. apt-get install g++) or point AUTOCONV_EMU_CXX at one")
    version = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return f"{path}\n{version.stdout}"


def _emulator_key(cxx: str) -> str:
    digest = hashlib.sha256(_compiler_identity(cxx).encode())
    digest.update("\0".join(CXX_FLAGS).encode())
    # The emulator's headers and runtime: a change to any of them rebuilds every program.
    for path in sorted([*HEADER_DIR.glob("*.h"), *HEADER_DIR.glob("*.cpp")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:20]


def _run_compiler(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)


def _runtime_object(cxx: str, key: str, root: Path) -> Path:
    """The compiled runtime for this compiler and emulator version, built once."""
    target = root / f"runtime-{key}.o"
    with _runtime_lock:
        if target.exists():
            return target
        with tempfile.TemporaryDirectory(dir=root, prefix="build-runtime-") as work:
            work_dir = Path(work)
            result = _run_compiler(
                [cxx, *CXX_FLAGS, "-I", str(HEADER_DIR), "-c", str(HEADER_DIR / "emulator_runtime.cpp"),
                 "-o", "runtime.o"], work_dir)
            if result.returncode != 0:
                raise EmulatorUnavailable(
                    f"{cxx} cannot build the emulator's runtime with AddressSanitizer and UBSan "
                    f"(is libasan installed?)", result.stdout + result.stderr)
            os.replace(work_dir / "runtime.o", target)
    return target


def compile_program(source: str, kernels: Iterable[str], name: str = "kernel",
                    constants: Iterable[str] = ()) -> EmulatedProgram:
    """Build (or fetch from the cache) the emulated program of a CUDA source.

    Args:
        source: CUDA C++ source, as a template renders it.
        kernels: the names of the ``extern "C" __global__`` functions launches will call.
        name: a file name stem for the source, so compiler messages say which kernel
            (``<name>.cu:123:5: error: ...``).
        constants: the source's file-scope ``__constant__ int`` names that runs set
            (:attr:`autoconv.kernels.families.KernelPlan.constants`).

    Raises:
        EmulatorCompileError: the source does not compile under emulation; ``unmodelled``
            names CUDA features it uses that the emulator does not model.
        EmulatorUnavailable: no working g++ with the sanitizers.
    """
    kernels = tuple(dict.fromkeys(kernels))
    constants = tuple(dict.fromkeys(constants))
    for kernel in (*kernels, *constants, name):
        if not _IDENTIFIER.match(kernel):
            raise EmulatorCompileError(f"{kernel!r} is not a C identifier (kernel names and the source name must be)")
    if not kernels:
        raise EmulatorCompileError("a program needs at least one kernel to launch")
    cxx = compiler()
    key = _emulator_key(cxx)
    root = cache_dir()
    main = _main_file(name, kernels, constants)
    digest = hashlib.sha256(f"{key}\0{name}\0{main}\0".encode() + source.encode()).hexdigest()[:24]
    folder = root / "programs" / f"{name[:60]}-{digest}"
    program = folder / "program"
    if program.exists():
        os.utime(folder)  # most recently used: survives pruning
        return EmulatedProgram(program, kernels)

    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise EmulatorUnavailable(f"cannot create the emulator's cache folder {folder.parent} ({err}); "
                                  "point AUTOCONV_EMU_CACHE at a writable folder") from None
    runtime = _runtime_object(cxx, key, root)
    work_dir = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".build-"))
    try:
        (work_dir / f"{name}.cu").write_text(source)
        (work_dir / "main.cpp").write_text(main)
        # Debug info names the folder the program ends up in, where its source stays: the
        # sanitizers' reports then point at lines of a file that exists.
        result = _run_compiler(
            [cxx, *CXX_FLAGS, f"-fdebug-prefix-map={work_dir}={folder}", "-I", str(HEADER_DIR),
             "-include", str(HEADER_DIR / "cuda_emulation.h"), "main.cpp", str(runtime), "-o", "program"],
            work_dir)
        if result.returncode != 0:
            output = result.stdout + result.stderr
            hint = ""
            if "undefined reference" in output:
                hint = (" (an undefined name: dynamic shared memory must be declared exactly "
                        "`extern __shared__ __align__(16) unsigned char smem[];`, and every function "
                        "must be defined in the source)")
            raise EmulatorCompileError(f"{name}.cu does not compile for the CPU emulator{hint}", output)
        try:
            work_dir.rename(folder)
        except OSError:  # a concurrent builder got there first with the same program
            if not program.exists():
                raise
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    _prune(folder.parent)
    return EmulatedProgram(program, kernels)


def _main_file(name: str, kernels: tuple[str, ...], constants: tuple[str, ...] = ()) -> str:
    """The generated main: the source, unchanged, then its kernels and constants by name."""
    entries = ",\n    ".join(f"AUTOCONV_EMU_KERNEL({kernel})" for kernel in kernels)
    table, arguments = "", ""
    if constants:
        constant_entries = ",\n    ".join(f"AUTOCONV_EMU_CONSTANT({constant})" for constant in constants)
        table = ("static const autoconv_emu::ConstantEntry autoconv_emu_constants[] = "
                 f"{{\n    {constant_entries},\n}};\n\n")
        arguments = (",\n                                   autoconv_emu_constants, "
                     "sizeof(autoconv_emu_constants) / sizeof(autoconv_emu_constants[0])")
    return (
        f'#include "{name}.cu"\n\n'
        f"static const autoconv_emu::KernelEntry autoconv_emu_kernels[] = {{\n    {entries},\n}};\n\n"
        f"{table}"
        "int main(int argc, char** argv) {\n"
        "    return autoconv_emu::host_main(argc, argv, autoconv_emu_kernels,\n"
        "                                   sizeof(autoconv_emu_kernels) / sizeof(autoconv_emu_kernels[0])"
        f"{arguments});\n"
        "}\n")


def _prune(programs: Path) -> None:
    """Delete all but the :data:`CACHE_PROGRAMS` most recently used programs, and builds
    that a killed process left behind (an hour old)."""
    entries = []
    for folder in programs.iterdir():
        try:
            modified = folder.stat().st_mtime
        except FileNotFoundError:  # pruned by a concurrent builder
            continue
        if folder.name.startswith(".build-"):
            if modified < time.time() - 3600:
                shutil.rmtree(folder, ignore_errors=True)
            continue
        entries.append((modified, folder))
    entries.sort(reverse=True)
    for _, folder in entries[CACHE_PROGRAMS:]:
        shutil.rmtree(folder, ignore_errors=True)
