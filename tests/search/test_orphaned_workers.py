"""A multi-worker tune whose parent is killed (SIGKILL: nothing of it runs again): its workers,
orphaned, end quietly -- no traceback from a pipe to the dead parent -- and leave no process
running. The kill is ordered by what the run writes (its progress, its journal), not by sleeps,
so each case kills where it says under any load. The GPU worker's side: one whose parent is gone
ends quietly too (here without a GPU: it fails to start CUDA and has no one to tell)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import fake_env, process_table, tune_argv

#: Four problems, so that a problem is done while others are still being tuned.
FOUR_PROBLEMS = """\
problems:
  - name: a
    spec: "N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1"
  - name: b
    spec: "N=1,C=8,H=9,W=9,K=12,R=1,S=1,bias=1"
  - name: c
    spec: "N=1,C=5,H=11,W=7,K=9,R=3,S=1,pad=1"
  - name: d
    spec: "N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1"
families: [direct]
budget: {trials: 16}
cache: state/cache.sqlite
storage: state/studies.journal
results: results
"""

#: Seconds to wait for an event of the run, and for the orphans to end (they look at their
#: parent every half second): generous bounds, not what orders anything.
EVENT_WAIT_S = 120
ORPHANS_END_S = 60


def _group_members(group: int) -> list[int]:
    """Live (not zombie) processes of process group ``group``, from /proc."""
    return [pid for pid, fields in process_table().items() if int(fields[2]) == group and fields[0] != "Z"]


def _workers_started(group: int) -> bool:
    """Whether the tune (the leader of process group ``group``) has started its two workers."""
    spawned = 0
    for pid in _group_members(group):
        try:
            spawned += b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
    return spawned >= 2


def _completed_trial_in(journal: Path) -> bool:
    try:
        data = journal.read_bytes()
    except FileNotFoundError:
        return False
    return any(b'"op_code":6' in line and b'"state":1' in line for line in data.splitlines())


#: When to kill the parent: the event the run writes first.
MOMENTS = {
    # the parent has started its workers (they are starting: imports, storage, backend)
    "starting": lambda run: _workers_started(run.process.pid),
    # a worker has completed a trial: they are searching, telling the parent after each trial
    "searching": lambda run: _completed_trial_in(run.folder / "state" / "studies.journal"),
    # a problem is done (the parent said so) and the others are being tuned
    "between-problems": lambda run: "✓ " in run.stderr(),
}


class Run:
    def __init__(self, folder: Path, argv: list[str], env: dict[str, str]):
        self.folder = folder
        self.stderr_path = folder / "stderr.txt"
        with open(self.stderr_path, "w") as stderr:
            # Its own process group: the parent, its workers and theirs, all writing to one stderr.
            self.process = subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=stderr,
                                            start_new_session=True)

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


@pytest.mark.parametrize("moment", [pytest.param("starting", marks=pytest.mark.slow), "searching",
                                    pytest.param("between-problems", marks=pytest.mark.slow)])
@pytest.mark.parametrize("fleet", ["two-gpus", "two-workers-per-gpu"])
def test_orphaned_workers_end_quietly_and_leave_nothing_running(tmp_path, moment, fleet):
    config = tmp_path / "tune.yaml"
    config.write_text(FOUR_PROBLEMS)
    argv = tune_argv(config) + (["--gpus", "all"] if fleet == "two-gpus" else ["--workers-per-gpu", "2"])
    run = Run(tmp_path, argv, fake_env(AUTOCONV_FAKE_DEVICES=2 if fleet == "two-gpus" else 1,
                                       AUTOCONV_FAKE_DELAY_S="0.03"))
    group = run.process.pid
    try:
        deadline = time.monotonic() + EVENT_WAIT_S
        while not MOMENTS[moment](run):
            assert run.process.poll() is None, f"the run ended before it could be killed:\n{run.stderr()}"
            assert time.monotonic() < deadline, f"no {moment} event in {EVENT_WAIT_S} s:\n{run.stderr()}"
            time.sleep(0.01)
        assert run.process.poll() is None, "the run ended before it could be killed"
        workers = [pid for pid in _group_members(group) if pid != group]
        os.kill(group, signal.SIGKILL)
        run.process.wait(timeout=30)
        deadline = time.monotonic() + ORPHANS_END_S
        while _group_members(group) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = _group_members(group)
    finally:
        try:
            os.killpg(group, signal.SIGKILL)  # (whatever is left: a failed test leaves nothing either)
        except ProcessLookupError:
            pass
    assert workers, "the parent had started no worker"
    assert not left, f"processes of the killed tune still run: {left}"
    stderr = run.stderr()
    assert "Traceback" not in stderr and "Error:" not in stderr, stderr


def test_a_gpu_worker_whose_parent_is_gone_ends_quietly(tmp_path):
    """Its parent's end of the pipe closed before it replied: nothing to tell, no traceback."""
    script = ("from autoconv.gpu.worker import WorkerOptions, launch_worker\n"
              "launched = launch_worker(WorkerOptions())\n"
              "launched.connection.close()  # (as a dead parent's end)\n"
              "launched.process.join(60)\n"
              "print(launched.process.exitcode)\n")
    done = subprocess.run([sys.executable, "-c", script], env=fake_env(), capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Error:" not in done.stderr, done.stderr
    assert done.stdout.strip() == "0"
