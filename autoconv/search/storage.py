"""The Optuna storage of the tuner's studies, and keeping it usable after a crash.

A storage is a SQLAlchemy URL (an RDB storage: PostgreSQL for workers on several hosts,
or an SQLite file) or, by default, a journal file: one JSON record per line, appended by
every process that tunes on this host (Optuna's ``JournalFileBackend``).

An RDB storage records a **heartbeat** for every trial being evaluated (the tuner
records it, :class:`autoconv.search.liveness.Heartbeat`, every :func:`heartbeat_interval_s`
seconds); a trial whose heartbeat is older than the grace period belongs to a worker
that died (SIGKILL, lost host or GPU): Optuna's ``fail_stale_trials`` fails it and
:func:`retry_stale_trial` enqueues its configuration again, so another worker evaluates
it. On a journal (one host), the tuner recognises dead workers by their process id.

Two things can go wrong with a journal that autoconv takes care of:

- **A writer killed while holding the lock.** Optuna's default lock is a symlink that
  a killed process leaves behind; the next run waits 30 s before it breaks it. autoconv
  locks with ``flock`` instead (:class:`JournalFlock`), which the kernel releases when
  the process dies.
- **A damaged file.** :func:`check_journal` reads it first: a last record cut short (a
  write that never completed; the next append would glue a record to it and make the
  file unreadable) is removed; anything else that is not a journal record is a
  :class:`~autoconv.errors.StorageError` naming the file, the line and the way out.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from autoconv.errors import StorageError

# Optuna and SQLAlchemy are imported where they are used: the winners' cache imports this
# module (for :func:`is_url`, :func:`shown`, :func:`first_line`), and ``autoconv.conv2d``
# reads that cache, so importing them here would make every user of autoconv.conv2d pay
# for Optuna's import.

try:
    import fcntl
except ImportError:  # not on Windows: Optuna's own journal lock is used there
    fcntl = None  # type: ignore[assignment]


def make_storage(storage: str | os.PathLike, on_repair: Callable[[str], None] | None = None):
    """An Optuna storage: a SQLAlchemy URL (``sqlite:///...``, ``postgresql://...``) as
    is, anything else as the path of a journal file (created with its folder).

    A journal file is checked first (:func:`check_journal`): a last record cut short (a
    write that never completed) is removed, and ``on_repair`` told so; any other damage
    is an error. Writers serialise on an ``flock`` of ``<journal>.flock``, which the
    kernel releases when a process dies: a killed ``autoconv tune`` leaves no stale lock
    (Optuna's default lock, a symlink, would make the next run wait 30 s for it).

    Raises:
        StorageError: the file or database is not a readable Optuna storage (the message
            names it and how to recover).
    """
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    text = str(storage)
    if is_url(text):
        return _rdb_storage(text)
    path = Path(text).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    dropped = check_journal(path)
    if dropped and on_repair is not None:
        on_repair(f"study journal {path}: removed an incomplete last record ({dropped} bytes) left by "
                  "an interrupted write")
    try:
        # (JournalFlock has the acquire and release of Optuna's lock class, not the class:
        # subclassing it would import Optuna with this module.)
        return JournalStorage(JournalFileBackend(str(path), lock_obj=_journal_lock(path)))  # type: ignore[arg-type]
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as err:  # Optuna replaying junk
        raise StorageError(_journal_damage(path, f"Optuna cannot replay it ({first_line(err)})")) from None


#: Environment variable: seconds between two heartbeats of a trial being evaluated.
HEARTBEAT_VARIABLE = "AUTOCONV_HEARTBEAT_S"
DEFAULT_HEARTBEAT_S = 10
#: A trial whose heartbeat is this many intervals old belongs to a dead worker.
HEARTBEAT_GRACE_INTERVALS = 6
#: How often one configuration is retried after its workers died evaluating it.
MAX_RETRIES = 2


def is_url(text: str | os.PathLike) -> bool:
    """Whether a storage or cache location is a SQLAlchemy URL (else a file path)."""
    return "://" in str(text)


def masked_url(url: str) -> str:
    """``url`` with its password masked, for messages."""
    try:
        from sqlalchemy.engine import make_url
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not even a URL: show it as given
        return url


def heartbeat_interval_s() -> int:
    """Seconds between heartbeats: ``$AUTOCONV_HEARTBEAT_S`` (a whole number >= 1), else
    :data:`DEFAULT_HEARTBEAT_S`. A dead worker's trials are retried after
    :data:`HEARTBEAT_GRACE_INTERVALS` times that."""
    text = os.environ.get(HEARTBEAT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_HEARTBEAT_S
    if not text.isdigit() or int(text) < 1:
        raise StorageError(f"{HEARTBEAT_VARIABLE}={text!r}: expected a whole number of seconds >= 1")
    return int(text)


def retry_stale_trial(study, trial) -> None:
    """Optuna's callback for a trial failed because its heartbeat stopped: enqueue its
    configuration again (at most :data:`MAX_RETRIES` times), so no candidate is lost with
    the worker that died."""
    retry_trial(study, trial, "its worker stopped sending heartbeats")


def retry_trial(study, trial, reason: str) -> bool:
    """Enqueue the params of the failed ``trial`` again, noting why; False when the
    configuration was retried :data:`MAX_RETRIES` times already."""
    retries = int(trial.user_attrs.get("retries", 0))
    if retries >= MAX_RETRIES or not trial.params:
        return False
    study.enqueue_trial(dict(trial.params), user_attrs={
        "origin": f"retry of trial {trial.number} ({reason})", "retries": retries + 1})
    return True


#: Attempts at opening a database whose tables other processes may be creating right now.
SCHEMA_ATTEMPTS = 5


def _rdb_storage(url: str):
    """Optuna's RDB storage at ``url`` with heartbeats (see the module docstring).
    Workers starting together on an empty database race to create Optuna's tables; the
    losers' errors ("already exists") are retried after a short pause."""
    import optuna

    # Heartbeats serve ask-and-tell here (the tuner records them), not Study.optimize;
    # Optuna warns on every ask otherwise.
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")
    interval = heartbeat_interval_s()
    for attempt in range(SCHEMA_ATTEMPTS):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(
                    url, heartbeat_interval=interval, grace_period=HEARTBEAT_GRACE_INTERVALS * interval,
                    heartbeat_stale_trial_callback=retry_stale_trial)
        except Exception as err:  # SQLAlchemy's and Optuna's errors alike: name the storage
            racing = any(word in str(err).lower() for word in ("already exists", "duplicate", "unique"))
            if racing and attempt + 1 < SCHEMA_ATTEMPTS:
                time.sleep(0.2 + random.random())
                continue
            raise StorageError(f"study storage {masked_url(url)}: cannot open it ({first_line(err)}); check the "
                               "URL (and that the database server runs and accepts this user), or pass another "
                               "storage with --storage or `storage:` in the config") from None


def check_journal(path: Path) -> int:
    """Check that ``path`` (if it exists) is an Optuna journal: lines of JSON objects,
    each with an integer ``op_code``. A last line without its newline is the trace of a
    write that never completed (Optuna ignores it, but the next append would glue a
    record to it and make the file unreadable): it is cut off, under the writers' lock.
    Returns the number of bytes cut off.

    Raises:
        StorageError: the file is a folder, unreadable, or has a malformed record.
    """
    if not path.exists():
        return 0
    if path.is_dir():
        raise StorageError(f"study storage {path} is a folder; pass the path of a journal file "
                           "(--storage or `storage:` in the config)")
    try:
        complete, _ = _valid_journal_prefix(path)
        if complete == path.stat().st_size:
            return 0
        with _locked(path):  # no autoconv writer is appending now
            complete, lines = _valid_journal_prefix(path)
            size = path.stat().st_size
            if complete == size:
                return 0
            with open(path, "rb") as handle:
                handle.seek(complete)
                tail = handle.read(64)
            # Optuna writes each record as {"op_code":...}: anything else is not a cut-short record.
            if not (tail.startswith(_RECORD_START) or _RECORD_START.startswith(tail)):
                raise StorageError(_journal_damage(path, f"line {lines + 1} is not an Optuna journal record"))
            os.truncate(path, complete)
            return size - complete
    except OSError as err:
        raise StorageError(f"study storage {path}: cannot read it ({err})") from None


#: How every record of an Optuna journal begins.
_RECORD_START = b'{"op_code":'


def _valid_journal_prefix(path: Path) -> tuple[int, int]:
    """(bytes, lines) of the complete, well-formed records at the start of the journal;
    StorageError when a complete line is not a record."""
    offset = lines = 0
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.endswith(b"\n"):
                break  # the last line, cut short
            try:
                record = json.loads(line.decode("utf-8"))  # as Optuna writes it (not json's guess)
            except UnicodeDecodeError:
                raise StorageError(_journal_damage(path, f"line {number} is not UTF-8 text")) from None
            except json.JSONDecodeError as err:
                raise StorageError(_journal_damage(path, f"line {number} is not JSON ({err.msg} at column "
                                                         f"{err.colno})")) from None
            if not isinstance(record, dict) or isinstance(record.get("op_code"), bool) \
                    or not isinstance(record.get("op_code"), int):
                raise StorageError(_journal_damage(path, f"line {number} is not an Optuna journal record "
                                                         "(no integer op_code)"))
            offset += len(line)
            lines = number
    return offset, lines


def _journal_damage(path: Path, what: str) -> str:
    return (f"study storage {path}: {what}; the file is damaged or not an Optuna journal. Move it away or "
            f"delete it (and {path.name}.flock beside it): `autoconv tune` then starts its studies afresh, "
            "and winners already cached stay in the cache. Or pass another file with --storage or "
            "`storage:` in the config")


def first_line(err: BaseException) -> str:
    """``err`` for a message: its type and the first line of what it says."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


class JournalFlock:
    """The writers' lock of a journal file for :class:`JournalFileBackend` (which only
    calls ``acquire`` and ``release``): an exclusive ``flock`` of ``<journal>.flock``. The
    kernel drops it when its process dies, so a killed writer never blocks the next."""

    def __init__(self, path: Path):
        self.path = path
        self._held: int | None = None

    def acquire(self) -> bool:
        self._held = _acquire_flock(self.path)
        return True

    def release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            _release_flock(held)


def _journal_lock(path: Path) -> JournalFlock | None:
    """:class:`JournalFlock`, or None (Optuna's own lock) where ``fcntl`` does not exist."""
    return JournalFlock(path) if fcntl is not None else None


def _acquire_flock(path: Path) -> int:
    descriptor = os.open(f"{path}.flock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _release_flock(descriptor: int) -> None:
    try:
        fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def _locked(path: Path):
    """``with _locked(journal):`` holds the journal writers' lock (nothing without fcntl)."""
    lock = _journal_lock(path)
    if lock is not None:
        lock.acquire()
    try:
        yield
    finally:
        if lock is not None:
            lock.release()
