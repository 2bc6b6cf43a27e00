"""CUDA source to cubin with NVRTC (through CuPy's bindings), in a pool of processes.

NVRTC compiles for the device's own architecture (``-arch=sm_XX``), so the cubin holds
machine code and loading it costs no JIT. Compiling needs no GPU and no CUDA context:
the tuner compiles the next candidates in :class:`CompilePool`'s processes while the GPU
worker verifies and times the current one.

A source the compiler rejects is an expected outcome (:class:`CompileOutcome` with
``ok=False`` and the compiler's log), not an exception.
"""

from __future__ import annotations

import concurrent.futures
import heapq
import itertools
import multiprocessing
import os
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from autoconv.errors import BackendUnavailable

#: Flags for every candidate: C++17 (the templates use constexpr lambdas and
#: ``if constexpr``); no fast-math, which would change float32 results.
NVRTC_FLAGS = ("-std=c++17",)
#: Seconds one compilation may take before it counts as failed.
DEFAULT_COMPILE_TIMEOUT_S = 300.0
#: Lines of the compiler log kept in a failure's reason.
LOG_LINES_IN_REASON = 12


@dataclass(frozen=True)
class CompileOutcome:
    ok: bool
    cubin: bytes
    log: str
    seconds: float             # wall time of the compilation
    cpu_seconds: float = 0.0   # CPU time of the compiling process meanwhile (less when it waited for a core)
    # Never compiled: dropped or cut short because its tuning process or the compile service
    # ended. Says nothing about the source, so the candidate is abandoned (and queued again),
    # not failed.
    interrupted: bool = False

    def reason(self) -> str:
        """The first lines of the compiler log that say what is wrong."""
        lines = [line for line in self.log.splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line.lower()] or lines
        shown = errors[:LOG_LINES_IN_REASON]
        more = len(errors) - len(shown)
        return "\n".join(shown) + (f"\n... ({more} more lines)" if more > 0 else "")


#: The CUDA headers autoconv's templates include, and what those include in turn.
TEMPLATE_HEADERS = ("cuda_runtime.h", "mma.h", "crt/mma.h", "cuda_pipeline.h")


#: The headers' folders of this process, once found (or given: :func:`use_include_dirs`).
_include_dirs: tuple[str, ...] | None = None


def cuda_include_dirs() -> tuple[str, ...]:
    """Folders with the CUDA headers templates may include (``mma.h``,
    ``cuda_pipeline.h``): CuPy's CUDA path, ``$CUDA_PATH``/``$CUDA_HOME``, nvcc's
    toolkit, ``/usr/local/cuda``; the first that has all of :data:`TEMPLATE_HEADERS`,
    else the first that has ``cuda_runtime.h``. (The pip-installed CUDA headers that
    CuPy may point at ship ``mma.h`` without the ``crt/mma.h`` it includes.)
    Found once per process (CuPy's path costs an import of CuPy), or given by the pool that
    started it (:func:`use_include_dirs`)."""
    global _include_dirs
    if _include_dirs is None:
        _include_dirs = _find_include_dirs()
    return _include_dirs


def use_include_dirs(folders: tuple[str, ...]) -> None:
    """Take ``folders`` as this process's :func:`cuda_include_dirs` (found by the process that
    started it)."""
    global _include_dirs
    _include_dirs = tuple(folders)


def _find_include_dirs() -> tuple[str, ...]:
    candidates: list[Path] = []
    try:
        import cupy
        cuda_path = cupy.cuda.get_cuda_path()
        if cuda_path:
            candidates.append(Path(cuda_path) / "include")
    except ImportError:
        pass
    for variable in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(variable):
            candidates.append(Path(os.environ[variable]) / "include")
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(Path(nvcc).resolve().parent.parent / "include")
    candidates.append(Path("/usr/local/cuda/include"))
    for folder in candidates:
        if all((folder / header).is_file() for header in TEMPLATE_HEADERS):
            return (str(folder),)
    for folder in candidates:
        if (folder / "cuda_runtime.h").is_file():
            return (str(folder),)
    return ()


def nvrtc_options(arch: str) -> tuple[str, ...]:
    return (f"-arch={arch}", *NVRTC_FLAGS, *(f"-I{folder}" for folder in cuda_include_dirs()))


def compile_source(source: str, arch: str, name: str = "kernel") -> CompileOutcome:
    """Compile ``source`` to a cubin for ``arch`` (e.g. ``sm_90``) with NVRTC.

    Returns an outcome with ``ok=False`` and the compiler log when NVRTC rejects the
    source. Raises :class:`~autoconv.errors.BackendUnavailable` without CuPy.
    """
    from autoconv.gpu.device import require_nvrtc

    nvrtc = require_nvrtc()
    started, started_cpu = time.perf_counter(), time.process_time()
    program = nvrtc.createProgram(source, f"{name}.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(program, list(nvrtc_options(arch)))
        except nvrtc.NVRTCError as err:
            log = _text(nvrtc.getProgramLog(program)) or str(err)
            return CompileOutcome(False, b"", log, time.perf_counter() - started,
                                  time.process_time() - started_cpu)
        cubin = bytes(nvrtc.getCUBIN(program))
        log = _text(nvrtc.getProgramLog(program))
    finally:
        nvrtc.destroyProgram(program)
    return CompileOutcome(True, cubin, log, time.perf_counter() - started, time.process_time() - started_cpu)


def _text(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else (value or "")


def _warm_up(parent_pid: int, include_dirs: tuple[str, ...]) -> None:
    """Pool initializer: end with the tuning process (:func:`exit_with_parent`: a killed
    run leaves no compiler behind); take the headers' folders the pool's process found
    (``include_dirs``) and import NVRTC's binding once per process, so the first candidate's
    compile time is the compiler's alone. (Without CuPy each compilation says so itself.)"""
    from autoconv.gpu.device import require_nvrtc
    from autoconv.processes import exit_with_parent

    exit_with_parent(parent_pid)
    use_include_dirs(include_dirs)
    try:
        require_nvrtc()
    except BackendUnavailable:
        return


def default_workers() -> int:
    """One compiler per core, less one for the GPU worker (NVRTC is single-threaded)."""
    return max(1, (os.cpu_count() or 2) - 1)


#: What compiles a source: ``compile_source``'s signature (a module-level function: it is
#: sent to the pool's processes by name).
CompileFunction = Callable[[str, str, str], CompileOutcome]


class CompileJob:
    """A source submitted to a :class:`Compiler` (for ``arch``: "" is the compiler's own)."""

    def __init__(self, source: str, name: str, arch: str = ""):
        self.source = source
        self.name = name
        self.arch = arch
        self.future: concurrent.futures.Future | None = None  # once a compiler process has it
        self.started = threading.Event()                      # set then (or once it is cancelled)
        self.submitted = 0.0
        self.finished = 0.0   # when its outcome arrived (time.monotonic(); 0 until then)
        self.restarts = 0
        self.outcome: CompileOutcome | None = None
        self._callbacks: list[Callable[[], None]] = []
        self._callbacks_lock = threading.Lock()

    def when_finished(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (from any thread) once the job's outcome has arrived; now if it has."""
        with self._callbacks_lock:
            if not self.finished:
                self._callbacks.append(callback)
                return
        callback()

    def mark_finished(self) -> None:
        """(The compiler's:) the outcome has arrived; tell whoever waits for that."""
        with self._callbacks_lock:
            self.finished = time.monotonic()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()


class Compiler(Protocol):
    """Compiles sources for one architecture ahead of when their results are needed:
    :class:`CompilePool`, or a worker's handle on a pool shared by the host's tuning
    processes (:class:`autoconv.gpu.compile_service.RemoteCompiler`)."""

    arch: str

    def submit(self, source: str, name: str, *, priority: float | None = None) -> CompileJob:
        """Compile ``source`` once a compiler is free and no job of a lower ``priority`` (a
        :func:`time.monotonic` moment; default: now) waits."""
        ...

    def ready(self, job: CompileJob) -> bool:
        """Whether :meth:`result` would return ``job``'s outcome without waiting for a compiler
        (also once a hung compilation is past its limit: ``result`` then fails it)."""
        ...

    def result(self, job: CompileJob) -> CompileOutcome:
        """Wait for ``job``; its outcome (never raises for a rejected source)."""
        ...

    def close(self) -> None: ...


def _finished(job: CompileJob, future: concurrent.futures.Future) -> None:
    """A pool's future of ``job`` done: its outcome has arrived, unless the future was ended by
    a restart of the pool (cancelled, or its process pool broken), which compiles it again."""
    if future.cancelled() or isinstance(future.exception(), BrokenProcessPool):
        return
    job.mark_finished()


#: The outcome of a job dropped before it was compiled (its owner went away).
CANCELLED = CompileOutcome(False, b"", "error: cancelled before it was compiled (its tuning process ended)", 0.0,
                           interrupted=True)


class CompilePool:
    """Compiles sources for ``arch`` (or the architecture each job names) in ``workers``
    processes (spawned, so no CUDA state is inherited), ahead of when their results are needed.
    The processes start with the first job, or all at once with :meth:`start`.

    A job waits for a free process, behind the jobs of a lower ``priority`` (by default, its
    arrival: first come, first served). The tuner gives each study's candidates the moment the
    study began, so that a study's rounds are not queued behind the start of a study begun after
    it (:func:`autoconv.search.scheduler.search_in_turn`).

    A compilation that runs past ``timeout_s`` (counted from the job's arrival, its wait for a
    process included) fails, and the pool is restarted to free its process; a compiler process
    that dies fails the job it ran after one retry. ``submit``, ``result`` and ``cancel`` may be
    called from different threads. ``compile_function`` compiles one source (NVRTC's
    :func:`compile_source`; tests pass a stand-in).
    """

    def __init__(self, arch: str, workers: int | None = None,
                 timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S, compile_function: CompileFunction | None = None):
        self.arch = arch
        self.workers = workers or default_workers()
        self.timeout_s = timeout_s
        self.compile_function = compile_function or compile_source
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None
        self._pending: list[CompileJob] = []    # the jobs whose outcome was not taken: waiting or compiling
        self._waiting: list[tuple[float, int, CompileJob]] = []  # a heap: (priority, arrival, job) for a process
        self._compiling: set[CompileJob] = set()  # those the processes have
        self._arrivals = itertools.count()
        self._feeding = True  # (off while a restart ends the processes)
        # Guards the executor and the jobs' lists; reentrant, as a future done at once calls back
        # (and a restart's cancelled futures do) in the thread that holds it.
        self._lock = threading.RLock()

    def _ensure_executor(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._executor is None:
            # The headers are found here, once, and handed to the processes: finding them
            # imports CuPy, ~2.5 CPU-s that each of ~15 processes starting at once paid before.
            include_dirs = cuda_include_dirs()
            self._executor = concurrent.futures.ProcessPoolExecutor(
                max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                initializer=_warm_up, initargs=(os.getpid(), include_dirs))
        return self._executor

    def start(self) -> None:
        """Start every compiler process now: each takes ~1 s to import CuPy and find the headers
        (:func:`_warm_up`), which a tuning run's first candidates would otherwise wait for."""
        with self._lock:
            executor = self._ensure_executor()
            # An executor spawns a process per job it cannot hand to an idle one: one empty job each.
            for _ in range(self.workers):
                executor.submit(int)

    def submit(self, source: str, name: str, arch: str = "", *, priority: float | None = None) -> CompileJob:
        """Compile ``source`` for ``arch`` (default: the pool's) once a process is free and no job
        of a lower ``priority`` waits (default: its arrival, :func:`time.monotonic`)."""
        job = CompileJob(source, name, arch or self.arch)
        with self._lock:
            job.submitted = time.monotonic()
            heapq.heappush(self._waiting, (job.submitted if priority is None else priority, next(self._arrivals), job))
            self._pending.append(job)
            self._feed()
        return job

    def _feed(self) -> None:
        """(with the lock held) Hand the waiting jobs, lowest priority first, to the free processes."""
        while self._feeding and self._waiting and len(self._compiling) < self.workers:
            _, _, job = heapq.heappop(self._waiting)
            if job.outcome is None:  # (not cancelled or past its limit while it waited)
                self._start(job)

    def _start(self, job: CompileJob) -> None:
        """(with the lock held)"""
        future = self._ensure_executor().submit(self.compile_function, job.source, job.arch, job.name)
        job.future = future
        self._compiling.add(job)
        job.started.set()
        future.add_done_callback(lambda done: self._done(job, done))

    def _done(self, job: CompileJob, future: concurrent.futures.Future) -> None:
        _finished(job, future)
        with self._lock:
            if job.future is future:  # (not a compilation a restart replaced)
                self._compiling.discard(job)
                self._feed()

    def ready(self, job: CompileJob) -> bool:
        future = job.future
        return (job.outcome is not None or (future is not None and future.done())
                or time.monotonic() - job.submitted > self.timeout_s)

    def result(self, job: CompileJob) -> CompileOutcome:
        """Wait for ``job``; its outcome (never raises for a rejected source). Its limit counts
        from its submission (or its resubmission after a restart)."""
        while job.outcome is None:
            future = job.future
            if future is None:  # (waiting for a process)
                left = job.submitted + self.timeout_s - time.monotonic()
                if left <= 0:
                    with self._lock:
                        if job.future is None and job.outcome is None:
                            job.outcome = CompileOutcome(False, b"", f"error: no compiler process was free within "
                                                         f"{self.timeout_s:g} s", self.timeout_s)
                    continue
                job.started.wait(left)
                continue
            try:
                job.outcome = future.result(timeout=max(0.0, job.submitted + self.timeout_s - time.monotonic()))
            except concurrent.futures.CancelledError:
                with self._lock:  # (a restart holds it until every job it cancelled is resubmitted)
                    restarted = job.future is not future
                if not restarted:  # cancelled for good (cancel(), or the pool closing)
                    job.outcome = CANCELLED
            except concurrent.futures.TimeoutError:
                with self._lock:
                    restarted = job.future is not future
                if restarted:  # (another job's restart compiles this one again, with a new limit)
                    continue
                job.outcome = CompileOutcome(False, b"", f"error: NVRTC did not finish within "
                                             f"{self.timeout_s:g} s", self.timeout_s)
                self._restart()
            except BrokenProcessPool:
                # Some compiler process died (NVRTC crashed); every job of the pool is
                # lost. Rerun them; the one that crashes it twice is a failure.
                job.restarts += 1
                if job.restarts > 1:
                    job.outcome = CompileOutcome(False, b"", "error: the NVRTC process crashed while "
                                                 "compiling this source (twice)", 0.0)
                with self._lock:
                    if job.future is future:  # not resubmitted by another restart yet
                        self._restart_locked()
        with self._lock:
            if job in self._pending:
                self._pending.remove(job)
        return job.outcome

    def cancel(self, job: CompileJob) -> None:
        """Drop ``job`` if no process has started compiling it (one that has runs on)."""
        with self._lock:
            if job.outcome is not None:
                return
            if job.future is None or job.future.cancel():
                job.outcome = CANCELLED  # (one waiting for a process is skipped when its turn comes)
                job.started.set()  # (a thread waiting for its result sees the outcome now)
                if job in self._pending:
                    self._pending.remove(job)

    def _restart(self) -> None:
        with self._lock:
            self._restart_locked()

    def _restart_locked(self) -> None:
        """Kill the pool's processes and compile again every job they had without an outcome, before
        the waiting ones; each job without an outcome gets a new limit."""
        compiling = [job for job in self._pending if job.outcome is None and job.future is not None]
        self._feeding = False  # (the cancelled futures' callbacks start nothing on the old processes)
        try:
            self._kill()
        finally:
            self._feeding = True
        self._compiling.clear()
        restarted = time.monotonic()
        for job in self._pending:
            if job.outcome is None:
                job.submitted = restarted
        for job in compiling:
            self._start(job)
        self._feed()

    def _kill(self) -> None:
        executor, self._executor = self._executor, None
        if executor is None:
            return
        # ProcessPoolExecutor cannot cancel a running task; ending its processes is the
        # only way to free a worker stuck in the compiler.
        kill = getattr(executor, "kill_workers", None)  # Python 3.14+
        if kill is not None:
            kill()
        else:
            for process in list(getattr(executor, "_processes", {}).values()):
                process.kill()
        executor.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        with self._lock:
            self._pending.clear()
            self._waiting.clear()
            if self._executor is not None:
                self._kill()
