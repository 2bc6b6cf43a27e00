"""What evaluating one candidate kernel yields, and the interface every backend offers.

A candidate is a :class:`~autoconv.kernels.families.KernelPlan`. A backend turns it into a
:class:`TrialResult`: compile, check its resources against the device, run it once on
poisoned outputs and compare with the float64 reference, then time it. Every *expected*
failure of a candidate (it does not compile, needs more registers than the device has,
computes a wrong result, faults, hangs) is a result with a :class:`Status` and a reason,
never an exception; exceptions are for bugs and misuse, and they propagate.

Backends:

- :class:`autoconv.gpu.CupyBackend`: NVRTC in a pool of compiler processes, one GPU
  worker process that is replaced when a candidate kills it (see :mod:`autoconv.gpu`).
- :class:`autoconv.backends.fake.FakeBackend`: deterministic synthetic timings, no GPU and no compiler;
  the tuner's tests and ``AUTOCONV_BACKEND=fake autoconv tune`` use it.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from autoconv.kernels.families import KernelPlan
from autoconv.kernels.limits import DeviceLimits


class Status(str, enum.Enum):
    """The outcome of one candidate: the one vocabulary of backends, the tuner's trials
    (stored as the ``status`` user attribute, so these strings must not change: old
    studies are read back by them) and the CPU emulator's checks. Only ``OK`` has a time.

    ``INVALID``, ``REPEAT``, ``PREDICTED_SLOW`` and ``ABANDONED`` are the tuner's, for proposals
    it did not evaluate; every other status is a candidate that was compiled or run
    (:attr:`evaluated`).
    """

    OK = "ok"
    INVALID = "invalid"                  # breaks a search-space constraint: never compiled
    COMPILE_FAILED = "compile_failed"    # the compiler rejected the source (or timed out)
    OUT_OF_RESOURCES = "out_of_resources"  # registers/threads/shared memory beyond the device
    SPILLS = "spills"                    # uses local memory (register spills): rejected untimed
    WRONG_RESULT = "wrong_result"        # ran, but the output differs from the reference
    RUNTIME_FAILED = "runtime_failed"    # a CUDA error while running (illegal address...)
    TIMEOUT = "timeout"                  # ran past the per-candidate time limit (a hang)
    REPEAT = "repeat"                    # evaluated before, or being evaluated: not evaluated again
    PREDICTED_SLOW = "predicted_slow"    # the tuning history's model ranks it among the slowest: not compiled
    ABANDONED = "abandoned"              # its run or process ended before it was evaluated

    @property
    def failed(self) -> bool:
        return self is not Status.OK

    @property
    def evaluated(self) -> bool:
        """Whether a candidate with this status was compiled or run (a proposal the tuner
        refused, skipped as a repeat or abandoned was not)."""
        return self not in (Status.INVALID, Status.REPEAT, Status.PREDICTED_SLOW, Status.ABANDONED)


@dataclass(frozen=True)
class TrialResult:
    """One candidate's evaluation.

    ``time_ms`` is the median time of one execution of the plan (all its launches) and
    ``tflops`` the problem's FLOPs over it; both are None unless ``status`` is OK.
    ``compile_s`` is compiler time (wall, in a compiler process) and ``compile_cpu_s`` that
    process's CPU time meanwhile (less when the compilation waited for a core), ``run_s``
    GPU-worker time
    (load, verify, time). Where the rest of a candidate's time from submission to result went:
    ``compile_queue_s`` waiting for a compiler process, ``gpu_queue_s`` from its cubin's arrival
    to the GPU's start on it (behind this process's earlier candidates, and other processes'
    for the GPU). Resource fields are the largest over the plan's kernels.
    """

    status: Status
    reason: str = ""
    kernel_name: str = ""
    time_ms: float | None = None
    tflops: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    error: float | None = None           # relative L2 error against the reference
    compile_s: float = 0.0
    compile_cpu_s: float = 0.0
    run_s: float = 0.0
    compile_queue_s: float = 0.0
    gpu_queue_s: float = 0.0
    cut_short: bool = False              # timed once: slower than the submission's cut-off
    registers: int | None = None
    spill_bytes: int | None = None
    shared_bytes: int | None = None      # static + dynamic, per block, largest launch
    workspace_bytes: int = 0
    source_hash: str = ""

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able values (the status as its string)."""
        data = asdict(self)
        data["status"] = self.status.value
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrialResult:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["status"] = Status(values["status"])
        return cls(**values)

    def with_(self, **changes) -> TrialResult:
        return replace(self, **changes)


def failed(plan: KernelPlan, status: Status, reason: str, **extra) -> TrialResult:
    """A failure result for ``plan``, naming its kernel."""
    return TrialResult(status=status, reason=reason, kernel_name=plan.name,
                       workspace_bytes=plan.workspace_bytes, source_hash=plan.source_hash, **extra)


@dataclass(frozen=True)
class BackendIdentity:
    """What a measurement depends on besides the kernel: part of cache keys and study names."""

    gpu_name: str
    compute_capability: tuple[int, int]
    cuda_runtime: int   # e.g. 13000 for CUDA 13.0
    cuda_driver: int
    backend: str        # "cupy", "fake"

    @property
    def compute_capability_str(self) -> str:
        return f"{self.compute_capability[0]}.{self.compute_capability[1]}"


class Ticket:
    """A candidate handed to :meth:`Backend.submit`, to be passed to :meth:`Backend.result`."""

    def __init__(self, plan: KernelPlan, screening: bool = False, cutoff_ms: float | None = None):
        self.plan = plan
        self.screening = screening  # timed with the search's shorter effort (see Backend)
        # (see Backend: a screened candidate's only; the backend reads it when the candidate
        # reaches the GPU, so it may be lowered meanwhile)
        self.cutoff_ms = cutoff_ms if screening else None

    def lower_cutoff(self, cutoff_ms: float) -> None:
        """The search's best improved while this candidate waits: cut it off at ``cutoff_ms``, if
        lower (a screened candidate's only)."""
        if self.screening and (self.cutoff_ms is None or cutoff_ms < self.cutoff_ms):
            self.cutoff_ms = cutoff_ms


class Backend(ABC):
    """Evaluates candidate plans on one device.

    Contract:

    - :attr:`device` are the limits the search spaces are evaluated against (the real
      device's, read off it) and :attr:`identity` what the timings depend on.
    - ``ticket = submit(plan, seed=None)`` starts any work that needs no GPU
      (compilation) and returns at once; several submitted plans may compile in
      parallel. ``seed`` selects other verification inputs than the problem's usual
      ones (the tuner re-verifies its winner on fresh inputs). ``screening`` asks for a
      shorter timing, good enough to rank candidates (the search's); without it the time
      is measured in full (what is cached and reported). A screened candidate whose one call,
      timed alone after its verification, takes longer than ``cutoff_ms`` has that time for
      its result (``cut_short``: ranked, not timed in full). A plan of a lower ``priority`` (a
      moment of the host's :func:`time.monotonic`; default: now) compiles first.
    - ``result(ticket)`` finishes that candidate (waits for its compilation, then runs
      it on the device) and returns its :class:`TrialResult`; each ticket is redeemed
      exactly once, in any order. ``first_done(tickets)`` says which of several submitted
      tickets to redeem first: one whose result is ready (the GPU backend's candidates
      finish in the order their compilations do).
    - ``withdraw(ticket)`` takes back a submitted candidate that has not reached the device
      (a study whose seconds are spent): True if it is withdrawn (nothing of it runs, and its
      ticket is never redeemed), False if the device runs or ran it (redeem it).
    - A candidate's failure is a result; a backend stays usable after any candidate
      (a crashed worker is replaced). Exceptions mean a bug or an unusable device.
    - ``prepare(plan)`` may start compiling a plan that may be submitted later (a
      backend without compilation ignores it).
    - ``close()`` releases processes and memory; backends are context managers.
    """

    device: DeviceLimits
    identity: BackendIdentity

    @abstractmethod
    def submit(self, plan: KernelPlan, *, seed: int | None = None, screening: bool = False,
               cutoff_ms: float | None = None, priority: float | None = None) -> Ticket:
        ...

    @abstractmethod
    def result(self, ticket: Ticket) -> TrialResult:
        ...

    def first_done(self, tickets: Sequence[Ticket]) -> int:
        """The index in ``tickets`` (submitted, not yet redeemed) of one whose result is ready,
        waiting until one is. The default: the first (results computed when redeemed)."""
        return 0

    def withdraw(self, ticket: Ticket) -> bool:
        """Take back ``ticket`` (submitted, not redeemed) unless the device runs or ran it: True
        if it is withdrawn, and then never redeemed. The default: False (redeem it)."""
        return False

    def evaluate(self, plan: KernelPlan, *, seed: int | None = None, screening: bool = False) -> TrialResult:
        """Submit one plan and wait for its result."""
        return self.result(self.submit(plan, seed=seed, screening=screening))

    def prepare(self, plan: KernelPlan) -> None:
        """Start compiling ``plan``, which may be submitted later (its submission then waits for
        this compilation instead of starting another). The default does nothing."""
        return None

    def available_memory_bytes(self) -> int:
        """Device memory one problem's buffers may take: the tuner refuses a problem whose
        estimate (:mod:`autoconv.gpu.memory`) exceeds it before anything is allocated. The
        device's total memory here; the GPU worker checks the memory actually free when it
        prepares a problem."""
        return self.device.global_memory_bytes

    def close(self) -> None:  # noqa: B027 (a default, not abstract: only backends that hold processes override it)
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
