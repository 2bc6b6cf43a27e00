"""Tuning with several worker processes: ``autoconv tune CONFIG --gpus 0,1,... --workers-per-gpu N``.

Each worker process runs the ordinary :class:`~autoconv.search.tuner.Tuner` on its device (one or
more per GPU, see below), with the same Optuna storage and winners' cache. They cooperate through the
storage, not through a scheduler of ours:

- worker k of W starts at problem k·n/W of the n problems and goes round the list, so
  the workers begin apart (each problem has a fixed cost per worker that tunes it:
  the first compilations, the re-verification), and meet as they come round;
- a problem another worker has finished (cached) is skipped; one it is tuning is
  joined: the study per (problem, GPU model, families, templates) is shared, so that
  problem's trials are spread over the workers (a configuration evaluated, or being
  evaluated, by one is never evaluated by another: the tuner's repeat check) and its
  trial budget is the study's, not a worker's;
- each worker re-verifies the study's best and stores it in the cache, where the faster
  entry of a key stays: the cache ends with the best of all workers;
- GPUs of another model tune their own studies and cache entries (keys name the GPU).

The workers compile in one pool of the host's, held by this process
(:class:`~autoconv.gpu.compile_service.CompileService`), so a worker whose study needs many
compilations at once takes the cores another leaves idle.

Several workers may share one GPU (``--workers-per-gpu``): each has its own sampling loop, and
they take turns on the GPU
for problem set-up, verification and timing (:class:`autoconv.gpu.exclusive.GpuLock`), so no
kernel is timed beside another worker's. On one GPU that keeps the cores compiling where a
single worker leaves them idle: while its main thread samples and writes the journal, and at each
problem's start and end, when its pipeline fills and drains.

Workers on other hosts join by running the same command against a shared database
(``--storage postgresql+psycopg://...``): nothing here is specific to one host except
starting the processes and drawing the combined progress.

A worker that dies (killed, GPU lost) takes nothing with it: its running trials are
failed and retried by the others (:mod:`autoconv.search.liveness`), the others go on,
and the summary says which worker ended how. Killing this process ends its workers, quietly:
they watch their parent, and a worker whose pipe to it is broken ends at once
(:class:`~autoconv.search.fleet_worker.WorkerChannel`).

A worker tells the parent what it does through a pipe of its own, as :class:`WorkerMessage`
objects (small: no kernel sources). Not one queue shared by all: a worker killed while it
held a shared queue's write lock would leave the others unable to say anything again (and
unable to exit: a queue flushes at exit), so one killed worker could hang the run. The
parent merges each problem's outcomes over the workers
(:func:`autoconv.search.outcome.merge_outcomes`).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from autoconv import settings
from autoconv.backends.factory import backend_kind
from autoconv.cache.winners import WinnerCache
from autoconv.config.budget import Budget
from autoconv.errors import AutoconvError, BackendUnavailable
from autoconv.gpu.compile_service import CompileService
from autoconv.gpu.device import require_cupy
from autoconv.problems.models import NamedProblem
from autoconv.search.fleet_entry import worker_process
from autoconv.search.fleet_worker import (
    ProblemFinished,
    ProblemStarted,
    TrialFinished,
    WorkerDone,
    WorkerFailed,
    WorkerJob,
    WorkerMessage,
    WorkerNote,
    WorkerStarted,
)
from autoconv.search.outcome import ProblemOutcome, merge_outcomes
from autoconv.search.session import TuneSession
from autoconv.search.storage import prepare_storage

#: Seconds between two looks at the workers while no event arrives.
POLL_S = 0.5


# ---- which GPUs ---------------------------------------------------------------------------

def device_count() -> int:
    """CUDA devices of this host (the fake backend's: ``$AUTOCONV_FAKE_DEVICES``, default 1)."""
    if backend_kind() == "fake":
        return settings.FAKE_DEVICES.value() or 1
    cupy = require_cupy()
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except cupy.cuda.runtime.CUDARuntimeError as err:
        raise BackendUnavailable(f"cannot count the CUDA devices ({err})") from None


def parse_gpus(text: str, available: int | None = None) -> list[int]:
    """``--gpus``: ``all`` or comma-separated device indices (``0,1,3``), each existing
    and given once. ``available`` is the device count (read when needed)."""
    spec = text.strip().lower()
    if spec == "all":
        count = device_count() if available is None else available
        return list(range(count))
    indices = []
    for part in spec.split(","):
        part = part.strip()
        if not part.isdigit():
            raise AutoconvError(f"--gpus {text!r}: {part!r} is not a device index; pass `all` or indices "
                                "like 0,1")
        index = int(part)
        if index in indices:
            raise AutoconvError(f"--gpus {text!r}: device {index} is listed twice")
        indices.append(index)
    count = device_count() if available is None else available
    missing = [i for i in indices if i >= count]
    if missing:
        raise AutoconvError(f"--gpus {text!r}: no device {', '.join(map(str, missing))} on this host "
                            f"({count} GPU{'s' if count != 1 else ''}: {', '.join(map(str, range(count)))})")
    return indices


#: Host cores one tuning worker keeps busy (its compiler pool, its sampling loop, its share of
#: the GPU): on a 16-core host with one GPU, 3 workers tuned fastest, and a 4th gained nothing.
CORES_PER_WORKER = 5
MAX_WORKERS_PER_GPU = 4


def default_workers_per_gpu(gpus: int, storage: str, cores: int | None = None) -> int:
    """``--workers-per-gpu`` when not given: one worker per :data:`CORES_PER_WORKER` cores of the
    host, shared by ``gpus`` GPUs, at most :data:`MAX_WORKERS_PER_GPU` per GPU (3 on a 16-core
    host with one GPU). One where several cannot help or work: the fake backend (tests), a storage
    several processes cannot share (:func:`refuse_unshareable`), or no usable GPU (the one
    in-process worker then says why)."""
    if backend_kind() == "fake":
        return 1
    if not shareable(storage):
        return 1
    cores = cores if cores is not None else (os.cpu_count() or 1)
    workers = max(1, min(MAX_WORKERS_PER_GPU, cores // (CORES_PER_WORKER * max(1, gpus))))
    if workers > 1:
        try:
            device_count()
        except BackendUnavailable:
            return 1
    return workers


def shareable(storage: str) -> bool:
    """Whether several workers can share ``storage`` safely: not an SQLite URL (SQLite has no
    row locks, so two workers can take the same queued trial and evaluate it twice). The
    journal file (this host) and PostgreSQL or MySQL URLs (any number of hosts) hand each trial
    to one worker."""
    return not str(storage).strip().lower().startswith("sqlite")


def refuse_unshareable(storage: str) -> None:
    """AutoconvError for a storage that several workers cannot share safely
    (:func:`shareable`)."""
    if not shareable(storage):
        raise AutoconvError(f"--storage {storage}: several workers cannot share an SQLite database (it hands "
                            "the same queued trial to two of them); on one host use a journal file (the "
                            "default, or --storage PATH), across hosts a PostgreSQL URL "
                            "(postgresql+psycopg://user@host/db)")


#: (evaluated, best) of a problem a worker has not yet reported on.
NOT_STARTED = (0, "best: -")


@dataclass
class WorkerState:
    worker: int       # its number in the fleet
    device: int       # the CUDA device it measures on
    process: Any
    channel: Any = None  # the receiving end of the worker's pipe; None once it has ended
    gpu: str = ""
    problem: str = ""           # the problem shown: the one it began last of those it tunes ("": none)
    running: dict[str, tuple[int, str]] = field(default_factory=dict)  # each problem it tunes -> (evaluated, best)
    finished: set = field(default_factory=set)
    outcomes: list[ProblemOutcome] | None = None
    error: str = ""
    label: str = ""   # how the progress and the summary name it: "GPU 0", or "GPU 0 #2" when it shares the GPU
    milestones_s: dict[str, float] = field(default_factory=dict)  # (outcome.MILESTONES), once done

    @property
    def name(self) -> str:
        return self.label or f"GPU {self.device}"

    @property
    def evaluated(self) -> int:
        """The shown problem's trials evaluated."""
        return self.running.get(self.problem, NOT_STARTED)[0]

    @property
    def best(self) -> str:
        """The shown problem's best, as its line says it."""
        return self.running.get(self.problem, NOT_STARTED)[1]

    @property
    def status(self) -> str:
        if self.outcomes is not None:
            return "done"
        if self.error:
            return "failed"
        return "running"


class FleetReporter:
    """What the parent draws: the problems' bar and one line per GPU (subclass it or
    pass another to :func:`tune_on_gpus`; the base class prints nothing)."""

    def run_started(self, problems: Sequence[NamedProblem], budget: Budget,
                    workers: Sequence[WorkerState]) -> None: ...
    def worker_update(self, worker: WorkerState) -> None: ...
    def problem_finished(self, outcome: ProblemOutcome) -> None: ...
    def note(self, text: str) -> None: ...
    def run_finished(self) -> None: ...


def tune_on_gpus(session: TuneSession, devices: Sequence[int], *, reporter: FleetReporter | None = None,
                 workers_per_gpu: int = 1,
                 started_at: float | None = None) -> tuple[list[ProblemOutcome], list[WorkerState]]:
    """Tune ``session``'s problems with ``workers_per_gpu`` worker processes per device (see
    the module docstring); each worker receives ``session`` whole (pickled). Workers sharing a GPU
    compile in parallel and take turns on it
    (:class:`autoconv.gpu.exclusive.GpuLock`): more than one per GPU keeps the host's cores
    compiling while each worker's own loop (sampling, the journal, a problem's start and end)
    would leave them idle. Returns the merged outcome per problem (:func:`merge_outcomes`) and
    each worker's final state (``status`` done or failed, ``error``, ``milestones_s`` counted from
    ``started_at``, a :func:`time.time`: now if not given).

    Raises:
        AutoconvError: every worker failed (their errors in the message).
    """
    started_at = time.time() if started_at is None else started_at
    config, storage, cache = session.config, session.storage, session.cache
    refuse_unshareable(storage)
    reporter = reporter or FleetReporter()
    if workers_per_gpu < 1:
        raise AutoconvError(f"--workers-per-gpu {workers_per_gpu}: give 1 or more worker processes per GPU")
    context = multiprocessing.get_context("spawn")
    # Workers sharing a GPU are spread over the problem list like workers on different GPUs.
    slots = [(device, copy) for copy in range(workers_per_gpu) for device in devices]
    compile_workers = max(2, (os.cpu_count() or 2) // len(slots))  # (each worker's share, as before)
    compiler = CompileService(processes=compile_workers * len(slots))
    on_gpus = backend_kind() == "cupy"  # (the fake backend has no GPU worker and compiles nothing)
    # Create the storage's and the cache's tables once, before the workers race to.
    prepare_storage(storage, on_repair=reporter.note)
    WinnerCache(cache).close()
    workers: dict[int, WorkerState] = {
        number: WorkerState(worker=number, device=device, process=None,
                            label=f"GPU {device}" + (f" #{copy + 1}" if workers_per_gpu > 1 else ""))
        for number, (device, copy) in enumerate(slots)}
    reporter.run_started(config.problems, session.budget, list(workers.values()))
    shared = pickle.dumps(session)
    for number, worker in workers.items():
        start = number * len(config.problems) // len(slots)
        job = WorkerJob(worker=number, device=worker.device, start=start, started_at=started_at)
        receiving, sending = context.Pipe(duplex=False)
        compiling = compiler.connect()
        process = context.Process(target=worker_process,
                                  args=(shared, pickle.dumps(job), worker.device if on_gpus else None, sending,
                                        os.getpid(), compiling, number),  # (number: its warm-up turn)
                                  name=f"autoconv-tune-worker{number}-gpu{worker.device}")
        process.start()
        sending.close()  # the worker holds its own copy: its exit is the pipe's end
        compiling.close()
        worker.process, worker.channel = process, receiving
    if on_gpus:
        # After the workers: their GPU workers start first (their warm-up is what the first results
        # wait for); the compiler processes are first needed some seconds later.
        compiler.start()

    finished_by: dict[str, dict[int, ProblemOutcome]] = {}
    names = [item.name for item in config.problems]
    reported: set[str] = set()
    said_once: set[str] = set()  # the keys of the notes said once a run (WorkerNote.once)

    def report_complete_problems() -> None:
        """A problem is complete once every worker still alive has finished it."""
        live = [w.worker for w in workers.values() if w.status == "running"]
        for name in names:
            done = finished_by.get(name, {})
            if name not in reported and done and all(number in done for number in live):
                reported.add(name)
                reporter.problem_finished(merge_outcomes(list(done.values())))

    try:
        while any(w.status == "running" for w in workers.values()):
            listening = {w.channel: w for w in workers.values() if w.status == "running" and w.channel}
            for ready in multiprocessing.connection.wait(list(listening), timeout=POLL_S):
                worker = listening[ready]
                try:
                    message = worker.channel.recv()
                except (EOFError, OSError, pickle.UnpicklingError):
                    # The worker's end is closed: it exited, and everything it sent has been read
                    # (or it was killed in the middle of a message, which is lost with it).
                    _worker_ended(worker, reporter)
                    continue
                _apply(message, workers, finished_by, reporter, said_once)
            for worker in workers.values():
                # A worker that sent nothing yet and ended (killed before its first message)
                # closes its pipe too; this is the fallback should its end outlive it.
                if worker.status == "running" and not worker.process.is_alive() and not worker.channel.poll():
                    _worker_ended(worker, reporter)
            report_complete_problems()
    finally:
        for worker in workers.values():
            if worker.process.is_alive():
                worker.process.terminate()
            worker.process.join(timeout=30)
            if worker.channel is not None:
                worker.channel.close()
                worker.channel = None
        compiler.close()
        reporter.run_finished()
    report_complete_problems()
    if all(w.status == "failed" for w in workers.values()):
        by_error: dict[str, list[str]] = {}  # (workers failing alike, e.g. on a damaged storage: one line)
        for w in workers.values():
            by_error.setdefault(w.error, []).append(w.name)
        raise AutoconvError("every tuning worker failed:\n" + "\n".join(
            f"  {', '.join(names)}: {error}" for error, names in by_error.items()))
    merged = []
    for item in config.problems:
        outcomes = list(finished_by.get(item.name, {}).values())
        merged.append(merge_outcomes(outcomes) if outcomes else ProblemOutcome(
            name=item.name, problem=item.problem, count=item.count, stop_reason="no worker finished it"))
    return merged, list(workers.values())


def _worker_ended(worker: WorkerState, reporter: FleetReporter) -> None:
    """The worker's pipe is closed; if it never said it was done, it was killed."""
    worker.channel.close()
    worker.channel = None
    worker.process.join(timeout=30)
    if worker.status == "running":
        worker.error = (f"the worker process ended (exit code {worker.process.exitcode}) before it "
                        "finished; its running trials are failed and retried by the others")
        reporter.note(f"{worker.name}: {worker.error}")
        reporter.worker_update(worker)


def _apply(message: WorkerMessage, workers: dict[int, WorkerState], finished_by: dict,
           reporter: FleetReporter, said_once: set[str]) -> None:
    if not isinstance(message, WorkerMessage):
        raise TypeError(f"not a worker message: {message!r}")
    worker = workers[message.worker]
    if isinstance(message, WorkerStarted):
        worker.gpu = message.gpu
    elif isinstance(message, ProblemStarted):
        worker.running[message.problem] = (message.evaluated, NOT_STARTED[1])
        worker.problem = message.problem
    elif isinstance(message, TrialFinished):
        best = worker.running.get(message.problem, NOT_STARTED)[1]
        if message.best_ms is not None:
            best = f"best {message.best_ms:.4f} ms ({message.best_tflops:.1f} TFLOP/s)"
        worker.running[message.problem] = (message.evaluated, best)
    elif isinstance(message, ProblemFinished):
        finished_by.setdefault(message.outcome.name, {})[worker.worker] = message.outcome
        worker.finished.add(message.outcome.name)
        worker.running.pop(message.outcome.name, None)
        if message.outcome.name == worker.problem:
            worker.problem = next(reversed(worker.running), "")
    elif isinstance(message, WorkerNote):
        if message.once is None or message.once not in said_once:
            reporter.note(f"{worker.name}: {message.text}")
        if message.once is not None:
            said_once.add(message.once)
    elif isinstance(message, WorkerDone):
        worker.outcomes = message.outcomes
        worker.milestones_s = message.milestones_s
        worker.running.clear()
        worker.problem = ""
    elif isinstance(message, WorkerFailed):
        worker.error = message.error
        reporter.note(f"{worker.name}: failed: {worker.error}")
    reporter.worker_update(worker)
