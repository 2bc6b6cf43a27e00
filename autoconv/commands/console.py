"""The command line's Rich display: progress bars, tables and how a storage or cache
location is shown (a URL's password masked).

Progress goes to stderr (bars when it is a terminal, one line per finished problem
always); tables go to stdout, so ``autoconv tune ... > summary.txt`` keeps the table.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import cast

from rich.console import Console, JustifyMethod
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from autoconv.backends.base import TrialResult
from autoconv.cache.entries import CacheEntry
from autoconv.config.budget import Budget
from autoconv.errors import ProblemError
from autoconv.formatting import format_params
from autoconv.kernels.families import KernelPlan
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.search.dry_run import DryRunResult
from autoconv.search.fleet import FleetReporter, WorkerState
from autoconv.search.outcome import ProblemOutcome, Reporter, RunLoad, compile_rate
from autoconv.urls import masked_url


def stdout_console() -> Console:
    """The console for tables: the terminal's width, or 200 columns in a log file."""
    console = Console()
    return console if console.is_terminal else Console(width=200)


def shown(location: str | os.PathLike) -> str:
    """A storage or cache location for people: a URL with its password masked, a path as is."""
    return masked_url(str(location))


def _best_text(best: TrialResult | None) -> str:
    if best is None:
        return "best: -"
    return f"best {best.time_ms:.4f} ms ({best.tflops:.1f} TFLOP/s)"


def _bars(console: Console) -> Progress:
    """Progress bars with a description, the count, the best time so far and the time."""
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[best]}"), TimeElapsedColumn(), console=console, transient=False,
                    redirect_stdout=False, redirect_stderr=False)


class RichReporter(Reporter):
    """Progress bars: one for the problems, one for each problem being tuned (two when a study
    begins while another waits on its last candidates)."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.progress = _bars(self.console)
        self._problems_task: TaskID | None = None
        self._trials_tasks: dict[str, TaskID] = {}  # problem name -> its trials' bar
        self._best_families: dict[str, str] = {}    # problem name -> its best's family
        self._finished: set[str] = set()            # (a problem may finish again: counted once)

    def run_started(self, problems: Sequence[NamedProblem], budget: Budget) -> None:
        self.console.print(f"tuning {len(problems)} problem(s); budget per problem: {budget.describe()}")
        self.progress.start()
        self._problems_task = self.progress.add_task("problems", total=len(problems), best="")

    def problem_started(self, item: NamedProblem, study: str, evaluated: int, budget: Budget) -> None:
        self._drop_trials_task(item.name)
        self._trials_tasks[item.name] = self.progress.add_task(
            f"{item.name}", total=budget.trials, completed=evaluated, best="best: -")
        if evaluated:
            self.progress.console.print(f"  {item.name}: resuming its study ({evaluated} trials done)")

    def trial_finished(self, item: NamedProblem, trial_number: int, plan: KernelPlan,
                       result: TrialResult, best: TrialResult | None, evaluated: int) -> None:
        if result.ok and best is result:
            self._best_families[item.name] = plan.family
        family = self._best_families.get(item.name)
        text = _best_text(best) + (f" {family}" if family else "")
        task = self._trials_tasks.get(item.name)
        if task is not None:  # (problem_started's)
            self.progress.update(task, completed=evaluated, best=text)

    def problem_finished(self, outcome: ProblemOutcome) -> None:
        self._drop_trials_task(outcome.name)
        if self._problems_task is not None and outcome.name not in self._finished:
            self.progress.advance(self._problems_task)
        self._finished.add(outcome.name)
        self.progress.console.print(problem_line(outcome))

    def _drop_trials_task(self, name: str) -> None:
        task = self._trials_tasks.pop(name, None)
        if task is not None:
            self.progress.remove_task(task)
        self._best_families.pop(name, None)

    def run_finished(self, outcomes: Sequence[ProblemOutcome]) -> None:
        self.progress.stop()

    def note(self, text: str) -> None:
        self.progress.console.print(f"  {text}")


class RichFleetReporter(FleetReporter):
    """``autoconv tune --gpus``/``--workers-per-gpu``: the problems' bar, one bar per worker (its current
    problem, the study's evaluated trials, the best it has seen), and a line per problem
    once every live worker has finished it (see :class:`autoconv.search.fleet.FleetReporter`)."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.progress = _bars(self.console)
        self._problems_task: TaskID | None = None
        self._worker_tasks: dict[int, TaskID] = {}
        self._budget: Budget | None = None

    def run_started(self, problems: Sequence[NamedProblem], budget: Budget,
                    workers: Sequence[WorkerState]) -> None:
        self._budget = budget
        devices = sorted({worker.device for worker in workers})
        shared = f", {len(workers) // len(devices)} workers each" if len(workers) > len(devices) else ""
        plural = "s" if len(devices) != 1 else ""
        self.console.print(f"tuning {len(problems)} problem(s) on {len(devices)} GPU{plural} "
                           f"({', '.join(map(str, devices))}{shared}); budget per problem, shared by the "
                           f"workers: {budget.describe()}")
        self.progress.start()
        self._problems_task = self.progress.add_task("problems", total=len(problems), best="")
        for worker in workers:
            self._worker_tasks[worker.worker] = self.progress.add_task(f"{worker.name}: starting",
                                                                       total=budget.trials, best="")

    def worker_update(self, worker: WorkerState) -> None:
        task = self._worker_tasks[worker.worker]
        if worker.status != "running":
            self.progress.update(task, description=f"{worker.name}: {worker.status}", best="")
            return
        label = f"{worker.name}: {worker.problem}" if worker.problem else f"{worker.name}: between problems"
        self.progress.update(task, description=label, completed=worker.evaluated, best=worker.best)

    def problem_finished(self, outcome: ProblemOutcome) -> None:
        assert self._problems_task is not None  # (run_started's)
        self.progress.advance(self._problems_task)
        self.progress.console.print(problem_line(outcome))

    def note(self, text: str) -> None:
        self.progress.console.print(f"  {text}")

    def run_finished(self) -> None:
        self.progress.stop()


def problem_line(outcome: ProblemOutcome) -> str:
    """One line per finished problem (also in logs without a terminal)."""
    if outcome.time_ms is None:
        return f"[red]x[/red] {outcome.name}: no winner ({outcome.stop_reason}; {outcome.message})"
    if outcome.source == "cache":
        return (f"[green]=[/green] {outcome.name}: cached {outcome.family} {outcome.time_ms:.4f} ms "
                f"({outcome.tflops:.1f} TFLOP/s)")
    failed = f", {outcome.failed} failed ({_failures(outcome)})" if outcome.failed else ""
    workers = f" by {outcome.workers} workers" if outcome.workers > 1 else ""
    skipped = f", {outcome.predicted_slow} predicted slow and not compiled" if outcome.predicted_slow else ""
    return (f"[green]✓[/green] {outcome.name}: {outcome.family} {outcome.time_ms:.4f} ms "
            f"({outcome.tflops:.1f} TFLOP/s) after {outcome.trials_run} trials{workers}{failed}{skipped}; "
            f"stopped: {outcome.stop_reason}")


def _failures(outcome: ProblemOutcome) -> str:
    return ", ".join(f"{count} {status}" for status, count in sorted(outcome.failures.items()))


def summary_table(outcomes: Sequence[ProblemOutcome], wall_s: float | None = None,
                  load: RunLoad | None = None) -> Table:
    """Per problem: family, params, ms, TFLOP/s, trials run / failed, compile vs GPU seconds; the
    caption adds the totals over the run's ``wall_s`` and what it kept busy (``load``)."""
    table = Table(title="autoconv tune: winners", show_lines=False)
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("problem", "left"), ("shape", "left"), ("family", "left"), ("params", "left"), ("ms", "right"),
        ("TFLOP/s", "right"), ("trials", "right"), ("failed", "right"), ("compile s", "right"), ("GPU s", "right"),
        ("from", "left"))
    for column, justify in columns:
        table.add_column(column, justify=justify, overflow="fold")
    for o in outcomes:
        table.add_row(
            o.name, o.problem.shape_str(), o.family or "-", format_params(o.config),
            f"{o.time_ms:.4f}" if o.time_ms is not None else "-",
            f"{o.tflops:.2f}" if o.tflops is not None else "-",
            f"{o.trials_run}/{o.trials_total}" if o.source != "cache" else f"-/{o.trials_total}",
            str(o.failed) if o.source != "cache" else "-",
            f"{o.compile_s:.1f}", f"{o.gpu_s:.1f}", o.source)
    tuned = [o for o in outcomes if o.time_ms is not None]
    total_ms = sum(cast(float, o.time_ms) * o.count for o in tuned)
    caption = [f"{len(tuned)}/{len(outcomes)} problems with a verified winner",
               f"sum over layer instances {total_ms:.3f} ms"]
    if wall_s is not None:
        candidates, per_cpu_s = compile_rate(outcomes)
        rate = f", {per_cpu_s:.2f} a compile CPU-s" if per_cpu_s is not None else ""
        caption.append(f"tuning took {wall_s:.1f} s "
                       f"(compile {sum(o.compile_s for o in outcomes):.1f} s in parallel, "
                       f"{sum(o.compile_cpu_s for o in outcomes):.1f} CPU-s, "
                       f"GPU {sum(o.gpu_s for o in outcomes):.1f} s; {candidates} candidates{rate})")
    if load is not None and load.cores_allow is not None:
        caption.append(f"on average the compilers kept {load.compile_cores:.1f} of the host's {load.host_cores} "
                       f"cores busy, the candidates' runs {'each GPU' if load.gpus > 1 else 'the GPU'} "
                       f"{load.gpu_busy:.0%} of the time; this host's cores allow the same compiles at most "
                       f"{load.cores_allow:.2f}x as fast, with any number of GPUs")
    table.caption = "; ".join(caption)
    return table


def cache_table(entries: Sequence[CacheEntry], title: str) -> Table:
    """``autoconv show``: one row per cached winner."""
    table = Table(title=title)
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("GPU", "left"), ("shape", "left"), ("family", "left"), ("params", "left"), ("ms", "right"),
        ("TFLOP/s", "right"), ("workspace", "right"), ("measured", "left"), ("state", "left"))
    for column, justify in columns:
        table.add_column(column, justify=justify, overflow="fold")
    for entry in entries:
        try:
            shape = parse_spec(entry.key.problem_key).shape_str()
        except ProblemError:
            shape = entry.key.problem_key
        state = "current" if entry.key.is_current else "stale (other autoconv or templates)"
        table.add_row(f"{entry.key.gpu_name} (sm {entry.key.compute_capability})", shape, entry.family,
                      format_params(entry.config), f"{entry.time_ms:.4f}", f"{entry.tflops:.2f}",
                      format_bytes(entry.workspace_bytes), entry.measured_at.replace("+00:00", "Z"), state)
    return table


def format_bytes(count: int) -> str:
    if count == 0:
        return "0"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"


def dry_run_table(results: Sequence[DryRunResult]) -> Table:
    """``autoconv tune --dry-run``: one row per candidate rendered and compiled."""
    table = Table(title="autoconv tune --dry-run: rendered and compiled with nvcc (nothing ran)")
    for column in ("problem", "family", "params", "compiled", "registers", "spill B", "nvcc s", "note"):
        table.add_column(column, overflow="fold")
    for r in results:
        table.add_row(r.name, r.family, format_params(r.config), "yes" if r.ok else "[red]no[/red]",
                      str(r.registers) if r.registers is not None else "-", str(r.spill_bytes),
                      f"{r.seconds:.1f}", r.message)
    return table
