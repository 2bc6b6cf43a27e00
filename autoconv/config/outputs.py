"""Where a tuning run writes, checked before it starts: the results folder (``tune.json``), the
studies' storage (a journal file and its ``.flock`` beside it, or a database URL) and the
winners' cache (an SQLite file with its ``-wal`` and ``-shm``, or a URL).

A run that finds out at its end that it cannot write its summary has spent its whole budget
for nothing, and a storage that is a device (``/dev/null``) would have autoconv create files
beside it, outside every path the user named. :func:`output_problems` reads nothing but the
first bytes of an existing file and leaves nothing behind: where the run would create files, it
makes and removes an empty folder (the one test that holds for root, read-only mounts and file
systems such as /sys alike, where permission bits say "writable"). A database URL is not reached
(its server answers when the run opens it), but an SQLite URL's file is checked like a path.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from autoconv.errors import ConfigError, quoted
from autoconv.files import length_problem
from autoconv.urls import is_url, masked_url

_SQLITE_PREFIX = "sqlite:///"
#: Paths longer than this are quoted cut short in messages.
PATH_SHOWN = 200


def output_problems(results: str | os.PathLike, storage: str | os.PathLike,
                    cache: str | os.PathLike) -> list[str]:
    """Every reason a tuning run could not write ``results`` (a folder), ``storage`` (a journal
    file path or a SQLAlchemy URL) or ``cache`` (an SQLite file path or a SQLAlchemy URL), each
    naming the path and the fix; empty when all can be written."""
    problems = []
    reason = _folder_problem(Path(results))
    if reason:
        problems.append(f"results folder {_shown(str(results))}: {reason}; set `results:` in the config to a "
                        "folder autoconv may write")
    outputs: list[tuple[str, str | os.PathLike, str, tuple[str, ...]]] = [
        ("storage", storage, "set `storage:` in the config (or --storage) to the path of a journal file, or a "
         "database URL", (".flock",)),
        ("cache", cache, "set `cache:` in the config (or --cache) to the path of a cache file, or a database URL",
         ("-wal", "-shm"))]
    for what, location, fix, sidecars in outputs:
        text = str(location)
        if is_url(text):
            if not (text.startswith(_SQLITE_PREFIX) and text[len(_SQLITE_PREFIX):] not in ("", ":memory:")):
                continue  # (a server database: it answers when the run opens it)
            path, sidecars = Path(text[len(_SQLITE_PREFIX):]), ("-journal", "-wal", "-shm")
            shown = _shown(masked_url(text))
        else:
            path, shown = Path(text).expanduser(), _shown(text)
        reason = _file_problem(path, sidecars)
        if reason:
            problems.append(f"{what} {shown}: {reason}; {fix}")
    return problems


def _shown(text: str) -> str:
    """A path for a message: as is, or quoted cut short when it is long (a path has at most 4096
    characters, a command-line argument need not)."""
    return text if len(text) <= PATH_SHOWN else quoted(text, PATH_SHOWN)


def check_outputs(results: str | os.PathLike, storage: str | os.PathLike, cache: str | os.PathLike) -> None:
    """Raise unless a tuning run can write all of its outputs (:func:`output_problems`); call
    it before any work starts.

    Raises:
        ConfigError: every output that cannot be written, one line each.
    """
    problems = output_problems(results, storage, cache)
    if problems:
        raise ConfigError(problems)


def _folder_problem(folder: Path) -> str | None:
    """Why files cannot be written in ``folder`` (created with its parents if need be), or None."""
    too_long = length_problem(folder / "tune.json")
    if too_long:
        return too_long
    try:
        mode = folder.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return _creatable(folder)
    except OSError as err:
        return f"cannot be read ({err.strerror or err})"
    if not stat.S_ISDIR(mode):
        return "is a file, not a folder" if stat.S_ISREG(mode) else "not a folder (a device, FIFO or socket)"
    reason = _unwritable(folder)
    return f"cannot be written ({reason})" if reason else None


def _file_problem(path: Path, sidecars: tuple[str, ...]) -> str | None:
    """Why ``path`` cannot be opened as a file to read and write, with the files of ``sidecars``
    (suffixes of its name) created beside it, or None."""
    too_long = length_problem(path.with_name(path.name + max(sidecars, key=len)))
    if too_long:
        return too_long
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return _creatable(path.parent, for_file=True)
    except OSError as err:
        return f"cannot be read ({err.strerror or err})"
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(mode):
        return ("not a regular file (a device, FIFO or socket), and autoconv creates files beside it "
                f"({', '.join(path.name + suffix for suffix in sidecars)})")
    if not os.access(path, os.R_OK | os.W_OK):
        return "cannot be read and written (permission denied, or a read-only file system)"
    try:
        # O_NONBLOCK: a file that turned into a FIFO since the stat must not block the check.
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            os.read(descriptor, 16)
        finally:
            os.close(descriptor)
    except OSError as err:  # e.g. /proc/self/mem: a "regular" file whose reads fail
        return f"cannot be read ({err.strerror or err})"
    for suffix in sidecars:
        beside = path.with_name(path.name + suffix)
        if (beside.exists() or beside.is_symlink()) and not beside.is_file():
            return f"{beside} beside it is not a regular file; move it away"
    reason = _unwritable(path.parent)
    if reason:
        return (f"its folder {path.parent} cannot be written ({reason}), and autoconv creates files beside it "
                f"({', '.join(path.name + suffix for suffix in sidecars)})")
    return None


def _creatable(folder: Path, for_file: bool = False) -> str | None:
    """Why ``folder`` cannot be created with its missing parents (or, when it exists, written
    in), or None."""
    existing = folder
    while not (existing.exists() or existing.is_symlink()):
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder" + (" (a file)" if existing.is_file() else "")
    reason = _unwritable(existing)
    if reason:
        where = "its folder" if for_file and existing == folder else "the folder"
        return f"{where} {existing} cannot be written ({reason})"
    return None


def _unwritable(folder: Path) -> str | None:
    """Why nothing can be created in the existing folder ``folder``, or None: an empty folder
    is made there and removed."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return "permission denied, or a read-only file system"
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".autoconv-check-", dir=folder))
    except OSError as err:
        return err.strerror or str(err)
    return None
