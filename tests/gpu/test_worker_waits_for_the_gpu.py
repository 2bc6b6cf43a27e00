"""The per-candidate time limit counts from when the GPU worker holds the GPU, not from the
request: with several workers per GPU a candidate may wait behind the others' candidates
(autoconv.gpu.exclusive), and that wait is no hang. CPU only: a stand-in worker process speaks
the worker's protocol (ready; problem -> ok; evaluate -> started once it "holds the GPU", then
its result) with delays set through the environment.
"""

from __future__ import annotations

import os
import time

import pytest

from autoconv.backends.base import Status, TrialResult
from autoconv.backends.fake import FAKE_IDENTITY
from autoconv.gpu import backend as gpu_backend
from autoconv.gpu.backend import GpuWorker
from autoconv.gpu.worker import WorkerOptions
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.problems.problem import parse_spec

PROBLEM = parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1")


def stand_in_worker(connection, options: WorkerOptions) -> None:
    """Waits AUTOCONV_TEST_GPU_WAIT_S before "started" (another worker's turn), then
    AUTOCONV_TEST_RUN_S before the result (this candidate's own run)."""
    wait_s = float(os.environ["AUTOCONV_TEST_GPU_WAIT_S"])
    run_s = float(os.environ["AUTOCONV_TEST_RUN_S"])
    connection.send(("ready", (H100, FAKE_IDENTITY)))
    while True:
        kind, payload = connection.recv()
        if kind == "shutdown":
            return
        if kind == "problem":
            connection.send(("ok", None))
        elif kind == "evaluate":
            plan = payload[0]
            time.sleep(wait_s)
            connection.send(("started", None))
            time.sleep(run_s)
            result = TrialResult(status=Status.OK, reason="stand-in", kernel_name=plan.name, time_ms=1.0,
                                 min_ms=1.0, max_ms=1.0, error=0.0, tflops=1.0, run_s=run_s)
            connection.send(("result", result.as_dict(), False))


@pytest.fixture
def worker(monkeypatch):
    monkeypatch.setattr(gpu_backend, "worker_main", stand_in_worker)
    made = []

    def make(wait_s: float, run_s: float, timeout_s: float) -> GpuWorker:
        monkeypatch.setenv("AUTOCONV_TEST_GPU_WAIT_S", str(wait_s))
        monkeypatch.setenv("AUTOCONV_TEST_RUN_S", str(run_s))
        made.append(GpuWorker(WorkerOptions(), candidate_timeout_s=timeout_s))
        made[-1].start()
        return made[-1]

    yield make
    for one in made:
        one.close()


def plan():
    family = get_family("im2col_gemm")
    return family.plan(PROBLEM, family.space.default_config(PROBLEM, H100, 1 << 30), H100, 1 << 30)


def test_a_wait_for_the_gpu_longer_than_the_limit_is_no_timeout(worker):
    result = worker(wait_s=1.5, run_s=0.0, timeout_s=0.5).evaluate(plan(), b"", 0.0, seed=0)
    assert result.status is Status.OK, result.reason


def test_a_candidate_that_runs_past_the_limit_once_started_is_a_timeout(worker):
    result = worker(wait_s=0.0, run_s=3.0, timeout_s=0.5).evaluate(plan(), b"", 0.0, seed=0)
    assert result.status is Status.TIMEOUT
    assert "per-candidate limit of 0.5 s" in result.reason


def test_the_wait_for_the_gpu_has_its_own_limit(worker, monkeypatch):
    monkeypatch.setattr(gpu_backend, "GPU_WAIT_TIMEOUT_S", 0.5)
    result = worker(wait_s=3.0, run_s=0.0, timeout_s=10.0).evaluate(plan(), b"", 0.0, seed=0)
    assert result.status is Status.TIMEOUT
    assert "waiting for the GPU" in result.reason
