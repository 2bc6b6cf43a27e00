"""The end-to-end benchmark of a PyTorch model: the unmodified model against
``autoconv.torch.convert(model)``, whole forwards, in the modes PyTorch users run.

    autoconv bench --end-to-end torchvision.models:resnet50 --input 32x3x224x224,1x3x224x224 --out DIR

measures (:mod:`autoconv.bench.end_to_end_measure`, on a GPU) and writes ``DIR/results.json``: a
list of records, one per (batch, mode, runner), each with :data:`RECORD_FIELDS`; ``DIR/env.json``
(the environment, the command, the method) and ``DIR/report.md`` (:func:`records_table`). The
headline suite runs it as its ``e2e_resnet50`` benchmark, after tuning each mode's problems from an
empty cache (:mod:`autoconv.bench.suite`).

This module holds what needs no GPU and no PyTorch: the modes and runners, the request checked
before any work, the records' check and the tables.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from autoconv.bench.results import ReportError
from autoconv.errors import UsageError, quoted
from autoconv.files import path_problem


@dataclass(frozen=True)
class Mode:
    """How both sides run a forward: the dtype, memory format and TF32 setting of a mode, and
    the precision and layout ``autoconv tune --model`` tunes for it."""

    name: str
    precision: str            # autoconv tune --precision
    layout: str               # autoconv tune --layout
    channels_last: bool       # the model and its input in torch.channels_last
    autocast: str | None      # torch.autocast's dtype ("bfloat16"), or None: float32 throughout
    tf32: bool                # cuDNN convolutions of float32 tensors may use TF32 (PyTorch's default)
    label: str
    #: The layout torch.compile's graph runs the layers in on a GPU with an NHWC tf32 family
    #: (``autoconv tune --model --compile``: autoconv.torch.layouts.compiled_layout).
    compiled_layout: str


#: The modes, in the order they are measured and tabled.
MODES: dict[str, Mode] = {mode.name: mode for mode in (
    Mode("tf32_nchw", "tf32", "NCHW", False, None, True, "PyTorch's defaults: float32 NCHW, TF32 allowed", "NHWC"),
    Mode("tf32_nhwc", "tf32", "NHWC", True, None, True, "float32 channels_last, TF32 allowed", "NHWC"),
    Mode("bf16_nhwc_autocast", "bf16", "NHWC", True, "bfloat16", True, "torch.autocast bf16, channels_last", "NHWC"),
    Mode("fp32_nchw_strict", "fp32", "NCHW", False, None, False, "float32 NCHW, TF32 off", "NCHW"),
)}

#: ``eager``: the forward called as it is; ``cuda_graph``: each side captured once in a CUDA graph
#: and replayed; ``compile``: each side through ``torch.compile`` (Inductor, its default mode), the
#: compiled forward called; ``compile_graph``: that compiled forward captured in a CUDA graph.
RUNNERS = ("eager", "cuda_graph", "compile", "compile_graph")

#: The runners that call ``torch.compile``'s forward.
COMPILED_RUNNERS = ("compile", "compile_graph")

#: The fields of every record of ``results.json``.
RECORD_FIELDS = ("model", "batch", "input", "mode", "runner", "torch_ms", "autoconv_ms", "speedup", "errors",
                 "round_spread", "conv_layers", "layers", "problems")

#: What serves a convolution layer of the converted model: the runtime's ``origin``
#: (:func:`autoconv.runtime.loaded_kernels`: ``cache``, the tuned winner; ``default``, an untuned
#: default kernel; ``cudnn``, cuDNN's plan, measured faster than the winner), ``pytorch`` for a
#: layer ``convert`` left to PyTorch, ``unknown`` for one whose problem could not be told.
ORIGINS = ("cache", "default", "cudnn", "pytorch", "unknown")

#: The files ``autoconv bench --end-to-end`` writes into its folder.
FILES = ("results.json", "env.json", "report.md")


@dataclass(frozen=True)
class Request:
    """One end-to-end measurement, checked: the model (``module:factory``), the input shapes (one
    per batch), the modes and runners, and the timing: ``rounds`` alternating rounds of
    ``iterations`` forwards per side, after ``warmup`` forwards per side."""

    model: str
    shapes: tuple[tuple[int, int, int, int], ...]
    modes: tuple[str, ...] = tuple(MODES)
    runners: tuple[str, ...] = RUNNERS
    rounds: int = 15
    iterations: int = 20
    warmup: int = 5
    seed: int = 0

    @property
    def name(self) -> str:
        """The model's name in the records: the factory's (``resnet50``)."""
        return self.model.rpartition(":")[2].rpartition(".")[2]

    def __post_init__(self) -> None:
        module, _, factory = self.model.partition(":")
        if not module or not factory or not re.fullmatch(r"[A-Za-z_][\w.]*", module + "." + factory):
            raise UsageError("--end-to-end", self.model, "expected module:factory, e.g. torchvision.models:resnet50")
        if not self.shapes:
            raise UsageError("--input", None, "give at least one input shape NxCxHxW, e.g. 32x3x224x224")
        for shape in self.shapes:
            if len(shape) != 4 or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in shape):
                raise UsageError("--input", "x".join(map(str, shape)), "expected a batch of images NxCxHxW of "
                                 "positive integers, e.g. 32x3x224x224")
        if len({shape[0] for shape in self.shapes}) != len(self.shapes):
            raise UsageError("--input", ",".join("x".join(map(str, s)) for s in self.shapes),
                             "each batch size once (the records are told apart by batch)")
        _check_names("--modes", self.modes, tuple(MODES))
        _check_names("--runners", self.runners, RUNNERS)
        for flag, value in (("--rounds", self.rounds), ("--iterations", self.iterations),
                            ("warmup", self.warmup)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UsageError(flag, value, "must be a whole number >= 1")


def _check_names(flag: str, names: Sequence[str], known: Sequence[str]) -> None:
    if not names:
        raise UsageError(flag, "", f"name at least one of {', '.join(known)}")
    for name in names:
        if name not in known:
            raise UsageError(flag, name, f"unknown; known: {', '.join(known)}")
    if len(set(names)) != len(names):
        raise UsageError(flag, ",".join(names), "each name once")


def parse_shapes(text: str) -> tuple[tuple[int, int, int, int], ...]:
    """``"32x3x224x224,1x3x224x224"`` -> the input shapes, one per batch."""
    shapes = []
    for part in text.split(","):
        if not re.fullmatch(r"\s*[1-9][0-9]*(x[1-9][0-9]*){3}\s*", part):
            raise UsageError("--input", text, "expected input shapes NxCxHxW of positive integers, joined by "
                             "commas, e.g. 32x3x224x224,1x3x224x224")
        n, c, h, w = (int(v) for v in part.strip().split("x"))
        shapes.append((n, c, h, w))
    return tuple(shapes)


def parse_names(text: str | None, default: Sequence[str]) -> tuple[str, ...]:
    """A comma-separated list of names (None: ``default``)."""
    if text is None:
        return tuple(default)
    return tuple(name.strip() for name in text.split(",") if name.strip())


def target_problem(folder: Path) -> str | None:
    """Why ``autoconv bench --end-to-end`` cannot write into ``folder``, or None: it must be
    absent, empty, or hold only the files an earlier run wrote (its ``env.json`` says so)."""
    if not (folder.exists() or folder.is_symlink()):
        return None
    problem = path_problem(folder, want="folder")
    if problem:
        return problem
    names = {path.name for path in folder.iterdir()}
    if not names:
        return None
    others = sorted(names - set(FILES))
    if others:
        return f"it holds files this command did not write ({', '.join(others[:3])}), and it replaces none of them"
    try:
        env = json.loads((folder / "env.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        env = None
    if not (isinstance(env, dict) and env.get("end_to_end") is True):
        return "it holds results this command did not write (no end-to-end env.json), and it does not replace them"
    return None


# ---- the records ----------------------------------------------------------------------------------

def check_records(records: Any, where: str = "results.json") -> list[dict[str, Any]]:
    """``records`` if it is a non-empty list of records with :data:`RECORD_FIELDS` of the types the
    measurement writes (times and speedups finite numbers > 0, errors finite numbers >= 0), else
    :class:`ReportError` naming ``where``, the record and the field."""
    if not isinstance(records, list) or not records:
        raise ReportError(f"{where}: expected a non-empty JSON list of end-to-end records")
    for index, record in enumerate(records):
        at = f"{where}: record #{index}"
        if not isinstance(record, dict):
            raise ReportError(f"{at} is not a JSON object")
        missing = [name for name in RECORD_FIELDS if name not in record]
        if missing:
            raise ReportError(f"{at} lacks {', '.join(missing)}")
        if not isinstance(record["model"], str):
            raise ReportError(f"{at}: model must be a string, got {quoted(record['model'])}")
        if not _is_count(record["batch"]) or record["batch"] < 1:
            raise ReportError(f"{at}: batch must be a whole number >= 1, got {quoted(record['batch'])}")
        if record["mode"] not in MODES or record["runner"] not in RUNNERS:
            raise ReportError(f"{at}: mode {quoted(record['mode'])} / runner {quoted(record['runner'])}: expected "
                              f"one of {', '.join(MODES)} / {', '.join(RUNNERS)}")
        for name in ("torch_ms", "autoconv_ms", "speedup"):
            _measured(at, name, record[name])
        errors = record["errors"]
        if not isinstance(errors, dict) or set(errors) != {"torch", "autoconv"}:
            raise ReportError(f"{at}: errors must be an object with torch and autoconv")
        for side, value in errors.items():
            if not (_is_number(value) and math.isfinite(value) and value >= 0):
                raise ReportError(f"{at}: errors.{side} must be a finite number >= 0, got {quoted(value)}")
        for name in ("layers", "problems"):
            counts = record[name]
            if not isinstance(counts, dict) or not set(counts) <= set(ORIGINS) \
                    or not all(_is_count(v) and v >= 0 for v in counts.values()):
                raise ReportError(f"{at}: {name} must map origins ({', '.join(ORIGINS)}) to counts")
        if not _is_count(record["conv_layers"]) or record["conv_layers"] < 0:
            raise ReportError(f"{at}: conv_layers must be a whole number >= 0")
    return records


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _measured(at: str, name: str, value: object) -> None:
    if not (_is_number(value) and math.isfinite(value) and value > 0):
        raise ReportError(f"{at}: {name} must be a finite number > 0, got {quoted(value)}")


def load_records(path: Path) -> list[dict[str, Any]]:
    """The checked records of a ``results.json`` (:func:`check_records`).

    Raises:
        ReportError: the file cannot be read, is not JSON, or is not a list of records."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise ReportError(f"{path}: cannot be read ({err})") from None
    except ValueError as err:
        raise ReportError(f"{path}: not valid JSON ({err})") from None
    return check_records(data, str(path))


# ---- the tables -------------------------------------------------------------------------------

RUNNER_LABELS = {"eager": "eager", "cuda_graph": "CUDA graph", "compile": "torch.compile",
                 "compile_graph": "torch.compile, CUDA graph"}


def _ordered(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Largest batch first, then the modes' and runners' own order."""
    modes, runners = list(MODES), list(RUNNERS)
    return sorted(records, key=lambda r: (-r["batch"], modes.index(r["mode"]), runners.index(r["runner"])))


def records_table(records: Sequence[Mapping[str, Any]]) -> str:
    """The markdown table of the records: one line per (batch, mode, runner); the layers column
    counts the converted model's convolution layers by what served them (under ``torch.compile``,
    whose graph hides the layers, the distinct problems its graph loaded)."""
    lines = ["| batch | mode | runner | PyTorch ms | autoconv ms | speedup | layers: tuned / cuDNN / default"
             " | rel. error PyTorch / autoconv |",
             "|---|---|---|---|---|---|---|---|"]
    for r in _ordered(records):
        compiled = r["runner"] in COMPILED_RUNNERS
        layers = r["problems"] if compiled else r["layers"]
        counts = f"{layers.get('cache', 0)} / {layers.get('cudnn', 0)} / {layers.get('default', 0)}"
        extra = [f"{layers[o]} {o}" for o in ("pytorch", "unknown") if layers.get(o)]
        if extra:
            counts += f" ({', '.join(extra)})"
        if compiled:
            counts += " problems"
        lines.append(f"| {r['batch']} | {r['mode']} | {RUNNER_LABELS[r['runner']]} | {r['torch_ms']:.3f} | "
                     f"{r['autoconv_ms']:.3f} | **{r['speedup']:.2f}x** | {counts} | {r['errors']['torch']:.1e} / "
                     f"{r['errors']['autoconv']:.1e} |")
    return "\n".join(lines)


#: The mode the README's line quotes: what a user who changes nothing runs.
HEADLINE_MODE = "tf32_nchw"


def headline_line(records: Sequence[Mapping[str, Any]]) -> str:
    """The speedups of :data:`HEADLINE_MODE` per batch and runner, in one line (``-`` where not
    measured)."""
    parts = []
    for batch in sorted({r["batch"] for r in records}, reverse=True):
        cells = []
        for runner in RUNNERS:
            found = [r for r in records if r["batch"] == batch and r["mode"] == HEADLINE_MODE
                     and r["runner"] == runner]
            cells.append(f"{RUNNER_LABELS[runner]} **{found[0]['speedup']:.2f}x**" if found
                         else f"{RUNNER_LABELS[runner]} -")
        parts.append(f"batch {batch} " + ", ".join(cells))
    return "; ".join(parts)


def report_markdown(records: Sequence[Mapping[str, Any]], env: Mapping[str, Any]) -> str:
    """``report.md``: the table, the modes, the method and the environment."""
    environment = env.get("environment") or {}
    method = env.get("method") or {}
    model = records[0]["model"] if records else "?"
    modes = "\n".join(f"- `{mode.name}`: {mode.label}" for mode in MODES.values())
    about = ", ".join(f"{key} {environment.get(key)}" for key in ("gpu", "driver", "cuda_runtime", "cudnn",
                                                                   "torch", "torch_cudnn", "git_commit", "date"))
    return (f"# {model} end to end: PyTorch against autoconv.torch.convert\n\n{records_table(records)}\n\n"
            f"Speedup: PyTorch ms / autoconv ms (above 1: the converted model is faster). Errors: relative L2 "
            f"distance of each side's output from a float64 forward of the same model and input.\n\n{modes}\n\n"
            f"Method: {method.get('summary', '-')}\n\nEnvironment: {about}.\n\nCommand: `{env.get('command')}`\n")
