"""``autoconv tune --dry-run``: render each problem's candidates and compile them with
nvcc, without a GPU and without searching (nothing runs, no study is written).

Per problem and family: the family's default configuration, plus random valid ones up to
``per_family`` (:func:`autoconv.search.points.sample_valid`), compiled in threads. It
proves that the templates render and compile for a config's shapes before GPU time is
spent on them.
"""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from autoconv.errors import BackendUnavailable
from autoconv.kernels.families import KernelPlan, get_family
from autoconv.kernels.limits import H100, DeviceLimits
from autoconv.kernels.nvcc import NvccError, compile_cubin, nvcc_available
from autoconv.kernels.space import DEFAULT_WORKSPACE_LIMIT
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import ConvProblem
from autoconv.search.points import sample_valid


@dataclass
class DryRunResult:
    """One candidate of ``autoconv tune --dry-run``: rendered and compiled by nvcc."""

    name: str
    problem: ConvProblem
    family: str
    config: dict
    kernel_name: str = ""
    ok: bool = False
    seconds: float = 0.0
    registers: int | None = None
    spill_bytes: int = 0
    message: str = ""


def sample_plans(problems: Sequence[NamedProblem], families: Sequence[str], *, per_family: int, seed: int,
                 device: DeviceLimits, workspace_limit: int = DEFAULT_WORKSPACE_LIMIT,
                 ) -> list[tuple[NamedProblem, str, KernelPlan | None, str]]:
    """Per problem and family, up to ``per_family`` plans, the family's default first, then
    random valid configurations (:func:`autoconv.search.points.sample_valid`), as
    ``(problem, family, plan, "")``; one ``(problem, family, None, why)`` where the family has
    none for the problem."""
    sampled: list[tuple[NamedProblem, str, KernelPlan | None, str]] = []
    for item in problems:
        for family in families:
            reason = get_family(family).unsupported_reason(item.problem)
            configs = [] if reason else sample_valid(family, item.problem, device, workspace_limit,
                                                      per_family, seed)
            if not configs:
                sampled.append((item, family, None, reason or "no valid configuration"))
            sampled += [(item, family, get_family(family).plan(item.problem, config, device, workspace_limit), "")
                        for config in configs]
    return sampled


def dry_run(problems: Sequence[NamedProblem], families: Sequence[str], *, per_family: int = 1,
            seed: int = 0, device: DeviceLimits | None = None,
            workspace_limit: int = DEFAULT_WORKSPACE_LIMIT, workers: int | None = None,
            progress: Callable[[int, int], None] | None = None) -> list[DryRunResult]:
    """Render each problem's candidates (per family: the default, plus random valid
    configs up to ``per_family``) and compile them with nvcc, in ``workers`` threads.
    Nothing runs; no GPU is needed. ``progress(done, total)`` is called once the candidates are
    rendered (done 0) and as each compile ends, so that a large config shows its progress.

    Raises:
        BackendUnavailable: nvcc is not installed.
    """
    if not nvcc_available():
        raise BackendUnavailable("--dry-run compiles with nvcc, which is not on PATH (nor under "
                                 "$CUDA_HOME/bin); install the CUDA toolkit")
    device = device or H100
    jobs: list[tuple[DryRunResult, KernelPlan | None]] = [
        (DryRunResult(item.name, item.problem, family, {}, message=why), None) if plan is None else
        (DryRunResult(item.name, item.problem, family, dict(plan.config), plan.name), plan)
        for item, family, plan, why in sample_plans(problems, families, per_family=per_family, seed=seed,
                                                    device=device, workspace_limit=workspace_limit)]

    def compile_one(job):
        result, plan = job
        if plan is None:
            return result
        try:
            report = compile_cubin(plan.source, device.arch, label=plan.name)
        except NvccError as err:
            result.message = err.output.strip().splitlines()[0] if err.output.strip() else str(err)
            return result
        result.ok = True
        result.seconds = report.seconds
        result.registers = max((k.registers for k in report.kernels.values()), default=None)
        result.spill_bytes = max((k.spill_store_bytes for k in report.kernels.values()), default=0)
        result.message = "spills" if report.spills else "compiled"
        return result

    report_progress = progress or (lambda done, total: None)
    report_progress(0, len(jobs))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 2) as pool:
        futures = [pool.submit(compile_one, job) for job in jobs]
        for done, _ in enumerate(concurrent.futures.as_completed(futures), start=1):
            report_progress(done, len(jobs))
        return [future.result() for future in futures]
