"""Writing result files so that a process killed at any moment leaves no half-written file.

:func:`write_atomically` writes a temporary sibling, flushes it to disk and renames it
over the target: readers (and the next run) see the old file or the new one, never a
part. A temporary file whose writer died before the rename is removed by the next
write of the same target.
"""

from __future__ import annotations

import os
from pathlib import Path

from autoconv.processes import process_alive


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
