"""The end-to-end measurement (:mod:`autoconv.bench.end_to_end`) on a GPU: for each batch and
mode, the unmodified model against its conversion, whole forwards, in one process.

For each (batch, mode): the model is built with random weights (seeded) in eval mode, converted
(a deep copy: the same weights), both put in the mode's memory format; one random input; a
float64 copy of the model gives the reference output on the GPU. The first converted forward
runs after :func:`~autoconv.runtime.clear_loaded`, with hooks that note which problem each layer
loads, so every layer is counted by what serves it (the runtime's ``origin``). Then for each
runner (``eager``; ``cuda_graph``: each side captured once, after a warm-up on a side stream,
and replayed; ``compile`` and ``compile_graph``: the same with each side's ``torch.compile``,
compiled once per batch and mode, Dynamo's caches reset in between) both sides warm up, their
outputs are checked against the reference, and ``rounds`` rounds alternate them (the first side
rotating), each side timing ``iterations`` forwards between two synchronisations (no side's host
time hides behind the other's queued work); each side's time is the median over the rounds.

``convert`` is given by the caller (``autoconv.torch.convert``): the benchmark package and
``autoconv.torch`` import none of each other.
"""

from __future__ import annotations

import contextlib
import copy
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from autoconv.bench.benchmark import alternate_rounds, collect_environment
from autoconv.bench.end_to_end import COMPILED_RUNNERS, MODES, Mode, Request
from autoconv.errors import UsageError
from autoconv.problems.factories import resolve_factory
from autoconv.runtime.api import clear_loaded, loaded_kernels

#: ``convert(model) -> (converted copy, report)``; the report's ``converted`` lists the layers
#: that run autoconv, its ``skipped`` those left to PyTorch (``autoconv.torch.convert``).
Convert = Callable[[nn.Module], tuple[nn.Module, Any]]


def measure(request: Request, *, convert: Convert, command: str, device: int = 0,
            log: Callable[[str], None] = print) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The records of ``request`` and the environment record (``env.json``)."""
    factory = resolve_factory(request.model, "--end-to-end")
    torch.cuda.set_device(device)
    records = []
    for shape in request.shapes:
        for mode_name in request.modes:
            mode = MODES[mode_name]
            log(f"{request.name}: batch {shape[0]}, {mode.name}")
            with _mode_settings(mode):
                records += _measure_mode(request, factory, shape, mode, convert, device, log)
    environment = collect_environment(command)
    environment.update(torch_cuda=torch.version.cuda, torch_cudnn=torch.backends.cudnn.version())
    method = {"rounds": request.rounds, "iterations": request.iterations, "warmup": request.warmup,
              "seed": request.seed, "cudnn_benchmark": True,
              "summary": (f"per (batch, mode, runner), {request.rounds} rounds alternating PyTorch and autoconv "
                          f"(the first side rotating), each side timing {request.iterations} forwards between two "
                          f"synchronisations after {request.warmup} warm-up forwards; the median over the rounds. "
                          "torch.no_grad, eval mode, random weights and input, cudnn.benchmark on; CUDA graphs: "
                          "each side captured once and replayed; torch.compile: Inductor's default mode, each "
                          "side compiled once per batch and mode.")}
    return records, {"end_to_end": True, "command": command, "environment": environment, "method": method}


@contextlib.contextmanager
def _mode_settings(mode: Mode) -> Iterator[None]:
    """The mode's TF32 setting for cuDNN convolutions and ``cudnn.benchmark`` on, restored after."""
    cudnn = torch.backends.cudnn
    benchmark = cudnn.benchmark
    conv = getattr(cudnn, "conv", None)
    if conv is not None and hasattr(conv, "fp32_precision"):  # PyTorch 2.9 and later
        before = conv.fp32_precision
        conv.fp32_precision = "tf32" if mode.tf32 else "ieee"
        restore = lambda: setattr(conv, "fp32_precision", before)  # noqa: E731
    else:
        before = cudnn.allow_tf32
        cudnn.allow_tf32 = mode.tf32
        restore = lambda: setattr(cudnn, "allow_tf32", before)  # noqa: E731
    cudnn.benchmark = True
    try:
        yield
    finally:
        cudnn.benchmark = benchmark
        restore()


def _autocast(mode: Mode, *, capturing: bool = False):
    """The mode's autocast region (its cache off under graph capture, as CUDA graphs require)."""
    if mode.autocast is None:
        return contextlib.nullcontext()
    return torch.autocast("cuda", dtype=getattr(torch, mode.autocast), cache_enabled=not capturing)


def _measure_mode(request: Request, factory, shape, mode: Mode, convert: Convert, device: int,
                  log: Callable[[str], None]) -> list[dict[str, Any]]:
    cuda = torch.device("cuda", device)
    torch.manual_seed(request.seed)
    built = factory()
    if not isinstance(built, nn.Module):
        raise UsageError("--end-to-end", request.model, f"the factory returned a {type(built).__name__}, "
                         "not a torch.nn.Module")
    model = built.eval()
    reference = copy.deepcopy(model).double().to(cuda)
    model = model.to(cuda)
    converted, report = convert(model)
    memory_format = torch.channels_last if mode.channels_last else torch.contiguous_format
    model, converted = model.to(memory_format=memory_format), converted.to(memory_format=memory_format)
    generator = torch.Generator(device=cuda).manual_seed(request.seed + shape[0])
    x = torch.randn(shape, device=cuda, generator=generator)
    with torch.no_grad():
        expected = reference(x.double())
    del reference
    x = x.contiguous(memory_format=memory_format)

    def forward(net: Callable[..., Any], capturing: bool = False):
        def run():
            with _autocast(mode, capturing=capturing):
                return net(x)
        return run

    torch._dynamo.reset()  # (each mode and batch compiled afresh: no recompilation limit reached)
    compiled = _CompiledSides(model, converted)
    with torch.no_grad():
        layers, problems = _count_origins(converted, report, forward(converted))
        records = []
        for runner in request.runners:
            if runner in COMPILED_RUNNERS:
                graph = runner == "compile_graph"
                sides = {name: _runner("cuda_graph" if graph else "eager", forward, net, request.warmup)
                         for name, net in compiled.sides().items()}
                compiled.note_problems()  # (after the first compiled forwards: what they loaded)
            else:
                sides = {name: _runner(runner, forward, net, request.warmup)
                         for name, net in (("torch", model), ("autoconv", converted))}
            errors = {name: _relative_error(call(), expected) for name, call in sides.items()}
            timers = {name: _timer(call, request.iterations) for name, call in sides.items()}
            per_round, _ = alternate_rounds(timers, request.rounds)
            torch_ms, autoconv_ms = (statistics.median(per_round[name]) for name in ("torch", "autoconv"))
            records.append({
                "model": request.name, "batch": shape[0], "input": list(shape), "mode": mode.name, "runner": runner,
                "torch_ms": torch_ms, "autoconv_ms": autoconv_ms, "speedup": torch_ms / autoconv_ms,
                "errors": errors,
                "round_spread": {name: [min(times), max(times)] for name, times in per_round.items()},
                "conv_layers": len(report.converted) + len(report.skipped),
                # (a compiled graph hides its layers: only the problems it loaded are counted)
                "layers": {} if runner in COMPILED_RUNNERS else layers,
                "problems": compiled.problems if runner in COMPILED_RUNNERS else problems})
            log(f"  {runner}: PyTorch {torch_ms:.3f} ms, autoconv {autoconv_ms:.3f} ms "
                f"({torch_ms / autoconv_ms:.2f}x); errors {errors['torch']:.1e} / {errors['autoconv']:.1e}")
            del sides
    del model, converted, compiled
    torch._dynamo.reset()
    torch.cuda.empty_cache()
    return records


class _CompiledSides:
    """Each side's ``torch.compile``, made on first use; ``problems``: the problems the converted
    side's compiled graph loaded (every kernel forgotten first), counted by what serves them."""

    def __init__(self, model: nn.Module, converted: nn.Module):
        self._models = {"torch": model, "autoconv": converted}
        self._compiled: dict[str, Callable[..., Any]] = {}
        self.problems: dict[str, int] | None = None

    def sides(self) -> dict[str, Callable[..., Any]]:
        if not self._compiled:
            self._compiled = {name: torch.compile(net) for name, net in self._models.items()}
            clear_loaded()  # (what the compiled graph loads: the problems Inductor's layouts ask for)
        return self._compiled

    def note_problems(self) -> None:
        if self.problems is None:
            self.problems = _problem_origins()


def _count_origins(converted: nn.Module, report, first_forward: Callable[[], Any]) -> tuple[dict, dict]:
    """Run the converted model's first forward with every kernel forgotten, and count its
    convolution layers (and distinct problems) by what serves them.

    A layer that loads a problem is served by it; a later layer making the same call (input
    shape, dtype and memory format, the module's geometry) by the same one."""
    clear_loaded()
    modules = dict(converted.named_modules())
    entries: dict[str, dict[str, Any] | None] = {}
    by_call: dict[tuple, dict[str, Any]] = {}
    pending: dict[str, tuple[int, tuple]] = {}

    def before(name: str):
        def hook(module: nn.Conv2d, args) -> None:
            x = args[0]
            call = (tuple(x.shape), x.dtype, x.is_contiguous(memory_format=torch.channels_last),
                    tuple(module.weight.shape), module.stride, module.padding, module.dilation,
                    module.bias is None, module.padding_mode)
            pending[name] = (len(loaded_kernels()), call)
        return hook

    def after(name: str):
        def hook(module: nn.Conv2d, args, output) -> None:
            count, call = pending.pop(name)
            loaded = loaded_kernels()
            entry = loaded[count] if len(loaded) > count else by_call.get(call)
            if entry is not None:
                by_call.setdefault(call, entry)
            entries[name] = entry
        return hook

    hooks = []
    for name in report.converted:
        module = modules[name] if name in modules else converted  # (the model itself may be the layer)
        hooks += [module.register_forward_pre_hook(before(name)), module.register_forward_hook(after(name))]
    try:
        first_forward()
    finally:
        for hook in hooks:
            hook.remove()
    layers = {origin: 0 for origin in ("cache", "default", "cudnn")}
    for entry in entries.values():
        origin = "unknown" if entry is None else entry["origin"]
        layers[origin] = layers.get(origin, 0) + 1
    if report.skipped:
        layers["pytorch"] = len(report.skipped)
    return layers, _problem_origins()


def _problem_origins() -> dict[str, int]:
    """The problems loaded since :func:`clear_loaded`, counted by what serves them."""
    problems = {origin: 0 for origin in ("cache", "default", "cudnn")}
    for entry in loaded_kernels():
        problems[entry["origin"]] = problems.get(entry["origin"], 0) + 1
    return problems


def _runner(runner: str, forward, net: Callable[..., Any], warmup: int) -> Callable[[], torch.Tensor]:
    """The call one side times: the forward of ``net`` (a model, or its ``torch.compile``) itself
    (``eager``), or the replay of a CUDA graph captured once (``cuda_graph``); either warmed up
    ``warmup`` times."""
    if runner == "eager":
        call = forward(net)
        for _ in range(warmup):
            call()
        return call
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # (as torch.cuda.graphs' documentation warms up before capturing)
        for _ in range(max(warmup, 3)):
            forward(net, capturing=True)()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        output = forward(net, capturing=True)()
    for _ in range(warmup):
        graph.replay()

    def replay() -> torch.Tensor:  # (holds the graph, and so its memory, while the call lives)
        graph.replay()
        return output
    return replay


def _timer(call: Callable[[], Any], iterations: int) -> Callable[[], float]:
    def timed() -> float:
        torch.cuda.synchronize()
        started = time.perf_counter()
        for _ in range(iterations):
            call()
        torch.cuda.synchronize()
        return (time.perf_counter() - started) * 1e3 / iterations
    return timed


def _relative_error(output: torch.Tensor, expected: torch.Tensor) -> float:
    """‖output - expected‖₂ / ‖expected‖₂, in float64."""
    torch.cuda.synchronize()
    difference = torch.linalg.vector_norm(output.double() - expected)
    return float(difference / torch.linalg.vector_norm(expected))
