"""Writing result files so that a process killed at any moment leaves no half-written file.

:func:`write_atomically` writes a temporary sibling, flushes it to disk and renames it
over the target: readers (and the next run) see the old file or the new one, never a
part. A temporary file whose writer died before the rename is removed by the next
write of the same target.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from autoconv.processes import process_alive


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/autoconv``, else ``~/.cache/autoconv``: where autoconv keeps what it
    can rebuild (the winners' cache by default, built emulator programs, compiled kernels)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "autoconv"


def write_atomically(path: str | os.PathLike, text: str | bytes) -> Path:
    """Replace ``path``'s content with ``text`` (UTF-8) or bytes atomically; returns the path."""
    target = Path(path)
    _remove_orphans(target)
    temporary = _temporary_name(target, os.getpid())
    data = text.encode("utf-8") if isinstance(text, str) else text
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return target


def _temporary_name(target: Path, pid: int) -> Path:
    return target.with_name(f".{target.name}.{pid}.tmp")


def _remove_orphans(target: Path) -> None:
    """Delete ``target``'s temporary siblings left by processes that no longer run."""
    prefix = f".{target.name}."
    try:
        siblings = list(target.parent.glob(f".{_glob_escape(target.name)}.*.tmp"))
    except OSError:
        return
    for sibling in siblings:
        pid = sibling.name[len(prefix):-len(".tmp")]
        if pid.isdigit() and int(pid) != os.getpid() and not process_alive(int(pid)):
            sibling.unlink(missing_ok=True)


def _glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


# ---- checking paths before reading or writing them -------------------------------------------

def path_problem(path: str | os.PathLike, *, want: str = "file") -> str | None:
    """Why ``path`` cannot be read as a ``want`` ("file": a regular file; "folder"), or None.

    Never opens the path: a FIFO or a device (``/dev/zero``) would block or never end."""
    target = Path(path)
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return "no such file or folder"
    except NotADirectoryError:
        return "a part of the path is a file, not a folder"
    except OSError as err:
        return f"cannot be read ({err.strerror or err})"
    if want == "folder":
        return None if stat.S_ISDIR(mode) else "not a folder"
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(mode):
        return "not a regular file (a device, FIFO or socket)"
    if not os.access(target, os.R_OK):
        return "cannot be read (permission denied)"
    return None


def write_problem(path: str | os.PathLike) -> str | None:
    """Why a file cannot be written (created or replaced) at ``path``, or None. Checks the
    path only: whether an existing file there may be replaced is the caller's decision."""
    target = Path(path)
    if target.is_symlink() or target.exists():
        try:
            mode = target.stat().st_mode
        except OSError as err:
            return f"cannot be read ({err.strerror or err})"
        if stat.S_ISDIR(mode):
            return "is a folder, not a file"
        if not stat.S_ISREG(mode):
            return "not a regular file (a device, FIFO or socket)"
    folder = target.parent
    if not folder.exists():
        return f"its folder {folder} does not exist"
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"its folder {folder} is not writable"
    return None
