"""A GPU worker launched before its supervisor exists (:func:`autoconv.gpu.worker.launch_worker`,
as a fleet worker does before it imports the tuner) is the one the supervisor waits for and
uses; a lost one is replaced by a fresh worker as ever. CPU only: stand-in worker processes
speak the worker's protocol.
"""

from __future__ import annotations

import pytest

from autoconv.backends.fake import FAKE_IDENTITY
from autoconv.errors import BackendUnavailable
from autoconv.gpu import backend as gpu_backend
from autoconv.gpu.backend import GpuWorker
from autoconv.gpu.worker import WorkerOptions, launch_worker
from autoconv.kernels.limits import H100
from autoconv.problems.problem import parse_spec

PROBLEM = parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1")


def stand_in_worker(connection, options: WorkerOptions) -> None:
    """Ready at once; answers problems, and "which" with the (problem, seed) pairs it was sent;
    ends on shutdown."""
    connection.send(("ready", (H100, FAKE_IDENTITY)))
    received = []
    while True:
        kind, payload = connection.recv()
        if kind == "shutdown":
            return
        if kind == "problem":
            received.append(payload)
        connection.send(("ok", received if kind == "which" else None))


def refusing_worker(connection, options: WorkerOptions) -> None:
    """What a second worker would say: the supervisor must not start one."""
    connection.send(("unavailable", "a second GPU worker was started"))


def test_the_supervisor_adopts_the_worker_launched_before_it(monkeypatch):
    monkeypatch.setattr(gpu_backend, "worker_main", refusing_worker)
    launched = launch_worker(WorkerOptions(), target=stand_in_worker)
    worker = GpuWorker(WorkerOptions(), launched=launched)
    worker.start()
    try:
        assert worker.limits == H100 and worker.identity == FAKE_IDENTITY
        assert worker._process is launched.process
        worker._prepare(PROBLEM, 0)  # (it answers: the launched process is the one in use)
    finally:
        worker.close()
    assert launched.process.exitcode == 0  # (shut down, not killed)


def test_once_used_the_launched_worker_is_not_taken_again(monkeypatch):
    """A worker started after the first (a restart after a lost one) is a fresh process."""
    monkeypatch.setattr(gpu_backend, "worker_main", refusing_worker)
    worker = GpuWorker(WorkerOptions(), launched=launch_worker(WorkerOptions(), target=stand_in_worker))
    worker.start()
    worker.close()
    with pytest.raises(BackendUnavailable, match="a second GPU worker was started"):
        worker.start()


def test_a_worker_launched_with_other_options_is_refused():
    launched = launch_worker(WorkerOptions(device_id=1), target=stand_in_worker)
    try:
        with pytest.raises(ValueError, match="launched with"):
            GpuWorker(WorkerOptions(device_id=0), launched=launched)
    finally:
        launched.connection.send(("shutdown", None))
        launched.process.join(timeout=30)


def test_inputs_prepared_ahead_are_made_once_per_problem_and_seed(monkeypatch):
    """(the backend's dispatcher asks for them while no cubin is ready; an evaluation of the
    same problem then needs nothing more)"""
    monkeypatch.setattr(gpu_backend, "worker_main", stand_in_worker)
    worker = GpuWorker(WorkerOptions())
    worker.start()
    other = parse_spec("N=1,C=4,H=9,W=9,K=8,R=3,S=3,pad=1")
    try:
        for problem, seed in [(PROBLEM, 0), (PROBLEM, 0), (PROBLEM, 1), (other, 1), (other, 1)]:
            worker.prepare_inputs(problem, seed)
        assert worker._problem == (other, 1)
        worker._connection.send(("which", None))
        assert worker._receive(10, "listing")[1] == [(PROBLEM, 0), (PROBLEM, 1), (other, 1)]
    finally:
        worker.close()
    worker.prepare_inputs(PROBLEM, 0)  # (no live worker: left to the next evaluation to start one)
    assert worker._process is None
