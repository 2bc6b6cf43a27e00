"""The Optuna calls autoconv makes below the ``Study`` and ``Trial`` API, all in one place.

autoconv uses Optuna's public API only: studies and trials (ask, tell, enqueue, suggest, user
attributes), the storages it documents (``RDBStorage``, ``JournalStorage`` on a
``JournalFileBackend``: :mod:`autoconv.search.storage`) and ``optuna.storages.fail_stale_trials``.
Keeping other processes' trials alive, or failing them, needs more than the Study and Trial API
offers; these are public methods of the storage the studies live in (one autoconv opened,
:func:`autoconv.search.storage.make_storage`, or was given; never ``Study._storage``), which
Optuna's documentation says are meant for Optuna itself rather than its users. There is no
public alternative for any of them, so they stay here, where a change in Optuna shows up in one
module:

- a trial's storage id from its study's name and its number
  (``BaseStorage.get_study_id_from_name``, ``get_trial_id_from_study_id_trial_number``;
  ``FrozenTrial._trial_id`` would be private);
- user attributes of a trial that another process asked for, of which this process has no
  :class:`optuna.trial.Trial` (``BaseStorage.set_trial_user_attr``; building a
  ``Trial(study, trial_id)`` is discouraged by Optuna and runs the sampler's ``before_trial``);
- heartbeats. Optuna records them only inside ``Study.optimize``; the tuner asks and tells
  (it keeps several candidates in flight), so it records them itself
  (:class:`autoconv.search.liveness.Heartbeat`) with ``RDBStorage.get_heartbeat_interval`` and
  ``RDBStorage.record_heartbeat``, which implement an interface Optuna keeps in a private module
  (not imported here): of everything autoconv calls in Optuna, the likeliest to change.
  ``optuna.storages.fail_stale_trials`` (public, experimental) fails the trials whose heartbeat
  stopped.

What Optuna offers only through a private module, autoconv does without: a journal's replay
snapshot (:mod:`autoconv.search.journal_file`). The journal's records themselves are read, for
the damage check, as the JSON-lines file they are (:func:`autoconv.search.storage.check_journal`).
pyproject.toml bounds Optuna's major version.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, cast

import optuna
from optuna.storages import BaseStorage, RDBStorage


def trial_id(storage: BaseStorage, study: optuna.Study, number: int) -> int:
    """The storage's id of trial ``number`` of ``study`` (which lives in ``storage``)."""
    return storage.get_trial_id_from_study_id_trial_number(storage.get_study_id_from_name(study.study_name),
                                                           number)


def set_user_attrs(storage: BaseStorage, study: optuna.Study, number: int, attrs: Mapping[str, Any]) -> None:
    """Set user attributes of trial ``number`` of ``study``, one write each, in order.

    Raises:
        optuna.exceptions.UpdateFinishedTrialError: the trial has ended.
    """
    identifier = trial_id(storage, study, number)
    for name, value in attrs.items():
        storage.set_trial_user_attr(identifier, name, value)


def heartbeat_interval_s(storage: BaseStorage) -> int | None:
    """Seconds between heartbeats of ``storage``; None when it records none (a journal)."""
    return storage.get_heartbeat_interval() if isinstance(storage, RDBStorage) else None


def record_heartbeat(storage: BaseStorage, identifier: int) -> None:
    """A heartbeat of trial ``identifier`` (:func:`trial_id`), now."""
    cast(RDBStorage, storage).record_heartbeat(identifier)  # (called where heartbeat_interval_s is not None)


def fail_stale_trials(study: optuna.Study) -> None:
    """Fail ``study``'s trials whose heartbeat stopped, and run the storage's callback on
    each (:func:`autoconv.search.storage.retry_stale_trial`); nothing without heartbeats."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
