"""The GPU worker's problem buffers (:class:`autoconv.gpu.worker.WorkerSession`): the problems used
last keep theirs, and inputs a kernel wrote are restored before the next candidate."""

from __future__ import annotations

import pytest

from autoconv.problems.problem import parse_spec

pytestmark = pytest.mark.gpu

SPECS = ["N=2,C=8,H=11,W=9,K=12,R=3,S=3,pad=1", "N=1,C=16,H=7,W=7,K=8,R=1,S=1",
         "N=2,C=4,H=13,W=13,K=4,R=3,S=1,pad=1x0,bias=1", "N=1,C=8,H=9,W=9,K=16,R=3,S=3,stride=2"]


@pytest.fixture
def session():
    from autoconv.gpu.device import read_device
    from autoconv.gpu.worker import WorkerOptions, WorkerSession

    limits, _ = read_device(0)
    return WorkerSession(limits, WorkerOptions())


def test_the_problems_used_last_keep_their_buffers(session):
    from autoconv.gpu.worker import PROBLEMS_KEPT

    problems = [parse_spec(spec) for spec in SPECS]
    assert PROBLEMS_KEPT == 3  # (the sequence below is written for it)
    made = {}
    for problem in problems[:2]:
        session.set_problem(problem, 1)
        made[problem] = session.buffers
    session.set_problem(problems[0], 1)  # (alternating: nothing made again)
    assert session.buffers is made[problems[0]] and session.buffers.problem == problems[0]
    session.set_problem(problems[0], 2)  # (another seed: other inputs)
    assert session.buffers is not made[problems[0]] and session.buffers.seed == 2
    session.set_problem(problems[2], 1)  # (a fourth: the least recently used, problem 1's, is freed)
    assert list(session.kept) == [(problems[0], 1), (problems[0], 2), (problems[2], 1)]
    session.set_problem(problems[1], 1)
    assert session.buffers is not made[problems[1]] and (problems[0], 1) not in session.kept


def test_inputs_a_kernel_wrote_are_restored(session):
    session.set_problem(parse_spec(SPECS[2]), 3)
    buffers = session.buffers
    buffers.x[...] = 0
    buffers.bias[...] = 1
    assert sorted(buffers.written_inputs()) == ["bias", "x"]
    buffers.restore_inputs()
    assert buffers.written_inputs() == []


def test_the_warm_up_runs_while_another_worker_holds_the_gpu(session):
    """Workers sharing a GPU warm up at once (their seconds are CuPy compiling), not one after
    another behind the lock that keeps kernels from running beside another's measurement; and
    the warm-up leaves no buffers behind."""
    import threading

    from autoconv.gpu.exclusive import GpuLock

    done = threading.Event()
    with GpuLock.for_device(0):  # (another worker measuring; a lock file of its own: flock excludes it too)
        warming = threading.Thread(target=lambda: (session.warm_up(), done.set()), daemon=True)
        warming.start()
        assert done.wait(timeout=120), "the warm-up waited for the GPU's lock"
    assert session.buffers is None and not session.kept


WARM_UP_SCRIPT = """
import sys
from autoconv.gpu.device import read_device
from autoconv.gpu.worker import WorkerOptions, WorkerSession
limits, _ = read_device(0)
for turn in map(int, sys.argv[1:]):
    WorkerSession(limits, WorkerOptions(warm_up_turn=turn)).warm_up()
"""


def test_every_warm_up_turn_compiles_the_same_kernels_and_one_after_another_none(tmp_path):
    """Each turn's order of the warm-up's steps compiles the same CuPy kernels (fresh kernel
    caches), so a GPU worker whose turn comes after another's finds its kernels on disk."""
    import os
    import subprocess
    import sys

    def cached_after(folder, *turns):
        environment = {**os.environ, "CUPY_CACHE_DIR": str(folder)}
        subprocess.run([sys.executable, "-c", WARM_UP_SCRIPT, *map(str, turns)], check=True, env=environment,
                       timeout=300)
        return sorted(path.name for path in folder.iterdir())

    kernels = [cached_after(tmp_path / f"turn{turn}", turn) for turn in range(3)]
    assert kernels[0] and kernels[0] == kernels[1] == kernels[2]
    shared = tmp_path / "shared"
    assert cached_after(shared, 1) == kernels[0]
    modified = {path.name: path.stat().st_mtime_ns for path in shared.iterdir()}
    cached_after(shared, 0, 2)  # (the others' turns, after it: nothing compiled again)
    assert {path.name: path.stat().st_mtime_ns for path in shared.iterdir()} == modified
