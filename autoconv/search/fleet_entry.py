"""A fleet worker process's first steps (:mod:`autoconv.search.fleet`), before it imports the tuner.

The run's session and the worker's job arrive pickled: their classes import the tuner (half a
second, more while the host's compiler processes start beside it), and the GPU worker is started
before that, so that its CUDA context and warm-up (seconds with an empty CuPy kernel cache) overlap
those imports, the storage's opening and the first compilations instead of holding back the first
results.
"""

from __future__ import annotations

import pickle
from multiprocessing.connection import Connection

from autoconv.gpu.worker import WorkerOptions, launch_worker
from autoconv.processes import exit_with_parent


def worker_process(session: bytes, job: bytes, gpu_device: int | None, connection: Connection, parent_pid: int,
                   compile_connection: Connection, warm_up_turn: int = 0) -> None:
    """Entry point of a fleet worker process: ``session`` is the run's pickled
    :class:`~autoconv.search.session.TuneSession`, ``job`` its own pickled
    :class:`~autoconv.search.fleet_worker.WorkerJob`; ``gpu_device`` the CUDA device whose GPU worker
    to start now (None with a backend that has none), at step ``warm_up_turn`` of its warm-up
    (:class:`~autoconv.gpu.worker.WorkerOptions`); ``parent_pid`` the parent's, with which
    this process ends (:func:`~autoconv.processes.exit_with_parent`); the rest as
    :func:`~autoconv.search.fleet_worker.worker_main`'s."""
    exit_with_parent(parent_pid)
    launched = None
    if gpu_device is not None:
        try:
            launched = launch_worker(WorkerOptions(device_id=gpu_device, warm_up_turn=warm_up_turn))
        except Exception:  # noqa: BLE001 - e.g. no process could be started: the backend's own start says why
            launched = None
    from autoconv.search.fleet_worker import worker_main

    worker_main(pickle.loads(session), pickle.loads(job), connection, compile_connection, launched=launched)
