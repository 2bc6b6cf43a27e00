"""Reliability (issue 7): a damaged study storage is a clear error naming the file and the
way out (exit status 2, no traceback), or, for a journal whose last record was cut short,
a repair; what a killed process leaves behind (a journal lock, a trial it never claimed)
holds nobody up."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from autoconv.backends.fake import FAKE_IDENTITY, FakeBackend
from autoconv.config.budget import Budget
from autoconv.errors import StorageError
from autoconv.search.journal_index import record_whole
from autoconv.search.options import SearchSettings
from autoconv.search.storage import JournalFlock, check_journal, make_storage
from autoconv.search.study import study_name
from autoconv.search.tuner import Tuner
from tests.helpers import ONE_PROBLEM, SMALL, completed, fake_env, load_studies, run_cli, trial_key

GOOD_RECORD = b'{"op_code":0,"worker_id":"w","study_name":"s","directions":[1]}\n'


@pytest.mark.parametrize("content, fragment", [
    (b"\x00\x01binary junk" * 40, "line 1 (byte 0) is not an Optuna journal record"),
    (b"line one\nline two\n", "line 1 (byte 0) is not JSON"),
    (b'{"a": 1}\n', "line 1 (byte 0) is not an Optuna journal record (no integer op_code)"),
    (GOOD_RECORD + b'{"op_code": 0, "worker_id": "w"}\n', "Optuna cannot replay it"),
    (GOOD_RECORD + b"\x00" * 64 + b"\n" + GOOD_RECORD, f"line 2 (byte {len(GOOD_RECORD)}) is not JSON"),
    (GOOD_RECORD + b"\xff\xfe\n", f"line 2 (byte {len(GOOD_RECORD)}) is not UTF-8 text"),
], ids=["binary", "text", "foreign-json", "bad-record", "hole", "not-utf8"])
def test_a_damaged_journal_stops_tune_with_the_file_and_the_way_out(tmp_path, capsys, fake_gpu,
                                                                    content, fragment):
    config = tmp_path / "tune.yaml"
    config.write_text(ONE_PROBLEM)
    journal = tmp_path / "state" / "studies.journal"
    journal.parent.mkdir()
    journal.write_bytes(content)
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 2, out + err
    assert f"autoconv tune: error: study storage {journal}: {fragment}" in err, err
    assert "Move it away or delete it" in err and "winners already cached stay" in err
    assert "Traceback" not in err
    assert journal.read_bytes() == content  # left as it was for the user to look at
    journal.unlink()
    assert run_cli(capsys, "tune", config)[0] == 0


def test_a_journal_that_cannot_be_replayed_stops_a_fleet_with_one_line(tmp_path, capsys, fake_gpu):
    """A fleet's parent process does not replay the journal (each worker does, once): the workers
    all fail on it, and the error says so once, naming them, the file and the way out."""
    config = tmp_path / "tune.yaml"
    config.write_text(ONE_PROBLEM)
    journal = tmp_path / "state" / "studies.journal"
    journal.parent.mkdir()
    journal.write_bytes(GOOD_RECORD + b'{"op_code": 0, "worker_id": "w"}\n')
    code, out, err = run_cli(capsys, "tune", config, "--workers-per-gpu", "2")
    assert code == 2, out + err
    assert (f"every tuning worker failed:\n  GPU 0 #1, GPU 0 #2: study storage {journal}: "
            "Optuna cannot replay it") in err, err
    failed = err.split("every tuning worker failed:\n", 1)[1].splitlines()
    assert len(failed) == 1 and "Move it away or delete it" in failed[0]
    assert "Traceback" not in err


def test_a_journal_cut_short_is_repaired_and_the_study_resumes(tmp_path, capsys, fake_gpu, seed):
    config = tmp_path / "tune.yaml"
    config.write_text(ONE_PROBLEM)
    assert run_cli(capsys, "tune", config)[0] == 0
    journal = tmp_path / "state" / "studies.journal"
    data = journal.read_bytes()
    before = {trial_key(t) for trials in load_studies(journal).values() for t in completed(trials)}

    # A write that never completed: the start of a record after the last complete one
    # (here a copy of the last record, cut at a random byte of it).
    rng = random.Random(seed)
    last = data[data.rstrip(b"\n").rfind(b"\n") + 1:]
    partial = last[:rng.randrange(1, len(last) - 1)]
    journal.write_bytes(data + partial)
    cut, kept = len(data) + len(partial), len(data)
    # Without the cached winner, tune opens the study again (and re-verifies its best).
    assert run_cli(capsys, "cache", "clear", "--cache", tmp_path / "state" / "cache.sqlite")[0] == 0
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 0, out + err
    assert f"removed an incomplete last record ({cut - kept} bytes)" in err
    assert journal.read_bytes()[:kept] == data[:kept]
    after = load_studies(journal)
    keys = [trial_key(t) for trials in after.values() for t in completed(trials)]
    assert len(keys) == len(set(keys)) == 3
    assert before <= set(keys)  # nothing completed was lost


def test_prepare_storage_repairs_a_journal_without_replaying_it(tmp_path):
    """A fleet's parent prepares the storage for its workers: the journal's cut-short last record
    is removed (and said), but the journal is not replayed (a record Optuna cannot replay is the
    workers' error, each of which replays it anyway); a database gets its tables."""
    from autoconv.search.storage import prepare_storage

    journal = tmp_path / "new" / "studies.journal"
    unreplayable = GOOD_RECORD + b'{"op_code": 0, "worker_id": "w"}\n'
    journal.parent.mkdir()
    journal.write_bytes(unreplayable)
    _index(journal)
    journal.write_bytes(unreplayable + GOOD_RECORD[:20])
    notes: list[str] = []
    prepare_storage(journal, notes.append)
    assert journal.read_bytes() == unreplayable
    assert notes == [f"study journal {journal}: removed an incomplete last record (20 bytes) left by an "
                     "interrupted write"]
    with pytest.raises(StorageError, match="Optuna cannot replay it"):
        make_storage(journal)
    prepare_storage(tmp_path / "folder" / "made.journal")
    assert (tmp_path / "folder").is_dir()
    prepare_storage(f"sqlite:///{tmp_path / 'studies.db'}")
    assert optuna.get_all_study_summaries(make_storage(f"sqlite:///{tmp_path / 'studies.db'}")) == []


def load_studies_from_bytes(tmp_path: Path, content: bytes) -> dict[str, list]:
    copy = tmp_path / "copy.journal"
    copy.write_bytes(content)
    return load_studies(copy)


def _index(journal: Path) -> None:
    """Record the journal's length, records and completed trials in its index, as its writers do."""
    record_whole(journal)


def _repaired(journal: Path, cut: int) -> list[str]:
    return [f"study journal {journal}: removed an incomplete last record ({cut} bytes) left by an interrupted write"]


def test_check_journal_cuts_only_a_record_cut_short(tmp_path):
    journal = tmp_path / "j.journal"
    journal.write_bytes(GOOD_RECORD)
    _index(journal)
    journal.write_bytes(GOOD_RECORD + GOOD_RECORD[:20])
    assert check_journal(journal) == _repaired(journal, 20) and journal.read_bytes() == GOOD_RECORD
    assert check_journal(journal) == []
    journal.write_bytes(GOOD_RECORD + b'{"op_co')  # shorter than a record's start
    assert check_journal(journal) == _repaired(journal, 7)
    journal.write_bytes(GOOD_RECORD + b"junk without a newline")
    with pytest.raises(StorageError, match=rf"line 2 \(byte {len(GOOD_RECORD)}\) is not an Optuna journal record"):
        check_journal(journal)
    assert journal.read_bytes() == GOOD_RECORD + b"junk without a newline"
    with pytest.raises(StorageError, match="is a folder"):
        check_journal(tmp_path)


def test_an_unreadable_database_storage_is_a_clear_error(tmp_path, capsys, fake_gpu):
    pytest.importorskip("sqlalchemy")
    config = tmp_path / "tune.yaml"
    config.write_text(ONE_PROBLEM)
    database = tmp_path / "studies.db"
    database.write_bytes(b"\x00not a database" * 100)
    code, out, err = run_cli(capsys, "tune", config, "--storage", f"sqlite:///{database}")
    assert code == 2 and f"study storage sqlite:///{database}: cannot open it" in err, err
    assert "Traceback" not in err


def test_a_killed_journal_writer_holds_no_lock(tmp_path):
    journal = tmp_path / "j.journal"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from autoconv.search.storage import JournalFlock; "
         "JournalFlock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(600)", str(journal)],
        stdout=subprocess.PIPE, text=True, env=fake_env())
    try:
        assert holder.stdout.readline().strip() == "held"
        def wait_for_the_lock():
            lock = JournalFlock(journal)
            lock.acquire()
            lock.release()
        waiter = threading.Thread(target=wait_for_the_lock, daemon=True)
        waiter.start()
        waiter.join(timeout=0.5)
        assert waiter.is_alive(), "the lock did not exclude a second writer"
    finally:
        holder.kill()
        holder.wait()
    waiter.join(timeout=5)
    assert not waiter.is_alive(), "the lock of a killed process was not released"
    started = time.monotonic()
    storage = make_storage(journal)
    optuna.create_study(storage=storage, study_name="after-the-kill")
    assert time.monotonic() - started < 5


def test_a_trial_no_process_claimed_is_abandoned_once_old(tmp_path):
    tuner = Tuner(FakeBackend(), SearchSettings(("direct",), Budget(trials=2)), storage=str(tmp_path / "j.journal"))
    study = optuna.create_study(study_name=study_name(SMALL.problem, FAKE_IDENTITY.gpu_name, ("direct",)),
                                storage=tuner.storage, direction="minimize")
    unclaimed = study.ask()  # its process was killed before it wrote its owner

    def state():
        trial, = [t for t in study.get_trials(deepcopy=False) if t.number == unclaimed.number]
        return trial.state, trial.user_attrs.get("status")
    tuner.tune_problem(SMALL)
    assert state() == (TrialState.RUNNING, None)  # young: maybe a live process about to claim it
    assert tuner.liveness.unclaimed_age_s == 60.0  # the heartbeat grace period: 6 x 10 s
    tuner.liveness.unclaimed_age_s = 0.0
    tuner.tune_problem(SMALL)
    assert state() == (TrialState.FAIL, "abandoned")


def test_a_process_that_stalls_before_claiming_asks_again(tmp_path, monkeypatch):
    """Another process failed this one's trial as unclaimed while it stalled (longer than
    the grace period) between asking and claiming: it asks for another trial and goes on."""
    import autoconv.search.proposals
    from autoconv.search.liveness import Liveness

    tuner = Tuner(FakeBackend(), SearchSettings(("direct",), Budget(trials=3)), storage=str(tmp_path / "j.journal"))
    real_claim, stalled = autoconv.search.proposals.claim, []

    def claim_after_a_stall(trial, owner):
        if not stalled:
            stalled.append(trial.number)
            other = Liveness(tuner.storage, "another-host:1")
            other.unclaimed_age_s = 0.0
            assert other.fail_abandoned(trial.study, force=True) == 1
        real_claim(trial, owner)
    monkeypatch.setattr(autoconv.search.proposals, "claim", claim_after_a_stall)
    outcome = tuner.tune_problem(SMALL)
    assert outcome.time_ms is not None and outcome.trials_run == 3
    study = optuna.load_study(study_name=outcome.study_name, storage=tuner.storage)
    first, = [t for t in study.trials if t.number == stalled[0]]
    assert first.state == TrialState.FAIL and first.user_attrs["status"] == "abandoned"


# ---- damage a crash cannot cause: an error, never a quiet repair (issue 18, finding 3) ----

def _tuned_journal(tmp_path, capsys, problems: str = ONE_PROBLEM) -> tuple[Path, Path, bytes]:
    config = tmp_path / "tune.yaml"
    config.write_text(problems)
    assert run_cli(capsys, "tune", config)[0] == 0
    journal = tmp_path / "state" / "studies.journal"
    assert run_cli(capsys, "cache", "clear", "--cache", tmp_path / "state" / "cache.sqlite")[0] == 0
    return config, journal, journal.read_bytes()


@pytest.mark.parametrize("where", ["mid-record", "at-a-newline"])
def test_a_journal_cut_to_half_is_an_error_not_a_repair(tmp_path, capsys, fake_gpu, where):
    config, journal, data = _tuned_journal(tmp_path, capsys)
    half = len(data) // 2
    if where == "at-a-newline":
        half = data[:half].rfind(b"\n") + 1
    elif data[half - 1:half] == b"\n":
        half -= 1
    with open(journal, "r+b") as handle:  # in place, as a full disk or a bad copy would
        handle.truncate(half)
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 2, out + err
    assert f"study storage {journal}: it is {half} bytes long, but its writers left it {len(data)} bytes" in err
    assert "records are lost, with 3 completed trials" in err and "move the journal away" in err
    assert "removed an incomplete" not in err
    assert journal.read_bytes() == data[:half]  # left as it was


def _record(**fields) -> bytes:
    import json
    return json.dumps(fields, separators=(",", ":")).encode() + b"\n"


@pytest.mark.parametrize("extra, fragment", [
    (_record(op_code=6, worker_id="w", trial_id=10_000, state=1, values=[1.0], datetime_complete=None),
     "(set trial state) names trial 10000, which no earlier record created"),
    (_record(op_code=4, worker_id="w", study_id=77, datetime_start=None),
     "(create trial) names study 77, which no earlier record created"),
    (_record(op_code=99, worker_id="w"), "has op code 99, which this Optuna does not know"),
], ids=["unknown-trial", "unknown-study", "unknown-op-code"])
def test_records_naming_what_does_not_exist_are_errors(tmp_path, capsys, fake_gpu, extra, fragment):
    config, journal, data = _tuned_journal(tmp_path, capsys)
    journal.write_bytes(data + extra)
    lines = data.count(b"\n")
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 2, out + err
    assert f"study storage {journal}: line {lines + 1} (byte {len(data)}) {fragment}" in err, err
    assert "Traceback" not in err and "AssertionError" not in err
    assert journal.read_bytes() == data + extra


def test_a_lost_first_half_is_an_error(tmp_path):
    """Records whose study or trial was created in a part of the file that is gone."""
    journal = tmp_path / "j.journal"
    study = _record(op_code=0, worker_id="w", study_name="s", directions=[1])
    trial = _record(op_code=4, worker_id="w", study_id=0, datetime_start=None)
    update = _record(op_code=8, worker_id="w", trial_id=0, user_attr={"a": 1})
    journal.write_bytes(study + trial + update)
    assert check_journal(journal) == [f"study journal {journal}: no j.journal.index beside it, so a cut between "
                                      "two of its records would not show; it holds 3 records, 0 completed trials, "
                                      "and has an index from now on"]
    journal.write_bytes(update)
    with pytest.raises(StorageError, match=r"line 1 \(byte 0\) \(set trial user attr\) names trial 0"):
        check_journal(journal)
    journal.write_bytes(trial + update)
    with pytest.raises(StorageError, match=r"line 1 \(byte 0\) \(create trial\) names study 0"):
        check_journal(journal)


def test_only_a_prefix_of_json_after_the_indexed_length_is_repaired(tmp_path):
    journal = tmp_path / "j.journal"
    journal.write_bytes(GOOD_RECORD)
    _index(journal)  # records the length the writers left: len(GOOD_RECORD)
    for tail in (b'{"op_code":0,"worker_id":"w","study_name":"s","direc', b'{"op_code":5,"x":"\\u00',
                 b'{"op_code":0,"worker_id":"w","study_name":"s","directions":[1]}'):
        journal.write_bytes(GOOD_RECORD + tail)
        assert check_journal(journal) == _repaired(journal, len(tail)), tail
        assert journal.read_bytes() == GOOD_RECORD
    for tail in (b'{"op_code":0,"a"}', b'{"op_code":0]', b'{"op_code":0,"a":xyz', b'{"op_code":0,"\x00'):
        journal.write_bytes(GOOD_RECORD + tail)
        with pytest.raises(StorageError, match="line 2"):
            check_journal(journal)
        assert journal.read_bytes() == GOOD_RECORD + tail
    # Cut inside the completed record: shorter than the writers left it.
    journal.write_bytes(GOOD_RECORD[:30])
    with pytest.raises(StorageError, match="it is 30 bytes long, but its writers left it"):
        check_journal(journal)
    # A journal moved away (the way out the message gives), or deleted, and started afresh is not
    # compared with the old one's index.
    other = GOOD_RECORD.replace(b'"w"', b'"v"')  # (another process's first record)
    journal.rename(tmp_path / "old.journal")
    journal.write_bytes(other)
    assert "no j.journal.index beside it" in check_journal(journal)[0]
    journal.write_bytes(other + GOOD_RECORD[:20])
    assert check_journal(journal) == _repaired(journal, 20)
    journal.unlink()
    assert check_journal(journal) == []  # (forgets the index)
    assert not (tmp_path / "j.journal.index").exists()
