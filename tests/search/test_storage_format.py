"""The journal's record format as check_journal reads it (autoconv.search.storage) against the
records this Optuna writes: everything a tune does through Optuna's public API writes records
whose op codes check_journal knows, and a journal of them passes the check unchanged. An Optuna
that writes another format fails here, not in a user's tune."""

from __future__ import annotations

import json

import optuna
import pytest

from autoconv.search import storage as storage_module
from autoconv.search.journal_index import read_index
from autoconv.search.storage import check_journal, make_storage, sync_storage


@pytest.fixture(autouse=True)
def _quiet():
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_every_record_optuna_writes_for_a_tune_is_one_check_journal_knows(tmp_path):
    journal = tmp_path / "studies.journal"
    storage = make_storage(journal)
    study = optuna.create_study(study_name="kept", storage=storage)
    study.set_user_attr("config", "x")
    study.enqueue_trial({"tile": 8}, user_attrs={"origin": "queued"})
    for number in range(3):
        trial = study.ask()
        trial.set_user_attr("owner", "test")
        tile = trial.suggest_int("tile", 1, 64)
        trial.suggest_categorical("order", ["rsc", "crs"])
        trial.report(float(tile), step=0)
        study.tell(trial, float(tile) if number else None, state=None if number else optuna.trial.TrialState.FAIL)
    study.add_trial(optuna.trial.create_trial(params={"tile": 4}, distributions={
        "tile": optuna.distributions.IntDistribution(1, 64)}, value=4.0))
    optuna.create_study(study_name="dropped", storage=storage)
    optuna.delete_study(study_name="dropped", storage=storage)
    sync_storage(storage)

    size = journal.stat().st_size
    assert check_journal(journal) == [] and journal.stat().st_size == size
    # The index counts the completed trials as Optuna reads them (a trial told, and one added whole).
    completed = [t for t in study.get_trials() if t.state == optuna.trial.TrialState.COMPLETE]
    assert read_index(journal).written.completed == len(completed) == 3
    written = {json.loads(line)["op_code"] for line in journal.read_text().splitlines()}
    known = storage_module._STUDY_OPS.keys() | storage_module._TRIAL_OPS.keys() | storage_module._OTHER_OPS.keys()
    assert written <= known
    # (the tune above writes at least these: study and trial creation, deletion, attributes,
    # parameters, intermediate values and states)
    assert {0, 1, 2, 4, 5, 6, 7, 8} <= written
