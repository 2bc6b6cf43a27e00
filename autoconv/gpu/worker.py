"""The GPU worker process: verifies, then times, one candidate at a time.

It is the only process of a tuning run that holds a CUDA context. Once it has one it replies
``("ready", (limits, identity))`` and then warms up (:meth:`WorkerSession.warm_up`) before it
reads a request: the parent goes on meanwhile (its storage, the valid points, the first
compilations), and its first request waits in the pipe. The parent
(:class:`autoconv.gpu.backend.GpuWorker`) sends it requests over a pipe:

- ``("problem", (problem, seed))``: make the inputs for a problem -- fresh random
  data (never zeros) for one verification set, the float64 reference computed once on
  the GPU, and enough rotating timing sets to exceed twice the L2 cache. Replies
  ``("ok", None)``, or ``("problem_failed", why)`` when they do not fit in memory
  (compared with the free memory before anything is allocated:
  :func:`autoconv.gpu.memory.check_fits`). The :data:`PROBLEMS_KEPT` problems used last keep
  their buffers, while the memory allows: a tuner alternating between two studies, or
  re-verifying a winner on inputs of another seed, does not make them again.
- ``("evaluate", (plan, cubin, compile_s, screening, cutoff_ms))``: load the cubin, read each kernel's
  registers, local memory and shared memory and reject what does not fit or spills;
  run the plan once on NaN-poisoned output and workspace and compare with the
  reference (relative L2 within the precision's tolerance, :mod:`autoconv.verify.tolerance`);
  check the inputs were not written; then time it
  with :func:`autoconv.gpu.timing.time_calls` (the options' samples and warm-up, or the
  shorter :data:`~autoconv.gpu.timing.SCREENING` effort when ``screening``, cut short past
  ``cutoff_ms``). Replies
  ``("started", None)`` once it holds the GPU's lock (:mod:`autoconv.gpu.exclusive`; the
  parent's per-candidate limit counts from there), then ``("result", result_dict, fatal)``.
- ``("shutdown", None)``.

A CUDA error that poisons the context (an illegal address, a kernel trap, ...) makes
every later CUDA call fail, so after replying the worker exits on purpose (``fatal``)
and the parent starts a fresh one. A hang is the parent's business: it kills the
worker when a candidate runs past its time limit. Anything else unexpected is a bug:
the worker replies ``("error", traceback)`` and exits.
"""

from __future__ import annotations

import multiprocessing
import os
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING

from autoconv.processes import exit_with_parent

# This module imports autoconv's others (but autoconv.processes, which imports none) where it uses
# them, so that a tuning worker can import it and start its GPU worker (:func:`launch_worker`)
# before it imports the tuner.
if TYPE_CHECKING:  # (for the annotations)
    from autoconv.backends.base import TrialResult
    from autoconv.gpu.kernels import LoadedPlan

#: CUDA errors after which the context is unusable ("sticky" errors), by code.
STICKY_CUDA_ERRORS = {
    700: "cudaErrorIllegalAddress",
    702: "cudaErrorLaunchTimeout",
    710: "cudaErrorAssert",
    714: "cudaErrorHardwareStackError",
    715: "cudaErrorIllegalInstruction",
    716: "cudaErrorMisalignedAddress",
    717: "cudaErrorInvalidAddressSpace",
    718: "cudaErrorInvalidPc",
    719: "cudaErrorLaunchFailure",
    999: "cudaErrorUnknown",
}

#: Exit status of a worker that ends itself after a sticky error.
EXIT_CONTEXT_LOST = 70

#: The process name of a GPU worker.
PROCESS_NAME = "autoconv-gpu-worker"

#: Problems (with their seed) whose buffers a worker keeps, the least recently used freed first:
#: a tuner with two studies in flight alternates between their problems, and a winner's
#: re-verification uses another seed's inputs. Making them again costs the random inputs and the
#: float64 reference each time (a large layer's take a good part of a second).
PROBLEMS_KEPT = 3


@dataclass(frozen=True)
class WorkerOptions:
    device_id: int = 0
    samples: int = 7          # timed graph replays per fully timed candidate (median reported)
    warmup: int = 2
    max_buffer_sets: int = 256
    #: Which step of :meth:`WorkerSession.warm_up` to start at: a tuning run gives its GPU workers
    #: different turns. (Not compared: it changes no measurement, and a backend adopts a GPU
    #: worker launched with any turn.)
    warm_up_turn: int = field(default=0, compare=False)


@dataclass
class LaunchedWorker:
    """A GPU worker process started with ``options``, and the starting process's end of its pipe."""

    process: BaseProcess
    connection: Connection
    options: WorkerOptions


def launch_worker(options: WorkerOptions,
                  target: Callable[[Connection, WorkerOptions], None] | None = None) -> LaunchedWorker:
    """Start a GPU worker process (spawned, daemonic: it ends with this process) running
    ``target`` (default: :func:`worker_main`), and return without waiting for its replies:
    it imports CuPy, makes its CUDA context and warms up (seconds with an empty CuPy kernel
    cache) meanwhile. :class:`autoconv.gpu.backend.GpuWorker` waits for its "ready"."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=target or worker_main, args=(child, options), name=PROCESS_NAME, daemon=True)
    process.start()
    child.close()  # so that the parent sees EOF when the worker dies
    return LaunchedWorker(process, parent, options)


def worker_main(connection, options: WorkerOptions) -> None:
    """Entry point of the worker process (spawned; see the module docstring). It ends with the
    process that started it: at once when a reply finds the pipe closed, and within
    :data:`~autoconv.processes.PARENT_POLL_S` otherwise (a kernel that hangs included), so a
    killed tune leaves no GPU worker behind, and no traceback."""
    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid is not None:
        exit_with_parent(parent.pid)
    try:
        from autoconv.errors import BackendUnavailable, DeviceMemoryError
        from autoconv.gpu.device import read_device, require_cupy

        try:
            cupy = require_cupy()
            limits, identity = read_device(options.device_id)
            cupy.cuda.Device(options.device_id).use()
        except BackendUnavailable as err:
            connection.send(("unavailable", str(err)))
            return
        connection.send(("ready", (limits, identity)))
        # After "ready", not before: the warm-up (seconds with CuPy's kernel cache empty) then runs
        # beside the parent's own start (docs/lab-notes/2026-11-28-tune-start-up.md).
        session = WorkerSession(limits, options)
        session.warm_up()
        while True:
            try:
                kind, payload = connection.recv()
            except EOFError:  # the parent is gone
                return
            if kind == "shutdown":
                return
            if kind == "problem":
                try:
                    session.set_problem(*payload)
                except DeviceMemoryError as err:  # refused before allocating
                    connection.send(("problem_failed", str(err)))
                    continue
                except cupy.cuda.memory.OutOfMemoryError as err:
                    session.buffers = None
                    session.kept.clear()
                    cupy.get_default_memory_pool().free_all_blocks()
                    connection.send(("problem_failed", f"its inputs, float64 reference and timing buffers "
                                     f"do not fit in GPU memory ({err})"))
                    continue
                connection.send(("ok", None))
            elif kind == "evaluate":
                plan, cubin, compile_s, screening, cutoff_ms = payload
                result, fatal = session.evaluate(plan, cubin, compile_s, screening, cutoff_ms,
                                                 on_start=lambda: connection.send(("started", None)))
                connection.send(("result", result.as_dict(), fatal))
                if fatal:
                    connection.close()
                    os._exit(EXIT_CONTEXT_LOST)
            else:
                raise ValueError(f"unknown request {kind!r}")
    except (BrokenPipeError, ConnectionResetError):  # the parent is gone: no one to reply to
        return
    except Exception:  # a bug: report it to the parent, which raises it
        try:
            connection.send(("error", traceback.format_exc()))
        except (OSError, EOFError):
            pass
        raise


class ProblemBuffers:
    """Inputs, reference and timing buffers of one problem, on the GPU."""

    def __init__(self, problem, seed: int, l2_bytes: int, max_sets: int):
        from autoconv.verify.on_gpu import reference_and_tolerance, verification_inputs

        inputs = verification_inputs(problem, seed)
        reference, tolerance = reference_and_tolerance(problem, *inputs)
        self._assemble(problem, seed, inputs, reference, tolerance, timing_sets(problem, seed, l2_bytes, max_sets))

    @classmethod
    def of(cls, problem, seed: int, inputs: tuple, reference, tolerance: float, sets: list[dict]) -> ProblemBuffers:
        """Buffers of parts made already: ``inputs`` (x, w, bias) as
        :func:`~autoconv.verify.on_gpu.verification_inputs` makes them, their ``reference`` and
        ``tolerance``, the timing ``sets``."""
        buffers = cls.__new__(cls)
        buffers._assemble(problem, seed, inputs, reference, tolerance, sets)
        return buffers

    def _assemble(self, problem, seed: int, inputs: tuple, reference, tolerance: float, sets: list[dict]) -> None:
        import cupy

        from autoconv.problems.buffers import output_buffer

        self.problem = problem
        self.seed = seed
        self.x, self.w, self.bias = inputs
        self.pristine = {"x": self.x.copy(), "w": self.w.copy()}
        if self.bias is not None:
            self.pristine["bias"] = self.bias.copy()
        self.reference = reference
        #: The relative L2 error a kernel's output may have (its precision's).
        self.tolerance = tolerance
        self.y = output_buffer(problem, cupy)
        self.timing_sets = sets

    def verification(self, workspace) -> dict:
        """The verification buffers, with output and workspace poisoned (NaN: 0xFFFF in a
        16-bit output, a NaN in both formats)."""
        from autoconv.dtypes import POISON_BITS
        from autoconv.verify.compare import POISON

        self.y.fill(POISON_BITS[self.problem.output_dtype])
        buffers = {"x": self.x, "w": self.w, "y": self.y}
        if self.bias is not None:
            buffers["bias"] = self.bias
        if workspace is not None:
            workspace.fill(POISON)
            buffers["workspace"] = workspace
        return buffers

    def output_values(self):
        """The verification output's values, in the reference's (logical) layout."""
        import cupy

        from autoconv.problems.buffers import buffer_values

        return buffer_values(self.problem, self.y, cupy)

    def written_inputs(self) -> list[str]:
        """The inputs whose bits differ from their copies made before any kernel ran."""
        from autoconv.verify.compare import same_bits

        current = {"x": self.x, "w": self.w, "bias": self.bias}
        return [name for name, copy in self.pristine.items() if not same_bits(current[name], copy)]

    def restore_inputs(self) -> None:
        """The inputs' values as made, after a kernel wrote to them: the reference is theirs, and
        the problem's next candidates are verified against it."""
        current = {"x": self.x, "w": self.w, "bias": self.bias}
        for name, copy in self.pristine.items():
            current[name][...] = copy


def timing_sets(problem, seed: int, l2_bytes: int, max_sets: int) -> list[dict]:
    """The rotating buffer sets candidates are timed on (``x``, ``w``, ``y``, ``bias``: random data
    made on the GPU), as many as exceed twice the L2 cache (:func:`autoconv.gpu.timing.buffer_sets_for`)."""
    import cupy

    from autoconv.gpu.memory import timing_set_bytes
    from autoconv.gpu.timing import buffer_sets_for
    from autoconv.problems.buffers import output_buffer, random_buffer

    per_set = timing_set_bytes(problem)  # (as the memory estimate counts them)
    generator = cupy.random.default_rng(seed + 1)
    sets = []
    for _ in range(buffer_sets_for(per_set, l2_bytes, max_sets)):
        buffers = {"x": random_buffer(problem, "x", generator, cupy),
                   "w": random_buffer(problem, "w", generator, cupy), "y": output_buffer(problem, cupy)}
        if problem.bias:
            buffers["bias"] = random_buffer(problem, "bias", generator, cupy)
        sets.append(buffers)
    return sets


#: The problem the warm-up runs (tiny: its kernels take microseconds; bias: its kernels too).
WARM_UP_PROBLEM = "N=1,C=2,H=5,W=5,K=3,R=3,S=3,pad=1,bias=1"


def _warm_reference(problem, l2_bytes: int) -> None:
    """The inputs, the float64 reference and the tolerance."""
    from autoconv.verify.on_gpu import reference_and_tolerance, verification_inputs

    reference_and_tolerance(problem, *verification_inputs(problem, 0))


def _warm_timing_sets(problem, l2_bytes: int) -> None:
    """The timing sets' random data."""
    timing_sets(problem, 0, l2_bytes, 1)


def _warm_verification(problem, l2_bytes: int) -> None:
    """A candidate's check: the poisoned output, the comparisons of a right and a wrong one, the
    inputs' bits. (On inputs and a reference made without the other steps' kernels.)"""
    import cupy
    import numpy

    from autoconv.problems.buffers import kernel_buffer
    from autoconv.verify.compare import FLOAT32_TOLERANCE, check_result

    inputs = tuple(cupy.asarray(kernel_buffer(problem, name, numpy.ones(shape, dtype=numpy.float32)))
                   for name, shape in (("x", problem.input_shape), ("w", problem.weight_shape), ("bias", (problem.K,))))
    reference = cupy.asarray(numpy.ones(problem.output_shape))
    buffers = ProblemBuffers.of(problem, 0, inputs, reference, FLOAT32_TOLERANCE, [])
    buffers.verification(None)
    buffers.y[...] = buffers.reference
    check_result(buffers.output_values(), buffers.reference, buffers.tolerance)
    buffers.y.fill(float("nan"))
    check_result(buffers.output_values(), buffers.reference, buffers.tolerance)
    buffers.written_inputs()


#: The warm-up's steps: each compiles its own CuPy kernels, so that the GPU workers sharing a host
#: can take them in different orders (:meth:`WorkerSession.warm_up`).
WARM_UP_STEPS = (_warm_reference, _warm_timing_sets, _warm_verification)


class WorkerSession:
    """The worker's state: the device's limits and the current problem's buffers."""

    def __init__(self, limits, options: WorkerOptions):
        from autoconv.gpu.exclusive import GpuLock
        from autoconv.gpu.timing import FULL, TimingEffort

        self.limits = limits
        self.options = options
        #: Held while this worker uses the GPU (problem buffers, verification, timing), so that
        #: workers of other processes on the same GPU never run beside a measurement.
        self.gpu_lock = GpuLock.for_device(options.device_id)
        #: How candidates are timed unless screened: the options' samples and warm-up.
        self.full_effort = TimingEffort(options.samples, options.warmup, FULL.target_ms)
        self.buffers: ProblemBuffers | None = None  # the current problem's
        self.kept: OrderedDict[tuple, ProblemBuffers] = OrderedDict()  # (problem, seed) -> its buffers, oldest first
        # The last candidate's module stays loaded until the next one: after a sticky
        # error it must not be unloaded (that fails, noisily) before the worker exits.
        self.loaded: LoadedPlan | None = None

    def warm_up(self) -> None:
        """Run the verification path once on a tiny problem, so CuPy compiles its own
        kernels (fill, norms, comparisons, the reference's) now: on a machine with a
        cold CuPy kernel cache that takes seconds, which must not count against the
        first candidate's time limit. It runs after "ready", before the first request is read,
        so the parent waits for it under the first problem's preparation limit. (The comparisons
        themselves compile once whatever the sizes: :mod:`autoconv.verify.device_sums`.)

        Without the GPU's lock: its seconds are the host compiling, and its kernels take
        microseconds. Under the lock, the workers sharing a GPU warmed up one after another, and
        their first results all waited seconds more (docs/lab-notes/2026-11-28-tune-start-up.md).

        Its steps (:data:`WARM_UP_STEPS`) start at the options' ``warm_up_turn``: the GPU workers of
        a tuning run start at different steps, each compiles its first step's kernels while the
        others compile theirs, and finds the rest in CuPy's kernel cache on disk (with an empty
        cache, each compiled all of them at once before: ~4 s of 18 NVRTC compilations each)."""
        from autoconv.problems.problem import parse_spec

        problem = parse_spec(WARM_UP_PROBLEM)
        first = self.options.warm_up_turn % len(WARM_UP_STEPS)
        for step in WARM_UP_STEPS[first:] + WARM_UP_STEPS[:first]:
            step(problem, self.limits.l2_bytes)

    def set_problem(self, problem, seed: int) -> None:
        """Make ``problem``'s buffers for ``seed`` the current ones: those kept, or new ones, for
        which the oldest kept are freed (all of them, if the new ones do not fit beside the rest).

        Raises:
            DeviceMemoryError: they do not fit in the device's free memory (nothing allocated).
        """
        key = (problem, seed)
        if key in self.kept:
            self.kept.move_to_end(key)
            self.buffers = self.kept[key]
            return
        self.buffers = None
        while len(self.kept) >= PROBLEMS_KEPT:
            self.kept.popitem(last=False)
        import cupy

        from autoconv.errors import DeviceMemoryError

        try:
            buffers = self._allocate(problem, seed)
        except (DeviceMemoryError, cupy.cuda.memory.OutOfMemoryError):
            if not self.kept:
                raise
            self.kept.clear()  # (the other problems' buffers give way)
            buffers = self._allocate(problem, seed)
        self.buffers = self.kept[key] = buffers

    def _allocate(self, problem, seed: int) -> ProblemBuffers:
        """``problem``'s buffers for ``seed``, refused (DeviceMemoryError) before anything is
        allocated if the estimate exceeds the free memory."""
        import cupy

        from autoconv.gpu.memory import check_fits

        cupy.get_default_memory_pool().free_all_blocks()
        free_bytes, _ = cupy.cuda.runtime.memGetInfo()
        check_fits(problem, free_bytes, self.limits.name, self.limits.l2_bytes, free=True,
                   max_buffer_sets=self.options.max_buffer_sets)
        with self.gpu_lock:  # (the float64 reference would slow another worker's measurement)
            return ProblemBuffers(problem, seed, self.limits.l2_bytes, self.options.max_buffer_sets)

    def evaluate(self, plan, cubin: bytes, compile_s: float, screening: bool = False,
                 cutoff_ms: float | None = None,
                 on_start: Callable[[], None] | None = None) -> tuple[TrialResult, bool]:
        """Verify and time ``plan`` (in full, or with the search's shorter ``screening``
        effort, and then only once if that one call takes longer than ``cutoff_ms``), holding
        the GPU's lock, ``on_start`` called once it is held; (result, whether the CUDA context
        is lost)."""
        if self.buffers is None or self.buffers.problem != plan.problem:
            raise RuntimeError(f"evaluate {plan.name}: no buffers for its problem (send 'problem' first)")
        with self.gpu_lock:
            if on_start is not None:
                on_start()
            return self._evaluate(plan, cubin, compile_s, screening, cutoff_ms)

    def _evaluate(self, plan, cubin: bytes, compile_s: float, screening: bool,
                  cutoff_ms: float | None) -> tuple[TrialResult, bool]:
        import cupy

        from autoconv.backends.base import Status, TrialResult, failed
        from autoconv.gpu.kernels import LoadedPlan
        from autoconv.gpu.timing import SCREENING, time_calls
        from autoconv.verify.compare import check_result

        assert self.buffers is not None  # (evaluate's check)
        started = time.perf_counter()  # (after the lock: waiting for another worker is not GPU time)
        resources: dict = {}
        stage = "loading the cubin"

        def result(status: Status, reason: str, **extra) -> TrialResult:
            return failed(plan, status, reason, compile_s=compile_s,
                          run_s=time.perf_counter() - started, **resources, **extra)

        try:
            self.loaded = None
            loaded = self.loaded = LoadedPlan(plan, cubin)
            used = loaded.resources
            resources = {
                "registers": max(r.registers for r in used),
                "spill_bytes": max(r.local_bytes for r in used),
                "shared_bytes": max(
                    (loaded.resources_of(launch.kernel).static_shared_bytes + launch.shared_bytes
                     for launch in plan.launches), default=0),
            }
            problem = loaded.resource_problem(self.limits)
            if problem is not None:
                return result(Status(problem[0]), problem[1]), False

            stage = "allocating the workspace"
            elements = plan.workspace_elements
            workspace = cupy.empty(elements, dtype=cupy.float32) if elements else None

            stage = "the verification run"
            buffers = self.buffers.verification(workspace)
            loaded.launch(buffers)
            cupy.cuda.get_current_stream().synchronize()
            verdict = check_result(self.buffers.output_values(), self.buffers.reference, self.buffers.tolerance)
            if not verdict.ok:
                return result(Status.WRONG_RESULT, verdict.message, error=verdict.error), False
            written = self.buffers.written_inputs()
            if written:
                self.buffers.restore_inputs()
                return result(Status.WRONG_RESULT, f"the kernel wrote to its input(s) {', '.join(written)}, "
                              "which must stay unchanged", error=verdict.error), False

            stage = "timing"
            sets = self.buffers.timing_sets
            extra = {"workspace": workspace} if workspace is not None else {}

            def enqueue(index: int) -> None:
                loaded.launch(sets[index] | extra)

            effort = SCREENING if screening else self.full_effort
            timing = time_calls(enqueue, len(sets), samples=effort.samples, warmup=effort.warmup,
                                target_ms=effort.target_ms, cutoff_ms=cutoff_ms)
        except cupy.cuda.memory.OutOfMemoryError as err:
            return result(Status.OUT_OF_RESOURCES, f"out of GPU memory during {stage}: {err}"), False
        except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as err:
            code = getattr(err, "status", None)
            fatal = code in STICKY_CUDA_ERRORS or not _context_healthy()
            note = ("; the CUDA context is lost, the GPU worker is replaced" if fatal else "")
            return result(Status.RUNTIME_FAILED, f"CUDA error during {stage}: {err}{note}"), fatal

        reason = verdict.message
        if timing.cut_short:
            reason += (f"; timed once, not in full: {timing.median_ms:.4g} ms, over the cut-off of "
                       f"{cutoff_ms:.4g} ms (a multiple of the search's best)")
        return TrialResult(
            status=Status.OK, reason=reason, kernel_name=plan.name, cut_short=timing.cut_short,
            time_ms=timing.median_ms, min_ms=timing.min_ms, max_ms=timing.max_ms,
            tflops=timing.tflops(plan.problem.flops), error=verdict.error,
            compile_s=compile_s, run_s=time.perf_counter() - started,
            workspace_bytes=plan.workspace_bytes, source_hash=plan.source_hash, **resources), False


def _context_healthy() -> bool:
    """Whether CUDA still works in this process after an error."""
    import cupy

    try:
        cupy.cuda.runtime.deviceSynchronize()
        probe = cupy.full(1, 1.0, dtype=cupy.float32)
        return float(probe.sum()) == 1.0
    except Exception:  # any failure here means the context is gone
        return False
