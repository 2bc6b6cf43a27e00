"""The index of a study journal: ``<journal>.index``, a one-line file autoconv keeps beside the
journal with its length, its number of records and of completed trials as its writers left it.

Why a file beside it: a cut inside a record shows in a JSON-lines journal (a last line that does
not parse), but a cut exactly between two records does not: every prefix of a journal is a
journal. Only something outside the file can tell that it was longer, and what it held.
:func:`autoconv.search.storage.check_journal` compares the journal with its index and names what
a cut lost. The journal itself stays the file Optuna's ``JournalFileBackend`` writes and reads
(``optuna-dashboard``, ``optuna.load_study``): nothing is added to it.

Each append of autoconv's writers (:mod:`autoconv.search.journal_file`) updates the index under
the writers' lock, adding what it appended (nothing is read again). The index holds two tallies:
the journal as its writers left it (``written``), and as they last forced it to the disk
(``forced``, with the index itself forced after it). On the host that wrote it, in the same boot
(:func:`this_boot`), the journal must hold all that ``written`` counts: a killed process loses
nothing that it wrote. After the host restarted, only ``forced`` is promised: a crash of the host
loses the writes of the last moment, which the next run evaluates again.

Which journal an index belongs to: the one whose first record has its digest (an Optuna journal
starts with a study's creation, which names a random worker id: a journal started afresh at the
same path has another). A journal copied with its index is checked where the copy lies; a journal
moved away and started afresh is not compared with the old one's index; a journal without a whole
first record is (it was cut inside its first record, or emptied).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: The index's file name: the journal's, with this added.
INDEX_SUFFIX = ".index"
#: An index's format, its JSON object's first key; an existing file that does not begin with it
#: is not autoconv's, and is never written.
_FORMAT_NAME = "autoconv journal index 1"
_FORMAT = b'{"format":"' + _FORMAT_NAME.encode() + b'"'
#: At most this much of a journal's first line is read for its digest (Optuna's records are < 64 KiB).
_MAX_FIRST_LINE = 1 << 20
#: Where this host's boot is named (Linux); elsewhere no boot is known, and only what was forced
#: to the disk is promised.
_BOOT_ID = "/proc/sys/kernel/random/boot_id"

#: Optuna's op codes that set a trial's state ("create trial", for a trial added whole, and
#: "set trial state"), and the state value of a completed trial (``TrialState.COMPLETE``); kept in
#: step with Optuna by tests/search/test_storage_format.py.
_STATE_OPS = (4, 6)
_COMPLETE = 1


@dataclass(frozen=True)
class Tally:
    """The first ``length`` bytes of a journal: ``records`` records, ``completed`` of which
    completed a trial."""

    length: int = 0
    records: int = 0
    completed: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.length + other.length, self.records + other.records, self.completed + other.completed)

    def numbers(self) -> tuple[int, int, int]:
        return self.length, self.records, self.completed


@dataclass(frozen=True)
class JournalIndex:
    """A journal's index (see the module docstring): ``first`` is the digest of its first record,
    ``boot`` the boot of the host that wrote ``written`` ("" unknown)."""

    first: str
    boot: str
    written: Tally
    forced: Tally

    def promised(self) -> Tally:
        """What the journal must hold now: all that was written, in the boot that wrote it; after
        the host restarted, what was forced to the disk."""
        return self.written if self.boot and self.boot == this_boot() else self.forced


def index_path(journal: Path) -> Path:
    return journal.with_name(journal.name + INDEX_SUFFIX)


@functools.cache
def this_boot() -> str:
    """An id of this host's boot ("" where none is known)."""
    try:
        with open(_BOOT_ID) as handle:
            return handle.read().strip()
    except OSError:
        return ""


def completes_a_trial(record: object) -> bool:
    """Whether a journal record (one parsed line, or a log Optuna is about to append: its integers
    may be Optuna's ``IntEnum`` members) makes a trial COMPLETE."""
    if not isinstance(record, dict) or record.get("op_code") not in _STATE_OPS:
        return False
    state = record.get("state")
    return isinstance(state, int) and not isinstance(state, bool) and state == _COMPLETE


def tally_of(logs: Iterable[dict], length: int) -> Tally:
    """The tally of ``logs``, records appended as ``length`` bytes."""
    logs = list(logs)
    return Tally(length, len(logs), sum(map(completes_a_trial, logs)))


def count_records(data: bytes) -> Tally:
    """The tally of ``data``, up to its last newline (what follows it is no record)."""
    whole = data.rfind(b"\n") + 1
    lines = data[:whole].split(b"\n")[:-1]
    completed = 0
    for line in lines:
        if b'"state"' in line:  # (only records that set a state can complete a trial)
            try:
                completed += completes_a_trial(json.loads(line))
            except ValueError:
                continue  # (not a record: check_journal names it)
    return Tally(whole, len(lines), completed)


def first_record_digest(journal: Path) -> str:
    """A digest of the journal's first line; "" when it has no whole first line."""
    with open(journal, "rb") as handle:
        line = handle.readline(_MAX_FIRST_LINE)
    return line_digest(line) if line.endswith(b"\n") else ""


def line_digest(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()[:32]


def read_index(journal: Path) -> JournalIndex | None:
    """The journal's index, or None: no index, one that cannot be read, or a file not autoconv's."""
    try:
        with open(index_path(journal), "rb") as handle:
            text = handle.read(4096)
    except OSError:
        return None
    if not text.startswith(_FORMAT):
        return None
    try:
        # (its first line: a writer killed between writing a shorter index and cutting the file
        # to its length leaves the end of the one before after it)
        fields = json.loads(text.split(b"\n", 1)[0])
        written, forced = (Tally(*fields[name]) for name in ("written", "forced"))
        index = JournalIndex(fields["first"], fields["boot"], written, forced)
    except (ValueError, KeyError, TypeError):
        return None
    numbers = written.numbers() + forced.numbers()
    if not all(type(n) is int and n >= 0 for n in numbers) or not isinstance(index.first, str) \
            or not isinstance(index.boot, str) or forced.length > written.length:
        return None
    return index


def index_applies(index: JournalIndex, first: str) -> bool:
    """Whether ``index`` is that of the journal whose first record has the digest ``first`` (""
    for a journal without a whole first record: cut inside it, or emptied)."""
    return not first or first == index.first


def record_append(journal: Path, before: int, appended: Tally, forced: bool) -> None:
    """Add to the journal's index what a writer appended: ``appended``, at byte ``before`` (the
    journal's length before it); ``forced``: the journal was forced to the disk after it. Call it
    with the writers' lock held.

    Where the index does not count the journal up to ``before`` (none yet, or a writer died
    between its append and this), the journal is counted from its start first. An index that
    counts more than the journal holds is left as it is: the journal was cut while it was being
    written, which the next :func:`~autoconv.search.storage.check_journal` reports. An index that
    cannot be written (a full disk) stays as it was."""
    try:
        first = first_record_digest(journal)
        old = read_index(journal)
        if old is not None and index_applies(old, first) and old.written.length >= before:
            if old.written.length > before:
                return
            written, last_forced = old.written + appended, old.forced
        else:
            with open(journal, "rb") as handle:
                written, last_forced = count_records(handle.read(before)) + appended, Tally()
        _write_index(journal, JournalIndex(first, this_boot(), written, written if forced else last_forced),
                     force=forced)
    except OSError:
        return


def record_whole(journal: Path) -> None:
    """Count the whole journal (whole records) into its index, forced to the disk with it; with
    the writers' lock held. For a journal forced to the disk whose index may not count it all,
    and for one without an index."""
    try:
        with open(journal, "rb") as handle:
            os.fsync(handle.fileno())
            tally = count_records(handle.read())
        _write_index(journal, JournalIndex(first_record_digest(journal), this_boot(), tally, tally), force=True)
    except OSError:
        return


def record_forced(journal: Path) -> None:
    """The journal was forced to the disk (with the writers' lock held): all it holds is promised."""
    try:
        old = read_index(journal)
        size = os.stat(journal).st_size
        if old is None or old.written.length != size or not index_applies(old, first_record_digest(journal)):
            record_whole(journal)
            return
        _write_index(journal, JournalIndex(old.first, this_boot(), old.written, old.written), force=True)
    except OSError:
        return


def _write_index(journal: Path, index: JournalIndex, force: bool) -> None:
    """Write ``index`` beside ``journal`` (and force it to the disk if ``force``); a file there that
    is not an index (something autoconv did not write) is left as it is."""
    fields = {"format": _FORMAT_NAME, "first": index.first, "boot": index.boot,
              "written": index.written.numbers(), "forced": index.forced.numbers()}
    text = json.dumps(fields, separators=(",", ":")).encode() + b"\n"
    descriptor = os.open(index_path(journal), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        existing = os.pread(descriptor, len(_FORMAT), 0)
        if not _FORMAT.startswith(existing):  # (empty, or an index, maybe cut short by a crash)
            return
        os.pwrite(descriptor, text, 0)
        os.ftruncate(descriptor, len(text))
        if force:
            os.fsync(descriptor)
    finally:
        os.close(descriptor)


def forget_index(journal: Path) -> None:
    """Delete the index of a journal that no longer exists (moved away or deleted, to start
    afresh); call it with the writers' lock held. A file there that is not an index stays."""
    if journal.exists() or read_index(journal) is None:
        return
    try:
        index_path(journal).unlink()
    except OSError:
        return
