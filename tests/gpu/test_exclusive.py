"""The GPU lock (autoconv.gpu.exclusive): one holder at a time across processes, released when
its holder dies. CPU-only: the lock is a file lock, named here by an explicit key."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import signal
import time

from autoconv.gpu.exclusive import GpuLock

BUS_ID = "0000:3B:00.0"
HOLD_S = 0.8


def _hold(folder: str, ready, seconds: float) -> None:
    with GpuLock(BUS_ID, folder):
        ready.set()
        time.sleep(seconds)


def _start_holder(folder, seconds: float):
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    holder = context.Process(target=_hold, args=(str(folder), ready, seconds))
    holder.start()
    assert ready.wait(60), "the holder never took the lock"
    return holder


def test_a_second_process_waits_until_the_holder_releases(tmp_path):
    holder = _start_holder(tmp_path, HOLD_S)
    lock = GpuLock(BUS_ID, tmp_path)
    started = time.perf_counter()
    with lock:
        waited = time.perf_counter() - started
    holder.join(30)
    assert waited >= HOLD_S / 2 and lock.waited_s >= HOLD_S / 2


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    holder = _start_holder(tmp_path, 600)
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(30)
    lock = GpuLock(BUS_ID, tmp_path)
    with lock:  # would wait ten minutes if the dead holder still held it
        pass
    assert lock.waited_s < 5


def _held_by_someone(path: str) -> bool:
    descriptor = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)  # (closing releases a lock this descriptor took)


def test_the_lock_nests_and_its_file_is_named_safely(tmp_path):
    lock = GpuLock("0000:3B:00.0/../x", tmp_path)
    assert os.path.dirname(lock.path) == str(tmp_path) and "/" not in os.path.basename(lock.path)
    with lock:
        with lock:  # re-entered by the same worker: no self-deadlock
            assert _held_by_someone(lock.path)
        assert _held_by_someone(lock.path)  # still held until the outer block ends
    assert not _held_by_someone(lock.path)
