"""The fake backend: deterministic synthetic timings without a GPU.

For tests of the search, the CLI and the reliability machinery (``AUTOCONV_BACKEND=fake``):
nothing is compiled or run.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import replace

from autoconv.backends.base import Backend, BackendIdentity, Status, Ticket, TrialResult, failed
from autoconv.kernels.families import KernelPlan
from autoconv.kernels.limits import H100, DeviceLimits

FAKE_IDENTITY = BackendIdentity(gpu_name="Fake GPU (autoconv tests)", compute_capability=H100.compute_capability,
                                cuda_runtime=0, cuda_driver=0, backend="fake")


def _unit_hash(*parts: object) -> float:
    """A stable number in [0, 1) from ``parts``."""
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).digest()
    return int.from_bytes(digest[:8], "little") / 2**64


#: The slowdown of a build with the sizes at run time: 1.05 to 1.15, around the ~1.10 measured on
#: ResNet-50's layers (docs/lab-notes/2026-11-27-problem-sizes-at-run-time.md).
RUN_TIME_SIZES_COST, RUN_TIME_SIZES_SPREAD = 1.05, 0.10


class FakeBackend(Backend):
    """Synthetic, deterministic timings: a landscape with structure a sampler can learn.

    A plan's time is ``base(problem) * family factor * product of per-parameter
    factors``, each factor a stable hash of (family, parameter, value) mapped to
    [1, 2): the same config always gets the same time, neighbouring values differ, and
    the optimum is a definite point. A build with the sizes at run time (a plan with
    ``constants``) is slower by 5-15%, by a stable hash of its configuration, as on the GPU:
    enough to reorder close candidates. Nothing is compiled or run.

    Args:
        device: the limits the search spaces see (default: the H100's).
        fail: ``fail(plan) -> (Status, reason) | None``: inject failures (a compile
            error, a wrong result, a hang...) for chosen candidates.
        delay_s: sleep this long per result (for tests of the seconds budget, and to
            give tests of a killed ``autoconv tune`` something to interrupt).
        memory_bytes: the device memory it pretends to have (default: ``device``'s).

    ``evaluated`` lists every plan whose result was asked for, in order, ``screened``
    whether each was asked for with the search's shorter timing, and ``prepared`` the plans
    :meth:`prepare` was given.
    """

    def __init__(self, device: DeviceLimits = H100, *,
                 fail: Callable[[KernelPlan], tuple[Status, str] | None] | None = None,
                 delay_s: float = 0.0, memory_bytes: int | None = None):
        if memory_bytes is not None:
            device = replace(device, global_memory_bytes=int(memory_bytes))
        self.device = device
        self.identity = FAKE_IDENTITY
        self._fail = fail
        self._delay_s = delay_s
        self.evaluated: list[KernelPlan] = []
        self.screened: list[bool] = []
        self.prepared: list[KernelPlan] = []

    def prepare(self, plan: KernelPlan) -> None:
        self.prepared.append(plan)

    def submit(self, plan: KernelPlan, *, seed: int | None = None, screening: bool = False,
               cutoff_ms: float | None = None, priority: float | None = None) -> Ticket:
        return Ticket(plan, screening, cutoff_ms)

    def withdraw(self, ticket: Ticket) -> bool:
        """Always: nothing of a candidate runs before its result is asked for."""
        return True

    def result(self, ticket: Ticket) -> TrialResult:
        plan = ticket.plan
        self.evaluated.append(plan)
        self.screened.append(ticket.screening)
        if self._delay_s:
            time.sleep(self._delay_s)
        injected = self._fail(plan) if self._fail else None
        if injected is not None:
            status, reason = injected
            return failed(plan, status, reason, compile_s=0.01, compile_cpu_s=0.008, run_s=0.001)
        time_ms = self.synthetic_time_ms(plan)
        cut_short = ticket.cutoff_ms is not None and time_ms > ticket.cutoff_ms
        return TrialResult(status=Status.OK, reason="synthetic timing" + (", cut short" if cut_short else ""),
                           kernel_name=plan.name, cut_short=cut_short,
                           time_ms=time_ms, min_ms=time_ms, max_ms=time_ms, error=0.0,
                           tflops=plan.problem.flops / (time_ms * 1e-3) / 1e12,
                           compile_s=0.01, compile_cpu_s=0.008, run_s=0.001, registers=64, spill_bytes=0,
                           shared_bytes=max((launch.shared_bytes for launch in plan.launches), default=0),
                           workspace_bytes=plan.workspace_bytes, source_hash=plan.source_hash)

    @staticmethod
    def synthetic_time_ms(plan: KernelPlan) -> float:
        base = plan.problem.flops / 20e12 * 1e3  # 20 TFLOP/s
        factor = 1.0 + _unit_hash("family", plan.family)
        for name, value in sorted(plan.config.items()):
            factor *= 1.0 + _unit_hash(plan.family, name, value)
        if plan.constants:
            factor *= RUN_TIME_SIZES_COST + RUN_TIME_SIZES_SPREAD * _unit_hash("run-time sizes", plan.family,
                                                                               sorted(plan.config.items()))
        return base * factor
