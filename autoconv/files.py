"""Writing result files so that a process killed at any moment leaves no half-written file.

:func:`write_atomically` writes a temporary sibling, flushes it to disk and renames it
over the target: readers (and the next run) see the old file or the new one, never a
part. A temporary file whose writer died before the rename is removed by the next
write of the same target. A write that fails names its file, and where it found no room
(a full disk, a quota, ``ulimit -f``) says which and how to make room (:func:`room_reason`).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

try:
    import resource
except ImportError:  # (not on Windows: no file-size limit to report there)
    resource = None  # type: ignore[assignment]

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
    except OSError as err:  # (named: a failed write names no file, and a full disk says how to make room)
        temporary.unlink(missing_ok=True)
        raise OSError(err.errno, room_reason(err, target), str(target)) from None
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


#: The longest path autoconv creates, in bytes of its absolute form: Linux's PATH_MAX less its NUL.
MAX_PATH_BYTES = 4095
#: The most folders deep autoconv creates: deeper, Python's folder creation (one call per missing
#: parent) ran past its recursion limit, and no real output folder comes near it.
MAX_PATH_DEPTH = 256


def length_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` is too long or too deep for autoconv to create, or None (checked before any
    folder on the way is made)."""
    absolute = os.path.abspath(path)
    size = len(os.fsencode(absolute))
    if size > MAX_PATH_BYTES:
        return f"the path is {size} bytes long, more than the {MAX_PATH_BYTES} the system allows; use a shorter one"
    depth = absolute.count(os.sep)
    if depth > MAX_PATH_DEPTH:
        return f"the path is {depth} folders deep, more than {MAX_PATH_DEPTH}; use a shallower one"
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


# ---- a write that found no room -------------------------------------------------------------

#: A file system with less free space than this is reported full when a write there fails.
LOW_SPACE_BYTES = 1 << 20

#: The errors of a write that found no room.
ROOM_ERRORS = (errno.EFBIG, errno.ENOSPC, errno.EDQUOT)


def space_problem(path: str | os.PathLike) -> str | None:
    """Why a write at ``path`` may have found no room, and the way out: this process's file-size
    limit (``ulimit -f``), or a file system with less than :data:`LOW_SPACE_BYTES` free; None when
    neither is the case (errors that do not say why, such as SQLite's "disk I/O error", are
    explained by this)."""
    return _size_limit() or _low_space(Path(path).parent)


def room_reason(err: OSError, path: str | os.PathLike) -> str:
    """``err``'s reason, with why there was no room at ``path`` and the way out where it is a
    full disk, a quota or a file-size limit (:data:`ROOM_ERRORS`)."""
    reason = err.strerror or str(err)
    if err.errno not in ROOM_ERRORS:
        return reason
    why = _size_limit() if err.errno == errno.EFBIG else _low_space(Path(path).parent)
    return f"{reason}: {why or 'make room on its file system'}, then run again"


def _size_limit() -> str | None:
    """This process's file-size limit and how to raise it, or None when it has none."""
    if resource is None:
        return None
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    return (f"this process may write no file larger than {limit} bytes (its file-size limit, `ulimit -f`); "
            "raise the limit (`ulimit -f unlimited`)")


def _low_space(folder: Path) -> str | None:
    """How little room the file system of ``folder`` has left, or None when it has enough."""
    try:
        status = os.statvfs(folder)
    except (OSError, AttributeError):  # (no statvfs: not on Windows)
        return None
    free = status.f_bavail * status.f_frsize
    return f"the file system of {folder} has {free} bytes free; make room there" if free < LOW_SPACE_BYTES else None
