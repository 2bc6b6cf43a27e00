"""The headline suite: every headline benchmark tuned from an empty cache and measured in one run.

``autoconv bench --suite headline`` runs it on a GPU machine and writes the record
``results/<gpu>/<benchmark>/`` (:data:`HEADLINE`: ResNet-50 at batch 32 and the layers of other
networks, in each precision and layout). Each benchmark starts from nothing: its own studies
journal, winners' cache, CuPy, CUDA and cubin caches, in a temporary folder. Three processes
then run one after the other:

1. ``autoconv tune`` writes ``tune.json`` (``wall_s``: how long tuning took);
2. ``autoconv bench --no-tune --no-trials`` writes ``results.json`` (each winner against cuDNN's
   best plan in the same precision and layout, and PyTorch's ``F.conv2d``, alternating in one
   process; the tuning history stays out of the record);
3. ``autoconv report`` writes ``report.md``, ``results.csv`` and the plots;

and the suite writes ``env.json`` (GPU, driver, CUDA, cuDNN, PyTorch, commit, the commands).
The end-to-end benchmark (:class:`EndToEndBenchmark`, ``e2e_resnet50``) runs other steps: for each
mode and batch ``autoconv tune --model`` (the mode's precision and layout) and ``autoconv bench
--no-tune`` (which records cuDNN's plan where it beats the winner, as the runtime then runs it),
then ``autoconv bench --end-to-end`` (:mod:`autoconv.bench.end_to_end`); its ``tune.json`` sums
the tuning runs.
Last, the table of every benchmark goes to ``results/<gpu>/README.md`` and between the markers
:data:`TABLE_BEGIN` and :data:`TABLE_END` of the checkout's README.md: the headline figures are
this run's output, never copied by hand.

Each benchmark is made in its temporary folder and moves into ``results/<gpu>/`` only once done,
so a run cut short leaves the earlier folder as it was. A benchmark that fails is recorded (its
step and exit status in ``env.json``) and the suite goes on. ``--resume`` keeps the benchmarks a
suite run already completed in the folder (a run cut short continues where it stopped).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from autoconv import settings
from autoconv.bench.end_to_end import MODES, headline_line, load_records, records_table
from autoconv.bench.results import ReportError, geomeans, is_positive, load_results
from autoconv.errors import AutoconvError, UsageError
from autoconv.files import path_problem, write_atomically

#: The source checkout: the suite's configs are its examples/.
CHECKOUT_ROOT = Path(__file__).resolve().parents[2]

#: The lines of README.md between which the suite writes its table.
TABLE_BEGIN = "<!-- headline-table:begin -->"
TABLE_END = "<!-- headline-table:end -->"

#: The files of a benchmark's folder that the suite (through tune, bench and report) writes
#: (``convergence.png``: the plot of the trials, which folders written before ``--no-trials`` hold).
BENCHMARK_FILES = ("env.json", "tune.json", "results.json", "results.csv", "report.md",
                   "speedup.png", "tflops.png", "families.png", "convergence.png")

#: How ``env.json`` began its ``command`` before it named its suite (``"suite"``): such folders
#: are the suite's too.
SUITE_MARK = "autoconv bench --suite"


@dataclass(frozen=True)
class Benchmark:
    """One benchmark of a suite: a config of examples/ tuned and measured in one precision and
    layout; ``name`` is its results folder."""

    name: str
    title: str
    config: str
    precision: str
    layout: str

    @property
    def config_path(self) -> Path:
        return CHECKOUT_ROOT / "examples" / self.config


def _both_workloads(precision: str, layout: str, resnet_config: str) -> tuple[Benchmark, Benchmark]:
    mode = f"{precision}_{layout.lower()}" if precision != "fp32" else "fp32"
    label = f"{precision} {layout}"
    return (Benchmark(f"resnet50_n32_{mode}", f"ResNet-50, batch 32, {label}", resnet_config, precision, layout),
            Benchmark(f"other_networks_{mode}", f"other networks' layers, {label}", "other_networks.yaml",
                      precision, layout))


_PAIRS = (_both_workloads("fp32", "NCHW", "resnet50.yaml"),
          _both_workloads("tf32", "NCHW", "resnet50_tf32.yaml"),
          _both_workloads("tf32", "NHWC", "resnet50_tf32_nhwc.yaml"),
          _both_workloads("bf16", "NHWC", "resnet50_bf16.yaml"),
          _both_workloads("fp16", "NHWC", "resnet50_bf16.yaml"))


@dataclass(frozen=True)
class EndToEndBenchmark:
    """A model's whole forward, PyTorch's against its conversion's, in each mode
    (:data:`autoconv.bench.end_to_end.MODES`) at each input shape, each mode's problems tuned at
    each batch first; ``name`` is its results folder."""

    name: str
    title: str
    model: str                                  # module:factory
    shapes: tuple[tuple[int, int, int, int], ...]
    modes: tuple[str, ...] = tuple(MODES)

    def tuning_runs(self) -> list[TuningRun]:
        """Each tuning run: per mode and batch (``tf32_nchw_n32``), then, for a mode whose layers
        torch.compile's graph runs in another layout (:attr:`Mode.compiled_layout`), the same
        with ``--compile`` (``tf32_nchw_n32_compiled``)."""
        runs = [TuningRun(f"{mode}_n{shape[0]}", mode, shape, False) for mode in self.modes for shape in self.shapes]
        return runs + [TuningRun(f"{run.label}_compiled", run.mode, run.shape, True) for run in runs
                       if MODES[run.mode].compiled_layout != MODES[run.mode].layout]


class TuningRun(NamedTuple):
    """One ``autoconv tune --model`` run of an end-to-end benchmark (``compiled``: with ``--compile``)."""

    label: str
    mode: str
    shape: tuple[int, int, int, int]
    compiled: bool


#: ResNet-50 end to end: torchvision's, random weights, batch 32 and 1.
E2E_RESNET50 = EndToEndBenchmark("e2e_resnet50", "ResNet-50 end to end (torchvision, random weights)",
                                 "torchvision.models:resnet50", ((32, 3, 224, 224), (1, 3, 224, 224)))

AnyBenchmark = Benchmark | EndToEndBenchmark

#: The headline suite: ResNet-50 first (every precision), then the other networks' layers, then
#: ResNet-50 end to end.
HEADLINE: tuple[AnyBenchmark, ...] = (tuple(pair[0] for pair in _PAIRS) + tuple(pair[1] for pair in _PAIRS)
                                      + (E2E_RESNET50,))

SUITES: dict[str, tuple[AnyBenchmark, ...]] = {"headline": HEADLINE}


@dataclass(frozen=True)
class BenchmarkOutcome:
    benchmark: AnyBenchmark
    status: str  # "ok", "kept" (--resume), or "failed: <step> (exit N)"


#: Runs one step: (argv, environment, log file) -> exit status.
StepRunner = Callable[[Sequence[str], Mapping[str, str], Path], int]


#: A step still running after this long is stopped with every process it started (its GPU
#: worker and compilers too), and its benchmark recorded as timed out.
STEP_TIMEOUT_S = 3600
#: The exit status recorded for a step stopped at :data:`STEP_TIMEOUT_S` (as ``timeout`` gives).
TIMED_OUT = 124


def run_step(argv: Sequence[str], env: Mapping[str, str], log_path: Path, timeout_s: float | None = None) -> int:
    """Run ``argv`` with ``env`` in a process group of its own, its output into ``log_path``;
    its exit status (:data:`TIMED_OUT` when it ran past ``timeout_s``, default
    :data:`STEP_TIMEOUT_S`, and its whole group was killed)."""
    with open(log_path, "wb") as log:
        process = subprocess.Popen(list(argv), env=dict(env), stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            return process.wait(timeout=STEP_TIMEOUT_S if timeout_s is None else timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            log.write(f"\n(stopped after {STEP_TIMEOUT_S if timeout_s is None else timeout_s} s)\n".encode())
            return TIMED_OUT
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # (what the step left running)


# ---- choosing and checking --------------------------------------------------------------------

def select(suite: str, only: Sequence[str] | None = None) -> tuple[AnyBenchmark, ...]:
    """The benchmarks of ``suite``, or of them those named in ``only`` (in the suite's order).

    Raises:
        UsageError: an unknown suite or benchmark name (the known ones listed)."""
    if suite not in SUITES:
        raise UsageError("--suite", suite, f"no such suite; known: {', '.join(SUITES)}")
    benchmarks = SUITES[suite]
    if not only:
        return benchmarks
    names = {b.name for b in benchmarks}
    unknown = [name for name in only if name not in names]
    if unknown:
        raise UsageError("--only", ",".join(unknown), f"not a benchmark of the {suite} suite; its benchmarks: "
                         + ", ".join(b.name for b in benchmarks))
    return tuple(b for b in benchmarks if b.name in only)


def gpu_folder_name(gpu_name: str) -> str:
    """The results folder of a GPU: ``NVIDIA H200`` -> ``h200``, ``NVIDIA H100 80GB HBM3`` ->
    ``h100_80gb_hbm3``."""
    name = re.sub(r"^nvidia\s+", "", gpu_name.strip(), flags=re.IGNORECASE)
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    return slug or "gpu"


def is_suite_folder(folder: Path) -> bool:
    """Whether ``folder`` is a folder (not a link) holding only files a suite run wrote (so it
    may be replaced)."""
    if folder.is_symlink() or not folder.is_dir():
        return False
    try:
        env = json.loads((folder / "env.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(env, dict) or not (env.get("suite") in SUITES
                                         or str(env.get("command", "")).startswith(SUITE_MARK)):
        return False
    return all(path.name in BENCHMARK_FILES and path.is_file() and not path.is_symlink()
               for path in folder.iterdir())


def is_complete(folder: Path) -> bool:
    """Whether a suite run completed the benchmark in ``folder``."""
    if not is_suite_folder(folder):
        return False
    env = json.loads((folder / "env.json").read_text(encoding="utf-8"))
    return env.get("status") == "ok" and all((folder / name).is_file()
                                             for name in ("tune.json", "results.json", "report.md"))


def check_targets(benchmarks: Sequence[AnyBenchmark], gpu_root: Path) -> None:
    """Refuse, before any work, to write where something the suite did not write is in the way.

    Raises:
        AutoconvError: naming the path and why."""
    problem = path_problem(gpu_root, want="folder") if gpu_root.exists() or gpu_root.is_symlink() else None
    if problem:
        raise AutoconvError(f"cannot write the suite's results under {gpu_root}: {problem}; pass another --out")
    for benchmark in benchmarks:
        if isinstance(benchmark, Benchmark) and not benchmark.config_path.is_file():
            raise AutoconvError(f"the {benchmark.name} benchmark's config {benchmark.config_path} is missing: the "
                                "suite runs from a source checkout of autoconv (its examples/ folder)")
        folder = gpu_root / benchmark.name
        if (folder.exists() or folder.is_symlink()) and not is_suite_folder(folder):
            raise AutoconvError(f"{folder} holds files the suite did not write, and it does not replace them; "
                                "move them, or pass another --out")
    readme = gpu_root / "README.md"
    if readme.exists() and not _is_suite_readme(readme):
        raise AutoconvError(f"{readme} is not a table the suite wrote, and it does not replace it; move it, or "
                            "pass another --out")


def _is_suite_readme(path: Path) -> bool:
    try:
        return path.read_text(encoding="utf-8").startswith(SUITE_README_HEAD)
    except (OSError, UnicodeDecodeError):
        return False


# ---- running ------------------------------------------------------------------------------------

def benchmark_config(benchmark: Benchmark, work: Path, folder: Path) -> Path:
    """Write the config the benchmark tunes and measures into ``work``: its example config with
    the benchmark's precision and layout, and the storage, cache and results in fresh places."""
    config = yaml.safe_load(benchmark.config_path.read_text(encoding="utf-8"))
    config.update(precision=benchmark.precision, layout=benchmark.layout,
                  storage=str(work / "studies.journal"), cache=str(work / "winners.sqlite3"),
                  results=str(folder.absolute()))
    path = work / "config.yaml"
    path.write_text(f"# {benchmark.config} for the {benchmark.name} benchmark (autoconv bench --suite)\n"
                    + yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def fresh_environment(work: Path, base: Mapping[str, str]) -> dict[str, str]:
    """``base`` without autoconv's own variables (a fake backend or a shared cache of the
    caller's must not reach a benchmark; the commit given stays), with every cache autoconv,
    CuPy and CUDA keep pointed into ``work`` (empty)."""
    dropped = {variable.name for variable in settings.VARIABLES if variable is not settings.GIT_COMMIT}
    return {**{name: value for name, value in base.items() if name not in dropped},
            settings.CACHE.name: str(work / "winners.sqlite3"), settings.CUBIN_CACHE.name: str(work / "cubins"),
            "CUPY_CACHE_DIR": str(work / "cupy"), "CUDA_CACHE_PATH": str(work / "cuda"), "PYTHONUNBUFFERED": "1"}


def end_to_end_steps(benchmark: EndToEndBenchmark, work: Path, made: Path, python: str) -> dict[str, list[str]]:
    """The end-to-end benchmark's steps: per mode and batch, ``autoconv tune --model`` (the config
    written into ``work``, where its studies journal then is too; the winners go to the cache the
    environment names) and ``autoconv bench --no-tune`` of that config (cuDNN's plan recorded
    where it is faster); last the measurement into ``made``."""
    autoconv = [python, "-m", "autoconv"]
    steps: dict[str, list[str]] = {}
    for label, mode, shape, compiled in benchmark.tuning_runs():
        config = work / f"{label}.yaml"
        layout = ["--compile"] if compiled else ["--layout", MODES[mode].layout]
        steps[f"tune_{label}"] = autoconv + ["tune", "--model", benchmark.model, "--input", "x".join(map(str, shape)),
                                             "--precision", MODES[mode].precision, *layout,
                                             "--write-config", str(config), "--results", str(work / "tune" / label)]
        steps[f"bench_{label}"] = autoconv + ["bench", str(config), "--no-tune", "--no-trials", "--out",
                                              str(work / "layers" / f"{label}.json")]
    steps["measure"] = autoconv + ["bench", "--end-to-end", benchmark.model, "--input",
                                   ",".join("x".join(map(str, shape)) for shape in benchmark.shapes),
                                   "--modes", ",".join(benchmark.modes), "--out", str(made)]
    return steps


def tuning_summary(benchmark: EndToEndBenchmark, work: Path) -> dict[str, Any]:
    """The end-to-end benchmark's ``tune.json``: ``wall_s``, the sum of its tuning runs' wall
    times, and each run's (None where it wrote no summary)."""
    runs = {}
    for label, mode, shape, _ in benchmark.tuning_runs():
        summary = _read_json(work / "tune" / label / "tune.json")
        wall = summary.get("wall_s")
        runs[label] = {"mode": mode, "input": list(shape), "wall_s": wall if is_positive(wall) else None,
                       "problems": len(summary["problems"]) if isinstance(summary.get("problems"), list) else None}
    walls = [run["wall_s"] for run in runs.values()]
    return {"wall_s": sum(walls) if all(w is not None for w in walls) else None, "runs": runs}


def run_benchmark(benchmark: AnyBenchmark, folder: Path, *, suite: str, command: str, runner: StepRunner = run_step,
                  python: str = sys.executable, log: Callable[[str], None] = print) -> BenchmarkOutcome:
    """Tune, bench and report one benchmark from empty caches, in a temporary folder, then put
    what it wrote at ``folder`` (replacing the suite's earlier one: a run cut short replaces
    nothing)."""
    with tempfile.TemporaryDirectory(prefix=f"autoconv-{benchmark.name}-") as work_dir:
        work = Path(work_dir)
        made = work / "out"
        made.mkdir()
        results_path = made / "results.json"
        env = fresh_environment(work, os.environ)
        if isinstance(benchmark, Benchmark):
            config = benchmark_config(benchmark, work, made)
            steps = {"tune": [python, "-m", "autoconv", "tune", str(config)],
                     "bench": [python, "-m", "autoconv", "bench", str(config), "--no-tune", "--no-trials", "--out",
                               str(results_path)],
                     "report": [python, "-m", "autoconv", "report", "--results", str(results_path), "--out",
                                str(made)]}
        else:
            steps = end_to_end_steps(benchmark, work, made, python)
        status, log_tail = "ok", None
        for step, argv in steps.items():
            log(f"{benchmark.name}: {step}")
            log_path = work / f"{step}.log"
            code = runner(argv, env, log_path)
            if code != 0:
                status = f"failed: {step} ({'timed out' if code == TIMED_OUT else f'exit {code}'})"
                log_tail = _tail(log_path)
                log(f"{benchmark.name}: {status}\n{log_tail}")
                break
        if isinstance(benchmark, Benchmark):
            environment = _read_json(results_path).get("environment", {}) if results_path.is_file() else {}
            about: dict[str, Any] = {"config": f"examples/{benchmark.config}", "precision": benchmark.precision,
                                     "layout": benchmark.layout}
        else:
            measured = _read_json(made / "env.json")  # (what the measurement wrote, replaced below)
            environment = measured.get("environment") or {}
            about = {"model": benchmark.model, "inputs": ["x".join(map(str, s)) for s in benchmark.shapes],
                     "modes": list(benchmark.modes), "method": measured.get("method"),
                     **{key: environment.get(key) for key in ("torch_cuda", "torch_cudnn")}}
            write_atomically(made / "tune.json", json.dumps(tuning_summary(benchmark, work), indent=1) + "\n")
        env_record = {
            "suite": suite, "command": command, "benchmark": benchmark.name, "title": benchmark.title, **about,
            "status": status,
            "steps": {step: "autoconv " + shlex.join(argv[3:]).replace(str(work), "$WORK")
                      for step, argv in steps.items()},
            "failure_log_tail": log_tail,
            **{key: environment.get(key) for key in ("gpu", "driver", "cuda_runtime", "cudnn", "cudnn_frontend",
                                                     "torch", "cupy", "python", "autoconv", "git_commit",
                                                     "git_dirty", "date")},
        }
        write_atomically(made / "env.json", json.dumps(env_record, indent=1) + "\n")
        for path in made.iterdir():  # (only what the suite knows goes into the record)
            if path.name not in BENCHMARK_FILES:
                path.unlink()
        if folder.exists():
            shutil.rmtree(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(made), str(folder))
    return BenchmarkOutcome(benchmark, status)


def run_suite(benchmarks: Sequence[AnyBenchmark], gpu_root: Path, *, command: str, resume: bool = False,
              readme: Path | None = None, runner: StepRunner = run_step,
              log: Callable[[str], None] = print) -> list[BenchmarkOutcome]:
    """Run ``benchmarks`` into ``gpu_root`` (``results/<gpu>``), then write the tables
    (:func:`write_tables`). ``resume`` keeps the benchmarks already completed there."""
    gpu_root = gpu_root.absolute()  # (the steps run elsewhere)
    check_targets(benchmarks, gpu_root)
    if readme is not None:
        readme_table_span(readme)  # a README without the markers is refused before any work
    suite = next(name for name, members in SUITES.items() if set(benchmarks) <= set(members))
    outcomes = []
    for benchmark in benchmarks:
        folder = gpu_root / benchmark.name
        if resume and is_complete(folder):
            log(f"{benchmark.name}: kept (completed by an earlier run)")
            outcomes.append(BenchmarkOutcome(benchmark, "kept"))
            continue
        outcomes.append(run_benchmark(benchmark, folder, suite=suite, command=command, runner=runner, log=log))
    write_tables(gpu_root, readme=readme, suite=suite)
    return outcomes


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError as err:
        return f"(no log: {err.strerror or err})"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# ---- the tables -----------------------------------------------------------------------------------

SUITE_README_HEAD = "# Headline benchmarks on the "


@dataclass(frozen=True)
class TableRow:
    """One benchmark's line of the headline table, read from its folder."""

    benchmark: Benchmark
    status: str
    layers: int | None = None
    vs_cudnn: float | None = None
    faster_on: int | None = None
    worst: float | None = None
    worst_layer: str | None = None
    vs_torch: float | None = None
    torch_layers: int = 0
    tuned_s: float | None = None
    commit: str | None = None

    @classmethod
    def read(cls, benchmark: Benchmark, folder: Path) -> TableRow:
        if not is_suite_folder(folder):
            return cls(benchmark, "not run")
        env = _read_json(folder / "env.json")
        if env.get("status") != "ok":
            return cls(benchmark, str(env.get("status")), commit=env.get("git_commit"))
        try:
            problems = load_results(folder / "results.json")["problems"]
        except ReportError as err:  # (a file changed since the suite wrote it)
            return cls(benchmark, f"results unreadable: {_cell(str(err))[:200]}", commit=env.get("git_commit"))
        means = geomeans(problems)
        wall = _read_json(folder / "tune.json").get("wall_s")
        return cls(benchmark, "ok", layers=means["layers"], vs_cudnn=means["speedup_vs_cudnn"],
                   faster_on=means["layers_autoconv_faster"], worst=means["worst_speedup"],
                   worst_layer=means["worst_layer"], vs_torch=means["speedup_vs_torch"],
                   torch_layers=means["layers_vs_torch"], tuned_s=wall if is_positive(wall) else None,
                   commit=env.get("git_commit"))


BASELINES = {"fp32": "cuDNN strict FP32", "tf32": "cuDNN TF32", "bf16": "cuDNN bf16", "fp16": "cuDNN fp16"}


def table_markdown(rows: Sequence[TableRow], link_prefix: str) -> str:
    """The headline table; each benchmark links to ``link_prefix + name``."""
    lines = ["| benchmark | vs cuDNN's best plan, same precision and layout (geometric mean) | faster on | "
             "worst layer | vs PyTorch F.conv2d | tuned in |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        b = row.benchmark
        link = f"[{b.title}]({link_prefix}{b.name}/report.md)"
        if row.status != "ok":
            lines.append(f"| {b.title} | {row.status} | | | | |")
            continue
        if row.vs_cudnn is None:
            lines.append(f"| {link} | no layer measured beside cuDNN | | | | |")
            continue
        worst = f"{row.worst:.2f}x ({_cell(row.worst_layer)})" if row.worst is not None else "-"
        torch = f"{row.vs_torch:.2f}x" if row.vs_torch is not None else "-"
        if row.vs_torch is not None and row.torch_layers != row.layers:
            torch += f" ({row.torch_layers} layers)"
        tuned = f"{row.tuned_s:.0f} s" if row.tuned_s is not None else "-"
        lines.append(f"| {link} | **{row.vs_cudnn:.2f}x** {BASELINES[b.precision]} | {row.faster_on} of "
                     f"{row.layers} | {worst} | {torch} | {tuned} |")
    return "\n".join(lines)


def _cell(text: str | None) -> str:
    return (text or "").replace("|", "/").replace("\n", " ")


def environment_line(gpu_root: Path, benchmarks: Sequence[AnyBenchmark]) -> str:
    """Where and with what the rows were measured (every distinct value, if they differ)."""
    envs = [_read_json(gpu_root / b.name / "env.json") for b in benchmarks]
    envs = [env for env in envs if env.get("status") == "ok"]

    def values(key: str) -> str:
        found = sorted({str(env.get(key)) for env in envs if env.get(key) is not None})
        return " / ".join(found) if found else "unknown"

    commits = sorted({str(env.get("git_commit"))[:10] for env in envs if env.get("git_commit")})
    dates = sorted({str(env.get("date"))[:10] for env in envs if env.get("date")})
    return (f"{values('gpu')}, driver {values('driver')}, CUDA runtime {values('cuda_runtime')}, cuDNN "
            f"{values('cudnn')}, PyTorch {values('torch')}, CuPy {values('cupy')}; autoconv at commit "
            f"{' / '.join(commits) or 'unknown'}, {' / '.join(dates) or 'undated'}")


def write_tables(gpu_root: Path, *, readme: Path | None = None, suite: str = "headline") -> str:
    """Write ``gpu_root/README.md`` (the table with its environment) and, when ``readme`` is
    given, the table between its markers; returns the table."""
    benchmarks = SUITES[suite]
    if (gpu_root / "README.md").exists() and not _is_suite_readme(gpu_root / "README.md"):
        raise AutoconvError(f"{gpu_root / 'README.md'} is not a table the suite wrote, and it does not replace it")
    rows = [TableRow.read(b, gpu_root / b.name) for b in benchmarks if isinstance(b, Benchmark)]
    end_to_end = [b for b in benchmarks if isinstance(b, EndToEndBenchmark)]
    gpu = gpu_root.name
    about = environment_line(gpu_root, benchmarks)
    note = ("Kernel time per layer by CUDA-graph replay over operand sets larger than the L2, median, each "
            "side alternating with the others in one process; every benchmark tuned from an empty cache. "
            "PyTorch: `F.conv2d` on the same tensors with `cudnn.benchmark` on, in the same precision "
            "(autocast for bf16 and fp16) and layout.")
    local = table_markdown(rows, "")
    sections = "".join(f"\n{end_to_end_section(b, gpu_root / b.name)}\n" for b in end_to_end)
    text = (f"{SUITE_README_HEAD}{gpu} GPU\n\nWritten by `autoconv bench --suite {suite}`; each folder holds "
            f"`results.json`, `tune.json`, `report.md`, the plots and `env.json` (the environment and the exact "
            f"commands).\n\n{local}\n\n{about}.\n\n{note}\n{sections}")
    gpu_root.mkdir(parents=True, exist_ok=True)
    write_atomically(gpu_root / "README.md", text)
    if readme is None:
        return local
    begin, end = readme_table_span(readme)
    prefix = Path(os.path.relpath(gpu_root.absolute(), readme.absolute().parent)).as_posix() + "/"
    table = table_markdown(rows, prefix)
    original = _read_as_is(readme)
    newline = "\r\n" if original[:begin].endswith("\r\n") else "\n"  # (the file's own line ends)
    lines = "".join(f"\n{end_to_end_line(b, gpu_root / b.name, prefix)}\n" for b in end_to_end)
    block = f"{table}\n{lines}\n{about}; `autoconv bench --suite {suite}`, [{prefix}]({prefix}README.md).\n"
    write_atomically(readme, (original[:begin] + block.replace("\n", newline) + original[end:]).encode("utf-8"))
    return table


def _end_to_end_state(folder: Path) -> tuple[str, list[dict[str, Any]]]:
    """(status, records) of an end-to-end benchmark's folder: ``ok`` with its records, or why
    there are none (not run, failed, results unreadable)."""
    if not is_suite_folder(folder):
        return "not run", []
    env = _read_json(folder / "env.json")
    if env.get("status") != "ok":
        return str(env.get("status")), []
    try:
        return "ok", load_records(folder / "results.json")
    except ReportError as err:  # (a file changed since the suite wrote it)
        return f"results unreadable: {_cell(str(err))[:200]}", []


END_TO_END_NOTE = ("Whole forwards, PyTorch's model against `autoconv.torch.convert(model)`: each side's median "
                   "over rounds alternating in one process, every mode's problems tuned from an empty cache at "
                   "each batch first; errors are relative L2 distances from a float64 forward.")


def end_to_end_section(benchmark: EndToEndBenchmark, folder: Path) -> str:
    """The end-to-end benchmark's section of ``results/<gpu>/README.md``: its table of records."""
    status, records = _end_to_end_state(folder)
    if status != "ok":
        return f"## {benchmark.title}\n\n{status}\n"
    wall = _read_json(folder / "tune.json").get("wall_s")
    tuned = f" Tuned in {wall:.0f} s." if is_positive(wall) else ""
    return (f"## [{benchmark.title}]({benchmark.name}/report.md)\n\n{records_table(records)}\n\n"
            f"{END_TO_END_NOTE}{tuned}\n")


def end_to_end_line(benchmark: EndToEndBenchmark, folder: Path, link_prefix: str) -> str:
    """The end-to-end benchmark's line under the README's table: PyTorch's defaults' speedups."""
    status, records = _end_to_end_state(folder)
    if status != "ok":
        return f"{benchmark.title}: {status}."
    return (f"[{benchmark.title}]({link_prefix}{benchmark.name}/report.md), `autoconv.torch.convert(model)` "
            f"against the model, PyTorch's defaults (tf32 NCHW): {headline_line(records)}.")


def readme_table_span(readme: Path) -> tuple[int, int]:
    """Where the table goes in ``readme``: the offsets of the line after the begin marker's and
    of the end marker's line (each marker alone on its line; nothing else is replaced).

    Raises:
        ReportError: the file cannot be read, or lacks the markers (one each, in order, each alone
            on its line)."""
    try:
        text = _read_as_is(readme)
    except (OSError, UnicodeDecodeError) as err:
        raise ReportError(f"--readme {readme}: cannot be read ({err})") from None
    offsets: dict[str, list[tuple[int, int, bool]]] = {}
    offset = 0
    for line in text.splitlines(keepends=True):
        for marker in (TABLE_BEGIN, TABLE_END):
            if marker in line:
                offsets.setdefault(marker, []).append((offset, offset + len(line), line.rstrip("\r\n") == marker))
        offset += len(line)
    begins, ends = offsets.get(TABLE_BEGIN, []), offsets.get(TABLE_END, [])
    if len(begins) != 1 or len(ends) != 1 or not (begins[0][2] and ends[0][2]) or begins[0][1] > ends[0][0] \
            or not text[:begins[0][1]].endswith("\n"):
        raise ReportError(f"--readme {readme}: expected one line {TABLE_BEGIN} and, after it, one line {TABLE_END}, "
                          "each alone on its line (the table goes between them)")
    return begins[0][1], ends[0][0]


def _read_as_is(path: Path) -> str:
    """The text of ``path`` with its line ends as they are (``\\r\\n`` kept)."""
    with open(path, encoding="utf-8", newline="") as file:
        return file.read()
