"""``autoconv tune CONFIG``: search the fastest verified kernel for each problem of a config.

The settings come from a :class:`~autoconv.search.session.TuneSession` (the config and
the options below); one GPU tunes in this process, several (``--gpus``) through
:mod:`autoconv.search.fleet`; ``--dry-run`` renders and compiles with nvcc, no GPU.
Progress goes to stderr, the summary table to stdout, the summary to
``<results>/tune.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from autoconv.backends.factory import make_backend
from autoconv.commands.console import (
    RichFleetReporter,
    RichReporter,
    dry_run_table,
    shown,
    stdout_console,
    summary_table,
)
from autoconv.config.budget import BUDGET_RULES, argument_type, count_problem
from autoconv.config.outputs import check_outputs
from autoconv.config.tune_config import parse_families
from autoconv.errors import AutoconvError, BackendUnavailable, UsageError
from autoconv.files import path_problem, write_atomically, write_problem
from autoconv.problems.models import NamedProblem, merge_identical
from autoconv.problems.problem import LAYOUTS, PRECISIONS
from autoconv.search.dry_run import dry_run
from autoconv.search.fleet import default_workers_per_gpu, parse_gpus, tune_on_gpus
from autoconv.search.options import SearchOptions, TuneOptions
from autoconv.search.outcome import Milestones, ProblemOutcome, compile_rate, phase_totals, run_load
from autoconv.search.session import TuneSession


def add_parser(commands) -> None:
    tune = commands.add_parser("tune", help="search the fastest verified kernel for each problem of a config (GPU)")
    tune.add_argument("config", nargs="?", help="a YAML config, e.g. examples/quickstart.yaml (or --model)")
    tune.add_argument("--model", metavar="MODULE:FACTORY",
                      help="instead of a config: tune the convolutions of a PyTorch model, e.g. "
                           "torchvision.models:resnet50 (built without arguments on the meta device and run "
                           "once on --input; needs PyTorch); the config it tunes is written first")
    tune.add_argument("--input", metavar="NxCxHxW[,...]",
                      help="with --model: the example input's shape, e.g. 32x3x224x224; several batches "
                           "comma-separated (1x3x224x224,32x3x224x224) tune the problems of each")
    tune.add_argument("--fuse", action="store_true",
                      help="with --model: tune the model as autoconv.torch.convert(model.eval(), fuse=True) runs "
                           "it, each BatchNorm folded into the convolution before it (convolutions with a bias)")
    tune.add_argument("--compile", action="store_true",
                      help="with --model: tune the problems torch.compile(autoconv.torch.convert(model)) runs: "
                           "Inductor hands autoconv channels_last tensors where it computes NHWC (bf16, fp16, and "
                           "tf32 on a GPU with an NHWC tf32 family), so those are tuned in NHWC")
    tune.add_argument("--write-config", metavar="PATH",
                      help="with --model: where to write the config (default: FACTORY_INPUT.yaml here)")
    tune.add_argument("--precision", choices=PRECISIONS,
                      help="tune every problem in this precision: fp32 (float32 accuracy), tf32 (TF32 "
                           "products, float32 sums: PyTorch's default for convolutions), bf16 or fp16 (16-bit "
                           "inputs, float32 sums: autocast's; computed in NHWC, see --layout); default: the "
                           "config's")
    tune.add_argument("--layout", type=str.upper, choices=LAYOUTS,
                      help="every problem's memory layout: NCHW, or NHWC (PyTorch's channels_last; the "
                           "layout bf16 and fp16 are computed in); default: the config's")
    # Each option's dest is its field of TuneOptions or SearchOptions (autoconv.search.options), where
    # its default is; None here means not given.
    tune.add_argument("--families", action="append", default=None, metavar="F[,F...]",
                      help="kernel families to search (default: the config's, else all)")
    tune.add_argument("--trials", type=argument_type(BUDGET_RULES["trials"]), metavar="N",
                      help="evaluated trials per problem (overrides the config)")
    tune.add_argument("--seconds", type=argument_type(BUDGET_RULES["seconds"], float), metavar="S",
                      help="wall seconds per problem, from its study's opening to its winner's caching (the winner's "
                           "re-verification included): it ends within about one candidate's time of S, candidates "
                           "not yet on the GPU then withdrawn (overrides the config)")
    tune.add_argument("--patience", type=argument_type(BUDGET_RULES["patience"]), metavar="N",
                      help="stop a problem after N trials without improvement (overrides the config)")
    tune.add_argument("--pipeline-depth", type=argument_type(count_problem), metavar="N",
                      help=f"candidates asked ahead of the GPU, compiling or waiting (default "
                           f"{SearchOptions.pipeline_depth}); at most this many compile at once, and the sampler "
                           f"proposes each candidate without the results of the N - 1 before it")
    tune.add_argument("--rank", dest="ranked", type=argument_type(count_problem), metavar="K",
                      help="after each study's warm start, try the K configurations that a model of the "
                           "tuning history in the storage (same GPU, templates and precision) predicts "
                           "fastest (default: none)")
    tune.add_argument("--prefilter", action="store_true", default=None,
                      help="once that model ranks a study's own timed candidates well, skip compiling the "
                           "candidates it predicts among the slowest (they count towards the patience); "
                           "off by default, as it saved no tuning time (see docs/tuning.md)")
    tune.add_argument("--run-time-sizes", action="store_true", default=None,
                      help="search implicit_gemm_wgmma in its build with the problem sizes at run time (a "
                           "configuration compiles once for all the layers it is tried on; the winners are "
                           "rebuilt with constants); off by default, as it cut the compile CPU per candidate "
                           "but saved no tuning time (see docs/tuning.md)")
    tune.add_argument("--transfer", action=argparse.BooleanOptionalAction, default=None,
                      help="tune each problem by transfer from the tuning history in the storage where its "
                           "model knows enough problems: the nearest tuned problems' winners and the model's "
                           "picks, then variations of the best, no sampler and no patience (else a full "
                           "study); on by default: it finds winners within 1%% of full studies' in less time; "
                           "--no-transfer runs full studies only")
    tune.add_argument("--dry-run", action="store_true", default=None,
                      help="no GPU: render each family's default (--per-family N: N configs) and compile with nvcc")
    tune.add_argument("--per-family", type=argument_type(count_problem), metavar="N",
                      help=f"with --dry-run: configs compiled per family and problem "
                           f"(default {TuneOptions.per_family})")
    tune.add_argument("--storage", metavar="URL", help="Optuna storage: a journal file path or a SQLAlchemy "
                      "URL (default: the config's); with a URL and no cache configured, the winners go "
                      "into the same database")
    tune.add_argument("--cache", metavar="PATH|URL",
                      help="winners' cache: a file or a SQLAlchemy URL (default: the config's)")
    tune.add_argument("--results", metavar="DIR",
                      help="the folder the tuning summary (tune.json) goes to (default: the config's results:)")
    tune.add_argument("--retune", action="store_true", default=None, help="search even problems with a cached winner")
    tune.add_argument("--gpus", metavar="all|I[,I...]",
                      help="tune with worker processes on these GPUs of this host (`all`, or indices like 0,1); "
                           "they share each problem's study and budget")
    tune.add_argument("--workers-per-gpu", type=int, default=None, metavar="N",
                      help="worker processes per GPU (1 to 64): they compile in parallel and take turns on the GPU, "
                           "keeping the host's cores busy where one worker leaves them idle (default: one "
                           "per 5 cores of the host, at most 4: 3 on a 16-core host with one GPU)")
    tune.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    options = tune_options(args)  # (checked before a model's config is written)
    config = args.config
    if (args.model is not None or args.input is not None or args.write_config is not None or args.fuse
            or args.compile):
        config = write_model_config(args.config, args.model, args.input, args.write_config,
                                    precision=options.precision, layout=options.layout, fuse=args.fuse,
                                    compiled=args.compile)
    elif config is None:
        raise UsageError("config", None, "give a config file, or --model MODULE:FACTORY --input NxCxHxW")
    return tune_command(config, options)


def tune_options(args: argparse.Namespace) -> TuneOptions:
    """The options of ``autoconv tune``'s parsed command line: each given flag's value into its field
    (the dest is the field's name), the fields' defaults for the rest."""

    def given(cls) -> dict:
        values = {item.name: getattr(args, item.name) for item in dataclasses.fields(cls) if hasattr(args, item.name)}
        return {name: tuple(value) if isinstance(value, list) else value
                for name, value in values.items() if value is not None}

    return TuneOptions(**{**given(TuneOptions), "families": parse_families(args.families)},
                       search=SearchOptions(**given(SearchOptions)))


#: How the comment of a config written by ``--model`` starts (config_text makes it a ``# `` line):
#: such a file may be replaced, no other.
MODEL_CONFIG_COMMENT = "The convolutions of "


def summary_target_problem(path: Path) -> str | None:
    """Why ``tune.json`` cannot be written at ``path``, or None: an existing file there is
    replaced only when it is a summary ``autoconv tune`` wrote."""
    if not (path.exists() or path.is_symlink()):
        return None
    problem = path_problem(path)
    if problem:
        return problem
    try:
        summary = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        summary = None
    if not (isinstance(summary, dict) and {"config", "budget", "problems"} <= set(summary)):
        return "a file that is not a summary of `autoconv tune` is there, and it is not replaced"
    return None


def write_model_config(config: str | None, model: str | None, input_shape: str | None,
                       path: str | None, *, precision: str | None = None, layout: str | None = None,
                       fuse: bool = False, compiled: bool = False) -> str:
    """Write the config of ``model``'s convolutions on an input of ``input_shape`` (see
    :func:`autoconv.torch.problems.model_problems`) and return its path. Several shapes that differ
    in the batch only (``1x3x224x224,32x3x224x224``) give one config with the problems of every
    batch, named ``LAYER_nBATCH``: the runtime serves other batches from the nearest tuned ones.

    The problems are what the model runs under the user's settings unless ``precision`` and
    ``layout`` (``--precision``, ``--layout``) say otherwise: float32 layers in the precision
    PyTorch's current setting gives them (TF32, its default for convolutions, where
    ``torch.backends.cudnn`` allows it), in the layout the runtime computes them in for the example
    input (NCHW: an input given by its shape is contiguous; bf16 and fp16 compute in NHWC). The
    choice is printed with how to override it, and written into the config. ``fuse``
    (``--fuse``): the problems of the model with its BatchNorms folded, as ``convert(model,
    fuse=True)`` runs it. ``compiled`` (``--compile``): in the layout a compiled graph runs them in
    (:func:`autoconv.torch.layouts.compiled_layout`)."""
    if config is not None:
        raise UsageError("config", config, "give either a config file or --model, not both")
    if model is None or input_shape is None:
        raise UsageError("--model" if model is None else "--input", None,
                         "--model MODULE:FACTORY and --input NxCxHxW go together")
    try:
        from autoconv.torch.problems import model_problems, parse_input_shape, write_config
    except ImportError as err:
        raise UsageError("--model", model, f"needs PyTorch ({err}); pip install 'autoconv[torch]'") from None
    from autoconv.torch.settings import pytorch_precision

    if compiled and layout:
        raise UsageError("--layout", layout, "--compile tunes the layout a compiled graph runs in; give one of "
                         "--compile and --layout")
    shapes = [parse_input_shape(part) for part in input_shape.split(",")]
    if len({shape[0] for shape in shapes}) != len(shapes) or len({shape[1:] for shape in shapes}) != 1:
        raise UsageError("--input", input_shape, "several input shapes differ in the batch only, each batch "
                         "once, e.g. 1x3x224x224,32x3x224x224")
    chosen = precision or pytorch_precision()
    sixteen_bit = chosen in ("bf16", "fp16")
    chosen_layout = layout or (_compiled_layout(chosen) if compiled else "NHWC" if sixteen_bit else "NCHW")
    found: list[NamedProblem] = []
    for shape in shapes:  # (after the first batch, the history's model tunes the others by transfer)
        batch_problems, skipped = model_problems(model, shape, precision="fp32" if sixteen_bit else chosen,
                                                 fuse=fuse)
        found += [NamedProblem(item.name if len(shapes) == 1 else f"{item.name}_n{shape[0]}", item.problem,
                               item.count) for item in batch_problems]
    problems = list(merge_identical(NamedProblem(item.name, item.problem.in_precision(chosen).with_(
        layout=chosen_layout), item.count) for item in found))
    if not problems:
        raise UsageError("--model", model, "running it found no convolution autoconv can tune"
                         + "".join(f"; {name}: {why}" for name, why in skipped.items()))
    target = Path(path) if path else Path(f"{model.rpartition(':')[2]}_{input_shape.replace(',', '+')}.yaml")
    problem = write_problem(target)
    if problem is None and target.exists() and not target.read_bytes().startswith(f"# {MODEL_CONFIG_COMMENT}".encode()):
        problem = "a file that `autoconv tune --model` did not write is there, and it is not replaced"
    if problem:
        raise UsageError("--write-config", str(target), f"cannot write the config there: {problem}; pass another "
                         "--write-config PATH")
    overrides = "".join(f" --{flag} {value}" for flag, value in (("precision", precision), ("layout", layout))
                        if value) + (" --fuse" if fuse else "") + (" --compile" if compiled else "")
    write_config(problems, target, comment=f"{MODEL_CONFIG_COMMENT}{model} on a {input_shape} input, written by\n"
                 f"  autoconv tune --model {model} --input {input_shape}{overrides}")
    stderr = Console(stderr=True)
    stderr.print(f"{model} on {input_shape}: {sum(p.count for p in problems)} convolutions, {len(problems)} "
                 f"distinct problems; config written to {target}")
    for name, why in skipped.items():
        stderr.print(f"  left to PyTorch: {name}: {why}")
    why_precision = ("--precision" if precision else "what PyTorch's convolutions compute now: "
                     "torch.backends.cudnn.conv.fp32_precision; --precision overrides")
    why_layout = ("--layout" if layout else "the layout torch.compile's graph runs them in" if compiled
                  else "the layout 16-bit convolutions compute in" if sixteen_bit
                  else "the example input's layout; --layout NHWC for channels_last")
    stderr.print(f"tuning in {chosen} ({why_precision}), {chosen_layout} ({why_layout})")
    return str(target)


def _compiled_layout(precision: str) -> str:
    """The layout a compiled graph runs ``precision`` in on this host's first CUDA device; on the
    fake backend, or where PyTorch sees no CUDA device, on a GPU with an NHWC tf32 family."""
    import torch

    from autoconv import settings
    from autoconv.torch.layouts import compiled_layout

    real_gpu = settings.BACKEND.value() != "fake" and torch.cuda.is_available()
    return compiled_layout(precision, 0 if real_gpu else None)


def tune_command(config_path: str, options: TuneOptions | None = None) -> int:
    """``autoconv tune`` of the config at ``config_path`` under ``options`` (default: none given):
    0 when every problem has a verified winner (or, with ``dry_run``, every candidate compiled),
    1 otherwise; errors raise AutoconvError. ``gpus`` (``all`` or ``0,1,...``) tunes with
    ``workers_per_gpu`` worker processes per GPU (:mod:`autoconv.search.fleet`; default
    :func:`~autoconv.search.fleet.default_workers_per_gpu`); one GPU with one worker tunes in this
    process."""
    options = TuneOptions() if options is None else options
    session = TuneSession.load(config_path, options)
    if not options.dry_run:  # (every output checked before any work: never a tune lost at its end)
        check_outputs(session.config.results, session.storage, session.cache)
    summary_path = session.config.results / "tune.json"
    problem = summary_target_problem(summary_path)
    if problem and not options.dry_run:  # before any tuning, not after
        raise AutoconvError(f"cannot write the tuning summary {summary_path}: {problem}; set `results:` in the "
                            "config to another folder")
    stdout = stdout_console()
    if options.dry_run:
        return _dry_run(session, stdout)

    started = time.monotonic()
    milestones = Milestones(time.time())
    milestones.mark("process")  # (the command's arguments read: the tune starts here)
    devices = [session.config.device]
    if options.gpus is not None:
        try:
            devices = parse_gpus(options.gpus)
        except BackendUnavailable as err:
            raise BackendUnavailable(f"{err}. `autoconv tune --gpus` measures kernels on CUDA GPUs") from None
    workers_per_gpu = options.workers_per_gpu
    if workers_per_gpu is None:
        workers_per_gpu = default_workers_per_gpu(len(devices), session.storage)
    if len(devices) > 1 or workers_per_gpu > 1:
        return _tune_on_gpus(session, devices, started, milestones.started_at, stdout, workers_per_gpu)
    if options.gpus is not None:
        session = session.on_device(devices[0])
    config = session.config
    try:
        backend = make_backend(config.device, seed=config.seed)
    except BackendUnavailable as err:
        raise BackendUnavailable(f"{err}. `autoconv tune` measures kernels on a CUDA GPU; "
                                 "`autoconv tune --dry-run` renders and compiles the candidates "
                                 "with nvcc instead") from None
    milestones.mark("backend")
    with backend, session.open_cache() as winners:
        identity = backend.identity
        reporter = RichReporter()
        reporter.note(f"device: {identity.gpu_name} (sm_{''.join(map(str, identity.compute_capability))}, "
                      f"CUDA runtime {identity.cuda_runtime}, driver {identity.cuda_driver}); "
                      f"cache {shown(session.cache)}; storage {shown(session.storage)}")
        tuner = session.tuner(backend, cache=winners, reporter=reporter)
        milestones.mark("storage")
        outcomes = tuner.tune(config.problems)
        tuner.mark_search(milestones)
        milestones.mark("tuned")
    milestones.mark("closed")
    wall_s = time.monotonic() - started
    return _summarise(session, outcomes, wall_s, stdout, {"device": identity.gpu_name, "gpus": [config.device],
                                                          "milestones_s": milestones.in_order()})


def _tune_on_gpus(session: TuneSession, devices: Sequence[int], started: float, started_at: float,
                  stdout: Console, workers_per_gpu: int) -> int:
    reporter = RichFleetReporter()
    reporter.note(f"cache {shown(session.cache)}; storage {shown(session.storage)}")
    outcomes, workers = tune_on_gpus(session, devices, reporter=reporter, workers_per_gpu=workers_per_gpu,
                                     started_at=started_at)
    wall_s = time.monotonic() - started
    for worker in workers:
        if worker.status != "done":
            stdout.print(f"[red]{worker.name}[/red] ({worker.gpu or 'not started'}): {worker.error}")
    return _summarise(session, outcomes, wall_s, stdout, {
        "device": sorted({w.gpu for w in workers if w.gpu}), "gpus": list(devices),
        "workers_per_gpu": workers_per_gpu,
        "workers": [{"name": w.name, "gpu": w.device, "device": w.gpu, "status": w.status, "error": w.error,
                     "problems_finished": len(w.finished), "milestones_s": w.milestones_s} for w in workers]})


def _summarise(session: TuneSession, outcomes: Sequence[ProblemOutcome], wall_s: float, stdout: Console,
               run: dict) -> int:
    """Print the summary table and write ``tune.json``; the exit status."""
    config = session.config
    load = run_load(outcomes, wall_s, gpus=len(run["gpus"]), host_cores=os.cpu_count() or 1)
    stdout.print(summary_table(outcomes, wall_s, load))
    config.results.mkdir(parents=True, exist_ok=True)
    summary_path = config.results / "tune.json"
    candidates, per_cpu_s = compile_rate(outcomes)
    write_atomically(summary_path, json.dumps({  # a kill leaves the old file or the new one
        "config": config.origin, **run, "families": list(session.families),
        "budget": dataclasses.asdict(session.budget), **dataclasses.asdict(session.settings.search),
        "wall_s": wall_s, "phases_s": {phase: round(seconds, 3) for phase, seconds in phase_totals(outcomes).items()},
        "compile_queue_s": round(sum(o.compile_queue_s for o in outcomes), 3),
        "gpu_queue_s": round(sum(o.gpu_queue_s for o in outcomes), 3),
        "candidates": candidates, "candidates_per_compile_cpu_s": None if per_cpu_s is None else round(per_cpu_s, 3),
        "load": load.as_dict(),
        "problems": [outcome.as_dict() for outcome in outcomes]}, indent=1) + "\n")
    stdout.print(f"summary written to {summary_path}")
    return 0 if all(outcome.time_ms is not None for outcome in outcomes) else 1


def _dry_run(session: TuneSession, stdout: Console) -> int:
    config = session.config
    with Progress(TextColumn("dry run: compiling"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("compile", total=None)
        results = dry_run(config.problems, session.families, per_family=session.options.per_family,
                          seed=config.seed, workspace_limit=config.workspace_limit_bytes,
                          progress=lambda done, total: bar.update(task, completed=done, total=total))
    stdout.print(dry_run_table(results))
    failed = [r for r in results if not r.ok and r.kernel_name]
    stdout.print(f"{len(results) - len(failed)} of {len(results)} candidates compiled")
    return 1 if failed else 0
