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
from typing import Any, TypeGuard, cast

from autoconv.errors import AutoconvError
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
        ReportError: missing file, invalid JSON, another schema version, or a problem
            entry without the fields a report needs (naming the entry and the fields).
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
    check_results(results, str(path))
    return results


def check_results(results: Any, where: str = "results") -> None:
    """Raise :class:`ReportError` unless ``results`` has the layout of :data:`SCHEMA_VERSION`."""
    if not isinstance(results, dict):
        raise ReportError(f"{where}: expected a JSON object at the top level")
    schema = results.get("schema")
    if schema != SCHEMA_VERSION:
        raise ReportError(f"{where}: schema {schema!r}; this autoconv reads schema {SCHEMA_VERSION} "
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
            label = problem.get("name", f"#{i}") if isinstance(problem, dict) else f"#{i}"
            raise ReportError(f"{where}: problem {label} lacks {', '.join(missing)}")


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
