"""A study journal cut short at any byte is never taken for a whole one: a real journal (a tune on
the fake backend) is cut at every record boundary and inside records, with and without its lock
file and its index beside it. Where the index is there, every cut is an error that names the
records and completed trials lost; without it, a cut inside a record is an error (it cannot be told
from a crash's unfinished write, and the message says how to remove it), and a cut between two
records is a note saying what the journal holds; a record cut short after all that the index counts
(what a crash leaves) is removed with a note."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from optuna.trial import TrialState

from autoconv.commands.main import main
from autoconv.errors import StorageError
from autoconv.search.storage import prepare_storage
from tests.helpers import TWO_PROBLEMS, load_studies, run_cli

#: Which of the files autoconv keeps beside a journal are still there when it is cut.
BESIDE = {"lock-and-index": (".flock", ".index"), "index-only": (".index",), "neither": ()}


@pytest.fixture(scope="module")
def tuned(tmp_path_factory) -> Path:
    """A folder with a tune's state: its journal, lock file, index and cache."""
    folder = tmp_path_factory.mktemp("tuned")
    config = folder / "tune.yaml"
    config.write_text(TWO_PROBLEMS.format(trials=3))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AUTOCONV_BACKEND", "fake")
        assert main(["tune", str(config)]) == 0
    return folder / "state"


def _completed(journal: Path) -> int:
    """Completed trials in ``journal``, as plain Optuna reads it."""
    return sum(t.state == TrialState.COMPLETE for trials in load_studies(journal).values() for t in trials)


def _cut(state: Path, into: Path, at: int, beside: tuple[str, ...]) -> Path:
    journal = into / "studies.journal"
    journal.write_bytes((state / "studies.journal").read_bytes()[:at])
    for suffix in beside:
        if (state / f"studies.journal{suffix}").exists():
            shutil.copy(state / f"studies.journal{suffix}", into / f"studies.journal{suffix}")
    return journal


def _offsets(data: bytes, seed: int) -> tuple[list[int], list[int]]:
    """Every record boundary before the end, and 40 bytes inside records (at random, and each
    record's first and last byte in turn)."""
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    boundaries = [0] + ends[:-1]
    rng = random.Random(seed)
    inside = sorted({rng.randrange(len(data)) for _ in range(30)} - set(boundaries) - {len(data)})
    inside += [start + 1 for start in boundaries[::len(boundaries) // 5 + 1]]
    inside += [end - 1 for end in ends[::len(ends) // 5 + 1]]
    return boundaries, sorted(set(inside) - set(boundaries))


@pytest.mark.parametrize("beside", list(BESIDE))
def test_a_journal_cut_anywhere_is_never_taken_for_a_whole_one(tuned, tmp_path, seed, beside):
    data = (tuned / "studies.journal").read_bytes()
    records, completed = data.count(b"\n"), _completed(tuned / "studies.journal")
    assert completed == 6  # (3 trials of each of 2 problems)
    boundaries, inside = _offsets(data, seed)
    indexed = ".index" in BESIDE[beside]
    for at in boundaries + inside:
        into = tmp_path / str(at)
        into.mkdir()
        journal = _cut(tuned, into, at, BESIDE[beside])
        whole = data[:data.rfind(b"\n", 0, at) + 1]  # the records the cut leaves whole
        left, held = whole.count(b"\n"), _completed(journal)
        notes: list[str] = []
        if indexed or at not in boundaries:
            with pytest.raises(StorageError) as raised:
                prepare_storage(journal, notes.append)
            message = str(raised.value)
            assert message.startswith(f"study storage {journal}: "), message
            if indexed:
                assert (f"it is {at} bytes long, but its writers left it {len(data)} bytes long with {records} "
                        f"records, {completed} completed trials") in message, message
                assert (f"{records - left} records are lost, with {completed - held} completed "
                        "trials") in message, message
            else:
                assert (f"line {left + 1} (byte {len(whole)}), is a record cut short, and there "
                        "is no studies.journal.index beside it") in message, message
                assert f"`truncate -s {len(whole)} {journal}`" in message
            assert journal.read_bytes() == data[:at], "a journal in error was changed"
            assert notes == []
        else:
            prepare_storage(journal, notes.append)
            if at:
                assert notes == [f"study journal {journal}: no studies.journal.index beside it, so a cut between "
                                 f"two of its records would not show; it holds {left} record"
                                 f"{'s' if left != 1 else ''}, {held} completed trial"
                                 f"{'s' if held != 1 else ''}, and has an index from now on"], (at, notes)
            assert journal.read_bytes() == data[:at]
        shutil.rmtree(into)


@pytest.mark.parametrize("beside", list(BESIDE))
def test_a_record_cut_short_after_the_indexed_records_is_removed_with_a_note(tuned, tmp_path, seed, beside):
    """What a killed writer leaves: the start of a record after the last one it completed."""
    data = (tuned / "studies.journal").read_bytes()
    last = data[data.rstrip(b"\n").rfind(b"\n") + 1:]
    partial = last[:random.Random(seed).randrange(1, len(last) - 1)]
    journal = _cut(tuned, tmp_path, len(data), BESIDE[beside])
    journal.write_bytes(data + partial)
    notes: list[str] = []
    if ".index" not in BESIDE[beside]:
        with pytest.raises(StorageError, match="is a record cut short, and there is no studies.journal.index"):
            prepare_storage(journal, notes.append)
        return
    prepare_storage(journal, notes.append)
    assert notes == [f"study journal {journal}: removed an incomplete last record ({len(partial)} bytes) left by "
                     "an interrupted write"]
    assert journal.read_bytes() == data


@pytest.mark.parametrize("where", ["mid-record", "at-a-newline"])
def test_tune_on_a_journal_cut_short_without_its_lock_file_stops_and_says_what_was_lost(
        tuned, tmp_path, capsys, fake_gpu, seed, where):
    """The reported case: a journal cut at a random byte, no lock file beside it, and no winner
    cached (so the problems would be tuned again)."""
    shutil.copytree(tuned, tmp_path / "state")
    (tmp_path / "state" / "studies.journal.flock").unlink()
    (tmp_path / "state" / "cache.sqlite").unlink()
    config = tmp_path / "tune.yaml"
    config.write_text(TWO_PROBLEMS.format(trials=3))
    journal = tmp_path / "state" / "studies.journal"
    data = journal.read_bytes()
    at = random.Random(seed).randrange(len(data) // 4, len(data) - 1)
    if where == "at-a-newline":
        at = data.rfind(b"\n", 0, at) + 1
    elif data[at - 1:at] == b"\n":
        at -= 1
    journal.write_bytes(data[:at])
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 2, out + err
    assert f"autoconv tune: error: study storage {journal}: it is {at} bytes long, but its writers left it" in err
    assert "completed trials" in err and "Traceback" not in err
    assert journal.read_bytes() == data[:at]
