"""The index of a study journal: ``<journal>.index``, a one-line file autoconv keeps beside the
journal with its length, its number of records and of completed trials, as its writers last
forced it to the disk.

Why a file beside it: a cut inside a record shows in a JSON-lines journal (a last line that does
not parse), but a cut exactly between two records does not: every prefix of a journal is a
journal. Only something outside the file can tell that it was longer, and what it held.
:func:`autoconv.search.storage.check_journal` compares the journal with its index and names what
a cut lost. The journal itself stays the file Optuna's ``JournalFileBackend`` writes and reads
(``optuna-dashboard``, ``optuna.load_study``): nothing is added to it.

The index is rewritten under the journal writers' lock after each fsync of the journal
(:mod:`autoconv.search.journal_file`) and forced to the disk itself, so it never claims more of
the journal than the disk holds. It counts only what was appended since it was last written.

Which journal an index belongs to: the one whose first record has its digest (an Optuna journal
starts with a study's creation, which names a random worker id: a journal started afresh at the
same path has another). A journal copied with its index is checked where the copy lies; a journal
moved away and started afresh is not compared with the old one's index; a journal without a whole
first record is (it was cut inside its first record, or emptied).
"""

from __future__ import annotations

import hashlib
import json
import os
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

#: Optuna's op codes that set a trial's state ("create trial", for a trial added whole, and
#: "set trial state"), and the state value of a completed trial (``TrialState.COMPLETE``); kept in
#: step with Optuna by tests/search/test_storage_format.py.
_STATE_OPS = (4, 6)
_COMPLETE = 1


@dataclass(frozen=True)
class JournalIndex:
    """A journal as its writers last forced it to the disk: ``length`` bytes holding ``records``
    records, ``completed`` of which completed a trial; ``first`` is the digest of its first record."""

    length: int
    records: int
    completed: int
    first: str


def index_path(journal: Path) -> Path:
    return journal.with_name(journal.name + INDEX_SUFFIX)


def completes_a_trial(record: object) -> bool:
    """Whether a journal record (one parsed line) makes a trial COMPLETE."""
    if not isinstance(record, dict) or record.get("op_code") not in _STATE_OPS:
        return False
    state = record.get("state")
    return type(state) is int and state == _COMPLETE


def count_records(data: bytes) -> tuple[int, int]:
    """(records, completed trials) in ``data``, whole lines of a journal."""
    lines = data.split(b"\n")[:-1]  # (nothing after the last newline is a record)
    completed = 0
    for line in lines:
        if b'"state"' in line:  # (only records that set a state can complete a trial)
            try:
                completed += completes_a_trial(json.loads(line))
            except ValueError:
                continue  # (not a record: check_journal names it)
    return len(lines), completed


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
        fields = json.loads(text)
        index = JournalIndex(**{name: fields[name] for name in
                                ("length", "records", "completed", "first")})
    except (ValueError, KeyError, TypeError):
        return None
    numbers = (index.length, index.records, index.completed)
    if not all(type(n) is int and n >= 0 for n in numbers) or not isinstance(index.first, str):
        return None
    return index


def index_applies(index: JournalIndex, first: str) -> bool:
    """Whether ``index`` is that of the journal whose first record has the digest ``first`` (""
    for a journal without a whole first record: cut inside it, or emptied)."""
    return not first or first == index.first


def update_index(journal: Path) -> None:
    """Record the journal's length, records and completed trials in its index now. Call it with
    the writers' lock held (no append in progress), after the journal was forced to the disk.

    Where the index applies to the journal, only the records appended since are read. An index
    that claims more than the journal holds is left as it is: the journal was cut while it was
    being written, which the next :func:`~autoconv.search.storage.check_journal` reports. An
    index that cannot be written (a full disk) stays as it was: it then claims less, never more.
    """
    try:
        info = os.stat(journal)
        first = first_record_digest(journal)
        old = read_index(journal)
        start = records = completed = 0
        if old is not None and index_applies(old, first):
            if old.length > info.st_size:
                return
            start, records, completed = old.length, old.records, old.completed
        with open(journal, "rb") as handle:
            handle.seek(start)
            data = handle.read(info.st_size - start)
        whole = data.rfind(b"\n") + 1  # (the records up to the last newline)
        more, done = count_records(data[:whole])
        write_index(journal, JournalIndex(start + whole, records + more, completed + done, first))
    except OSError:
        return


def write_index(journal: Path, index: JournalIndex) -> None:
    """Write ``index`` beside ``journal`` and force it to the disk; a file there that is not an
    index (something autoconv did not write) is left as it is."""
    text = json.dumps({"format": _FORMAT_NAME, "length": index.length,
                       "records": index.records, "completed": index.completed, "first": index.first},
                      separators=(",", ":")).encode() + b"\n"
    assert text.startswith(_FORMAT)
    descriptor = os.open(index_path(journal), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        existing = os.pread(descriptor, len(_FORMAT), 0)
        if not _FORMAT.startswith(existing):  # (empty, or an index, maybe cut short by a crash)
            return
        os.pwrite(descriptor, text, 0)
        os.ftruncate(descriptor, len(text))
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
