"""The journal file of the tuner's studies: Optuna's ``JournalFileBackend`` with its appends
made durable in groups.

Optuna's backend forces every record to the disk (``fsync``) before it releases the writers'
lock. A tuning worker writes ~20 records per candidate (the trial, each parameter, each
attribute, its end), and every worker of a host writes to the one journal: on two H200s of a
32-core host, six workers spent ~13 s each of a 50 s tune waiting for that lock or in
``fsync`` (cProfile, results/h200x2/tune_latency). Here a writer appends and flushes under the
lock as before, but forces the file to the disk at most every :data:`SYNC_INTERVAL_S`.

What that gives up: nothing when a process is killed (what it wrote is in the operating
system's cache, which the next reader sees). After a crash of the host, the records a process
appended since its last fsync, which the next run evaluates again: a second's while it keeps
writing; those of a process that stopped writing are as durable as the kernel's own writeback
makes them. A problem's study is forced to the disk when its search ends, however it ends
(:meth:`GroupCommitJournal.sync`). The length recorded in the lock file
(:class:`autoconv.search.storage.JournalFlock`, read by
:func:`autoconv.search.storage.check_journal`) is written only by an append that forced the
file to the disk, so a journal that lost its unforced tail in a crash is never taken for
one cut after its writers left it.

It also keeps a snapshot of Optuna's replay beside the file (:mod:`autoconv.search.journal_snapshot`):
a process that opens a long history loads it and replays only the records after it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Protocol

import optuna
from optuna.storages.journal import JournalFileBackend

from autoconv.search.journal_snapshot import PrefixHash, read_snapshot, write_snapshot

try:  # (Optuna >= 4 has it, but does not export it: JournalStorage asks its backend isinstance of it)
    from optuna.storages.journal._base import BaseJournalSnapshot
except ImportError:  # another layout: no snapshots, every process replays the whole journal
    BaseJournalSnapshot = object  # type: ignore[assignment,misc]

#: Seconds between two of a process's appends that force the journal to the disk.
SYNC_INTERVAL_S = 1.0


class MarkingLock(Protocol):
    """The writers' lock (:class:`autoconv.search.storage.JournalFlock`)."""

    def acquire(self) -> bool: ...

    def release(self, mark: bool | None = None) -> None: ...


class GroupCommitJournal(JournalFileBackend, BaseJournalSnapshot):
    """A journal file at ``path`` whose writers serialise on ``lock`` and force it to the disk
    at most every :data:`SYNC_INTERVAL_S`, with a snapshot of its replay (see the module docstring)."""

    def __init__(self, path: str, lock: MarkingLock):
        # (Optuna's backend calls only acquire and release of its lock)
        super().__init__(path, lock_obj=lock)  # type: ignore[arg-type]
        self._path = path
        self._lock_of_writers = lock
        self._synced = -SYNC_INTERVAL_S  # time.monotonic() of this process's last fsync
        self._prefix_hash = PrefixHash(Path(path))

    def load_snapshot(self) -> bytes | None:
        """Optuna's replay of this journal's start, if a snapshot matches it (else None: a full replay)."""
        found = read_snapshot(Path(self._path), optuna.__version__)
        return None if found is None else found.replay

    def save_snapshot(self, snapshot: bytes) -> None:
        """Keep ``snapshot``, Optuna's replay as it stands, as this journal's snapshot. Optuna
        hands it over right after reading the journal to its end (under its storage's lock), so
        it covers every record read so far: those whose byte offsets the backend recorded."""
        offsets = getattr(self, "_log_number_offset", None)  # (JournalFileBackend's: record number -> byte offset)
        if not isinstance(offsets, dict) or not offsets:
            return  # (another Optuna, which keeps no offsets: no snapshot, full replays as before)
        lines = max(offsets)
        write_snapshot(Path(self._path), snapshot, offsets[lines], lines, optuna.__version__, self._prefix_hash)

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        text = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in logs).encode()
        self._lock_of_writers.acquire()
        synced = False
        try:
            with open(self._path, "ab") as journal:
                journal.write(text)
                journal.flush()
                now = time.monotonic()
                if now - self._synced >= SYNC_INTERVAL_S:
                    os.fsync(journal.fileno())
                    self._synced, synced = now, True
        finally:
            self._lock_of_writers.release(mark=synced)

    def sync(self) -> None:
        """Force the journal to the disk now, and record its length (a problem's tuning ended)."""
        self._lock_of_writers.acquire()
        try:
            with open(self._path, "ab") as journal:
                os.fsync(journal.fileno())
            self._synced = time.monotonic()
        finally:
            self._lock_of_writers.release(mark=True)
