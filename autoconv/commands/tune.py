"""What ``autoconv tune`` and ``autoconv show`` print: progress bars and tables (rich).

Progress goes to stderr (bars when it is a terminal, one line per finished problem
always); the summary table goes to stdout, so ``autoconv tune ... > summary.txt`` keeps
the table.
"""

from __future__ import annotations

import time
from typing import Sequence

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn)
from rich.table import Table

from autoconv.cache.winners import CacheEntry
from autoconv.problems.config import Budget
from autoconv.backends.base import TrialResult
from autoconv.kernels.families import KernelPlan
from autoconv.problems.models import NamedProblem
from autoconv.search.outcome import ProblemOutcome, Reporter


def stdout_console() -> Console:
    """The console for tables: the terminal's width, or 200 columns in a log file."""
    console = Console()
    return console if console.is_terminal else Console(width=200)


def format_params(config) -> str:
    return " ".join(f"{name}={value}" for name, value in (config or {}).items())


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
    """Progress bars: one for the problems, one for the current problem's trials."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.progress = _bars(self.console)
        self._problems_task = None
        self._trials_task = None
        self._best_family: str | None = None

    def run_started(self, problems: Sequence[NamedProblem], budget: Budget) -> None:
        self.console.print(f"tuning {len(problems)} problem(s); budget per problem: {budget.describe()}")
        self.progress.start()
        self._problems_task = self.progress.add_task("problems", total=len(problems), best="")

    def problem_started(self, item: NamedProblem, study: str, evaluated: int, budget: Budget) -> None:
        if self._trials_task is not None:
            self.progress.remove_task(self._trials_task)
        self._best_family = None
        self._trials_task = self.progress.add_task(
            f"{item.name}", total=budget.trials, completed=evaluated, best="best: -")
        if evaluated:
            self.progress.console.print(f"  {item.name}: resuming its study ({evaluated} trials done)")

    def trial_finished(self, item: NamedProblem, trial_number: int, plan: KernelPlan,
                       result: TrialResult, best: TrialResult | None, evaluated: int) -> None:
        if result.ok and best is result:
            self._best_family = plan.family
        text = _best_text(best) + (f" {self._best_family}" if self._best_family else "")
        self.progress.update(self._trials_task, completed=evaluated, best=text)

    def problem_finished(self, outcome: ProblemOutcome) -> None:
        if self._trials_task is not None:
            self.progress.remove_task(self._trials_task)
            self._trials_task = None
        if self._problems_task is not None:
            self.progress.advance(self._problems_task)
        self.progress.console.print(problem_line(outcome))

    def run_finished(self, outcomes: Sequence[ProblemOutcome]) -> None:
        self.progress.stop()

    def note(self, text: str) -> None:
        self.progress.console.print(f"  {text}")


class RichFleetReporter:
    """``autoconv tune --gpus``: the problems' bar, one bar per GPU worker (its current
    problem, the study's evaluated trials, the best it has seen), and a line per problem
    once every live worker has finished it (see :class:`autoconv.search.fleet.FleetReporter`)."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.progress = _bars(self.console)
        self._problems_task = None
        self._worker_tasks: dict[int, object] = {}
        self._budget: Budget | None = None

    def run_started(self, problems: Sequence[NamedProblem], budget: Budget, devices: Sequence[int]) -> None:
        self._budget = budget
        self.console.print(f"tuning {len(problems)} problem(s) on {len(devices)} GPUs "
                           f"({', '.join(map(str, devices))}); budget per problem, shared by the GPUs: "
                           f"{budget.describe()}")
        self.progress.start()
        self._problems_task = self.progress.add_task("problems", total=len(problems), best="")
        for device in devices:
            self._worker_tasks[device] = self.progress.add_task(f"GPU {device}: starting", total=budget.trials,
                                                                best="")

    def worker_update(self, worker) -> None:
        task = self._worker_tasks[worker.device]
        if worker.status != "running":
            self.progress.update(task, description=f"GPU {worker.device}: {worker.status}", best="")
            return
        label = f"GPU {worker.device}: {worker.problem}" if worker.problem else f"GPU {worker.device}: between problems"
        self.progress.update(task, description=label, completed=worker.evaluated, best=worker.best)

    def problem_finished(self, outcome: ProblemOutcome) -> None:
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
    workers = f" on {outcome.workers} GPUs" if outcome.workers > 1 else ""
    return (f"[green]✓[/green] {outcome.name}: {outcome.family} {outcome.time_ms:.4f} ms "
            f"({outcome.tflops:.1f} TFLOP/s) after {outcome.trials_run} trials{workers}{failed}; "
            f"stopped: {outcome.stop_reason}")


def _failures(outcome: ProblemOutcome) -> str:
    return ", ".join(f"{count} {status}" for status, count in sorted(outcome.failures.items()))


def summary_table(outcomes: Sequence[ProblemOutcome], wall_s: float | None = None) -> Table:
    """Per problem: family, params, ms, TFLOP/s, trials run / failed, compile vs GPU seconds."""
    table = Table(title="autoconv tune: winners", show_lines=False)
    for column, justify in (("problem", "left"), ("shape", "left"), ("family", "left"), ("params", "left"),
                            ("ms", "right"), ("TFLOP/s", "right"), ("trials", "right"), ("failed", "right"),
                            ("compile s", "right"), ("GPU s", "right"), ("from", "left")):
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
    total_ms = sum(o.time_ms * o.count for o in tuned)
    caption = [f"{len(tuned)}/{len(outcomes)} problems with a verified winner",
               f"sum over layer instances {total_ms:.3f} ms"]
    if wall_s is not None:
        caption.append(f"tuning took {wall_s:.1f} s "
                       f"(compile {sum(o.compile_s for o in outcomes):.1f} s in parallel, "
                       f"GPU {sum(o.gpu_s for o in outcomes):.1f} s)")
    table.caption = "; ".join(caption)
    return table


def cache_table(entries: Sequence[CacheEntry], title: str) -> Table:
    """``autoconv show``: one row per cached winner."""
    from autoconv.errors import ProblemError
    from autoconv.problems.problem import parse_spec

    table = Table(title=title)
    for column, justify in (("GPU", "left"), ("shape", "left"), ("family", "left"), ("params", "left"),
                            ("ms", "right"), ("TFLOP/s", "right"), ("workspace", "right"),
                            ("measured", "left"), ("state", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for entry in entries:
        try:
            shape = parse_spec(entry.key.problem_key).shape_str()
        except ProblemError:
            shape = entry.key.problem_key
        state = "current" if entry.key.is_current else "stale (other autoconv or templates)"
        table.add_row(f"{entry.key.gpu_name} (sm {entry.key.compute_capability})", shape, entry.family,
                      format_params(entry.config), f"{entry.time_ms:.4f}", f"{entry.tflops:.2f}",
                      _bytes(entry.workspace_bytes), entry.measured_at.replace("+00:00", "Z"), state)
    return table


def _bytes(count: int) -> str:
    if count == 0:
        return "0"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"


# ---- the commands -----------------------------------------------------------------------

def tune_command(config_path: str, *, families: Sequence[str] | None = None, trials: int | None = None,
                 seconds: float | None = None, patience: int | None = None, dry_run: bool = False,
                 storage: str | None = None, cache: str | None = None, retune: bool = False,
                 per_family: int = 1, gpus: str | None = None) -> int:
    """``autoconv tune``: 0 when every problem has a verified winner (or, with
    ``dry_run``, every candidate compiled), 1 otherwise; errors raise AutoconvError.
    ``gpus`` (``all`` or ``0,1,...``) tunes with one worker process per GPU
    (:mod:`autoconv.search.fleet`)."""
    import dataclasses
    import os

    from autoconv.cache.winners import WinnerCache
    from autoconv.problems.config import load_config
    from autoconv.errors import BackendUnavailable

    config = load_config(config_path)
    families = tuple(families) if families else config.families
    budget = dataclasses.replace(
        config.budget, **{k: v for k, v in (("trials", trials), ("seconds", seconds), ("patience", patience))
                          if v is not None})
    stdout = stdout_console()
    if dry_run:
        return _dry_run(config, families, per_family, stdout)

    from autoconv.backends.factory import make_backend
    from autoconv.search.tuner import Tuner

    storage = storage or config.storage
    cache = cache_location(cache, storage, config)
    started = time.monotonic()
    if gpus is not None:
        from autoconv.search.fleet import parse_gpus

        try:
            devices = parse_gpus(gpus)
        except BackendUnavailable as err:
            raise BackendUnavailable(f"{err}. `autoconv tune --gpus` measures kernels on CUDA GPUs") from None
        if len(devices) > 1:
            return _tune_on_gpus(config, devices, families, budget, storage, cache, retune, started, stdout)
        config = dataclasses.replace(config, device=devices[0])
    try:
        backend = make_backend(config.device, seed=config.seed)
    except BackendUnavailable as err:
        raise BackendUnavailable(f"{err}. `autoconv tune` measures kernels on a CUDA GPU; "
                                 "`autoconv tune --dry-run` renders and compiles the candidates "
                                 "with nvcc instead") from None
    with backend, WinnerCache(cache) as winners:
        reporter = RichReporter()
        reporter.note(f"device: {backend.identity.gpu_name} (sm_{''.join(map(str, backend.identity.compute_capability))}, "
                      f"CUDA runtime {backend.identity.cuda_runtime}, driver {backend.identity.cuda_driver}); "
                      f"cache {_shown(cache)}; storage {_shown(storage)}")
        tuner = Tuner(backend, storage=storage, families=families, budget=budget,
                      seed=config.seed, workspace_limit=config.workspace_limit_bytes, cache=winners,
                      retune=retune, reporter=reporter, workers=os.cpu_count() or 1)
        outcomes = tuner.tune(config.problems)
    wall_s = time.monotonic() - started
    return _summarise(config, outcomes, wall_s, stdout, families, budget,
                      {"device": backend.identity.gpu_name, "gpus": [config.device]})


def cache_location(cache: str | None, storage: str, config) -> str:
    """Where winners go: ``--cache``; else, when the studies are in a database (a URL
    ``storage``) and the config names no cache, that same database (so that hosts
    sharing the studies share the winners); else the config's cache."""
    from autoconv.search.storage import is_url

    if cache is not None:
        return str(cache)
    if is_url(storage) and not config.cache_given:
        return storage
    return str(config.cache)


def _shown(location: str) -> str:
    from autoconv.search.storage import shown as masked
    return masked(str(location))


def _tune_on_gpus(config, devices, families, budget, storage: str, cache: str, retune: bool, started: float,
                  stdout: Console) -> int:
    from autoconv.search.fleet import tune_on_gpus

    reporter = RichFleetReporter()
    reporter.note(f"cache {_shown(cache)}; storage {_shown(storage)}")
    outcomes, workers = tune_on_gpus(config, devices, families=families, budget=budget, storage=storage,
                                     cache=cache, retune=retune, reporter=reporter)
    wall_s = time.monotonic() - started
    for worker in workers:
        if worker.status != "done":
            stdout.print(f"[red]GPU {worker.device}[/red] ({worker.gpu or 'not started'}): {worker.error}")
    return _summarise(config, outcomes, wall_s, stdout, families, budget, {
        "device": sorted({w.gpu for w in workers if w.gpu}), "gpus": list(devices),
        "workers": [{"gpu": w.device, "device": w.gpu, "status": w.status, "error": w.error,
                     "problems_finished": len(w.finished)} for w in workers]})


def _summarise(config, outcomes, wall_s: float, stdout: Console, families, budget, run: dict) -> int:
    """Print the summary table and write ``tune.json``; the exit status."""
    import dataclasses
    import json

    from autoconv.files import write_atomically

    stdout.print(summary_table(outcomes, wall_s))
    config.results.mkdir(parents=True, exist_ok=True)
    summary_path = config.results / "tune.json"
    write_atomically(summary_path, json.dumps({  # a kill leaves the old file or the new one
        "config": config.origin, **run, "families": list(families),
        "budget": dataclasses.asdict(budget), "wall_s": wall_s,
        "problems": [outcome.as_dict() for outcome in outcomes]}, indent=1) + "\n")
    stdout.print(f"summary written to {summary_path}")
    return 0 if all(outcome.time_ms is not None for outcome in outcomes) else 1


def _dry_run(config, families, per_family: int, stdout: Console) -> int:
    from autoconv.search.dry_run import dry_run

    results = dry_run(config.problems, families, per_family=per_family, seed=config.seed,
                      workspace_limit=config.workspace_limit_bytes)
    table = Table(title="autoconv tune --dry-run: rendered and compiled with nvcc (nothing ran)")
    for column in ("problem", "family", "params", "compiled", "registers", "spill B", "nvcc s", "note"):
        table.add_column(column, overflow="fold")
    for r in results:
        table.add_row(r.name, r.family, format_params(r.config), "yes" if r.ok else "[red]no[/red]",
                      str(r.registers) if r.registers is not None else "-", str(r.spill_bytes),
                      f"{r.seconds:.1f}", r.message)
    stdout.print(table)
    failed = [r for r in results if not r.ok and r.kernel_name]
    stdout.print(f"{len(results) - len(failed)} of {len(results)} candidates compiled")
    return 1 if failed else 0


def show_command(cache: str | None = None, config_path: str | None = None) -> int:
    """``autoconv show``: the cached winners of every GPU, current or stale."""
    from autoconv.cache.winners import WinnerCache
    from autoconv.problems.config import load_config

    path = cache or (load_config(config_path).cache if config_path else None)
    with WinnerCache(path) as winners:
        entries = winners.entries()
        title = f"{winners.location}: {len(entries)} cached winner{'s' if len(entries) != 1 else ''}"
    stdout_console().print(cache_table(entries, title))
    return 0


def cache_command(action: str, file: str | None = None, cache: str | None = None) -> int:
    """``autoconv cache clear | export FILE | import FILE``."""
    from autoconv.cache.winners import WinnerCache, default_location, is_url
    from autoconv.errors import AutoconvError

    console = stdout_console()
    if action == "clear":
        target = cache or default_location()
        existed = WinnerCache.clear(target)
        if is_url(target):  # only autoconv's tables go, never Optuna's
            console.print(f"{'dropped the tables autoconv_meta, autoconv_winners in' if existed else 'no cache in'} "
                          f"{_shown(target)}")
        else:
            console.print(f"{'deleted' if existed else 'no cache at'} {target}")
        return 0
    if file is None:
        raise AutoconvError(f"cache {action} needs a FILE")
    with WinnerCache(cache) as winners:
        if action == "export":
            count = winners.export(file)
            console.print(f"exported {count} winner{'s' if count != 1 else ''} from {winners.location} to {file}")
        else:
            stored, kept = winners.import_file(file)
            console.print(f"imported {stored} winner{'s' if stored != 1 else ''} into {winners.location}"
                          + (f"; kept {kept} faster existing entr{'ies' if kept != 1 else 'y'}" if kept else ""))
    return 0
