"""The studies' journal file forced to the disk in groups (autoconv.search.journal_file): what
one process appends another reads at once, an fsync at most every SYNC_INTERVAL_S, and the
journal's index (for check_journal) counting every append, and the part forced to the disk apart."""

from __future__ import annotations

import os

import optuna
import pytest

from autoconv.errors import StorageError
from autoconv.search import journal_file, journal_index
from autoconv.search.journal_file import SYNC_INTERVAL_S, GroupCommitJournal
from autoconv.search.journal_index import read_index
from autoconv.search.storage import check_journal, make_storage, sync_storage


@pytest.fixture
def clock(monkeypatch):
    """journal_file's time.monotonic, moved by hand; and the journal's fsyncs, counted (not its
    index's)."""
    now = [1000.0]
    syncs: list[int] = []

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".journal"):
            syncs.append(fd)
    monkeypatch.setattr(journal_file.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(journal_file.os, "fsync", fsync)
    return now, syncs


def _read_mark(journal) -> int | None:
    """The journal's length forced to the disk, as its index records it."""
    index = read_index(journal)
    return None if index is None else index.forced.length


def _written(journal) -> int | None:
    """The journal's length as its writers left it, as its index records it."""
    index = read_index(journal)
    return None if index is None else index.written.length


def _study(storage, name="s"):
    return optuna.create_study(study_name=name, storage=storage, load_if_exists=True)


def test_make_storage_writes_a_journal_through_the_group_commit(tmp_path, clock):
    journal = tmp_path / "j.journal"
    storage = make_storage(journal)
    assert isinstance(storage._backend, GroupCommitJournal)
    study = _study(storage)
    study.set_user_attr("a", 1)
    _, syncs = clock
    assert len(syncs) == 1 and _read_mark(journal) < journal.stat().st_size == _written(journal)
    sync_storage(storage)  # (the tuner's, when a problem's tuning ends)
    assert len(syncs) == 2 and _read_mark(journal) == journal.stat().st_size


def test_what_one_writer_appends_another_reads_at_once(tmp_path, clock):
    journal = tmp_path / "j.journal"
    writer, reader = make_storage(journal), make_storage(journal)
    study = _study(writer)
    for value in (3.0, 1.0, 2.0):
        trial = study.ask()
        trial.suggest_categorical("x", ["a", "b"])
        study.tell(trial, value)
    _, syncs = clock
    assert len(syncs) == 1  # (all within one interval: the first append forced the file)
    assert _study(reader).best_value == 1.0


def test_the_file_is_forced_to_the_disk_once_per_interval_and_only_then_marked(tmp_path, clock):
    now, syncs = clock
    journal = tmp_path / "j.journal"
    study = _study(make_storage(journal))
    forced = journal.stat().st_size
    assert len(syncs) == 1 and _read_mark(journal) == forced
    study.set_user_attr("a", 1)
    study.set_user_attr("b", 2)
    assert len(syncs) == 1 and _read_mark(journal) == forced < journal.stat().st_size  # (not forced: not marked)
    assert _written(journal) == journal.stat().st_size  # (but counted)
    now[0] += SYNC_INTERVAL_S
    study.set_user_attr("c", 3)
    assert len(syncs) == 2 and _read_mark(journal) == journal.stat().st_size


def test_a_journal_that_lost_its_unforced_tail_in_a_host_crash_is_not_taken_for_damage(tmp_path, clock,
                                                                                       monkeypatch):
    """A host crash loses what was appended after the last fsync: after the host restarted, the
    journal is promised only up to that fsync, so check_journal accepts the shorter file, and says
    what was lost. In the boot that wrote them, the same records missing are a cut."""
    journal = tmp_path / "j.journal"
    study = _study(make_storage(journal))
    forced = journal.read_bytes()
    for name in "abc":
        study.set_user_attr(name, 1)
    journal.write_bytes(forced)  # (the crash)
    with pytest.raises(StorageError, match="bytes long, but its writers left it"):
        check_journal(journal)
    monkeypatch.setattr(journal_index, "this_boot", lambda: "the next boot")
    assert check_journal(journal) == [f"study journal {journal}: the host restarted before its last writes "
                                      "reached the disk; 3 records are lost, with 0 completed trials, which run "
                                      "again"]
    assert check_journal(journal) == []
    assert _study(make_storage(journal)).user_attrs == {}
