"""The results file of ``autoconv bench``: its layout, reading, checking and writing it,
and the numbers derived from it.

``autoconv bench`` (:mod:`autoconv.bench.benchmark`) writes it, ``autoconv report``
(:mod:`autoconv.bench.report`) reads it. A results file is a JSON object with
``schema`` (:data:`SCHEMA_VERSION`), ``environment`` (what the numbers depend on),
``peak_tflops``, ``method``, ``tuning_seconds``, ``problems`` (one entry per layer with
at least :data:`PROBLEM_FIELDS`; ``None`` where a side was not measured; since precisions,
also ``precision`` and ``cudnn_ms``/``speedup_vs_cudnn``, cuDNN in the layer's precision) and
``geomean`` (:func:`geomeans`, and per precision :func:`geomeans_by_precision`, recomputed from
the layers whenever they are read for a report, so that they always agree with them).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeGuard, cast

from autoconv.errors import AutoconvError, first_line, quoted
from autoconv.files import path_problem, write_atomically
from autoconv.gpu.timing import geometric_mean

#: Version of the results JSON layout ``autoconv bench`` writes and ``autoconv report`` reads.
SCHEMA_VERSION = 1

#: Problem fields every results file has (``None`` where not measured, e.g. torch_ms).
PROBLEM_FIELDS = (
    "name", "count", "spec", "shape", "gflop", "family", "params", "autoconv_ms",
    "autoconv_tflops", "pct_of_peak", "cudnn_strict_ms", "cudnn_strict_plan", "cudnn_tf32_ms",
    "torch_ms", "speedup_vs_cudnn_strict", "family_best_ms", "workspace_bytes", "trials",
)


class ReportError(AutoconvError):
    """A results file cannot be read or is not one ``autoconv bench`` wrote."""


# ---- reading and writing ---------------------------------------------------------------------

def load_results(path: str | Path) -> dict[str, Any]:
    """Read and check a results JSON.

    Raises:
        ReportError: missing file, invalid JSON (or nested too deeply to read), another
            schema version, or a value :func:`check_results` refuses (naming the file, the
            layer and the field).
    """
    path = Path(path)
    problem = path_problem(path)
    if problem == "no such file or folder":
        raise ReportError(f"{path}: no such results file; write one with `autoconv bench CONFIG "
                          f"--out {path}`")
    if problem:
        raise ReportError(f"{path}: {problem}; pass the results JSON `autoconv bench` wrote")
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as err:
        raise ReportError(f"{path}: cannot be read ({err.strerror or err})") from None
    except UnicodeDecodeError:
        raise ReportError(f"{path}: not a results JSON (not UTF-8 text)") from None
    try:
        results = json.loads(text)
    except json.JSONDecodeError as err:
        raise ReportError(f"{path}:{err.lineno}:{err.colno}: not valid JSON ({err.msg})") from None
    except RecursionError:
        raise ReportError(f"{path}: JSON nested too deeply to read (a results file nests a few levels); "
                          "pass the results JSON `autoconv bench` wrote") from None
    except ValueError as err:  # e.g. a number of more digits than Python converts
        raise ReportError(f"{path}: not a results JSON ({first_line(err)})") from None
    check_results(results, str(path))
    return results


#: How to mend a file :func:`check_results` refuses.
FIX = "correct the file, or write it again with `autoconv bench`"

#: The bounds of a measured quantity (a time in ms, GFLOP, TFLOP/s, a speedup): far beyond any
#: real measurement, so that the ratios, rates and weighted sums a report derives stay finite
#: and above zero (an Infinity or a zero would drop the layer from the means without a word).
MEASURED_RANGE = (1e-100, 1e100)

#: The most times one layer may occur in a network (its ``count``).
MAX_COUNT = 10**12

#: What a measured quantity must be, for the messages.
MEASURED = f"a number from {MEASURED_RANGE[0]:g} to {MEASURED_RANGE[1]:g} (e.g. 0.25)"


def check_results(results: Any, where: str = "results") -> None:
    """Raise :class:`ReportError` unless ``results`` has the layout of :data:`SCHEMA_VERSION`
    with values a report can use: each field of the type ``autoconv bench`` writes, every
    time and rate in :data:`MEASURED_RANGE`, no NaN or Infinity anywhere. The message names
    ``where`` (the file), the layer and the field."""
    if not isinstance(results, dict):
        raise ReportError(f"{where}: expected a JSON object at the top level")
    schema = results.get("schema")
    if schema != SCHEMA_VERSION:
        raise ReportError(f"{where}: schema {quoted(schema)}; this autoconv reads schema {SCHEMA_VERSION} "
                          f"(re-run `autoconv bench` to write a current file)")
    for key in ("environment", "problems"):
        if key not in results:
            raise ReportError(f"{where}: missing {key!r}")
    if not isinstance(results["problems"], list) or not results["problems"]:
        raise ReportError(f"{where}: 'problems' must be a non-empty list")
    for i, problem in enumerate(results["problems"]):
        if not isinstance(problem, dict):
            raise ReportError(f"{where}: problem #{i} is not a JSON object")
        missing = [f for f in PROBLEM_FIELDS if f not in problem]
        if missing:
            label = problem.get("name", f"#{i}")
            raise ReportError(f"{where}: problem {_short(label)} lacks {', '.join(missing)}")
    _Check(where, results).run()


def _short(value: object) -> str:
    """A name or value for a one-line message: cut, with its line breaks shown as escapes."""
    return value if isinstance(value, str) and value.isprintable() and len(value) <= 80 else quoted(value)


def _shown(value: object) -> str:
    """``value`` as JSON spells it, short: what the message says was found."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return quoted(value)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Check:
    """The field checks of :func:`check_results`; each failure raises at once, naming the
    field by its path (``problems[1].trials[3].value_ms``) and the layer by its name."""

    def __init__(self, where: str, results: dict[str, Any]):
        self.where = where
        self.results = results

    def fail(self, path: tuple, value: object, expected: str) -> NoReturn:
        field = _path(path)
        if len(path) >= 3 and path[0] == "problems":
            name = self.results["problems"][path[1]].get("name")
            if isinstance(name, str) and path[2:] != ("name",):
                field = f"layer {_short(name)} ({_path(path[:2])}): {_path(path[2:])}"
        raise ReportError(f"{self.where}: {field} is {_shown(value)}; expected {expected} ({FIX})")

    def run(self) -> None:
        results = self.results
        environment = results["environment"]
        if not isinstance(environment, dict):
            self.fail(("environment",), environment, "an object (GPU, driver, versions, date, command)")
        for key, value in environment.items():
            if isinstance(value, (dict, list)):
                self.fail(("environment", key), value, "text, a number or null")
        self.measured(("peak_tflops",), results.get("peak_tflops"))
        self.non_negative(("tuning_seconds",), results.get("tuning_seconds"))
        method = results.get("method")
        if method is not None and not isinstance(method, dict):
            self.fail(("method",), method, "an object, or null")
        for key in ("rounds", "samples"):
            self.count(("method", key), (method or {}).get(key), optional=True)
        for i, problem in enumerate(results["problems"]):
            self.problem(("problems", i), problem)
        self.finite(results)

    def problem(self, at: tuple, problem: dict[str, Any]) -> None:
        name = problem["name"]
        if not isinstance(name, str) or not name:
            self.fail((*at, "name"), name, "the layer's name (text)")
        for key in ("spec", "shape"):
            self.typed((*at, key), problem[key], str, "text")
        self.count((*at, "count"), problem["count"])
        self.measured((*at, "gflop"), problem["gflop"], optional=False)
        precision = problem.get("precision")
        if precision is not None and precision not in CUDNN_MODES:
            self.fail((*at, "precision"), precision, f"one of {', '.join(CUDNN_MODES)}, or null (fp32)")
        self.typed((*at, "family"), problem["family"], str, "a kernel family's name, or null", optional=True)
        params = problem["params"]
        self.typed((*at, "params"), params, dict, "an object of the winner's parameters, or null", optional=True)
        for key, value in (params or {}).items():
            if isinstance(value, (dict, list)):
                self.fail((*at, "params", key), value, "text, a number or null")
        for key, value in problem.items():
            if key == "family_best_ms":
                continue
            if key.endswith("_ms") or key.endswith("_tflops") or key.startswith("speedup_vs_"):
                self.measured((*at, key), value)
            elif key.endswith("_plan") or key.endswith("_note"):
                self.typed((*at, key), value, str, "text, or null", optional=True)
        self.non_negative((*at, "pct_of_peak"), problem["pct_of_peak"])
        workspace = problem["workspace_bytes"]
        if workspace is not None and not (isinstance(workspace, int) and not isinstance(workspace, bool)
                                          and workspace >= 0):
            self.fail((*at, "workspace_bytes"), workspace, "a whole number of bytes, or null")
        for key, check in (("family_best_ms", self.measured), ("errors_vs_reference", self.non_negative),
                           ("pct_of_tensor_peak", self.non_negative)):
            values = problem.get(key)
            self.typed((*at, key), values, dict, "an object, or null", optional=True)
            for name_, value in (values or {}).items():
                check((*at, key, name_), value)
        trials = problem["trials"]
        self.typed((*at, "trials"), trials, list, "a list of trials", optional=False)
        for j, trial in enumerate(trials):
            if not isinstance(trial, dict):
                self.fail((*at, "trials", j), trial, "an object (number, family, value_ms, state)")
            number = trial.get("number")
            if not (isinstance(number, int) and not isinstance(number, bool) and number >= 0):
                self.fail((*at, "trials", j, "number"), number, "the trial's number, a whole number of at least 0")
            self.measured((*at, "trials", j, "value_ms"), trial.get("value_ms"))
            for key in ("state", "family"):
                self.typed((*at, "trials", j, key), trial.get(key), str, "text, or null", optional=True)

    def typed(self, at: tuple, value: object, kind: type, expected: str, *, optional: bool = False) -> None:
        if not (isinstance(value, kind) or (optional and value is None)):
            self.fail(at, value, expected)

    def measured(self, at: tuple, value: object, *, optional: bool = True) -> None:
        low, high = MEASURED_RANGE
        if optional and value is None:
            return
        if not (_is_number(value) and low <= cast(float, value) <= high):  # (False for NaN)
            self.fail(at, value, MEASURED + (", or null where not measured" if optional else ""))

    def non_negative(self, at: tuple, value: object) -> None:
        if value is not None and not (_is_number(value) and 0 <= cast(float, value) <= MEASURED_RANGE[1]):
            self.fail(at, value, "a number of at least 0, or null")

    def count(self, at: tuple, value: object, *, optional: bool = False) -> None:
        if optional and value is None:
            return
        if not (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_COUNT):
            self.fail(at, value, f"a whole number from 1 to {MAX_COUNT:.0e}")

    def finite(self, results: dict[str, Any]) -> None:
        """No NaN or Infinity anywhere, the fields no report reads included (JSON has
        neither; Python's reader takes them): walked without recursion, however deep."""
        stack: list[tuple[tuple, object]] = [((), results)]
        while stack:
            at, value = stack.pop()
            if isinstance(value, float) and not math.isfinite(value):
                self.fail(at, value, "a finite number (JSON has no NaN or Infinity)")
            elif isinstance(value, dict):
                stack.extend(((*at, key), item) for key, item in value.items())
            elif isinstance(value, list):
                stack.extend(((*at, j), item) for j, item in enumerate(value))


def _path(path: tuple) -> str:
    """``problems[1].family_best_ms.direct``; a key that is not a plain name is quoted."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            key = part if part.isidentifier() else f"[{quoted(part)}]"
            text += key if not text else (key if key.startswith("[") else f".{key}")
    return text or "the top level"


def results_target_problem(path: str | os.PathLike) -> str | None:
    """Why the results JSON cannot be written at ``path``, or None: a folder, device or
    FIFO there, a file there that is not a results file ``autoconv bench`` wrote (never
    replaced), or a folder on the way that is a file or cannot be written. A missing
    folder is fine (it is created)."""
    target = Path(path)
    if target.exists() or target.is_symlink():
        problem = path_problem(target)
        if problem:
            return problem
        try:
            check_results(json.loads(target.read_bytes().decode("utf-8")))
        except (OSError, ValueError, AutoconvError):
            return ("a file that is not a results JSON of `autoconv bench` is there, and `autoconv bench` does "
                    "not overwrite it; pass another --out")
        return None
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable"
    return None


def write_results(results: Mapping[str, Any], path: str | os.PathLike) -> Path:
    """Write the results JSON atomically (a reader never sees half a file), creating its
    folder; returns the path.

    Raises:
        ReportError: :func:`results_target_problem` (nothing is written then), or the
            write failed (naming the path and why)."""
    target = Path(path)
    problem = results_target_problem(target)
    if problem:
        raise ReportError(f"cannot write the results to {target}: {problem}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        return write_atomically(target, json.dumps(results, indent=2) + "\n")
    except OSError as err:
        raise ReportError(f"cannot write the results to {target}: {err.strerror or err}") from None


def without_trials(results: Mapping[str, Any]) -> dict[str, Any]:
    """``results`` with each problem's tuning history (``trials``) emptied: the measurements
    alone (``autoconv bench --no-trials``)."""
    return {**results, "problems": [{**problem, "trials": []} for problem in results["problems"]]}


# ---- numbers -----------------------------------------------------------------------------------

def is_positive(value: object) -> TypeGuard[float]:
    """A finite number above zero (a time or a rate that was measured)."""
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def tflops(gflop: float, ms: float) -> float:
    """TFLOP/s of ``gflop`` GFLOP in ``ms`` milliseconds."""
    return gflop / ms  # GFLOP / ms = TFLOP / s


def precision_of(problem: Mapping[str, Any]) -> str:
    """A result's precision (files written before precisions existed hold fp32 problems)."""
    return problem.get("precision") or "fp32"


#: The cuDNN mode that computes each precision (a layer's baseline), and for float32 problems the
#: other float32 mode, shown beside it; a layer's cuDNN fields are named after them
#: (``cudnn_strict_ms``, ``cudnn_tf32_ms``; ``cudnn_ms`` is always the baseline's).
CUDNN_MODES = {"fp32": "strict", "tf32": "tf32", "bf16": "bf16", "fp16": "fp16"}
OTHER_CUDNN_MODES: dict[str, str | None] = {"fp32": "tf32", "tf32": "strict", "bf16": None, "fp16": None}


def baseline_ms(problem: Mapping[str, Any]) -> float | None:
    """cuDNN's time in the problem's precision (:data:`CUDNN_MODES`)."""
    if "cudnn_ms" in problem:
        return problem["cudnn_ms"]
    return problem.get(f"cudnn_{CUDNN_MODES[precision_of(problem)]}_ms")


def speedup(problem: Mapping[str, Any]) -> float | None:
    """cuDNN ms in the problem's precision / autoconv ms; None unless both were measured."""
    baseline, ms = baseline_ms(problem), problem.get("autoconv_ms")
    return baseline / ms if is_positive(baseline) and is_positive(ms) else None


def geomeans(problems: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Geometric means over the layers that have both numbers (unweighted: each distinct
    layer counts once), and the count-weighted total time of both sides.

    ``speedup_vs_cudnn`` is the geometric mean of cuDNN ms / autoconv ms, cuDNN in each
    layer's precision (:func:`baseline_ms`); ``speedup_vs_cudnn_strict`` and
    ``speedup_vs_cudnn_tf32`` against one mode of cuDNN for every layer; ``speedup_vs_torch``
    against PyTorch's ``F.conv2d`` over the ``layers_vs_torch`` layers it ran; ``worst`` the layer
    with the lowest ``speedup_vs_cudnn``.
    """
    paired = [p for p in problems if speedup(p) is not None]
    speedups = [cast(float, speedup(p)) for p in paired]
    totals: dict[str, float | None] = {"autoconv": None, "cudnn": None}
    if paired:
        totals = {"autoconv": sum(p["autoconv_ms"] * (p.get("count") or 1) for p in paired),
                  "cudnn": sum(cast(float, baseline_ms(p)) * (p.get("count") or 1) for p in paired)}
    worst = min(zip(speedups, paired), key=lambda pair: pair[0], default=None)

    def versus(mode: str) -> float | None:
        return _finite_or_none(geometric_mean(
            [p[f"cudnn_{mode}_ms"] / p["autoconv_ms"] for p in problems
             if is_positive(p.get("autoconv_ms")) and is_positive(p.get(f"cudnn_{mode}_ms"))]))

    versus_torch = [p["torch_ms"] / p["autoconv_ms"] for p in problems
                    if is_positive(p.get("autoconv_ms")) and is_positive(p.get("torch_ms"))]
    return {
        "precisions": sorted({precision_of(p) for p in problems}),
        "speedup_vs_cudnn": _finite_or_none(geometric_mean(speedups)),
        "speedup_vs_cudnn_strict": versus("strict"),
        "speedup_vs_cudnn_tf32": versus("tf32"),
        "speedup_vs_torch": _finite_or_none(geometric_mean(versus_torch)),
        "layers_vs_torch": len(versus_torch),
        "autoconv_tflops": _finite_or_none(geometric_mean(
            [p["autoconv_tflops"] for p in problems if is_positive(p.get("autoconv_tflops"))])),
        "cudnn_tflops": _finite_or_none(geometric_mean(
            [tflops(p["gflop"], cast(float, baseline_ms(p))) for p in paired])),
        "layers": len(paired),
        "layers_autoconv_faster": sum(1 for s in speedups if s > 1.0),
        "worst_speedup": worst[0] if worst else None,
        "worst_layer": worst[1]["name"] if worst else None,
        "total_autoconv_ms": totals["autoconv"],
        "total_cudnn_ms": totals["cudnn"],
    }


def geomeans_by_precision(problems: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """:func:`geomeans` of each precision's layers, fp32 first."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for p in problems:
        groups.setdefault(precision_of(p), []).append(p)
    return {precision: geomeans(groups[precision]) for precision in sorted(groups)}


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None
