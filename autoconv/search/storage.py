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
  writers left it (the lock file records that length), which has lost completed trials.

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
import time
import warnings
import weakref
from collections.abc import Callable
from pathlib import Path

from autoconv import settings
from autoconv.errors import StorageError, first_line, quoted
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
    tables are created (:func:`make_storage`); a journal file's folder is created and a record
    cut short is removed (:func:`check_journal`, ``on_repair`` told so). A journal is not replayed
    here: each process that opens it does, and a ResNet-50 tune's journal (12 MB) takes a second
    to replay, which a fleet's parent process would pay before starting its workers.

    Raises:
        StorageError: as :func:`make_storage`, for damage that :func:`check_journal` finds.
    """
    text = str(storage)
    if is_url(text):
        make_storage(text, on_repair)
        return
    path = Path(text).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    dropped = check_journal(path)
    if dropped and on_repair is not None:
        on_repair(f"study journal {path}: removed an incomplete last record ({dropped} bytes) left by "
                  "an interrupted write")


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


def check_journal(path: Path) -> int:
    """Check that ``path`` (if it exists) is an Optuna journal, and repair only what a
    crash leaves: a last line without its newline that is the start of a record (a write
    that never completed; Optuna ignores it, but the next append would glue a record to
    it and make the file unreadable) is cut off, under the writers' lock. Returns the
    number of bytes cut off.

    Anything else stops with a :class:`~autoconv.errors.StorageError` naming the file and
    the line or byte offset, and nothing is changed: a line that is not a record, a record
    with an unknown op code or for a study or trial that no earlier record created, and a
    file shorter than autoconv's writers last left it (:class:`JournalFlock` records that
    length in the lock file): cut anywhere but in its last write, it has lost completed
    trials, maybe whole studies, which a repair would drop without a word.

    Raises:
        StorageError: the file is a folder, unreadable, damaged or cut short.
    """
    if not path.exists():
        _forget_mark(path)  # (a journal that starts afresh where an inode number is reused)
        return 0
    if path.is_dir():
        raise StorageError(f"study storage {path} is a folder; pass the path of a journal file "
                           "(--storage or `storage:` in the config)")
    try:
        mark = _read_mark(path)  # (before the size: writers only add to both)
        complete, _ = _valid_journal_prefix(path)
        size = path.stat().st_size
        _check_not_shorter(path, size, mark)
        if complete == size:
            return 0
        with _locked(path):  # no autoconv writer is appending now
            mark = _read_mark(path)
            complete, lines = _valid_journal_prefix(path)
            size = path.stat().st_size
            _check_not_shorter(path, size, mark)
            if complete == size:
                return 0
            with open(path, "rb") as handle:
                handle.seek(complete)
                tail = handle.read(_MAX_CUT_RECORD + 1)
            # A cut record is the start of one Optuna wrote ({"op_code":...}), in the writes
            # since the last completed one.
            if not (len(tail) <= _MAX_CUT_RECORD and _is_cut_record(tail)):
                raise StorageError(_journal_damage(
                    path, f"line {lines + 1} (byte {complete}) is not an Optuna journal record"))
            if mark is not None and complete < mark:
                raise StorageError(_journal_damage(
                    path, f"it was cut at byte {size}, inside records completed before (the writers "
                          f"left it {mark} bytes long); completed trials, maybe whole studies, are lost"))
            os.truncate(path, complete)
            return size - complete
    except OSError as err:
        raise StorageError(f"study storage {path}: cannot read it ({err})") from None


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


def _check_not_shorter(path: Path, size: int, mark: int | None) -> None:
    if mark is not None and size < mark:
        raise StorageError(_journal_damage(
            path, f"it is {size} bytes long, but its writers left it {mark} bytes long; it was cut short "
                  "(or overwritten), and completed trials, maybe whole studies, are lost"))


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


def _valid_journal_prefix(path: Path) -> tuple[int, int]:
    """(bytes, lines) of the complete, well-formed records at the start of the journal;
    StorageError when a complete line is not a record, has an op code Optuna does not
    know, or names a study or trial that no earlier record created."""
    offset = lines = 0
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
            offset += len(line)
            lines = number
    return offset, lines


def _journal_damage(path: Path, what: str) -> str:
    return (f"study storage {path}: {what}; the file is damaged or not an Optuna journal. Move it away or "
            f"delete it (and {path.name}.flock beside it): `autoconv tune` then starts its studies afresh, "
            "and winners already cached stay in the cache. Or pass another file with --storage or "
            "`storage:` in the config")


class JournalFlock:
    """The writers' lock of a journal file for :class:`JournalFileBackend` (which only
    calls ``acquire`` and ``release``): an exclusive ``flock`` of ``<journal>.flock``. The
    kernel drops it when its process dies, so a killed writer never blocks the next."""

    def __init__(self, path: Path, mark: bool = True):
        self.path = path
        self.mark = mark  # record the journal's length on release (see _write_mark)
        self._held: int | None = None

    def acquire(self) -> bool:
        self._held = _acquire_flock(self.path)
        return True

    def release(self, mark: bool | None = None) -> None:
        """Release the lock; first record the journal's length in the lock file if ``mark``
        (None: :attr:`mark`). A writer that has not forced the journal to the disk passes
        False (:mod:`autoconv.search.journal_file`)."""
        held, self._held = self._held, None
        if held is not None:
            try:
                if self.mark if mark is None else mark:
                    _write_mark(held, self.path)
            finally:
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


#: The lock file holds the journal's length as its writers left it: a file shorter than
#: that was cut (or overwritten) after a completed write, which no crash does.
_MARK = b"autoconv journal length"


def _write_mark(descriptor: int, journal: Path) -> None:
    """Record, in the lock file (``descriptor``, held), the journal's length now and which
    file it is (device and inode: a journal moved away and started afresh is not compared
    with the old one's length)."""
    try:
        info = os.stat(journal)
    except OSError:
        return
    data = _MARK + f" {info.st_dev} {info.st_ino} {info.st_size}\n".encode()
    os.pwrite(descriptor, data, 0)
    os.ftruncate(descriptor, len(data))


def _forget_mark(journal: Path) -> None:
    """Clear the recorded length of a journal that does not exist (now, under the lock)."""
    if fcntl is None or not os.path.exists(f"{journal}.flock"):
        return
    try:
        descriptor = _acquire_flock(journal)
    except OSError:
        return
    try:
        if not journal.exists():
            os.ftruncate(descriptor, 0)
    finally:
        _release_flock(descriptor)


def _read_mark(journal: Path) -> int | None:
    """The journal's length as its writers last left it, or None (no mark, an old lock
    file, or a mark of another file at this path)."""
    try:
        with open(f"{journal}.flock", "rb") as handle:
            words = handle.read(200).split()
        info = os.stat(journal)
    except OSError:
        return None
    if len(words) != 6 or b" ".join(words[:3]) != _MARK or not all(w.isdigit() for w in words[3:]):
        return None
    device, inode, size = (int(w) for w in words[3:])
    return size if (device, inode) == (info.st_dev, info.st_ino) else None


@contextlib.contextmanager
def _locked(path: Path):
    """``with _locked(journal):`` holds the journal writers' lock (nothing without fcntl);
    it records no length: the holder checks the journal, it does not write records."""
    lock = JournalFlock(path, mark=False) if fcntl is not None else None
    if lock is not None:
        lock.acquire()
    try:
        yield
    finally:
        if lock is not None:
            lock.release()
