"""A study journal cut short at any byte is never taken for a whole one: a real journal (a tune on
the fake backend, finished or killed mid-search) is cut at every record boundary and inside
records, with and without its lock file and its index beside it. Where the index is there, every
cut is an error that names the records and completed trials lost; without it, a cut inside a record
is an error (it cannot be told from a crash's unfinished write, and the message says how to remove
it), and a cut between two records is a note saying what the journal holds; a record cut short
after all that the index counts (what a crash leaves) is removed with a note."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from optuna.trial import TrialState

from autoconv.commands.main import main
from autoconv.errors import StorageError
from autoconv.search.journal_index import read_index
from autoconv.search.storage import prepare_storage
from tests.helpers import TWO_PROBLEMS, fake_env, load_studies, run_cli, tune_argv

#: Which of the files autoconv keeps beside a journal are still there when it is cut.
BESIDE = {"lock-and-index": (".flock", ".index"), "index-only": (".index",), "neither": ()}


@pytest.fixture(scope="module", params=["finished", pytest.param("killed", marks=pytest.mark.slow)])
def tuned(request, tmp_path_factory) -> Path:
    """A folder with a tune's state (its journal, lock file, index and cache): of a tune that
    finished, or of one killed (SIGKILL) mid-search, once it had completed 3 trials, where the
    index counts more than the part of the journal forced to the disk."""
    folder = tmp_path_factory.mktemp(request.param)
    config = folder / "tune.yaml"
    if request.param == "finished":
        config.write_text(TWO_PROBLEMS.format(trials=3))
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("AUTOCONV_BACKEND", "fake")
            assert main(["tune", str(config)]) == 0
        return folder / "state"
    config.write_text(TWO_PROBLEMS.format(trials=40))
    journal = folder / "state" / "studies.journal"
    process = subprocess.Popen(tune_argv(config), cwd=folder, env=fake_env(AUTOCONV_FAKE_DELAY_S="0.05"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while _completed_records(journal) < 3:
            assert process.poll() is None and time.monotonic() < deadline, "the tune ended before it was killed"
            time.sleep(0.01)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert _completed_records(journal) < 80, "the tune finished before it was killed"
    return folder / "state"


def _completed_records(journal: Path) -> int:
    try:
        data = journal.read_bytes()
    except FileNotFoundError:
        return 0
    return sum(b'"op_code":6' in line and b'"state":1' in line for line in data.splitlines())


def _completed(journal: Path) -> int:
    """Completed trials in ``journal``, as plain Optuna reads it."""
    return sum(t.state == TrialState.COMPLETE for trials in load_studies(journal).values() for t in trials)


def _promised(state: Path) -> bytes:
    """The journal in ``state`` up to what its index counts: all a finished tune wrote; of a
    killed one all but, if the kill fell between an append and its count in the index, that one
    append (which a crash's unfinished write cannot be told from)."""
    journal = state / "studies.journal"
    promised = read_index(journal).written
    data = journal.read_bytes()[:promised.length]
    assert promised.completed >= 2 and data.endswith(b"\n")  # (3 completed: the last append maybe uncounted)
    copy = state.parent / "promised.journal"
    copy.write_bytes(data)
    assert (data.count(b"\n"), _completed(copy)) == (promised.records, promised.completed)
    return data


def _cut(state: Path, into: Path, data: bytes, beside: tuple[str, ...]) -> Path:
    """``data`` as the journal in ``into``, with what is ``beside`` the journal in ``state``."""
    journal = into / "studies.journal"
    journal.write_bytes(data)
    for suffix in beside:
        if (state / f"studies.journal{suffix}").exists():
            shutil.copy(state / f"studies.journal{suffix}", into / f"studies.journal{suffix}")
    return journal


#: At most this many record boundaries are cut at (each cut is checked, and read with Optuna, whole).
MAX_BOUNDARIES = 160


def _offsets(data: bytes, seed: int) -> tuple[list[int], list[int]]:
    """Every record boundary before the end (of a longer journal: the first and last 20 and others
    at random, :data:`MAX_BOUNDARIES` in all), and bytes inside records: 30 at random, and the first
    and the last of some."""
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    every = [0] + ends[:-1]
    rng = random.Random(seed)
    inside = {rng.randrange(len(data)) for _ in range(30)}
    inside |= {start + 1 for start in every[::len(every) // 5 + 1]} | {end - 1 for end in ends[::len(ends) // 5 + 1]}
    boundaries = every
    if len(every) > MAX_BOUNDARIES:
        boundaries = sorted(every[:20] + rng.sample(every[20:-20], MAX_BOUNDARIES - 40) + every[-20:])
    return boundaries, sorted(inside - set(every) - {len(data)})


@pytest.mark.parametrize("beside", list(BESIDE))
def test_a_journal_cut_anywhere_is_never_taken_for_a_whole_one(tuned, tmp_path, seed, beside):
    data = _promised(tuned)
    records, completed = data.count(b"\n"), read_index(tuned / "studies.journal").written.completed
    boundaries, inside = _offsets(data, seed)
    indexed = ".index" in BESIDE[beside]
    for at in boundaries + inside:
        into = tmp_path / str(at)
        into.mkdir()
        journal = _cut(tuned, into, data[:at], BESIDE[beside])
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
    data = _promised(tuned)
    last = data[data.rstrip(b"\n").rfind(b"\n") + 1:]
    partial = last[:random.Random(seed).randrange(1, len(last) - 1)]
    journal = _cut(tuned, tmp_path, data + partial, BESIDE[beside])
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
    data = _promised(tuned)
    (tmp_path / "state").mkdir()
    journal = _cut(tuned, tmp_path / "state", data, (".index",))
    config = tmp_path / "tune.yaml"
    config.write_text(TWO_PROBLEMS.format(trials=3))
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


def test_an_index_rewritten_shorter_by_a_writer_killed_before_cutting_it_is_read(tmp_path):
    """A writer writes the index over the old one, then cuts the file to its length: killed in
    between, it leaves the end of the older, longer index after the new one's line."""
    from autoconv.search.journal_index import index_path, record_whole

    journal = tmp_path / "j.journal"
    journal.write_bytes(b'{"op_code":0,"worker_id":"w","study_name":"s","directions":[1]}\n')
    record_whole(journal)
    line = index_path(journal).read_bytes()
    index_path(journal).write_bytes(line + b'1234567,89],"forced":[1,2,3]}\n')
    assert read_index(journal) is not None and read_index(journal).written.records == 1
