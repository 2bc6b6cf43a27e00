"""The journal file of the tuner's studies: Optuna's ``JournalFileBackend`` with its appends
made durable in groups.

Optuna's backend forces every record to the disk (``fsync``) before it releases the writers'
lock. A tuning worker writes ~20 records per candidate (the trial, each parameter, each
attribute, its end), and every worker of a host writes to the one journal, so on a host with
several tuning workers much of a tune went to waiting for that lock or in ``fsync``. Here a
writer appends and flushes under the lock as before, but forces the file to the disk at most
every :data:`SYNC_INTERVAL_S`.

What that gives up: nothing when a process is killed (what it wrote is in the operating
system's cache, which the next reader sees). After a crash of the host, the records a process
appended since its last fsync, which the next run evaluates again: a second's while it keeps
writing; those of a process that stopped writing are as durable as the kernel's own writeback
makes them. A problem's study is forced to the disk when its search ends, however it ends
(:meth:`GroupCommitJournal.sync`). Each append adds itself to the journal's index
(:mod:`autoconv.search.journal_index`, read by :func:`autoconv.search.storage.check_journal`),
which also records the part forced to the disk: a journal that lost its unforced tail in a
crash of the host is not taken for one cut after its writers left it. An append that fails (a
full disk, ``ulimit -f``) is taken back whole and raised naming the journal and how to make room.

Only Optuna's public journal API is used: ``JournalFileBackend`` (public, and documented as a
``BaseJournalBackend``) with its ``append_logs`` replaced; its ``read_logs`` reads the file as
before. Every process that opens the journal replays it from its first record: Optuna starts
from a snapshot of its replay only for a backend of a class it does not export, so autoconv
keeps no snapshot. (A database storage, ``--storage sqlite:///FILE``, is not replayed.)
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any, Protocol

from optuna.storages.journal import JournalFileBackend

from autoconv.errors import StorageError
from autoconv.files import room_reason
from autoconv.search.journal_index import record_append, record_forced, tally_of

#: Seconds between two of a process's appends that force the journal to the disk.
SYNC_INTERVAL_S = 1.0


class WritersLock(Protocol):
    """The writers' lock (:class:`autoconv.search.storage.JournalFlock`)."""

    def acquire(self) -> bool: ...

    def release(self) -> None: ...


class GroupCommitJournal(JournalFileBackend):
    """A journal file at ``path`` whose writers serialise on ``lock`` and force it to the disk
    at most every :data:`SYNC_INTERVAL_S` (see the module docstring)."""

    def __init__(self, path: str, lock: WritersLock):
        # (Optuna's backend calls only acquire and release of its lock, the methods of the lock
        # classes it documents for ``lock_obj``)
        super().__init__(path, lock_obj=lock)  # type: ignore[arg-type]
        self._path = path
        self._lock_of_writers = lock
        self._synced = -SYNC_INTERVAL_S  # time.monotonic() of this process's last fsync

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        """Append ``logs`` as one write, or raise naming the journal and leave it as it was.

        Raises:
            StorageError: the write failed (a full disk, ``ulimit -f``...): the records appended
                before stay whole, and the message says how to make room."""
        text = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in logs).encode()
        self._lock_of_writers.acquire()
        try:
            journal = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            try:
                before = os.fstat(journal).st_size  # (no other writer appends now)
                now = time.monotonic()
                synced = now - self._synced >= SYNC_INTERVAL_S
                try:
                    written = memoryview(text)
                    while written:
                        written = written[os.write(journal, written):]
                    if synced:
                        os.fsync(journal)
                        self._synced = now
                except OSError as err:
                    with contextlib.suppress(OSError):
                        os.ftruncate(journal, before)  # (no record cut short: the journal stays whole)
                    raise self._failure(err) from None
            finally:
                os.close(journal)
            record_append(Path(self._path), before, tally_of(logs, len(text)), forced=synced)
        except OSError as err:
            raise self._failure(err) from None
        finally:
            self._lock_of_writers.release()

    def sync(self) -> None:
        """Force the journal to the disk now, and update its index (a problem's tuning ended).

        Raises:
            StorageError: as :meth:`append_logs`."""
        self._lock_of_writers.acquire()
        try:
            with open(self._path, "ab") as journal:
                os.fsync(journal.fileno())
            self._synced = time.monotonic()
            record_forced(Path(self._path))
        except OSError as err:
            raise self._failure(err) from None
        finally:
            self._lock_of_writers.release()

    def _failure(self, err: OSError) -> StorageError:
        """The error of a write to the journal (or its index) that failed with ``err``."""
        where = self._path if err.filename is None else str(err.filename)
        what = "cannot append to it" if where == self._path else f"cannot write {where}"
        return StorageError(f"study storage {self._path}: {what} ({room_reason(err, where)}); the trials "
                            "recorded before stay, and the same command resumes from them")
