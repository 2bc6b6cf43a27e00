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
- **A damaged file.** :func:`check_journal` reads it first and repairs only what a crash
  leaves: a last record cut short (a write that never completed; the next append would
  glue a record to it and make the file unreadable) is removed. Anything else is a
  :class:`~autoconv.errors.StorageError` naming the file, the line or byte and the way
  out, and the file is left as it is: a line that is not a record, an unknown op code, a
  record for a study or trial no earlier record created, and a file shorter than its
  writers left it, which has lost records, maybe completed trials. The length, records and
  completed trials its writers left are in the journal's index, a file beside it
  (:mod:`autoconv.search.journal_index`): a cut exactly between two records does not show in
  the journal itself.

The check reads the journal as the file it is, one JSON record per line, with a parser of its
own: Optuna's replay skips a cut last record and fails on other damage without naming the
line, and Optuna has no public API for the records. The one thing the check takes from
Optuna's format is its op codes (:data:`_STUDY_OPS`, :data:`_TRIAL_OPS`), kept in step by the
pin on Optuna's major version and by tests/search/test_storage_format.py (the records Optuna
writes through its public API, checked).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shlex
import time
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autoconv import settings
from autoconv.errors import StorageError, first_line, quoted
from autoconv.search.journal_index import (
    Tally,
    completes_a_trial,
    forget_index,
    index_applies,
    index_path,
    line_digest,
    read_index,
    record_whole,
)
from autoconv.urls import is_url, masked_url

# Optuna and SQLAlchemy are imported where they are used: commands that only read the
# winners' cache import the search package too, and need not pay for Optuna's import.

try:
    import fcntl
except ImportError:  # not on Windows: Optuna's own journal lock is used there
    fcntl = None  # type: ignore[assignment]


def make_storage(storage: str | os.PathLike, on_repair: Callable[[str], None] | None = None):
    """An Optuna storage: a SQLAlchemy URL (``sqlite:///...``, ``postgresql://...``) as
    is, anything else as the path of a journal file (created with its folder).

    A journal file is checked first (:func:`check_journal`): a last record cut short (a
    write that never completed) is removed, and ``on_repair`` told so (and of a journal
    without an index); any other damage is an error. Writers serialise on an ``flock`` of ``<journal>.flock``, which the
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
    prepare_storage(path, on_repair)
    try:
        # (JournalFlock has the acquire and release of Optuna's lock class, not the class:
        # subclassing it would import Optuna with this module.)
        lock = _journal_lock(path)
        if lock is None:  # (no fcntl: Optuna's own lock and appends)
            return JournalStorage(JournalFileBackend(str(path)))
        from autoconv.search.journal_file import GroupCommitJournal
        journal = GroupCommitJournal(str(path), lock)
        opened = JournalStorage(journal)
        _JOURNALS[opened] = journal
        return opened
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, AssertionError) as err:  # replaying junk
        raise StorageError(_journal_damage(path, f"Optuna cannot replay it ({first_line(err)})")) from None


def prepare_storage(storage: str | os.PathLike, on_repair: Callable[[str], None] | None = None) -> None:
    """What must happen once before several processes open ``storage`` at once: a database's
    tables are created (:func:`make_storage`); a journal file's folder is created, and the journal
    checked and a record cut short removed (:func:`check_journal`, ``on_repair`` given its notes).
    A journal is not replayed here: each process that opens it does, and a ResNet-50 tune's
    journal (12 MB) takes a second to replay, which a fleet's parent process would pay before
    starting its workers.

    Raises:
        StorageError: as :func:`make_storage`, for damage that :func:`check_journal` finds.
    """
    text = str(storage)
    if is_url(text):
        make_storage(text, on_repair)
        return
    path = Path(text).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    for note in check_journal(path):
        if on_repair is not None:
            on_repair(note)


#: The journals make_storage opened, by their storage (JournalStorage has no public accessor).
_JOURNALS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def sync_storage(storage) -> None:
    """Force the records of a journal file opened by :func:`make_storage` to the disk now
    (:mod:`autoconv.search.journal_file`); other storages commit each write themselves."""
    journal = _JOURNALS.get(storage)
    if journal is not None:
        journal.sync()


#: Seconds between two heartbeats of a trial being evaluated, unless ``$AUTOCONV_HEARTBEAT_S``
#: says otherwise (:data:`autoconv.settings.HEARTBEAT_S`).
DEFAULT_HEARTBEAT_S = 10
#: A trial whose heartbeat is this many intervals old belongs to a dead worker.
HEARTBEAT_GRACE_INTERVALS = 6
#: How often one configuration is retried after its workers died evaluating it.
MAX_RETRIES = 2


def heartbeat_interval_s() -> int:
    """Seconds between heartbeats: ``$AUTOCONV_HEARTBEAT_S`` (a whole number >= 1), else
    :data:`DEFAULT_HEARTBEAT_S`. A dead worker's trials are retried after
    :data:`HEARTBEAT_GRACE_INTERVALS` times that."""
    configured = settings.HEARTBEAT_S.value()
    return DEFAULT_HEARTBEAT_S if configured is None else configured


def retry_stale_trial(study, trial) -> None:
    """Optuna's callback for a trial failed because its heartbeat stopped: enqueue its
    configuration again (at most :data:`MAX_RETRIES` times), so no candidate is lost with
    the worker that died."""
    retry_trial(study, trial, "its worker stopped sending heartbeats")


#: How a queued retry's ``origin`` attribute begins (:func:`retry_trial`).
RETRY_ORIGIN = "retry of trial"


def retry_trial(study, trial, reason: str) -> bool:
    """Enqueue the params of the failed ``trial`` again, noting why; False when the
    configuration was retried :data:`MAX_RETRIES` times already."""
    retries = int(trial.user_attrs.get("retries", 0))
    if retries >= MAX_RETRIES or not trial.params:
        return False
    study.enqueue_trial(dict(trial.params), user_attrs={
        "origin": f"{RETRY_ORIGIN} {trial.number} ({reason})", "retries": retries + 1})
    return True


def is_retry(trial) -> bool:
    """Whether ``trial`` was queued by :func:`retry_trial`."""
    return str(trial.user_attrs.get("origin", "")).startswith(RETRY_ORIGIN)


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


def check_journal(path: Path) -> list[str]:
    """Check that ``path`` (if it exists) is a whole Optuna journal, and repair only what a crash
    leaves; returns notes for the user.

    The journal is compared with its index (:mod:`autoconv.search.journal_index`: its length,
    records and completed trials as its writers last forced it to the disk). A last line without
    its newline that is the start of a record, after all the index counts, is a write that never
    completed: Optuna ignores it, but the next append would glue a record to it and make the file
    unreadable, so it is cut off (under the writers' lock) and a note says so. A whole journal
    without an index (copied without it, or its index deleted) gets one, and a note says what it
    holds: a cut between two of its records cannot show in it.

    Anything else stops with a :class:`~autoconv.errors.StorageError` naming the file and the
    line or byte offset, and nothing is changed: a line that is not a record; a record with an
    unknown op code or for a study or trial that no earlier record created; a journal shorter than
    its index says (cut anywhere but in its last write: the message names the records and
    completed trials lost) or whose first records are not those the index counts; and a record cut
    short in a journal without an index, where a crash's unfinished write cannot be told from a
    cut that lost completed trials (the message gives the command that removes it).

    Raises:
        StorageError: the file is a folder, a device or another file that is not a regular one,
            unreadable, damaged or cut short.
    """
    if not path.exists():
        if fcntl is not None and index_path(path).exists():
            with _locked(path):  # (a journal started afresh is not compared with the old one's index)
                forget_index(path)
        return []
    if path.is_dir():
        raise StorageError(f"study storage {path} is a folder; pass the path of a journal file "
                           "(--storage or `storage:` in the config)")
    if not path.is_file():  # (read, it might block or never end; its lock would be a file beside it)
        raise StorageError(f"study storage {path}: not a regular file (a device, FIFO or socket), so not a journal, "
                           f"and autoconv creates no file beside it ({path.name}.flock); pass the path of a journal "
                           "file or a database URL (--storage or `storage:` in the config)")
    try:
        notes = _check_journal(path, locked=False)
        if notes is None:
            with _locked(path):  # no autoconv writer is appending now
                notes = _check_journal(path, locked=True)
        assert notes is not None  # (locked)
        return notes
    except OSError as err:
        raise StorageError(f"study storage {path}: cannot read it ({err})") from None


def _check_journal(path: Path, locked: bool) -> list[str] | None:
    """:func:`check_journal`'s check; None where what it found takes the writers' lock (a repair,
    an index to write) and ``locked`` is False."""
    indexed = fcntl is not None  # (without fcntl, Optuna's own backend writes the journal, and no index)
    index = read_index(path) if indexed else None  # (before the journal: its writers add to both)
    promised = None if index is None else index.promised()
    scan = _scan_journal(path, None if promised is None else promised.length)
    size = os.stat(path).st_size
    if index is not None and not index_applies(index, scan.first):
        index = promised = None  # (another journal's: this one was started afresh)
    if index is not None and promised is not None:
        _check_against_index(path, size, scan, promised)
    notes = []
    if scan.complete != size:
        if not locked:
            return None
        with open(path, "rb") as handle:
            handle.seek(scan.complete)
            tail = handle.read(_MAX_CUT_RECORD + 1)
        # A cut record is the start of one Optuna wrote ({"op_code":...}), in the writes since the
        # last completed one.
        where = f"line {scan.records + 1} (byte {scan.complete})"
        if not (len(tail) <= _MAX_CUT_RECORD and _is_cut_record(tail)):
            raise StorageError(_journal_damage(path, f"{where} is not an Optuna journal record"))
        if index is None and indexed:
            raise StorageError(
                f"study storage {path}: its last line, {where}, is a record cut short, and there is no "
                f"{index_path(path).name} beside it to tell a write a crash interrupted from a journal cut "
                f"short, which loses completed trials (it holds {_holding(scan.records, scan.completed)}). If a "
                f"killed autoconv left it so, remove that line (`truncate -s {scan.complete} "
                f"{shlex.quote(str(path))}`) and run again; if it was cut short, restore it from a copy (with its "
                "index), or move it away or delete it: `autoconv tune` then starts its studies afresh, and "
                "winners already cached stay in the cache")
        os.truncate(path, scan.complete)
        notes.append(f"study journal {path}: removed an incomplete last record ({size - scan.complete} bytes) "
                     "left by an interrupted write")
    if index is not None and scan.complete < index.written.length:  # (only after the host restarted)
        if not locked:
            return None
        record_whole(path)
        lost, lost_completed = index.written.records - scan.records, index.written.completed - scan.completed
        notes.append(f"study journal {path}: the host restarted before its last writes reached the disk; "
                     f"{lost} records are lost, with {lost_completed} completed trials, which run again")
    elif index is None and indexed and scan.records:
        if not locked:
            return None
        record_whole(path)
        notes.append(f"study journal {path}: no {index_path(path).name} beside it, so a cut between two of its "
                     f"records would not show; it holds {_holding(scan.records, scan.completed)}, and has an "
                     "index from now on")
    return notes


def _holding(records: int, completed: int) -> str:
    return (f"{records} record{'s' if records != 1 else ''}, {completed} completed "
            f"trial{'s' if completed != 1 else ''}")


def _check_against_index(path: Path, size: int, scan: _Scan, promised: Tally) -> None:
    """StorageError where the journal lost or changed records its index counts (``promised``)."""
    name = index_path(path).name
    left = _holding(promised.records, promised.completed)
    way_out = (f"Restore it from a copy if you have one. Or go on with what is left: delete {name} (the trials "
               f"lost run again). Or move the journal away or delete it (and {name} beside it): `autoconv tune` "
               "then starts its studies afresh, and winners already cached stay in the cache")
    if size < promised.length:
        lost, lost_completed = promised.records - scan.records, promised.completed - scan.completed
        counted = (f": {lost} records are lost, with {lost_completed} completed trials"
                   if lost >= 0 and lost_completed >= 0 else "")
        raise StorageError(
            f"study storage {path}: it is {size} bytes long, but its writers left it {promised.length} bytes "
            f"long with {left} (its index, {name}, says so); it holds {_holding(scan.records, scan.completed)}"
            f"{counted}. It was cut short or overwritten. {way_out}")
    if scan.at_length != (promised.records, promised.completed):
        held = "" if scan.at_length is None else f" ({_holding(*scan.at_length)} there)"
        raise StorageError(
            f"study storage {path}: its first {promised.length} bytes are not the {left} its writers left "
            f"there (its index, {name}, says so){held}: it was changed since. {way_out}")


#: How every record of an Optuna journal begins.
_RECORD_START = b'{"op_code":'
#: A cut-short last record longer than this is not one (Optuna's records are < 64 KiB).
_MAX_CUT_RECORD = 1 << 20
#: Optuna's journal op codes (the values of its JournalOperation, which it does not export), by what
#: they name.
_STUDY_OPS = {0: "create study", 1: "delete study", 2: "set study user attr", 3: "set study system attr",
              4: "create trial"}
_TRIAL_OPS = {5: "set trial param", 6: "set trial state", 7: "set intermediate value", 8: "set trial user attr",
              9: "set trial system attr"}
_OTHER_OPS = {10: "discard trials"}


def _is_cut_record(tail: bytes) -> bool:
    """Whether ``tail`` (no newline) is the start of a record: the start of
    ``{"op_code":`` or longer, UTF-8 but maybe for a character cut at the end, and a
    prefix of some JSON text."""
    if not (tail.startswith(_RECORD_START) or _RECORD_START.startswith(tail)):
        return False
    text = tail.decode("utf-8", errors="ignore")
    if text.encode("utf-8") != tail[:len(text.encode("utf-8"))] or len(tail) - len(text.encode("utf-8")) > 3:
        return False
    return _is_json_prefix(text)


#: What may be missing after the last complete token of a cut JSON text, before its closing brackets.
_JSON_FILLERS = ("", "0", ":0", '"":0', "rue", "ue", "e", "alse", "lse", "se", "ull", "ll", "l")


def _is_json_prefix(text: str) -> bool:
    """Whether some JSON text starts with ``text``: close an open string (and escape),
    try the few things a cut can leave unfinished (a number, a literal, a key without its
    value), then close the open brackets."""
    closers: list[str] = []
    in_string = escape = False
    hex_left = 0
    for char in text:
        if in_string:
            if hex_left:
                if char not in "0123456789abcdefABCDEF":
                    return False
                hex_left -= 1
            elif escape:
                escape = False
                if char == "u":
                    hex_left = 4
                elif char not in '"\\/bfnrt':
                    return False
            elif char == "\\":
                escape = True
            elif char == '"':
                in_string = False
            elif ord(char) < 0x20:
                return False
            continue
        if char == '"':
            in_string = True
        elif char in "{[":
            closers.append("}" if char == "{" else "]")
        elif char in "}]":
            if not closers or closers.pop() != char:
                return False
    if in_string:
        text += ("n" if escape else "") + "0" * hex_left + '"'
    closing = "".join(reversed(closers))
    for filler in _JSON_FILLERS:
        try:
            json.loads(text + filler + closing)
            return True
        except ValueError:
            continue
    return False


@dataclass
class _Scan:
    """What :func:`_scan_journal` found."""

    complete: int = 0   # bytes of the whole, well-formed records at the journal's start
    records: int = 0    # those records
    completed: int = 0  # those of them that complete a trial
    first: str = ""     # the first record's digest (journal_index.line_digest)
    at_length: tuple[int, int] | None = None  # (records, completed) in the first `length` bytes, where one ends


def _scan_journal(path: Path, length: int | None = None) -> _Scan:
    """The complete, well-formed records at the start of the journal, and what they are up to byte
    ``length``; StorageError when a complete line is not a record, has an op code Optuna does not
    know, or names a study or trial that no earlier record created."""
    scan = _Scan(at_length=(0, 0) if length == 0 else None)
    offset = 0
    studies = trials = 0  # Optuna numbers studies and trials 0, 1, ... as it creates them
    names: set[object] = set()
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.endswith(b"\n"):
                break  # the last line, cut short
            where = f"line {number} (byte {offset})"
            try:
                record = json.loads(line.decode("utf-8"))  # as Optuna writes it (not json's guess)
            except UnicodeDecodeError:
                raise StorageError(_journal_damage(path, f"{where} is not UTF-8 text")) from None
            except json.JSONDecodeError as err:
                raise StorageError(_journal_damage(path, f"{where} is not JSON ({err.msg} at column "
                                                         f"{err.colno})")) from None
            op = record.get("op_code") if isinstance(record, dict) else None
            if isinstance(op, bool) or not isinstance(op, int):
                raise StorageError(_journal_damage(path, f"{where} is not an Optuna journal record "
                                                         "(no integer op_code)"))
            if op == 0:
                name = record.get("study_name")
                if name not in names:  # (a second create of a name is a race Optuna ignores)
                    names.add(name)
                    studies += 1
            elif op in _STUDY_OPS:
                study = record.get("study_id")
                if isinstance(study, bool) or not isinstance(study, int) or not 0 <= study < studies:
                    raise StorageError(_journal_damage(
                        path, f"{where} ({_STUDY_OPS[op]}) names study {quoted(study)}, which no earlier "
                              "record created (records are missing before it)"))
                trials += op == 4
            elif op in _TRIAL_OPS:
                trial = record.get("trial_id")
                if isinstance(trial, bool) or not isinstance(trial, int) or not 0 <= trial < trials:
                    raise StorageError(_journal_damage(
                        path, f"{where} ({_TRIAL_OPS[op]}) names trial {quoted(trial)}, which no earlier "
                              "record created (records are missing before it)"))
            elif op not in _OTHER_OPS:
                raise StorageError(_journal_damage(
                    path, f"{where} has op code {op}, which this Optuna does not know"))
            if number == 1:
                scan.first = line_digest(line)
            scan.completed += completes_a_trial(record)
            offset += len(line)
            scan.complete, scan.records = offset, number
            if offset == length:
                scan.at_length = (scan.records, scan.completed)
    return scan


def _journal_damage(path: Path, what: str) -> str:
    return (f"study storage {path}: {what}; the file is damaged or not an Optuna journal. Move it away or "
            f"delete it (and {index_path(path).name} beside it): `autoconv tune` then starts its studies "
            "afresh, and winners already cached stay in the cache. Or pass another file with --storage or "
            "`storage:` in the config")


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
    lock = JournalFlock(path) if fcntl is not None else None
    if lock is not None:
        lock.acquire()
    try:
        yield
    finally:
        if lock is not None:
            lock.release()
