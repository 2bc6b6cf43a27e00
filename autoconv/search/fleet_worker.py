"""A fleet worker process (:mod:`autoconv.search.fleet`): what it is given, what it tells the
parent, and its tuning loop.

A worker tunes every problem of the config on its GPU, its compilations in the parent's
:class:`~autoconv.gpu.compile_service.CompileService`, and tells the parent what it does as
:class:`WorkerMessage` objects through a pipe of its own. It starts in
:func:`autoconv.search.fleet_entry.worker_process`, which starts its GPU worker before this
module (and the tuner) is imported.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
import traceback
from dataclasses import dataclass, field

from autoconv.backends.base import TrialResult
from autoconv.backends.factory import make_backend
from autoconv.config.budget import Budget
from autoconv.errors import AutoconvError
from autoconv.gpu.compile_service import RemoteCompiler
from autoconv.gpu.worker import LaunchedWorker
from autoconv.kernels.families import KernelPlan
from autoconv.problems.models import NamedProblem
from autoconv.search.outcome import Milestones, ProblemOutcome, Reporter
from autoconv.search.session import TuneSession
from autoconv.search.storage import make_storage
from autoconv.urls import is_url


@dataclass(frozen=True)
class WorkerJob:
    """What is one worker's own (sent pickled, see :mod:`autoconv.search.fleet_entry`); what every
    worker tunes with, the run's :class:`~autoconv.search.session.TuneSession`, comes beside it."""

    worker: int             # this worker's number in the fleet (0, 1, ...)
    device: int             # the CUDA device it measures on
    start: int              # index of the problem this worker begins with
    started_at: float       # when the run started (time.time()): its milestones count from there


# ---- what a worker tells the parent ------------------------------------------------------

@dataclass(frozen=True)
class WorkerMessage:
    """From worker number ``worker`` to the parent, through its :class:`WorkerChannel`."""

    worker: int


@dataclass(frozen=True)
class WorkerStarted(WorkerMessage):
    gpu: str  # the GPU's name and architecture


@dataclass(frozen=True)
class ProblemStarted(WorkerMessage):
    problem: str
    evaluated: int  # trials evaluated in the problem's study so far


@dataclass(frozen=True)
class TrialFinished(WorkerMessage):
    problem: str
    family: str
    ok: bool
    best_ms: float | None  # this worker's best of the problem so far, and its TFLOP/s
    best_tflops: float | None
    evaluated: int


@dataclass(frozen=True)
class ProblemFinished(WorkerMessage):
    outcome: ProblemOutcome


@dataclass(frozen=True)
class WorkerNote(WorkerMessage):
    text: str
    once: str | None = None  # a key: said once a run (Reporter.note_once)


@dataclass(frozen=True)
class WorkerDone(WorkerMessage):
    outcomes: list[ProblemOutcome]
    milestones_s: dict[str, float] = field(default_factory=dict)  # (outcome.MILESTONES)


@dataclass(frozen=True)
class WorkerFailed(WorkerMessage):
    error: str


#: Exit status of a worker that ends because its parent is gone (as
#: :func:`autoconv.processes.exit_with_parent` ends it).
EXIT_PARENT_GONE = 1


class WorkerChannel:
    """The sending end of one worker's pipe to the parent (``put`` is safe from any thread).

    A pipe whose other end is closed means the parent is gone (killed: it closes the pipes only
    after its workers ended otherwise): there is no one left to tell anything, so the worker
    ends at once, quietly, as its watch on the parent (:func:`autoconv.processes.exit_with_parent`)
    would end it a moment later. Ending is what a killed worker does too: its running trials are
    failed and retried by the next run (:mod:`autoconv.search.liveness`)."""

    def __init__(self, connection):
        self.connection, self._lock = connection, threading.Lock()

    def put(self, message: WorkerMessage) -> None:
        with self._lock:
            try:
                self.connection.send(message)
            except (BrokenPipeError, ConnectionResetError):
                os._exit(EXIT_PARENT_GONE)


class QueueReporter(Reporter):
    """Sends a worker's progress to the parent as :class:`WorkerMessage` objects (through
    anything with a ``put``: a :class:`WorkerChannel`, or a queue in tests)."""

    def __init__(self, events, worker: int):
        self.events, self.worker = events, worker

    def problem_started(self, item: NamedProblem, study: str, evaluated: int, budget: Budget) -> None:
        self.events.put(ProblemStarted(self.worker, item.name, evaluated))

    def trial_finished(self, item: NamedProblem, trial_number: int, plan: KernelPlan,
                       result: TrialResult, best: TrialResult | None, evaluated: int) -> None:
        self.events.put(TrialFinished(self.worker, item.name, plan.family, result.ok,
                                      None if best is None else best.time_ms,
                                      None if best is None else best.tflops, evaluated))

    def problem_finished(self, outcome: ProblemOutcome) -> None:
        self.events.put(ProblemFinished(self.worker, outcome))

    def note(self, text: str) -> None:
        self.events.put(WorkerNote(self.worker, text))

    def note_once(self, text: str, key: str) -> None:
        self.events.put(WorkerNote(self.worker, text, once=key))


def worker_main(session: TuneSession, job: WorkerJob, connection, compile_connection,
                launched: LaunchedWorker | None = None) -> None:
    """One worker: tune every problem of ``session`` (the parent's, whole) on device ``job.device``,
    telling the parent through ``connection`` (the sending end of its pipe), compiling through
    ``compile_connection`` (its pipe to the parent's :class:`CompileService`), measuring with
    the GPU worker ``launched`` (:mod:`autoconv.search.fleet_entry`; None: one of its own)."""
    events = WorkerChannel(connection)
    milestones = Milestones(job.started_at)
    milestones.mark("process")
    try:
        config = session.config
        problems = config.problems[job.start:] + config.problems[:job.start]
        def compiler(arch: str) -> RemoteCompiler:
            return RemoteCompiler(compile_connection, arch)

        reporter = QueueReporter(events, job.worker)
        with concurrent.futures.ThreadPoolExecutor(1, "autoconv-storage-load") as loader:
            storage = _load_storage(loader, session.storage, reporter)
            with make_backend(job.device, seed=config.seed, compiler=compiler, launched=launched) as backend, \
                    session.open_cache() as winners:
                milestones.mark("backend")
                identity = backend.identity
                events.put(WorkerStarted(job.worker, f"{identity.gpu_name} "
                                                     f"(sm_{''.join(map(str, identity.compute_capability))})"))
                opened = storage.result()
                milestones.mark("storage")
                tuner = session.tuner(backend, cache=winners, reporter=reporter,
                                      storage=opened)
                outcomes = tuner.tune(problems)
                tuner.mark_search(milestones)
                milestones.mark("tuned")
        milestones.mark("closed")
        events.put(WorkerDone(job.worker, outcomes, milestones.in_order()))
    except AutoconvError as err:
        events.put(WorkerFailed(job.worker, str(err)))
    except BaseException as err:  # noqa: BLE001 - reported to the parent, which goes on
        events.put(WorkerFailed(job.worker, "".join(traceback.format_exception(err)).strip()))
    finally:
        connection.close()


def _load_storage(loader: concurrent.futures.ThreadPoolExecutor, storage: str,
                  reporter: Reporter) -> concurrent.futures.Future:
    """``storage`` opened: a journal file in ``loader``'s thread, so that its records (seconds of
    them for a long tuning history) are read while the GPU worker starts; a database here and now.
    (Only the journal in a thread: two threads importing SQLAlchemy at once, the database's
    storage and the winners' cache, can see a module of it partly initialized.)"""
    if is_url(storage):
        done: concurrent.futures.Future = concurrent.futures.Future()
        done.set_result(make_storage(storage, on_repair=reporter.note))
        return done
    import optuna.storages.journal  # noqa: F401 - imported here, not in the thread (see above)

    return loader.submit(make_storage, storage, on_repair=reporter.note)
