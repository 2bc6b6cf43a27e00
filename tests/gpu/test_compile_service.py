"""The host's shared compile pool (autoconv.gpu.compile_service) on the CPU: a stand-in compiler
function runs in the pool's processes instead of NVRTC, and the workers' ends of the pipes are
used from threads of this process."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest

from autoconv.gpu.compile_service import SERVICE_ENDED, CompileService, RemoteCompiler
from autoconv.gpu.compiler import CANCELLED, CompileOutcome


def stand_in_compile(source: str, arch: str, name: str) -> CompileOutcome:
    """``source`` is ``MILLISECONDS`` or ``MILLISECONDS:FOLDER``: takes that long, and adds a line
    to a file named ``name`` in the folder when given; the "cubin" names what was compiled, the log
    which process compiled it. Names starting "broken" fail."""
    milliseconds, _, folder = source.partition(":")
    if folder:
        with open(Path(folder, name), "a") as compiled:
            compiled.write(f"{os.getpid()}\n")
    time.sleep(int(milliseconds) / 1000)
    return CompileOutcome(ok=not name.startswith("broken"), cubin=f"{arch}/{name}/{source}".encode(),
                          log=str(os.getpid()), seconds=int(milliseconds) / 1000, cpu_seconds=int(milliseconds) / 1000)


@pytest.fixture
def service():
    made = CompileService(processes=2, compile_function=stand_in_compile)
    yield made
    made.close()


def test_workers_share_one_pool_and_get_their_own_outcomes(service):
    arches = ("sm_90a", "sm_90a", "sm_80")  # (a host with two kinds of GPU: one pool, each job its own arch)
    compilers = [RemoteCompiler(service.connect(), arch) for arch in arches]
    outcomes: dict[int, list[CompileOutcome]] = {}

    def work(index: int) -> None:
        jobs = [compilers[index].submit("20", f"w{index}k{k}") for k in range(6)]
        outcomes[index] = [compilers[index].result(job) for job in jobs]

    threads = [threading.Thread(target=work, args=(index,)) for index in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for index in range(3):
        assert [o.cubin for o in outcomes[index]] == [f"{arches[index]}/w{index}k{k}/20".encode() for k in range(6)]
    # 18 compilations from three workers ran in the service's two processes
    assert len({o.log for results in outcomes.values() for o in results}) <= 2
    for compiler in compilers:
        compiler.close()


def test_a_job_says_when_its_outcome_arrived(service):
    """(The backend's measure of a candidate's wait for a compiler process, in tune.json.)"""
    compiler = RemoteCompiler(service.connect(), "sm_90a")
    submitted = time.monotonic()
    jobs = [compiler.submit("200", f"k{k}") for k in range(3)]
    assert all(job.finished == 0.0 for job in jobs)  # (not yet)
    for job in jobs:
        compiler.result(job)
        assert submitted + 0.2 <= job.finished <= time.monotonic()
    # two processes for three 200-ms jobs: the last arrived at least 200 ms after the first
    first, _, last = sorted(job.finished for job in jobs)
    assert last - first >= 0.19
    compiler.close()


def test_a_rejected_source_is_an_outcome_and_the_service_goes_on(service):
    compiler = RemoteCompiler(service.connect(), "sm_90a")
    broken, good = compiler.submit("1", "broken"), compiler.submit("1", "good")
    assert not compiler.result(broken).ok and compiler.result(good).ok
    compiler.close()


def test_a_closing_worker_drops_its_waiting_jobs_not_the_others(service, tmp_path):
    leaving, staying = (RemoteCompiler(service.connect(), "sm_90a") for _ in range(2))
    queued = [leaving.submit(f"300:{tmp_path}", f"l{k}") for k in range(12)]
    time.sleep(0.1)
    leaving.close()
    # (a dropped job's outcome says so, or that the service closed the pipe first)
    assert all(job.outcome in (CANCELLED, SERVICE_ENDED) or (job.outcome is not None and job.outcome.ok)
               for job in queued)
    assert staying.result(staying.submit(f"10:{tmp_path}", "s")).ok
    # Two compiling and (the executor's queue) three handed to the processes ahead: those run;
    # the other seven are dropped. (After the staying job, nothing of the leaving one is left.)
    compiled = sorted(path.name for path in tmp_path.iterdir())
    assert "s" in compiled and len(compiled) - 1 <= 5, compiled
    staying.close()


def test_a_source_two_workers_send_is_compiled_once_and_kept(service, tmp_path):
    """The tuner's ranking build sends one source per configuration for every problem: workers
    asking for it while it compiles wait for that compilation, later ones get the kept cubin; the
    first request carries the CPU time, the others none. A failure is not kept."""
    compilers = [RemoteCompiler(service.connect(), "sm_90a") for _ in range(3)]
    source = f"300:{tmp_path}"
    jobs = [compiler.submit(source, "shared") for compiler in compilers]
    outcomes = [compiler.result(job) for compiler, job in zip(compilers, jobs)]
    assert len(Path(tmp_path, "shared").read_text().splitlines()) == 1   # compiled once
    assert {o.cubin for o in outcomes} == {f"sm_90a/shared/{source}".encode()} and all(o.ok for o in outcomes)
    assert sorted(o.cpu_seconds for o in outcomes) == [0.0, 0.0, 0.3]
    again = compilers[0].result(compilers[0].submit(source, "shared"))
    assert again.ok and again.cubin == outcomes[0].cubin and again.seconds == again.cpu_seconds == 0.0
    assert len(Path(tmp_path, "shared").read_text().splitlines()) == 1
    # another architecture, or another name, is another compilation
    compilers[1].result(RemoteCompiler(service.connect(), "sm_80").submit(source, "shared"))
    compilers[1].result(compilers[1].submit(source, "other"))
    assert len(Path(tmp_path, "shared").read_text().splitlines()) == 2
    assert Path(tmp_path, "other").exists()
    for _ in range(2):
        assert not compilers[2].result(compilers[2].submit(source, "broken")).ok
    assert len(Path(tmp_path, "broken").read_text().splitlines()) == 2   # not kept: compiled again
    for compiler in compilers:
        compiler.close()


def test_a_leaving_worker_leaves_a_compilation_another_waits_for(service, tmp_path):
    leaving, staying = (RemoteCompiler(service.connect(), "sm_90a") for _ in range(2))
    blockers = [leaving.submit(f"400:{tmp_path}", f"b{k}") for k in range(2)]   # both processes busy
    shared = f"50:{tmp_path}"
    leaving.submit(shared, "shared")
    waiting = staying.submit(shared, "shared")
    time.sleep(0.1)
    leaving.close()
    outcome = staying.result(waiting)
    assert outcome.ok and outcome.cubin == f"sm_90a/shared/{shared}".encode()
    assert all(job.outcome is not None for job in blockers)
    staying.close()


def test_a_worker_waiting_when_the_service_ends_gets_an_outcome_saying_so():
    service = CompileService(processes=1, compile_function=stand_in_compile)
    compiler = RemoteCompiler(service.connect(), "sm_90a")
    job = compiler.submit("2000", "slow")
    time.sleep(0.2)
    service.close()
    assert compiler.result(job) is SERVICE_ENDED
    assert "compile service ended" in SERVICE_ENDED.reason()
    assert SERVICE_ENDED.interrupted  # (the backend abandons the candidate: not a compile failure)
    compiler.close()


def test_the_pool_cancels_a_job_no_process_has_started():
    from autoconv.gpu.compiler import CompilePool

    pool = CompilePool("sm_90a", workers=1, compile_function=stand_in_compile)
    try:
        # (the executor hands a job beyond its processes' to them ahead: that one is started too)
        running = [pool.submit("300", "running"), pool.submit("10", "handed")]
        waiting = pool.submit("10", "waiting")
        time.sleep(0.1)
        pool.cancel(waiting)
        assert pool.result(waiting) is CANCELLED and CANCELLED.interrupted
        assert all(pool.result(job).ok for job in running)
    finally:
        pool.close()


def test_started_the_service_spawns_its_compiler_processes_before_any_job():
    def spawned() -> set[int | None]:
        return {child.pid for child in multiprocessing.active_children()} - before

    before = {child.pid for child in multiprocessing.active_children()}  # (earlier tests' pools, exiting)
    service = CompileService(processes=2, compile_function=stand_in_compile)
    try:
        service.start()
        deadline = time.monotonic() + 30
        while len(spawned()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(spawned()) == 2
        compiler = RemoteCompiler(service.connect(), "sm_90a")
        assert compiler.result(compiler.submit("1", "first")).ok
        compiler.close()
    finally:
        service.close()


def test_the_pool_hands_a_free_process_the_waiting_job_of_lowest_priority():
    """(A study's rounds before the start of a study begun after it: the tuner gives each study's
    candidates the moment it began.) Without a priority, a job waits behind every one given."""
    from autoconv.gpu.compiler import CompilePool

    pool = CompilePool("sm_90a", workers=1, compile_function=stand_in_compile)
    try:
        busy = pool.submit("300", "busy")
        time.sleep(0.1)  # (its process has it)
        jobs = {name: pool.submit("20", name, priority=priority)
                for name, priority in [("late", 3.0), ("first", 1.0), ("unranked", None), ("second", 2.0)]}
        assert pool.result(busy).ok and all(pool.result(job).ok for job in jobs.values())
        assert sorted(jobs, key=lambda name: jobs[name].finished) == ["first", "second", "late", "unranked"]
    finally:
        pool.close()


def test_the_service_compiles_the_waiting_jobs_of_every_worker_by_priority(service):
    older, newer = (RemoteCompiler(service.connect(), "sm_90a") for _ in range(2))
    busy = [older.submit("300", f"busy{k}") for k in range(2)]  # (both processes)
    time.sleep(0.1)
    began = time.monotonic()
    late = [newer.submit("50", f"newer{k}", priority=began) for k in range(4)]  # (a study begun now)
    early = [older.submit("50", f"older{k}", priority=began - 10.0) for k in range(4)]  # (one begun before)
    assert all(compiler.result(job).ok for compiler, jobs in ((older, busy + early), (newer, late)) for job in jobs)
    assert max(job.finished for job in early) <= min(job.finished for job in late)
    older.close()
    newer.close()


def test_a_job_waiting_for_a_process_can_be_cancelled_and_is_skipped():
    from autoconv.gpu.compiler import CompilePool

    pool = CompilePool("sm_90a", workers=1, compile_function=stand_in_compile)
    try:
        busy, waiting, after = pool.submit("200", "busy"), pool.submit("10", "waiting"), pool.submit("10", "after")
        outcomes = []
        waiter = threading.Thread(target=lambda: outcomes.append(pool.result(waiting)))
        waiter.start()  # (waiting for its result, which no process will compute)
        time.sleep(0.05)
        cancelled = time.monotonic()
        pool.cancel(waiting)
        waiter.join(timeout=5)
        assert outcomes == [CANCELLED] and time.monotonic() - cancelled < 1.0
        assert pool.result(waiting) is CANCELLED and waiting.future is None  # (never handed to a process)
        assert pool.result(busy).ok and pool.result(after).ok
    finally:
        pool.close()


def report_headers_and_imports(source: str, arch: str, name: str) -> CompileOutcome:
    """A stand-in compiler that says which headers' folders its process uses and whether CuPy
    (not only its NVRTC binding) was imported there."""
    import json
    import sys

    from autoconv.gpu.compiler import cuda_include_dirs

    return CompileOutcome(True, b"", json.dumps({"dirs": cuda_include_dirs(), "cupy": "cupy" in sys.modules}), 0.0)


def test_the_pool_finds_the_headers_once_and_its_processes_do_not_import_cupy(monkeypatch):
    """Finding the headers imports CuPy (~2.5 CPU-s): the pool's own process finds them and hands
    them to its compiler processes, which import only NVRTC's binding."""
    import json

    from autoconv.gpu import compiler
    from autoconv.gpu.compiler import CompilePool

    monkeypatch.setattr(compiler, "_include_dirs", ("/found/by/the/pool/include",))
    pool = CompilePool("sm_90a", workers=1, compile_function=report_headers_and_imports)
    try:
        reported = json.loads(pool.result(pool.submit("source", "k")).log)
    finally:
        pool.close()
    assert reported == {"dirs": ["/found/by/the/pool/include"], "cupy": False}
