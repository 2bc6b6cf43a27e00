"""Compiled kernels of the runtime kept on disk, so that a new process loads them instead
of compiling them again (NVRTC takes 0.5-3 s per kernel; a network has dozens).

A cubin is stored under a name made from a hash of everything that decides it: the
source, the target architecture, NVRTC's version and options. The folder is
``$AUTOCONV_CUBIN_CACHE``, else ``$XDG_CACHE_HOME/autoconv/cubins`` (``~/.cache``); the
variable set to ``off`` keeps nothing. Files are written atomically; one that cannot be
read, written or loaded is compiled again, never an error.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from autoconv import settings
from autoconv.files import user_cache_dir, write_atomically
from autoconv.gpu.compiler import CompileOutcome, compile_source, nvrtc_options

logger = logging.getLogger(__name__)


def cubin_folder() -> Path | None:
    """Where cubins are kept, or None when ``$AUTOCONV_CUBIN_CACHE`` is ``off``."""
    configured = settings.CUBIN_CACHE.value() or ""
    if configured.lower() == "off":
        return None
    if configured:
        return Path(configured).expanduser()
    return user_cache_dir() / "cubins"


def cubin_path(folder: Path, source: str, arch: str, name: str) -> Path:
    from cupy_backends.cuda.libs import nvrtc

    digest = hashlib.sha256()
    for part in (source, arch, repr(nvrtc.getVersion()), *nvrtc_options(arch)):
        digest.update(part.encode())
        digest.update(b"\0")
    return folder / f"{name[:80]}-{digest.hexdigest()[:32]}.cubin"


def compile_cached(source: str, arch: str, name: str, *, fresh: bool = False) -> CompileOutcome:
    """``source`` compiled for ``arch``: read from the folder when it is there (unless
    ``fresh``), else compiled with NVRTC and stored."""
    folder = cubin_folder()
    path = cubin_path(folder, source, arch, name) if folder is not None else None
    if path is not None and not fresh:
        try:
            return CompileOutcome(True, path.read_bytes(), f"read from {path}", 0.0)
        except FileNotFoundError:
            pass
        except OSError as err:
            logger.info("cannot read the kept cubin %s (%s); compiling it", path, err)
    outcome = compile_source(source, arch, name)
    if outcome.ok and path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, outcome.cubin)
        except OSError as err:  # a read-only or full disk: the next process compiles again
            logger.info("cannot keep the cubin of %s in %s (%s); the next process compiles it again", name,
                        path.parent, err)
    return outcome
