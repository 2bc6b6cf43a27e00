"""The tuner's GPU backend: NVRTC compiler processes ahead, one supervised GPU worker.

:class:`CupyBackend` implements :class:`autoconv.backends.base.Backend`. ``submit`` hands the
source to the :class:`~autoconv.gpu.compiler.CompilePool` at once; ``result`` waits for
the cubin and has the GPU worker (:mod:`autoconv.gpu.worker`) verify and time it.

Crash isolation lives in :class:`GpuWorker`: the worker process is the only one with a
CUDA context. When a candidate poisons that context (the worker reports a sticky CUDA
error and exits), kills the process outright, or runs past the per-candidate time limit
(a hang: the parent kills the worker), the candidate is recorded as failed with the
reason and the next request starts a fresh worker. The tuning run goes on.
"""

from __future__ import annotations

import collections
import dataclasses
import importlib.util
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Generic, TypeVar, cast

from autoconv.backends.base import Backend, BackendIdentity, Status, Ticket, TrialResult, failed
from autoconv.errors import AutoconvError, BackendUnavailable
from autoconv.gpu.compiler import DEFAULT_COMPILE_TIMEOUT_S, CompileJob, CompileOutcome, CompilePool, Compiler
from autoconv.gpu.device import INSTALL_HINT
from autoconv.gpu.worker import LaunchedWorker, WorkerOptions, launch_worker, worker_main
from autoconv.kernels.families import KernelPlan
from autoconv.kernels.limits import DeviceLimits
from autoconv.problems.problem import ConvProblem

#: Seconds one candidate (load, verify, time) may take before it counts as hung.
DEFAULT_CANDIDATE_TIMEOUT_S = 30.0
#: Cubins kept by source (each a few hundred KB at most).
CUBIN_CACHE_ENTRIES = 128
#: Compilations started by ``prepare`` and not yet submitted, kept (the oldest forgotten beyond).
PREPARED_ENTRIES = 32
#: Seconds between the dispatcher's looks at compilations that give no notice when they are
#: ready (a hung one past its limit); others wake it at once.
READY_POLL_S = 1.0
#: Seconds for a worker to start (import CuPy, create the CUDA context).
STARTUP_TIMEOUT_S = 180.0
#: Seconds to prepare a problem's inputs and float64 reference.
PROBLEM_TIMEOUT_S = 300.0
#: Seconds a candidate may wait for the GPU while other workers on it hold its lock
#: (:mod:`autoconv.gpu.exclusive`). Not part of the per-candidate limit: each holder's own
#: candidate is limited by its worker's, so only something wrong outlasts this.
GPU_WAIT_TIMEOUT_S = 600.0


T = TypeVar("T")


class WorkerFailure(RuntimeError):
    """A bug inside the GPU worker (not a candidate's failure): carries its traceback."""


class GpuWorker:
    """Supervises one GPU worker process, restarting it whenever it is lost."""

    def __init__(self, options: WorkerOptions, candidate_timeout_s: float = DEFAULT_CANDIDATE_TIMEOUT_S,
                 launched: LaunchedWorker | None = None):
        """``launched``: a worker started already with the same ``options``
        (:func:`~autoconv.gpu.worker.launch_worker`), which the first :meth:`start` waits for
        instead of starting one."""
        if launched is not None and launched.options != options:
            raise ValueError(f"the GPU worker was launched with {launched.options}, not {options}")
        self.options = options
        self.candidate_timeout_s = candidate_timeout_s
        self._launched = launched
        # The live worker and its pipe (both None before start() and once it is lost).
        self._process: BaseProcess | None = None
        self._connection: Connection | None = None
        self._problem: tuple[ConvProblem, int] | None = None  # (problem, seed) the live worker holds
        self.limits: DeviceLimits | None = None  # read by the first start()
        self.identity: BackendIdentity | None = None
        self.restarts = 0

    # ---- life cycle ----------------------------------------------------------------
    def start(self) -> None:
        """Start a worker (or take the one launched before) and wait until it has a CUDA context.

        Raises:
            BackendUnavailable: no CuPy or no usable GPU (the worker's own words).
        """
        launched, self._launched = self._launched or launch_worker(self.options, target=worker_main), None
        self._process, self._connection, self._problem = launched.process, launched.connection, None
        try:
            reply = self._receive(STARTUP_TIMEOUT_S, "starting")
        except EOFError:
            why = self._exit_description()
            self._reap()
            raise BackendUnavailable(f"the GPU worker exited while starting ({why})") from None
        if reply is None:
            self._kill()
            raise BackendUnavailable(f"the GPU worker did not start within {STARTUP_TIMEOUT_S:g} s")
        kind, payload = reply[0], reply[1]
        if kind == "unavailable":
            self._reap()
            raise BackendUnavailable(payload)
        if kind != "ready":
            self._reap()
            raise WorkerFailure(f"the GPU worker failed to start: {payload}")
        self.limits, self.identity = payload

    def close(self) -> None:
        if self._process is None:
            return
        assert self._connection is not None  # (set with the process)
        try:
            self._connection.send(("shutdown", None))
        except (OSError, BrokenPipeError):
            pass
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._kill()
        self._reap()

    def _kill(self) -> None:
        process = self._process
        if process is not None and process.is_alive():
            process.kill()
            process.join(timeout=30)

    def kill(self) -> None:
        """End the worker now (from another thread: the one waiting on it sees it die)."""
        self._kill()

    def _reap(self) -> None:
        if self._connection is not None:
            self._connection.close()
        if self._process is not None:
            self._process.join(timeout=30)
        self._process = self._connection = self._problem = None

    def _receive(self, timeout: float, doing: str):
        """The worker's next message; None on timeout. Raises EOFError when it died,
        WorkerFailure when it reports a bug."""
        assert self._connection is not None  # (a live worker)
        if not self._connection.poll(timeout):
            return None
        reply = self._connection.recv()
        if reply[0] == "error":
            self._kill()
            self._reap()
            raise WorkerFailure(f"the GPU worker failed while {doing} (a bug in autoconv):\n{reply[1]}")
        return reply

    def _exit_description(self) -> str:
        assert self._process is not None  # (the worker that died)
        self._process.join(timeout=30)
        code = self._process.exitcode
        if code is None:
            return "it stopped answering"
        if code < 0:
            return f"it was killed by signal {-code}"
        return f"it exited with status {code}"

    # ---- requests ------------------------------------------------------------------
    def evaluate(self, plan: KernelPlan, cubin: bytes, compile_s: float, seed: int,
                 screening: bool = False, cutoff_ms: float | None = None) -> TrialResult:
        """Verify and time ``plan`` in the worker (``screening``: with the search's shorter
        timing); a lost or hung worker is a failed result (and replaced for the next candidate)."""
        if self._process is None:
            self.start()
            self.restarts += 1
        self.prepare_inputs(plan.problem, seed)
        sent = started = time.perf_counter()
        assert self._process is not None and self._connection is not None  # (started above)
        try:
            # The worker says "started" once it holds the GPU: the per-candidate limit counts
            # from there, not from a wait for other workers' candidates.
            self._connection.send(("evaluate", (plan, cubin, compile_s, screening, cutoff_ms)))
            reply = self._receive(GPU_WAIT_TIMEOUT_S, f"waiting for the GPU to evaluate {plan.name}")
            limit = f"{GPU_WAIT_TIMEOUT_S:g} s of waiting for the GPU (held by another process)"
            if reply is not None and reply[0] == "started":
                started = time.perf_counter()
                reply = self._receive(self.candidate_timeout_s, f"evaluating {plan.name}")
                limit = f"the per-candidate limit of {self.candidate_timeout_s:g} s (a hang?)"
        except (EOFError, BrokenPipeError, ConnectionResetError):
            why = self._exit_description()
            self._reap()
            return failed(plan, Status.RUNTIME_FAILED,
                          f"the GPU worker died while running this candidate ({why}); a fresh "
                          "worker takes the next one", compile_s=compile_s, run_s=time.perf_counter() - started)
        if reply is None:
            self._kill()
            self._reap()
            return failed(plan, Status.TIMEOUT,
                          f"no result within {limit}; the GPU worker was killed and is replaced",
                          compile_s=compile_s, run_s=time.perf_counter() - started)
        _, data, fatal = reply
        if fatal:
            # The worker exits by itself (EXIT_CONTEXT_LOST) after a sticky CUDA error.
            self._process.join(timeout=30)
            self._kill()
            self._reap()
        return TrialResult.from_dict(data).with_(gpu_queue_s=started - sent)

    def prepare_inputs(self, problem, seed: int) -> None:
        """Have the live worker make ``problem``'s inputs for ``seed`` now, unless it holds them
        (a lost worker is left to the next :meth:`evaluate` to replace). Raises as
        :meth:`evaluate` would while preparing them."""
        if self._process is not None and self._problem != (problem, seed):
            self._prepare(problem, seed)

    def _prepare(self, problem, seed: int) -> None:
        assert self._connection is not None  # (a live worker)
        try:
            self._connection.send(("problem", (problem, seed)))
            reply = self._receive(PROBLEM_TIMEOUT_S, f"preparing inputs for {problem.shape_str()}")
        except (EOFError, BrokenPipeError, ConnectionResetError):
            why = self._exit_description()
            self._reap()
            raise WorkerFailure(f"the GPU worker died while preparing {problem.shape_str()} ({why})") from None
        if reply is None:
            self._kill()
            self._reap()
            raise WorkerFailure(f"preparing the inputs and reference of {problem.shape_str()} took more "
                                f"than {PROBLEM_TIMEOUT_S:g} s")
        if reply[0] == "problem_failed":
            self._problem = None  # the worker holds no problem now
            raise AutoconvError(f"cannot tune {problem.shape_str()} on this GPU: {reply[1]}")
        self._problem = (problem, seed)


class ReadyFirst(Generic[T]):
    """Submitted items not yet taken, in submission order; :meth:`take` gives the first that
    ``ready`` says is ready. Whoever makes one ready calls :meth:`wake`; an item that becomes
    ready without notice (a hung compilation past its limit) is found within
    :data:`READY_POLL_S`."""

    def __init__(self, ready: Callable[[T], bool]):
        self._ready = ready
        self._items: list[T] = []
        self._closed = False
        self._changed = threading.Condition()

    def put(self, item: T) -> None:
        with self._changed:
            self._items.append(item)
            self._changed.notify()

    def wake(self) -> None:
        with self._changed:
            self._changed.notify()

    def close(self) -> None:
        """From now on :meth:`take` gives every item left, ready or not, then None."""
        with self._changed:
            self._closed = True
            self._changed.notify()

    def remove(self, item: T) -> bool:
        """Take ``item`` out unless it was taken: whether it was still there."""
        with self._changed:
            if any(waiting is item for waiting in self._items):
                self._items = [waiting for waiting in self._items if waiting is not item]
                return True
            return False

    def close_and_drain(self) -> list[T]:
        """Close, and take every item left at once."""
        with self._changed:
            self._closed = True
            items, self._items = self._items, []
            return items

    def take(self, while_waiting: Callable[[list[T]], None] | None = None) -> T | None:
        """The first ready item, once one is (see :meth:`close`). While none is, before each
        wait, ``while_waiting`` is called with the items not ready, first submitted first
        (outside the lock: items are put, and made ready, meanwhile)."""
        with self._changed:
            while True:
                if self._closed:
                    return self._items.pop(0) if self._items else None
                for index, item in enumerate(self._items):
                    if self._ready(item):
                        return self._items.pop(index)
                if while_waiting is not None and self._items:
                    waiting = list(self._items)
                    self._changed.release()
                    try:
                        while_waiting(waiting)
                    finally:
                        self._changed.acquire()
                    if self._closed or any(self._ready(item) for item in self._items):
                        continue  # (its wake-up came during the call: do not wait for another)
                self._changed.wait(timeout=READY_POLL_S)


class CupyTicket(Ticket):
    def __init__(self, plan: KernelPlan, job: CompileJob | None, seed: int, compiled: CompileOutcome | None = None,
                 screening: bool = False, cutoff_ms: float | None = None):
        super().__init__(plan, screening, cutoff_ms)
        self.job = job            # the compilation under way, or None when ``compiled`` came from the cache
        self.compiled = compiled
        self.seed = seed
        self.submitted = time.monotonic()
        self.done = threading.Event()
        self.value: TrialResult | None = None
        self.error: BaseException | None = None


class CupyBackend(Backend):
    """Candidates compiled by NVRTC in ``compile_workers`` processes and run by one GPU
    worker process on CUDA device ``device_id``.

    A dispatcher thread has the GPU worker evaluate each submitted candidate once its cubin
    is ready, the earliest submitted of those first (a slow compilation holds back no
    candidate compiled after it), so the GPU works while the caller asks and tells its
    sampler; :meth:`result` waits for a candidate's turn, :meth:`first_done` for any.

    Args:
        device_id: the CUDA device.
        compile_workers: compiler processes (default: one per core, less one).
        candidate_timeout_s: a candidate's load + verify + time limit (a hang beyond).
        compile_timeout_s: one compilation's limit.
        samples: timed graph replays per fully timed candidate (the median is reported).
        seed: seed of the verification inputs (each problem gets its own from it).
        compiler: makes the compiler for the device's architecture instead of a pool of this
            backend's own (``compile_workers`` and ``compile_timeout_s`` are then the
            compiler's business): the fleet's workers share one pool of the host
            (:mod:`autoconv.gpu.compile_service`).
        launched: its GPU worker, started already with these ``device_id`` and ``samples``
            (:func:`autoconv.gpu.worker.launch_worker`): the fleet's workers start theirs first.

    Raises:
        BackendUnavailable: CuPy is not installed or there is no usable GPU.
    """

    def __init__(self, device_id: int = 0, *, compile_workers: int | None = None,
                 candidate_timeout_s: float = DEFAULT_CANDIDATE_TIMEOUT_S,
                 compile_timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S, samples: int = 7, seed: int = 0,
                 compiler: Callable[[str], Compiler] | None = None, launched: LaunchedWorker | None = None):
        if importlib.util.find_spec("cupy") is None:
            raise BackendUnavailable(f"the GPU backend needs CuPy, which is not installed; {INSTALL_HINT}")
        self.seed = seed
        self._worker = GpuWorker(WorkerOptions(device_id=device_id, samples=samples), candidate_timeout_s, launched)
        self._worker.start()
        assert self._worker.limits is not None and self._worker.identity is not None  # (started)
        self.device = self._worker.limits
        self.identity = self._worker.identity
        self._compiler: Compiler = (compiler(self.device.arch) if compiler is not None
                                    else CompilePool(self.device.arch, compile_workers, compile_timeout_s))
        # Recent cubins by source: the winner's re-verification (and a retried
        # configuration) runs without compiling again.
        self._cubins: collections.OrderedDict[str, CompileOutcome] = collections.OrderedDict()
        self._cubins_lock = threading.Lock()
        # Compilations that prepare() started, by source, until a submit() takes one.
        self._prepared: collections.OrderedDict[str, CompileJob] = collections.OrderedDict()
        self._pending: ReadyFirst[CupyTicket] = ReadyFirst(self._ready)
        self._finished = threading.Condition()  # a ticket done
        self._closed = False
        self._dispatcher = threading.Thread(target=self._dispatch, name="autoconv-gpu-dispatch", daemon=True)
        self._dispatcher.start()

    @property
    def worker_restarts(self) -> int:
        """Fresh GPU workers started after the first (one per lost or hung candidate)."""
        return self._worker.restarts

    def problem_seed(self, problem, seed: int | None = None) -> int:
        """The seed of ``problem``'s verification inputs: stable per problem."""
        base = self.seed if seed is None else seed
        return (base * 1_000_003 + zlib.crc32(problem.key().encode())) % 2**32

    def submit(self, plan: KernelPlan, *, seed: int | None = None, screening: bool = False,
               cutoff_ms: float | None = None, priority: float | None = None) -> CupyTicket:
        """Start compiling ``plan`` (after the jobs of a lower ``priority``, :class:`CompilePool`)
        and queue it for the GPU; ``seed`` picks other verification inputs than the problem's
        usual ones (the final re-verification of a winner uses this); ``screening`` times it
        with the search's shorter effort (:data:`autoconv.gpu.timing.SCREENING`)."""
        if self._closed:
            raise RuntimeError("the backend is closed")
        with self._cubins_lock:
            cached = self._cubins.get(plan.source_hash)
            prepared = self._prepared.pop(plan.source_hash, None)
        seed = self.problem_seed(plan.problem, seed)
        if cached is not None:
            ticket = CupyTicket(plan, None, seed, compiled=dataclasses.replace(cached, seconds=0.0, cpu_seconds=0.0),
                                screening=screening, cutoff_ms=cutoff_ms)
        else:
            job = prepared if prepared is not None else self._compiler.submit(plan.source, plan.name,
                                                                                  priority=priority)
            ticket = CupyTicket(plan, job, seed, screening=screening, cutoff_ms=cutoff_ms)
        self._pending.put(ticket)
        if ticket.job is not None:
            ticket.job.when_finished(self._pending.wake)
        return ticket

    def prepare(self, plan: KernelPlan) -> None:
        """Start compiling ``plan`` now, unless its cubin is kept or already being prepared; the
        tuner prepares the build with constants of its best candidate while it searches."""
        if self._closed:
            return
        with self._cubins_lock:
            if plan.source_hash in self._cubins or plan.source_hash in self._prepared:
                return
        job = self._compiler.submit(plan.source, plan.name)
        with self._cubins_lock:
            self._prepared[plan.source_hash] = job
            while len(self._prepared) > PREPARED_ENTRIES:
                self._prepared.popitem(last=False)

    def result(self, ticket: Ticket) -> TrialResult:
        assert isinstance(ticket, CupyTicket)  # (submit's)
        ticket.done.wait()
        if ticket.error is not None:
            raise ticket.error
        assert ticket.value is not None  # (done: a value or an error)
        return ticket.value

    def withdraw(self, ticket: Ticket) -> bool:
        """Take ``ticket`` off the GPU's queue, unless the GPU has taken it; its compilation is
        dropped if no compiler process has started it (one that has finishes, unused)."""
        assert isinstance(ticket, CupyTicket)  # (submit's)
        if not self._pending.remove(ticket):
            return False
        job = ticket.job
        if job is not None:
            if isinstance(self._compiler, CompilePool):
                self._compiler.cancel(job)
            def take_outcome() -> None:  # (once it comes, so that the compiler keeps no record of it)
                self._compiler.result(job)

            job.when_finished(take_outcome)
        return True

    def first_done(self, tickets: Sequence[Ticket]) -> int:
        """The index of the first of ``tickets`` whose result is ready, once one is."""
        with self._finished:
            while True:
                for index, ticket in enumerate(tickets):
                    if cast(CupyTicket, ticket).done.is_set():
                        return index
                self._finished.wait()

    def _ready(self, ticket: CupyTicket) -> bool:
        return ticket.job is None or self._compiler.ready(ticket.job)

    def _dispatch(self) -> None:
        while True:
            try:
                ticket = self._pending.take(self._prepare_inputs_ahead)  # (once closed, each left: _run abandons it)
            except BaseException as err:  # a bug in a compiler's ready(): every waiting caller hears of it
                for left in self._pending.close_and_drain():
                    left.error = err
                    left.done.set()
                with self._finished:
                    self._finished.notify_all()
                return
            if ticket is None:
                return
            try:
                ticket.value = self._run(ticket)
            except BaseException as err:  # handed to the caller of result(), who raises it
                ticket.error = err
            finally:
                ticket.done.set()
                with self._finished:
                    self._finished.notify_all()

    def _prepare_inputs_ahead(self, waiting: list[CupyTicket]) -> None:
        """While no cubin is ready: the GPU worker makes the inputs and reference of the first
        waiting candidate's problem now, not after its compilation (a large layer's take a good
        part of a second, and each study's first result waited for them)."""
        if self._closed:
            return
        try:
            self._worker.prepare_inputs(waiting[0].plan.problem, waiting[0].seed)
        except (AutoconvError, WorkerFailure):
            pass  # (the candidate's evaluation prepares them again, and reports why that fails)

    def _run(self, ticket: CupyTicket) -> TrialResult:
        # A candidate cut short by the run's end (the backend closed, the compile service gone)
        # is ABANDONED, not failed: nothing is known about it, and the tuner queues it again.
        if self._closed:
            return failed(ticket.plan, Status.ABANDONED, "not run: the backend was closed")
        compiled = ticket.compiled if ticket.job is None else self._compiler.result(ticket.job)
        assert compiled is not None  # (a ticket has a job or a cached outcome)
        if compiled.ok and ticket.job is not None:
            with self._cubins_lock:
                self._cubins[ticket.plan.source_hash] = compiled
                while len(self._cubins) > CUBIN_CACHE_ENTRIES:
                    self._cubins.popitem(last=False)
        if not compiled.ok:
            status = Status.ABANDONED if compiled.interrupted else Status.COMPILE_FAILED
            return failed(ticket.plan, status, compiled.reason(), compile_s=compiled.seconds,
                          compile_cpu_s=compiled.cpu_seconds)
        if self._closed:
            return failed(ticket.plan, Status.ABANDONED, "not run: the backend was closed",
                          compile_s=compiled.seconds, compile_cpu_s=compiled.cpu_seconds)
        # Where the candidate waited (instruments tune.json): for a compiler process, from its
        # submission to its cubin less the compiling; then for this process's other candidates
        # and the GPU, until the GPU took it.
        finished = ticket.job.finished if ticket.job is not None else 0.0
        ready = max(finished, ticket.submitted)  # (a prepared compilation may have finished before)
        compile_queue_s = max(0.0, ready - ticket.submitted - compiled.seconds)
        backlog_s = max(0.0, time.monotonic() - ready)
        result = self._worker.evaluate(ticket.plan, compiled.cubin, compiled.seconds, ticket.seed, ticket.screening,
                                       ticket.cutoff_ms)
        return dataclasses.replace(result, compile_cpu_s=compiled.cpu_seconds, compile_queue_s=compile_queue_s,
                                   gpu_queue_s=backlog_s + result.gpu_queue_s)

    def close(self) -> None:
        """Stop: candidates not yet on the GPU are not run; one running is cut short."""
        if self._closed:
            return
        self._closed = True
        self._pending.close()
        self._dispatcher.join(timeout=1.0)
        if self._dispatcher.is_alive():
            self._worker.kill()  # a candidate is running: do not wait for it
            self._dispatcher.join(timeout=60)
        self._compiler.close()
        self._worker.close()
