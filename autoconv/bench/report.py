"""A report folder from a results JSON written by ``autoconv bench``.

``write_report(results, out_dir)`` writes

- ``report.md``: per layer shape, winning family and its key parameters, time, TFLOP/s,
  % of the measured FP32 peak, cuDNN strict-FP32 time and the speedup over it, cuDNN
  TF32 and PyTorch times; the best time of every kernel family next to cuDNN's; the
  geometric means; the environment and the command that measured the numbers;
- ``results.csv``: the same numbers, machine-readable;
- PNG plots (matplotlib, Agg backend): ``speedup.png`` (speedup over cuDNN per layer),
  ``tflops.png`` (TFLOP/s per layer against the measured peak), ``convergence.png``
  (best time vs trial, per layer) and ``families.png`` (best time per kernel family and
  cuDNN, per layer).

Nothing here measures anything: every number comes from the results file (its layout:
:mod:`autoconv.bench.results`), and the geometric means are recomputed from the per-layer
numbers so that they always agree. The results file is the record and is never written here
(nor is any ``results.json`` in the folder); a file of a report's name that an earlier report
did not write is never replaced. Text from the file (layer names, plans, the environment) is
escaped, so it cannot change report.md's Markdown.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from autoconv.bench.results import (
    CUDNN_MODES,
    OTHER_CUDNN_MODES,
    PROBLEM_FIELDS,
    ReportError,
    baseline_ms,
    check_results,
    geomeans,
    geomeans_by_precision,
    is_positive,
    precision_of,
    speedup,
    tflops,
)
from autoconv.errors import BackendUnavailable
from autoconv.files import length_problem, path_problem, write_atomically
from autoconv.formatting import format_params
from autoconv.kernels.families import FAMILY_NAMES, get_family

#: Environment entries, in the order the report lists them, with their labels.
ENVIRONMENT_LABELS = (
    ("gpu", "GPU"), ("compute_capability", "compute capability"), ("sm_count", "SMs"),
    ("driver", "driver"), ("cuda_runtime", "CUDA runtime"), ("cudnn", "cuDNN"),
    ("cudnn_frontend", "cuDNN frontend"), ("cupy", "CuPy"), ("torch", "PyTorch"),
    ("python", "Python"), ("autoconv", "autoconv"), ("git_commit", "git commit"),
    ("date", "date (UTC)"), ("command", "command"),
)

PLOTS = ("speedup.png", "tflops.png", "convergence.png", "families.png")

MATPLOTLIB_HINT = ("the plots need matplotlib: pip install 'autoconv[report]' (or pip install "
                   "matplotlib); or pass --no-plots to write only report.md and results.csv")


# ---- the layers' numbers -----------------------------------------------------------------------

def families_in(problems: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every family with a best time for some layer, in first-seen order."""
    seen: dict[str, None] = {}
    for problem in problems:
        for family in problem.get("family_best_ms") or {}:
            seen.setdefault(family, None)
    return list(seen)


def convergence(trials: Iterable[Mapping[str, Any]]) -> tuple[list[int], list[float]]:
    """(trial numbers, best time so far) over the completed trials, in trial order."""
    numbers, best = [], []
    current = math.inf
    for trial in sorted(trials, key=lambda t: t["number"]):
        value = trial.get("value_ms")
        if str(trial.get("state", "")).upper() != "COMPLETE" or not is_positive(value):
            continue
        current = min(current, value)
        numbers.append(trial["number"])
        best.append(current)
    return numbers, best


def _ms(value, digits: int = 4) -> str:
    return f"{value:.{digits}f}" if is_positive(value) else "–"


def _num(value, fmt: str) -> str:
    return format(value, fmt) if isinstance(value, (int, float)) and math.isfinite(value) else "–"


# ---- text from the results file --------------------------------------------------------------

#: Line breaks (CommonMark's and the others Python splits lines at): a value stays on its line.
LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")

#: What Markdown (GitHub's, with tables, strikethrough and maths) could read as syntax in a
#: value; each gets a backslash. An underscore inside a word stays (``implicit_gemm``).
MARKDOWN_SYNTAX = re.compile(r"[\\`*\[\]<>|&$~#]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def md_text(value: object) -> str:
    """``value`` as literal Markdown text on one line: a layer name cannot add a table
    column, a line, a code span, HTML or a link to report.md."""
    return MARKDOWN_SYNTAX.sub(lambda match: "\\" + match.group(), LINE_BREAKS.sub(" ", str(value)))


def md_code(value: object, *, in_table: bool = False) -> str:
    """``value`` as a code span on one line, fenced by one backtick more than its longest run
    of backticks. In a table, a value holding ``|`` is :func:`md_text` instead (GFM splits
    cells before it reads code spans, and a backslash does not escape inside one)."""
    text = LINE_BREAKS.sub(" ", str(value))
    if not text:
        return "–"
    if in_table and "|" in text:
        return md_text(text)
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    if text[0] == "`" or text[-1] == "`" or (text[0] == " " and text[-1] == " "):
        text = f" {text} "  # (Markdown strips one space from each end)
    return f"{fence}{text}{fence}"


# ---- writing -----------------------------------------------------------------------------------

def write_report(results: Mapping[str, Any], out_dir: str | Path, *, plots: bool = True,
                 results_path: str | None = None, command: str | None = None) -> list[Path]:
    """Write the report folder (see the module docstring); returns the paths written.

    Args:
        results_path, command: where the numbers were read from and the ``autoconv report``
            command line, both named in ``report.md``.

    Raises:
        ReportError: ``results`` is not a schema-1 results dict; ``out_dir`` cannot be
            created or written, is not a folder, or holds a file of a report's name that
            ``autoconv report`` did not write, or a link (nothing is replaced then).
        BackendUnavailable: ``plots`` and matplotlib cannot be imported.
    """
    check_results(results)
    results = dict(results)
    results["geomean"] = geomeans(results["problems"])
    out = Path(out_dir)
    pyplot = _pyplot() if plots else None  # fail before writing anything
    _prepare_folder(out)

    files: dict[str, bytes] = {}
    if pyplot is not None:
        for name, draw in (("speedup.png", plot_speedup), ("tflops.png", plot_tflops),
                           ("convergence.png", plot_convergence), ("families.png", plot_families)):
            figure = draw(pyplot, results)
            if figure is None:  # nothing to draw (no trials, no family times)
                continue
            image = io.BytesIO()
            figure.savefig(image, format="png", dpi=120, bbox_inches="tight", metadata={"Software": PNG_SOFTWARE})
            pyplot.close(figure)
            files[name] = palette_png(image.getvalue())
    plot_names = list(files)
    files["results.csv"] = results_csv(results).encode()
    files["report.md"] = report_markdown(results, plot_names, results_path=results_path, command=command).encode()
    # (a link counts even when it leads nowhere: writing there would replace it, or create its target)
    foreign = [name for name in files if ((out / name).exists() or (out / name).is_symlink())
               and not _written_by_report(out, name)]
    if foreign:
        raise ReportError(f"{out}: {', '.join(foreign)} {'is' if len(foreign) == 1 else 'are'} there and not "
                          "written by `autoconv report`, so it does not overwrite them; pass another --out folder")
    for name in ("results.csv", "report.md", *plot_names):
        try:
            write_atomically(out / name, files[name])
        except OSError as err:
            raise ReportError(f"cannot write {out / name}: {err.strerror or err}") from None
    return [out / "report.md", out / "results.csv"] + [out / name for name in plot_names]


#: The ``Software`` text of the plots' PNG files: how a later report knows them as its own.
PNG_SOFTWARE = "autoconv report"

#: Colours of a plot's palette: the plots draw a few flat colours and antialiased edges, which
#: 128 colours keep indistinguishable from the full-colour image, in a far smaller file.
PALETTE_COLOURS = 128


def palette_png(data: bytes) -> bytes:
    """A matplotlib PNG as an optimised palette image with its ``Software`` text kept (Pillow
    comes with matplotlib): results folders are part of the repository."""
    from PIL import Image, PngImagePlugin

    image = Image.open(io.BytesIO(data)).convert("RGB").quantize(colors=PALETTE_COLOURS)
    info = PngImagePlugin.PngInfo()
    info.add_text("Software", PNG_SOFTWARE)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True, pnginfo=info)
    return out.getvalue()


def _prepare_folder(out: Path) -> None:
    """Create ``out`` (and its parents) unless it is there; ReportError naming it when it
    cannot be, or is not a folder, or cannot be written."""
    if out.exists() or out.is_symlink():
        problem = path_problem(out, want="folder")
        if problem:
            raise ReportError(f"--out {out}: {problem}; pass a folder for the report")
    else:
        too_long = length_problem(out / "report.md")
        if too_long:
            raise ReportError(f"--out {out}: {too_long}")
        try:
            out.mkdir(parents=True)
        except OSError as err:
            raise ReportError(f"--out {out}: cannot create the folder ({err.strerror or err})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise ReportError(f"--out {out}: the folder is not writable")


def _written_by_report(out: Path, name: str) -> bool:
    """Whether the file ``out/name`` is one ``autoconv report`` wrote, so that it may be
    replaced: each kind is recognised by its content; a link never is (replacing it would
    change what it is)."""
    path = out / name
    if path.is_symlink() or path_problem(path):
        return False
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if name == "report.md":
        return data.startswith(b"# autoconv vs cuDNN on ")
    if name == "results.csv":
        return data.startswith(",".join(f for f in PROBLEM_FIELDS if f not in ("params", "family_best_ms",
                                                                                 "trials")).encode())
    if name.endswith(".png"):  # this report's plots, or the plots of a report made before the tag
        if not data.startswith(b"\x89PNG"):
            return False
        head = data[:4096]
        return PNG_SOFTWARE.encode() in head or (b"matplotlib" in head and _written_by_report(out, "report.md"))
    return False


def results_csv(results: Mapping[str, Any]) -> str:
    """One row per layer; ``family_best_ms`` becomes one ``best_ms_<family>`` column each."""
    families = families_in(results["problems"])
    scalar = [f for f in PROBLEM_FIELDS if f not in ("params", "family_best_ms", "trials")]
    header = scalar + ["params"] + [f"best_ms_{f}" for f in families]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for problem in results["problems"]:
        best = problem.get("family_best_ms") or {}
        writer.writerow([_csv_value(problem.get(f)) for f in scalar]
                        + [json.dumps(problem.get("params") or {}, sort_keys=False)]
                        + [_csv_value(best.get(f)) for f in families])
    return buffer.getvalue()


def _csv_value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _uses_tensor_cores(family_name) -> bool:
    return family_name in FAMILY_NAMES and get_family(family_name).tensor_cores


#: What each mode of cuDNN is called in the report.
MODE_LABELS = {"strict": "strict FP32", "tf32": "TF32", "bf16": "bf16", "fp16": "fp16"}
#: What cuDNN's baseline is called for each precision (the mode that computes it).
BASELINE_LABELS = {precision: MODE_LABELS[mode] for precision, mode in CUDNN_MODES.items()}
#: What each precision computes, for the report.
PRECISION_MEANINGS = {
    "fp32": "float32 accuracy; PyTorch's `torch.backends.cudnn.conv.fp32_precision = \"ieee\"`, "
            "`allow_tf32 = False`",
    "tf32": "inputs rounded to TF32, one tensor-core product per multiply-add, float32 sums; PyTorch's "
            "default for convolutions, `fp32_precision = \"tf32\"`, `allow_tf32 = True`",
    "bf16": "bfloat16 inputs and weights, float32 sums, the output rounded once; what `torch.autocast` "
            "with `dtype=torch.bfloat16` runs (NHWC: `channels_last`)",
    "fp16": "float16 inputs and weights, float32 sums, the output rounded once; `torch.autocast` with "
            "`dtype=torch.float16`",
}


def _error(value) -> str:
    return f"{value:.2e}" if isinstance(value, (int, float)) and math.isfinite(value) else "–"


def report_markdown(results: Mapping[str, Any], plot_files: Sequence[str] = (), *,
                    results_path: str | None = None, command: str | None = None) -> str:
    env = results.get("environment") or {}
    problems = results["problems"]
    peak = results.get("peak_tflops")
    gpu = env.get("gpu") or "unknown GPU"
    lines = [f"# autoconv vs cuDNN on {md_text(gpu)}", ""]
    measured_by = md_code(env["command"]) if env.get("command") else "(command not recorded)"
    lines += [f"Numbers measured by {measured_by} on {md_text(env.get('date') or '(date not recorded)')}"
              + (f"; report written by {md_code(command)}" if command else "")
              + (f" from {md_code(results_path)}" if results_path else "") + ".", ""]

    lines += ["## Summary", ""]
    by_precision = geomeans_by_precision(problems)
    for precision, means in by_precision.items():
        label = BASELINE_LABELS[precision]
        worst = md_text(means.get("worst_layer") or "–")
        lines.append(f"- **{precision}** ({PRECISION_MEANINGS[precision]}): geometric-mean speedup over cuDNN "
                     f"{label} **{_num(means.get('speedup_vs_cudnn'), '.3f')}x** over {means.get('layers', 0)} "
                     f"layers (autoconv faster on {means.get('layers_autoconv_faster', 0)}; slowest "
                     f"{_num(means.get('worst_speedup'), '.3f')}x, {worst}); TFLOP/s "
                     f"autoconv {_num(means.get('autoconv_tflops'), '.2f')}, cuDNN {label} "
                     f"{_num(means.get('cudnn_tflops'), '.2f')}"
                     + (f"; all layers, each times its count: autoconv {_ms(means['total_autoconv_ms'], 3)} ms, "
                        f"cuDNN {_ms(means['total_cudnn_ms'], 3)} ms" if means.get("total_autoconv_ms") is not None
                        else "") + ".")
    lines.append(f"- Measured FP32 FMA peak: {_num(peak, '.2f')} TFLOP/s (FLOPs count a multiply-add as 2).")
    on_tensor_cores = sorted({p["family"] for p in problems
                              if precision_of(p) == "fp32" and _uses_tensor_cores(p.get("family"))})
    if on_tensor_cores:
        lines.append(f"- In fp32, {md_text(', '.join(on_tensor_cores))} multiply on TF32 tensor cores at float32 "
                     "accuracy (each operand split into two TF32 parts, three tensor-core products per "
                     "multiply-add, checked against a float64 reference like every kernel): TFLOP/s count the "
                     "convolution's multiply-adds, so these can exceed the FP32 FMA peak.")
    if results.get("tuning_seconds") is not None:
        lines.append(f"- Tuning time: {results['tuning_seconds']:.0f} s.")
    lines.append("")

    for precision, means in by_precision.items():
        label = BASELINE_LABELS[precision]
        other_mode = OTHER_CUDNN_MODES[precision]
        other = f" cuDNN {MODE_LABELS[other_mode]} ms |" if other_mode else ""
        baseline_side = f"cudnn_{CUDNN_MODES[precision]}"
        fp32 = precision == "fp32"
        # The share of the GPU's dense tensor-core peak (datasheet) where the bench knew it.
        tensor = any(p.get("tensor_peak_tflops") for p in problems if precision_of(p) == precision)
        peak_columns = f" % of {precision} tensor peak | cuDNN % |" if tensor else ""
        lines += [f"## Per layer, {precision}", "",
                  f"Speedup = cuDNN {label} ms / autoconv ms (cuDNN's best plan in the same precision); above 1 "
                  "autoconv is faster. Errors: relative L2 against a float64 convolution of the same inputs. "
                  "cuDNN's best plan is recorded in the winners' cache; where it is faster, "
                  "`autoconv.conv2d` runs it.", "",
                  "| layer | count | shape (NxCxHxW * KxRxS) | GFLOP | family | key params | autoconv ms "
                  f"| TFLOP/s |{' % of FP32 peak |' if fp32 else ''}{peak_columns} cuDNN {label} ms | speedup "
                  f"|{other} PyTorch ms | autoconv error | cuDNN {label} error | PyTorch error |",
                  "|---|---:|---|---:|---|---|---:|---:|" + ("---:|" if fp32 else "") + ("---:|---:|" if tensor else "")
                  + "---:|---:|" + ("---:|" if other_mode else "") + "---:|---:|---:|---:|"]
        for p in problems:
            if precision_of(p) != precision:
                continue
            errors = p.get("errors_vs_reference") or {}
            shares = p.get("pct_of_tensor_peak") or {}
            lines.append(
                f"| {md_text(p['name'])} | {p.get('count') or 1} | {md_code(p['shape'], in_table=True)} "
                f"| {_num(p['gflop'], '.3f')} | {md_text(p.get('family') or '–')} "
                f"| {md_text(format_params(p.get('params'), limit=8))} | {_ms(p['autoconv_ms'])} "
                f"| {_num(p['autoconv_tflops'], '.2f')} |" + (f" {_num(p['pct_of_peak'], '.1f')} |" if fp32 else "")
                + (f" {_num(shares.get('autoconv'), '.1f')} | {_num(shares.get(baseline_side), '.1f')} |"
                   if tensor else "")
                + f" {_ms(baseline_ms(p))} | {_num(speedup(p), '.3f')} |"
                + (f" {_ms(p.get(f'cudnn_{other_mode}_ms'))} |" if other_mode else "") + f" {_ms(p['torch_ms'])} "
                f"| {_error(errors.get('autoconv'))} | {_error(errors.get(baseline_side))} "
                f"| {_error(errors.get('torch'))} |")
        lines += ["", f"Geometric mean speedup over cuDNN {label}: {_num(means.get('speedup_vs_cudnn'), '.3f')}x.", ""]
        lines += torch_notes([p for p in problems if precision_of(p) == precision])

    families = families_in(problems)
    if families:
        lines += ["## Best time per kernel family (ms)", "",
                  "The fastest verified configuration of each family found by tuning, next to "
                  "cuDNN's fastest plan in the layer's precision.", "",
                  "| layer | " + " | ".join(md_text(f) for f in families) + " | cuDNN | cuDNN plan |",
                  "|---|" + "---:|" * len(families) + "---:|---|"]
        for p in problems:
            best = p.get("family_best_ms") or {}
            plan = p.get("cudnn_plan") or p.get(f"cudnn_{CUDNN_MODES[precision_of(p)]}_plan")
            lines.append(f"| {md_text(p['name'])} | " + " | ".join(_ms(best.get(f)) for f in families)
                         + f" | {_ms(baseline_ms(p))} | {md_code(plan, in_table=True) if plan else '–'} |")
        lines.append("")

    if plot_files:
        lines += ["## Plots", ""]
        captions = {"speedup.png": "Speedup over cuDNN strict FP32 per layer",
                    "tflops.png": "TFLOP/s per layer against the measured FP32 peak",
                    "convergence.png": "Tuning convergence: best time so far vs trial",
                    "families.png": "Best time per kernel family and cuDNN, per layer"}
        for name in plot_files:
            lines += [f"![{captions.get(name, name)}]({name})", ""]

    lines += ["## Environment", "", "| | |", "|---|---|"]
    for key, label in ENVIRONMENT_LABELS:
        value = env.get(key)
        shown = "–" if value in (None, "") else md_code(value, in_table=True) if key == "command" else md_text(value)
        lines.append(f"| {label} | {shown} |")
    lines.append("")

    method = results.get("method") or {}
    lines += ["## How the numbers were measured", "",
              "- Both sides through one timer (`autoconv.gpu.timing.time_calls`): many calls captured in a "
              "CUDA graph, rotating over input/output sets that together exceed twice the L2 cache, "
              "warm-up replays, then the median of the timed replays divided by the calls per replay.",
              "- cuDNN: every plan of heuristics A and the fallback list is built, checked against a "
              "float64 reference and timed; the fastest is kept (strict FP32: tensor-core engines "
              "deselected, outputs within 1e-5 relative L2 error; TF32: all engines).",
              "- autoconv's cached winner and cuDNN's best plans are measured alternately in one "
              "process" + (f" ({method['rounds']} rounds, median)" if method.get("rounds") else "")
              + ", after both outputs were checked against the float64 reference.",
              "- PyTorch: `torch.nn.functional.conv2d` with `cudnn.benchmark` on, TF32 off for fp32 layers and "
              "on for tf32 layers, captured in torch's own CUDA graph, same operands; its calls "
              "write one output block, which a small layer's output keeps in the L2 (in PyTorch's favour).",
              "- autoconv's tolerance: 1e-5 for fp32; for tf32 twice the expected error of TF32 rounding of the "
              "operands, computed from the data (`autoconv.verify.tolerance`).", ""]
    return "\n".join(lines)


def torch_notes(problems: Sequence[Mapping[str, Any]]) -> list[str]:
    """Why PyTorch's column is empty or differs on some layers (bench's ``torch_note``: not
    installed, left out, a failed call, 16-bit outputs), one line per reason with its layers."""
    layers_of: dict[str, list[str]] = {}
    for p in problems:
        if p.get("torch_note"):
            layers_of.setdefault(p["torch_note"], []).append(p["name"])
    lines = [f"- PyTorch's column: {md_text(note)} "
             f"({'every layer' if len(names) == len(problems) else ', '.join(md_text(n) for n in names)})."
             for note, names in layers_of.items()]
    return lines + [""] if lines else []


# ---- plots -------------------------------------------------------------------------------------

def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise BackendUnavailable(MATPLOTLIB_HINT) from None
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as pyplot
    return pyplot


#: Characters of a name that a plot shows (a label of thousands would make the figure too large
#: to save), and the widest figure and the most panels drawn, for the same reason.
PLOT_TEXT_LIMIT = 40
MAX_FIGURE_INCHES = 150.0
MAX_PANELS = 60


def _plot_text(value: object) -> str:
    """A name from the results file as a plot shows it: one line, at most
    :data:`PLOT_TEXT_LIMIT` characters, ``$`` escaped (matplotlib reads ``$...$`` as
    mathematics and fails on a formula it cannot parse)."""
    text = LINE_BREAKS.sub(" ", str(value))
    if len(text) > PLOT_TEXT_LIMIT:
        text = text[:PLOT_TEXT_LIMIT - 3] + "..."
    return text.replace("$", r"\$")


def _layer_axis(ax, names: Sequence[str]) -> None:
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=30 if len(names) > 4 else 0, ha="right" if len(names) > 4 else "center")
    ax.set_xlabel("layer")


def _width(count: int) -> float:
    return min(max(6.0, 1.1 * count + 2.0), MAX_FIGURE_INCHES)


def _subtitle(results) -> str:
    env = results.get("environment") or {}
    return f"{_plot_text(env.get('gpu') or 'GPU')}, FP32, {_plot_text(str(env.get('date') or '')[:10])}".rstrip(", ")


def plot_speedup(pyplot, results):
    problems = [p for p in results["problems"] if speedup(p) is not None]
    if not problems:
        return None
    names = [f"{_plot_text(p['name'])} ({precision_of(p)})" for p in problems]
    speedups = [cast(float, speedup(p)) for p in problems]
    figure, ax = pyplot.subplots(figsize=(_width(len(names)), 4.5))
    colors = ["tab:green" if s >= 1.0 else "tab:red" for s in speedups]
    bars = ax.bar(range(len(names)), speedups, color=colors)
    ax.bar_label(bars, labels=[f"{s:.2f}x" for s in speedups], fontsize=8)
    ax.axhline(1.0, color="black", linewidth=1, linestyle="--", label="cuDNN in the same precision (1.0x)")
    mean = results.get("geomean", {}).get("speedup_vs_cudnn")
    if mean:
        ax.axhline(mean, color="tab:blue", linewidth=1, linestyle=":", label=f"geometric mean {mean:.2f}x")
    _layer_axis(ax, names)
    ax.set_ylabel("speedup over cuDNN, same precision (x)")
    ax.set_title(f"autoconv speedup over cuDNN per layer\n{_subtitle(results)}")
    ax.set_ylim(0, max(speedups + [1.0]) * 1.2)
    ax.legend(loc="upper right", fontsize=8)
    return figure


def plot_tflops(pyplot, results):
    problems = results["problems"]
    names = [_plot_text(p["name"]) for p in problems]
    autoconv = [p.get("autoconv_tflops") or 0.0 for p in problems]
    cudnn = [tflops(p["gflop"], cast(float, baseline_ms(p))) if is_positive(baseline_ms(p)) else 0.0
             for p in problems]
    figure, ax = pyplot.subplots(figsize=(_width(len(names)), 4.5))
    positions = list(range(len(names)))
    ax.bar([x - 0.2 for x in positions], autoconv, width=0.4, label="autoconv", color="tab:blue")
    ax.bar([x + 0.2 for x in positions], cudnn, width=0.4, label="cuDNN, same precision", color="tab:gray")
    peak = results.get("peak_tflops")
    top = max(autoconv + cudnn + [1.0])
    if is_positive(peak):
        ax.axhline(peak, color="tab:red", linestyle="--", linewidth=1,
                   label=f"measured FP32 FMA peak {peak:.1f} TFLOP/s")
        top = max(top, peak)
    _layer_axis(ax, names)
    ax.set_ylabel("TFLOP/s (2 x multiply-adds / time)")
    ax.set_title(f"Throughput per layer against the FP32 peak\n{_subtitle(results)}")
    ax.set_ylim(0, top * 1.4)  # head room: the legend stays clear of the peak line
    ax.legend(loc="upper right", fontsize=8)
    return figure


def plot_convergence(pyplot, results):
    from matplotlib import ticker  # optional: plots only

    problems = [p for p in results["problems"] if convergence(p.get("trials") or [])[0]]
    if not problems:
        return None
    shown = f" (the first {MAX_PANELS} of {len(problems)} layers)" if len(problems) > MAX_PANELS else ""
    problems = problems[:MAX_PANELS]
    columns = min(3, len(problems))
    rows = math.ceil(len(problems) / columns)
    figure, axes = pyplot.subplots(rows, columns, figsize=(4.2 * columns, 3.2 * rows), squeeze=False)
    for ax, problem in zip(axes.flat, problems):
        numbers, best = convergence(problem["trials"])
        ax.step(numbers, best, where="post", color="tab:blue", label="autoconv best so far")
        improved = [(n, b) for i, (n, b) in enumerate(zip(numbers, best)) if i == 0 or b < best[i - 1]]
        ax.plot(*zip(*improved), "o", color="tab:blue", markersize=3)
        if is_positive(baseline_ms(problem)):
            ax.axhline(baseline_ms(problem), color="tab:gray", linestyle="--", linewidth=1,
                       label="cuDNN, same precision")
        ax.set_title(_plot_text(problem["name"]), fontsize=9)
        ax.set_xlabel("trial")
        ax.set_ylabel("best time (ms)")
        ax.set_ylim(bottom=0)
        ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    for ax in list(axes.flat)[len(problems):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7, loc="upper right")
    figure.suptitle(f"Tuning convergence: best verified time vs trial{shown}\n{_subtitle(results)}")
    figure.tight_layout()
    return figure


def plot_families(pyplot, results):
    from matplotlib import ticker  # optional: plots only

    problems = results["problems"]
    families = families_in(problems)
    if not families:
        return None
    series = families + ["cuDNN"]
    names = [_plot_text(p["name"]) for p in problems]
    width = 0.8 / len(series)
    figure, ax = pyplot.subplots(figsize=(_width(len(names)) * 1.2, 4.8))
    for j, label in enumerate(series):
        values = []
        for p in problems:
            value = baseline_ms(p) if label == "cuDNN" else (p.get("family_best_ms") or {}).get(label)
            values.append(value if is_positive(value) else math.nan)
        offsets = [i - 0.4 + width * (j + 0.5) for i in range(len(names))]
        ax.bar(offsets, values, width=width, label=_plot_text(label),
               color="tab:gray" if label == "cuDNN" else None)
    _layer_axis(ax, names)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(ticker.FormatStrFormatter("%g"))
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_ylabel("best time (ms, log scale)")
    ax.set_title(f"Best time per kernel family vs cuDNN, per layer (lower is better)\n{_subtitle(results)}")
    ax.legend(fontsize=8, ncol=min(len(series), 4))
    return figure
