"""The GPU backend's order of evaluation, on the CPU: a candidate runs once its cubin is ready,
the earliest submitted of the ready ones first (autoconv.gpu.backend.ReadyFirst), and the
compilers say when a job is ready and call back when it is (CompileJob.when_finished)."""

from __future__ import annotations

import threading
import time

import pytest

from autoconv.gpu import backend as backend_module
from autoconv.gpu.backend import ReadyFirst
from autoconv.gpu.compile_service import CompileService, RemoteCompiler
from autoconv.gpu.compiler import CompileJob, CompilePool
from tests.gpu.test_compile_service import stand_in_compile


def test_the_first_ready_item_is_taken_whatever_was_submitted_before_it():
    ready: set[str] = set()
    items = ReadyFirst(lambda item: item in ready)
    for name in ("slow", "fast", "faster"):
        items.put(name)
    ready |= {"faster", "fast"}
    assert items.take() == "fast"    # (the earliest submitted of the ready ones)
    assert items.take() == "faster"
    ready.add("slow")
    assert items.take() == "slow"


def test_a_withdrawn_item_is_never_taken_and_a_taken_one_cannot_be_withdrawn():
    """(How the GPU backend withdraws the candidates of a study whose seconds are spent.)"""
    items = ReadyFirst(lambda item: True)
    for name in ("running", "waiting", "next"):
        items.put(name)
    assert items.take() == "running"
    assert not items.remove("running")  # (the GPU has it: its result is awaited)
    assert items.remove("waiting") and not items.remove("waiting")
    assert items.take() == "next"


def test_a_take_waits_until_an_item_is_made_ready_and_woken():
    ready: set[str] = set()
    items = ReadyFirst(lambda item: item in ready)
    items.put("a")
    taken: list[str | None] = []
    taker = threading.Thread(target=lambda: taken.append(items.take()))
    taker.start()
    time.sleep(0.1)
    assert not taken  # (nothing ready yet)
    ready.add("a")
    items.wake()
    taker.join(timeout=0.5)  # (well before READY_POLL_S: woken, not found by polling)
    assert taken == ["a"]


def test_while_nothing_is_ready_the_waiting_items_are_handed_over_before_each_wait():
    """(the GPU worker then prepares the inputs of the first waiting candidate's problem)"""
    ready: set[str] = set()
    items = ReadyFirst(lambda item: item in ready)
    items.put("first")
    items.put("second")
    seen: list[list[str]] = []

    def while_waiting(waiting: list[str]) -> None:
        seen.append(waiting)
        ready.add("second")  # (made ready while the call ran, its wake-up before any wait)
        items.wake()

    started = time.monotonic()
    assert items.take(while_waiting) == "second"
    assert seen == [["first", "second"]] and time.monotonic() - started < backend_module.READY_POLL_S / 2
    ready.add("first")
    assert items.take(lambda waiting: seen.append(waiting)) == "first"
    assert len(seen) == 1  # (not called when an item is ready)


def test_an_item_ready_without_notice_is_found_by_looking_again(monkeypatch):
    monkeypatch.setattr(backend_module, "READY_POLL_S", 0.05)
    deadline = time.monotonic() + 0.2
    items = ReadyFirst(lambda item: time.monotonic() > deadline)  # (a hung compilation past its limit)
    items.put("hung")
    assert items.take() == "hung" and time.monotonic() < deadline + 0.5


def test_once_closed_every_item_left_is_taken_in_order_then_none():
    items = ReadyFirst(lambda item: False)
    items.put("a")
    items.put("b")
    items.close()
    assert [items.take(), items.take(), items.take()] == ["a", "b", None]


def test_a_job_calls_back_when_finished_or_at_once_if_it_has():
    job = CompileJob("source", "name")
    calls: list[str] = []
    job.when_finished(lambda: calls.append("early"))
    assert calls == [] and not job.finished
    job.mark_finished()
    assert calls == ["early"] and job.finished
    job.when_finished(lambda: calls.append("late"))
    assert calls == ["early", "late"]


@pytest.mark.parametrize("kind", ["pool", "service"])
def test_compilers_say_when_a_job_is_ready_and_call_back(kind):
    """Both compilers: a job is not ready while it compiles, is ready once its outcome has
    arrived, and its callback ran by then."""
    service = CompileService(processes=1, compile_function=stand_in_compile) if kind == "service" else None
    compiler = (RemoteCompiler(service.connect(), "sm_90a") if service is not None
                else CompilePool("sm_90a", workers=1, compile_function=stand_in_compile))
    try:
        job = compiler.submit("300", "k")
        woken = threading.Event()
        job.when_finished(woken.set)
        assert not compiler.ready(job)
        assert woken.wait(timeout=30)
        assert compiler.ready(job) and compiler.result(job).ok
    finally:
        compiler.close()
        if service is not None:
            service.close()


def test_the_pool_calls_a_job_past_its_limit_ready_and_its_result_fails_it_at_once():
    """The limit counts from the submission: a dispatcher that takes the job once it is past
    its limit is not held up for another one."""
    pool = CompilePool("sm_90a", workers=1, timeout_s=0.5, compile_function=stand_in_compile)
    try:
        job = pool.submit("5000", "hung")
        assert not pool.ready(job)
        time.sleep(0.6)
        assert pool.ready(job)
        asked = time.monotonic()
        assert "did not finish within" in pool.result(job).log
        assert time.monotonic() - asked < 0.3
    finally:
        pool.close()


@pytest.mark.slow
def test_a_job_compiled_again_after_a_restart_calls_back_when_that_compilation_ends():
    """A restart of the pool (here: another job past its limit) ends the old compilation of each
    job without an outcome, and compiles it again; the job's callback waits for the new one.
    (The limit leaves the restarted pool's process time to start: it counts in the limit.)"""
    pool = CompilePool("sm_90a", workers=1, timeout_s=2.0, compile_function=stand_in_compile)
    try:
        hung, waiting = pool.submit("8000", "hung"), pool.submit("300", "waiting")
        called: list[float] = []
        waiting.when_finished(lambda: called.append(time.monotonic()))
        pool.result(hung)  # (past its limit: the pool restarts, and compiles `waiting` again)
        restarted = time.monotonic()
        assert pool.result(waiting).ok
        assert len(called) == 1 and called[0] >= restarted + 0.25
    finally:
        pool.close()


def test_closing_and_draining_takes_every_item_at_once():
    items = ReadyFirst(lambda item: False)
    items.put("a")
    items.put("b")
    assert items.close_and_drain() == ["a", "b"]
    assert items.take() is None


@pytest.mark.slow
def test_a_result_awaited_across_a_restart_is_the_new_compilations():
    """Threads waiting for jobs whose compilations a restart of the pool ended (another job past
    its limit) wait for their new compilations, instead of reporting them cancelled or failed.
    (The restart ends a queued job's future as cancelled or as broken, whichever the executor
    gets to first: before the fix this failed in about a third of the runs, not all.)"""
    pool = CompilePool("sm_90a", workers=1, timeout_s=2.0, compile_function=stand_in_compile)
    try:
        hung = pool.submit("8000", "hung")
        time.sleep(1.0)  # (their limits end after the hung job's)
        waiting = [pool.submit("100", f"waiting{k}") for k in range(8)]  # (queued behind it)
        outcomes: dict[int, object] = {}
        threads = [threading.Thread(target=lambda k=k: outcomes.__setitem__(k, pool.result(waiting[k])))
                   for k in range(8)]
        for thread in threads:
            thread.start()
        assert "did not finish within" in pool.result(hung).log  # (the restart)
        for thread in threads:
            thread.join(timeout=30)
        assert all(outcomes[k].ok for k in range(8)), outcomes
    finally:
        pool.close()
