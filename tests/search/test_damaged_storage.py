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
from autoconv.errors import StorageError
from autoconv.problems.config import Budget
from autoconv.search.storage import JournalFlock, check_journal, make_storage
from autoconv.search.study import study_name
from autoconv.search.tuner import Tuner
from tests.helpers import ONE_PROBLEM, SMALL, completed, fake_env, load_studies, run_cli, trial_key

GOOD_RECORD = b'{"op_code":0,"worker_id":"w","study_name":"s","directions":[1]}\n'


@pytest.mark.parametrize("content, fragment", [
    (b"\x00\x01binary junk" * 40, "line 1 is not an Optuna journal record"),
    (b"line one\nline two\n", "line 1 is not JSON"),
    (b'{"a": 1}\n', "line 1 is not an Optuna journal record (no integer op_code)"),
    (GOOD_RECORD + b'{"op_code": 0, "worker_id": "w"}\n', "Optuna cannot replay it"),
    (GOOD_RECORD + b"\x00" * 64 + b"\n" + GOOD_RECORD, "line 2 is not JSON"),
    (GOOD_RECORD + b"\xff\xfe\n", "line 2 is not UTF-8 text"),
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


def test_a_journal_cut_short_is_repaired_and_the_study_resumes(tmp_path, capsys, fake_gpu, seed):
    config = tmp_path / "tune.yaml"
    config.write_text(ONE_PROBLEM)
    assert run_cli(capsys, "tune", config)[0] == 0
    journal = tmp_path / "state" / "studies.journal"
    data = journal.read_bytes()
    before = {trial_key(t) for trials in load_studies(journal).values() for t in completed(trials)}

    # Cut inside a record (as a write that never completed would): at a random byte of
    # the last quarter that is not just after a newline.
    rng = random.Random(seed)
    cut = rng.randrange(3 * len(data) // 4, len(data) - 1)
    while data[cut - 1:cut] == b"\n":
        cut -= 1
    journal.write_bytes(data[:cut])
    kept = data[:cut].rfind(b"\n") + 1
    # Without the cached winner, tune opens the study again (and re-verifies its best).
    assert run_cli(capsys, "cache", "clear", "--cache", tmp_path / "state" / "cache.sqlite")[0] == 0
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 0, out + err
    assert f"removed an incomplete last record ({cut - kept} bytes)" in err
    assert journal.read_bytes()[:kept] == data[:kept]
    after = load_studies(journal)
    keys = [trial_key(t) for trials in after.values() for t in completed(trials)]
    assert len(keys) == len(set(keys)) == 3
    survived = {trial_key(t) for trials in load_studies_from_bytes(tmp_path, data[:kept]).values()
                for t in completed(trials)}
    assert survived <= set(keys) and survived <= before


def load_studies_from_bytes(tmp_path: Path, content: bytes) -> dict[str, list]:
    copy = tmp_path / "copy.journal"
    copy.write_bytes(content)
    return load_studies(copy)


def test_check_journal_cuts_only_a_record_cut_short(tmp_path):
    journal = tmp_path / "j.journal"
    journal.write_bytes(GOOD_RECORD + GOOD_RECORD[:20])
    assert check_journal(journal) == 20 and journal.read_bytes() == GOOD_RECORD
    assert check_journal(journal) == 0
    journal.write_bytes(GOOD_RECORD + b'{"op_co')  # shorter than a record's start
    assert check_journal(journal) == 7
    journal.write_bytes(GOOD_RECORD + b"junk without a newline")
    with pytest.raises(StorageError, match="line 2 is not an Optuna journal record"):
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


def test_a_trial_no_process_claimed_is_abandoned_once_old(tmp_path, monkeypatch):
    import autoconv.search.liveness

    tuner = Tuner(FakeBackend(), storage=str(tmp_path / "j.journal"), families=("direct",), budget=Budget(trials=2))
    study = optuna.create_study(study_name=study_name(SMALL.problem, FAKE_IDENTITY.gpu_name, ("direct",)),
                                storage=tuner.storage, direction="minimize")
    unclaimed = study.ask()  # its process was killed before it wrote its owner

    def state():
        trial, = [t for t in study.get_trials(deepcopy=False) if t.number == unclaimed.number]
        return trial.state, trial.user_attrs.get("status")
    tuner.tune_problem(SMALL)
    assert state() == (TrialState.RUNNING, None)  # young: maybe a live process about to claim it
    monkeypatch.setattr(autoconv.search.liveness, "UNCLAIMED_TRIAL_AGE_S", 0.0)
    tuner.tune_problem(SMALL)
    assert state() == (TrialState.FAIL, "abandoned")
