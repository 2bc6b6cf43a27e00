"""One compile pool for every tuning process of a host.

``autoconv tune`` runs several worker processes (one or more per GPU: :mod:`autoconv.search.fleet`).
With a pool each, the host's cores are divided among them, and a worker whose study is starting
(24 candidates to compile at once) waits on its share while another worker's share idles. Here
the parent process holds one :class:`~autoconv.gpu.compiler.CompilePool`
(:class:`CompileService`), and each worker compiles through it (:class:`RemoteCompiler`, a
:class:`~autoconv.gpu.compiler.Compiler` like the pool), so any idle core takes the next source,
whoever submitted it. Jobs are compiled in the order of their priority (a moment of the host's
monotonic clock: a tuner gives each study's candidates the moment the study began), else of their
arrival. (On two GPUs of one host the compilers still kept ~18 of 32 cores busy: the workers'
own pace of asking for candidates, not the division of the cores, is what leaves the rest idle;
docs/lab-notes/2026-11-29-two-gpus-on-one-host.md.)

One source is compiled once: a job whose architecture, name and source another worker's job is
compiling waits for that compilation, and a source compiled before is answered from the last
:data:`COMPILED_ENTRIES` cubins without compiling (at no CPU cost). The workers tune different
problems, and a family whose sources hold no problem sizes (the tuner's ranking build of
implicit_gemm_wgmma) sends the same source for each problem it tries a configuration on.

The two talk over a pipe per worker: ``("compile", number, arch, source, name, priority)`` and
``("close",)`` one way, ``(number, outcome)`` the other. A worker that closes its end, or dies,
has its jobs not yet started dropped; a parent that dies ends the workers' waits with a failed
outcome that says so (and the workers themselves: they watch their parent).
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import hashlib
import itertools
import multiprocessing
import os
import socket
import threading
from multiprocessing.connection import Connection

from autoconv.gpu.compiler import DEFAULT_COMPILE_TIMEOUT_S, CompileFunction, CompileJob, CompileOutcome, CompilePool

#: Threads of the service waiting on jobs' outcomes to send them back (each waits on one job;
#: more jobs than this are in flight only when the workers' pipelines hold that many).
REPLY_THREADS = 256

#: Cubins kept for sources sent again (a wgmma cubin is ~0.1-0.3 MB).
COMPILED_ENTRIES = 512

#: The outcome of a job whose service ended before replying.
SERVICE_ENDED = CompileOutcome(False, b"", "error: the host's compile service ended (the tuning run is "
                                            "ending)", 0.0, interrupted=True)


class CompileService:
    """The parent's side: one :class:`CompilePool` of ``processes`` compiler processes (each job
    names its GPU architecture), serving every :meth:`connect`-ed worker. A job's ``timeout_s``
    counts from its arrival, its wait in the queue included: the workers' pipelines queue seconds
    of work, the limit is minutes. :meth:`start` starts the processes before the first job."""

    def __init__(self, processes: int, timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S,
                 compile_function: CompileFunction | None = None):
        self.processes = processes
        self.timeout_s = timeout_s
        self.compile_function = compile_function
        self._pool: CompilePool | None = None
        self._replies = concurrent.futures.ThreadPoolExecutor(REPLY_THREADS, "autoconv-compile-reply")
        self._serving: set[Connection] = set()  # our ends of the pipes, until their threads close them
        self._lock = threading.Lock()  # guards the pool, the pipes being served and the two below
        self._compiling: dict[tuple[str, str], _SharedJob] = {}   # by (arch, digest of name and source)
        self._compiled: collections.OrderedDict[tuple[str, str], CompileOutcome] = collections.OrderedDict()
        self._requests = itertools.count()   # every worker's requests, numbered apart

    def connect(self) -> Connection:
        """A worker's end of a new pipe to this service (pass it to the worker's process and
        close this process's copy once it has started); a thread here serves the other end."""
        ours, theirs = multiprocessing.Pipe(duplex=True)
        with self._lock:
            self._serving.add(ours)
        threading.Thread(target=self._serve, args=(ours,), name="autoconv-compile-service", daemon=True).start()
        return theirs

    def start(self) -> None:
        """Start the compiler processes now, while the workers start their GPUs (~1 s of imports
        each, in parallel, that the first candidates would otherwise wait for)."""
        self._compile_pool().start()

    def _compile_pool(self) -> CompilePool:
        with self._lock:
            if self._pool is None:
                self._pool = CompilePool("", self.processes, self.timeout_s, self.compile_function)
            return self._pool

    def _serve(self, connection: Connection) -> None:
        sending = threading.Lock()
        jobs: dict[int, tuple[tuple[str, str], int]] = {}   # this worker's jobs: their key and request

        def send(number: int, outcome: CompileOutcome) -> None:
            try:
                with sending:
                    connection.send((number, outcome))
            except (OSError, ValueError):  # (the worker is gone)
                pass

        def reply(number: int) -> None:
            key, request = jobs[number]
            send(number, self._outcome(key, request))
            del jobs[number]

        try:
            while True:
                message = connection.recv()
                if message[0] != "compile":
                    break
                _, number, arch, source, name, priority = message
                key, request = (arch, hashlib.sha256(f"{name}\0{source}".encode()).hexdigest()), next(self._requests)
                pool = self._compile_pool()
                with self._lock:
                    compiled = self._compiled.get(key)
                    if compiled is not None:
                        self._compiled.move_to_end(key)
                    elif key in self._compiling:
                        self._compiling[key].waiting.add(request)
                    else:
                        job = pool.submit(source, name, arch, priority=priority)
                        self._compiling[key] = _SharedJob(pool, job, request, {request})
                if compiled is not None:  # compiled before: no CPU spent on it now
                    send(number, dataclasses.replace(compiled, seconds=0.0, cpu_seconds=0.0))
                    continue
                jobs[number] = (key, request)
                self._replies.submit(reply, number)
        except (EOFError, OSError):
            pass
        except RuntimeError:  # (the reply threads were shut down: the service is closing)
            pass
        for key, request in list(jobs.values()):  # dropped, unless another worker waits for it too
            with self._lock:
                shared = self._compiling.get(key)
                if shared is not None and request in shared.waiting:
                    shared.waiting.discard(request)
                    if not shared.waiting:
                        shared.pool.cancel(shared.job)
        with self._lock:  # (the worker's receiver sees the end; replies still due are dropped)
            self._serving.discard(connection)
            connection.close()

    def _outcome(self, key: tuple[str, str], request: int) -> CompileOutcome:
        """The outcome of the compilation of ``key`` for ``request``: the request that started
        it carries its compile time, the others only their wait (no CPU). An ok outcome is kept
        for the source's next request."""
        with self._lock:
            shared = self._compiling[key]
        outcome = shared.pool.result(shared.job)
        with self._lock:
            shared.waiting.discard(request)
            if not shared.waiting and self._compiling.get(key) is shared:
                del self._compiling[key]
                if outcome.ok:
                    self._compiled[key] = outcome
                    while len(self._compiled) > COMPILED_ENTRIES:
                        self._compiled.popitem(last=False)
        return outcome if request == shared.first else dataclasses.replace(outcome, cpu_seconds=0.0)

    def close(self) -> None:
        """End the pools' processes; workers still waiting get :data:`SERVICE_ENDED`."""
        with self._lock:
            for connection in self._serving:  # (each one's thread then closes it)
                _shut_down(connection)
            if self._pool is not None:
                self._pool.close()
                self._pool = None
        self._replies.shutdown(wait=False, cancel_futures=True)


@dataclasses.dataclass
class _SharedJob:
    """One compilation of a source, and the requests (of any worker) waiting for it."""

    pool: CompilePool
    job: CompileJob
    first: int           # the request that started it
    waiting: set[int]


class RemoteJob(CompileJob):
    """A job of a :class:`RemoteCompiler`: its number on the pipe, and when its outcome came."""

    def __init__(self, source: str, name: str, number: int):
        super().__init__(source, name)
        self.number = number
        self.done = threading.Event()


class RemoteCompiler:
    """A worker's :class:`~autoconv.gpu.compiler.Compiler` for ``arch`` through its pipe to a
    :class:`CompileService`. ``submit`` and ``result`` may be called from different threads."""

    def __init__(self, connection: Connection, arch: str):
        self.arch = arch
        self._connection = connection
        self._waiting: dict[int, RemoteJob] = {}
        self._numbers = itertools.count()
        self._lock = threading.Lock()  # guards the waiting jobs and the pipe's sending end
        self._receiver = threading.Thread(target=self._receive, name="autoconv-compile-receiver", daemon=True)
        self._receiver.start()

    def submit(self, source: str, name: str, *, priority: float | None = None) -> CompileJob:
        with self._lock:
            job = RemoteJob(source, name, next(self._numbers))
            self._waiting[job.number] = job
            try:
                self._connection.send(("compile", job.number, self.arch, source, name, priority))
            except (OSError, ValueError):
                self._finish(job.number, SERVICE_ENDED)
        return job

    def ready(self, job: CompileJob) -> bool:
        assert isinstance(job, RemoteJob)  # (this compiler's submit's)
        return job.done.is_set()

    def result(self, job: CompileJob) -> CompileOutcome:
        """Wait for ``job``; its outcome (never raises for a rejected source)."""
        assert isinstance(job, RemoteJob)  # (this compiler's submit's)
        job.done.wait()
        assert job.outcome is not None  # (set before done)
        return job.outcome

    def _finish(self, number: int, outcome: CompileOutcome) -> None:
        """(with the lock held)"""
        job = self._waiting.pop(number, None)
        if job is not None:
            job.outcome = outcome
            job.done.set()
            job.mark_finished()

    def _receive(self) -> None:
        try:
            while True:
                number, outcome = self._connection.recv()
                with self._lock:
                    self._finish(number, outcome)
        except (EOFError, OSError, ValueError):
            with self._lock:
                for number in list(self._waiting):
                    self._finish(number, SERVICE_ENDED)

    def close(self) -> None:
        """Tell the service this worker is done: its jobs not yet started are dropped, and the
        service closes the pipe."""
        with self._lock:
            try:
                self._connection.send(("close",))
            except (OSError, ValueError):
                pass
        self._receiver.join(timeout=5.0)
        self._connection.close()


def _shut_down(connection: Connection) -> None:
    """End ``connection``'s socket for both sides: a thread blocked reading it returns, and the
    other side sees the end. (Closing it would not: the blocked read keeps the socket open.)"""
    try:
        with socket.socket(fileno=os.dup(connection.fileno())) as duplicate:
            duplicate.shutdown(socket.SHUT_RDWR)
    except OSError:  # (the other side has gone: nothing to end)
        pass
