"""Whose trials are alive: heartbeats for the trials this process evaluates, and failing
(then queueing again) the trials of processes that are gone, so that the candidates of a
killed worker are evaluated by the others.

A process claims each trial it asks for (the ``owner`` user attribute,
:func:`autoconv.search.study.claim`). A RUNNING trial is abandoned
(:meth:`Liveness.fail_abandoned`) when

- its owner ran on this host (same process namespace) and is dead, or is this process
  but not evaluating it (left by an earlier run here);
- through an RDB storage, its heartbeat stopped (any host): Optuna's
  ``fail_stale_trials``, whose callback queues the retry
  (:func:`autoconv.search.storage.retry_stale_trial`);
- it has no owner (its process was killed between asking for it and claiming it, which
  is the next write, milliseconds later), once it is as old as the heartbeat grace period
  (:attr:`Liveness.unclaimed_age_s`): it never had a heartbeat, so it is treated like a
  trial whose heartbeat stopped when it began. Such a trial holds no configuration (the
  claim comes before the first suggestion): failing it loses nothing. A live process that
  stalls longer than that before claiming finds its trial failed, and asks again.

Trials of live processes are left alone.
"""

from __future__ import annotations

import datetime
import threading
import time

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import TrialState

from autoconv.backends.base import Status
from autoconv.processes import owner_is_dead
from autoconv.search import optuna_adapter
from autoconv.search.storage import HEARTBEAT_GRACE_INTERVALS, heartbeat_interval_s, retry_trial
from autoconv.search.study import decision_attrs, owner_of, state_of


class Heartbeat:
    """Records a heartbeat for each trial being evaluated by this process, every
    ``interval_s`` seconds, in a daemon thread, so that other workers sharing an RDB
    storage can tell this process is alive (and, when the heartbeats stop, fail and
    retry its trials). Does nothing for storages without heartbeats (journal files)."""

    def __init__(self, storage):
        self.storage = storage
        interval = optuna_adapter.heartbeat_interval_s(storage)
        self.enabled = interval is not None
        self.interval_s = float(interval) if interval is not None else float(heartbeat_interval_s())
        self._trial_ids: dict[tuple[str, int], int] = {}  # (study name, trial number) -> storage id
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, study: optuna.Study, number: int) -> None:
        if not self.enabled:
            return
        trial_id = optuna_adapter.trial_id(self.storage, study, number)
        optuna_adapter.record_heartbeat(self.storage, trial_id)  # at once: a trial without any heartbeat is never stale
        with self._lock:
            self._trial_ids[(study.study_name, number)] = trial_id
            if self._thread is None:
                self._thread = threading.Thread(target=self._beat, name="autoconv-heartbeat", daemon=True)
                self._thread.start()

    def discard(self, study: optuna.Study, number: int) -> None:
        with self._lock:
            self._trial_ids.pop((study.study_name, number), None)

    def _beat(self) -> None:
        while True:
            time.sleep(self.interval_s)
            with self._lock:
                trial_ids = sorted(self._trial_ids.values())
            for trial_id in trial_ids:
                try:
                    optuna_adapter.record_heartbeat(self.storage, trial_id)
                except Exception:  # the database is unreachable for a moment: the next beat retries
                    pass


class Liveness:
    """This process (``owner``) among the others tuning the studies in ``storage``: the
    trials it is evaluating (with their heartbeats), and the abandoned trials of the
    others (see the module docstring)."""

    def __init__(self, storage, owner: str):
        self.storage = storage
        self.owner = owner
        self.heartbeat = Heartbeat(storage)
        #: Age (seconds) after which a RUNNING trial that no process claimed is abandoned.
        self.unclaimed_age_s = HEARTBEAT_GRACE_INTERVALS * self.heartbeat.interval_s
        self._evaluating: set[tuple[str, int]] = set()  # (study name, trial number)
        self._last_check = 0.0

    def evaluating(self, study: optuna.Study, number: int) -> None:
        """This process evaluates trial ``number`` of ``study`` from now on."""
        self._evaluating.add((study.study_name, number))
        self.heartbeat.add(study, number)

    def done(self, study: optuna.Study, number: int) -> None:
        """This process no longer evaluates trial ``number`` (it was told, or abandoned)."""
        self._evaluating.discard((study.study_name, number))
        self.heartbeat.discard(study, number)

    def fail_abandoned(self, study: optuna.Study, force: bool = False) -> int:
        """Fail the RUNNING trials of ``study`` whose processes are gone and queue their
        configurations again (:func:`autoconv.search.storage.retry_trial`). Runs at most
        once per heartbeat interval unless ``force``. Returns how many trials it failed
        (and so queued again)."""
        now_s = time.monotonic()
        if not force and now_s - self._last_check < self.heartbeat.interval_s:
            return 0
        self._last_check = now_s
        running = {t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))}
        optuna_adapter.fail_stale_trials(study)  # no-op without heartbeats (journal storage)
        now = datetime.datetime.now()
        still_running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        failed = len(running - {t.number for t in still_running}
                     - {t.number for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,
                                                                                   TrialState.PRUNED))})
        for frozen in still_running:
            owner = owner_of(frozen)
            if owner == self.owner:
                if (study.study_name, frozen.number) in self._evaluating:
                    continue
                reason = "an earlier run in this process ended before it was evaluated"
            elif owner:
                if not owner_is_dead(owner):
                    continue
                reason = f"its tuning process ({owner}) ended before it was evaluated"
            else:
                started = frozen.datetime_start
                if started is None or (now - started).total_seconds() < self.unclaimed_age_s:
                    continue
                reason = "no tuning process claimed it (the one that asked for it was killed)"
            try:
                optuna_adapter.set_user_attrs(self.storage, study, frozen.number,
                                              decision_attrs(Status.ABANDONED, reason))
                study.tell(frozen.number, state=state_of(Status.ABANDONED), skip_if_finished=True)
            except UpdateFinishedTrialError:  # another process starting now failed it first
                continue
            retry_trial(study, frozen, Status.ABANDONED.value)
            failed += 1
        return failed
