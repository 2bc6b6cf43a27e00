"""The snapshot of a journal's replay (autoconv.search.journal_snapshot): Optuna writes one as the
journal grows, the next process that opens the journal loads it and replays only what follows,
and a snapshot that does not match its journal (another file, another Optuna, a damaged pickle)
is ignored: the journal is replayed from its start, as without one. check_journal takes the
records a matching snapshot covers as checked, and still checks the rest."""

from __future__ import annotations

import json
import pickle

import optuna
import pytest
from optuna.storages.journal._storage import JournalStorageReplayResult

from autoconv.errors import StorageError
from autoconv.search import storage as storage_module
from autoconv.search.journal_snapshot import FORMAT, read_snapshot, snapshot_path, write_snapshot
from autoconv.search.storage import check_journal, make_storage

#: Optuna hands its backend a snapshot at every 100th trial created (trial ids 100, 200, ...).
TRIALS_TO_A_SNAPSHOT = 101


@pytest.fixture(autouse=True)
def _quiet():
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def _history(journal, trials=TRIALS_TO_A_SNAPSHOT, after=3):
    """A journal with one study of ``trials`` trials (a snapshot written at the 100th), then
    ``after`` more, which the snapshot does not cover."""
    study = optuna.create_study(study_name="history", storage=make_storage(journal))
    for number in range(trials + after):
        trial = study.ask()
        trial.suggest_int("tile", 1, 64)
        study.tell(trial, float(number))
    return study


def _contents(storage):
    """Everything a storage holds, comparable."""
    return [(study.study_name, [(t.number, t.state, t.params, t.values, t.user_attrs, t.system_attrs)
                                for t in storage.get_all_trials(study._study_id)])
            for study in storage.get_all_studies()]


@pytest.fixture
def applied(monkeypatch):
    """How many journal records each opening replays (Optuna's apply_logs, counted)."""
    counts: list[int] = []
    original = JournalStorageReplayResult.apply_logs

    def counting(self, logs):
        logs = list(logs)
        counts.append(len(logs))
        return original(self, logs)

    monkeypatch.setattr(JournalStorageReplayResult, "apply_logs", counting)
    return counts


def test_a_snapshot_is_written_as_the_journal_grows_and_covers_what_optuna_replayed(tmp_path):
    journal = tmp_path / "s.journal"
    _history(journal)
    header = json.loads(snapshot_path(journal).read_bytes().split(b"\n", 1)[0])
    assert header["format"] == FORMAT and header["optuna"] == optuna.__version__
    lines = journal.read_bytes().splitlines(keepends=True)
    assert 0 < header["lines"] < len(lines)  # (the 3 trials after it are not covered)
    assert header["bytes"] == sum(map(len, lines[:header["lines"]]))
    found = read_snapshot(journal, optuna.__version__)
    assert found is not None and pickle.loads(found.replay).log_number_read == header["lines"]


def test_opening_a_journal_with_a_snapshot_replays_only_what_follows_it(tmp_path, applied):
    journal = tmp_path / "s.journal"
    _history(journal)
    covered = read_snapshot(journal).covered_lines
    total = len(journal.read_bytes().splitlines())
    applied.clear()
    with_snapshot = _contents(make_storage(journal))
    assert sum(applied) == total - covered
    snapshot_path(journal).unlink()
    applied.clear()
    assert _contents(make_storage(journal)) == with_snapshot  # (a full replay: the same storage)
    assert sum(applied) == total


def _edit_header(journal, **changes):
    path = snapshot_path(journal)
    header, replay = path.read_bytes().split(b"\n", 1)
    path.write_bytes(json.dumps({**json.loads(header), **changes}).encode() + b"\n" + replay)


def _another_journal_of_the_same_length(journal):
    """The journal with one trial's value changed (5.0 -> 7.0) inside what the snapshot covers."""
    text = journal.read_bytes()
    changed = text.replace(b'"values":[5.0]', b'"values":[7.0]', 1)
    assert changed != text and len(changed) == len(text)
    journal.write_bytes(changed)


@pytest.mark.parametrize("damage", ["another journal", "journal cut shorter", "another optuna",
                                    "damaged pickle", "not a header", "unknown format"])
def test_a_snapshot_that_does_not_match_is_ignored_and_the_journal_replayed(tmp_path, applied, damage):
    journal = tmp_path / "s.journal"
    _history(journal)
    if damage == "another journal":
        _another_journal_of_the_same_length(journal)
    elif damage == "journal cut shorter":  # (shorter than the snapshot's cover: a new history at the path)
        journal.write_bytes(journal.read_bytes()[:read_snapshot(journal).covered_bytes - 1].rsplit(b"\n", 1)[0]
                            + b"\n")
    elif damage == "another optuna":
        _edit_header(journal, optuna="0.0.1")
    elif damage == "damaged pickle":
        path = snapshot_path(journal)
        data = bytearray(path.read_bytes())
        data[-10] ^= 0xFF
        path.write_bytes(bytes(data))
    elif damage == "not a header":
        snapshot_path(journal).write_bytes(b"garbage\n" + snapshot_path(journal).read_bytes())
    else:
        _edit_header(journal, format="autoconv journal snapshot 0")
    assert read_snapshot(journal, optuna.__version__) is None
    applied.clear()
    opened = make_storage(journal)
    assert sum(applied) == len(journal.read_bytes().splitlines())
    if damage == "another journal":
        values = [t.value for t in optuna.load_study(study_name="history", storage=opened).trials]
        assert values[5] == 7.0  # (the journal's, not the snapshot's 5.0)


def test_check_journal_reads_only_study_records_of_what_a_snapshot_covers(tmp_path, monkeypatch):
    journal = tmp_path / "s.journal"
    _history(journal)
    covered = read_snapshot(journal).covered_lines
    total = len(journal.read_bytes().splitlines())
    parsed: list[bytes] = []
    original = storage_module.json.loads
    monkeypatch.setattr(storage_module.json, "loads", lambda text: parsed.append(text) or original(text))
    assert check_journal(journal) == 0
    records = [text for text in parsed if isinstance(text, str)]  # (the header's is bytes)
    assert len(records) == total - covered + 1  # (the records after it, and the study's creation)


def test_check_journal_still_checks_the_records_after_a_snapshot(tmp_path):
    journal = tmp_path / "s.journal"
    _history(journal)
    with open(journal, "ab") as handle:
        handle.write(b'{"op_code":6,"worker_id":"w","trial_id":99999,"state":1,"values":[1.0]}\n')
    with pytest.raises(StorageError, match="names trial 99999, which no earlier record created"):
        check_journal(journal)


def test_damage_inside_what_a_snapshot_covered_is_still_found(tmp_path):
    """A journal changed inside the snapshot's cover no longer matches it: checked record by record."""
    journal = tmp_path / "s.journal"
    _history(journal)
    text = journal.read_bytes()
    lines = text.splitlines(keepends=True)
    lines[50] = b"x" * (len(lines[50]) - 1) + b"\n"  # (same length)
    journal.write_bytes(b"".join(lines))
    with pytest.raises(StorageError, match="line 51 .* is not JSON"):
        check_journal(journal)


def test_a_snapshot_that_cannot_be_written_leaves_the_journal_as_it_was(tmp_path, monkeypatch):
    journal = tmp_path / "s.journal"
    journal.write_bytes(b"")

    def refused(*args):
        raise PermissionError("read-only folder")

    monkeypatch.setattr("autoconv.search.journal_snapshot.os.replace", refused)
    assert not write_snapshot(journal, b"pickle", 0, 0, optuna.__version__)
    assert not snapshot_path(journal).exists() and list(tmp_path.iterdir()) == [journal]
    _history(journal)  # (Optuna's snapshots fail the same way; the tuning goes on)
    assert len(optuna.load_study(study_name="history", storage=make_storage(journal)).trials) == \
        TRIALS_TO_A_SNAPSHOT + 3
