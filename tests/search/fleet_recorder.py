"""A fleet worker's entry point that first keeps what the worker received (the run's session and
its job, as the worker unpickles them) in ``<results>/received-<worker>.pickle``, then runs the
real one: for the tests that every option reaches the workers (the parent swaps it in for
:func:`autoconv.search.fleet_entry.worker_process`; a worker process imports it by name)."""

from __future__ import annotations

import pickle

from autoconv.search.fleet_entry import worker_process


def recording_worker_process(session: bytes, job: bytes, *args) -> None:
    received, own = pickle.loads(session), pickle.loads(job)
    received.config.results.mkdir(parents=True, exist_ok=True)
    (received.config.results / f"received-{own.worker}.pickle").write_bytes(pickle.dumps((received, own)))
    worker_process(session, job, *args)
