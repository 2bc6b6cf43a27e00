"""``autoconv report`` and hostile input: it never changes its input or a file it did not
write, refuses a bad value naming the file, the layer and the field (exit 2, one line, no
traceback), and keeps report.md's Markdown whole whatever the names hold."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from autoconv.bench.report import PLOTS
from autoconv.bench.results import ReportError, check_results, load_results
from autoconv.commands import main as cli
from tests.bench.test_report import _trials, sample_results
from tests.helpers import set_at

REPO = Path(__file__).resolve().parents[2]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if not p.is_symlink()}


def _compact(results) -> str:
    """A results file as another writer would lay it out: one line, no indentation."""
    return json.dumps(results, separators=(",", ":"))


# ---- nothing report did not write is changed -----------------------------------------------------

@pytest.mark.parametrize("plots", [False, True])
def test_report_leaves_its_input_and_a_bench_results_file_beside_it_as_they_were(tmp_path, capsys, plots):
    """Reporting ``other.json`` into the folder of a bench ``results.json`` (no --out), then
    reporting that ``results.json`` itself: neither JSON file changes by one byte, and report
    writes only its own files (report.md, results.csv, the plots)."""
    if plots:
        pytest.importorskip("matplotlib")
    flags = [] if plots else ["--no-plots"]
    bench_results = sample_results()
    other = sample_results()
    other["problems"] = other["problems"][:1]
    other["environment"]["gpu"] = "another GPU"
    (tmp_path / "results.json").write_text(_compact(bench_results))
    (tmp_path / "other.json").write_text(_compact(other))
    before = _snapshot(tmp_path)

    assert cli.main(["report", "--results", str(tmp_path / "other.json"), *flags]) == 0
    assert cli.main(["report", "--results", str(tmp_path / "results.json"), *flags]) == 0
    after = _snapshot(tmp_path)
    assert {name: after[name] for name in before} == before
    assert set(after) - set(before) <= {"report.md", "results.csv", *PLOTS}
    assert "# autoconv vs cuDNN on NVIDIA H100" in after["report.md"].decode()  # the last report's
    assert "results.json" not in capsys.readouterr().out.split("wrote")[-1].split(":")[1]


def test_report_never_replaces_a_link_or_its_own_input(tmp_path, capsys):
    """A results file named like a report's file, in the folder the report goes to, is
    refused and left as it was; so is a link named like one (replacing it would change what
    the link is, which report did not write)."""
    results = _compact(sample_results())
    named = tmp_path / "named"
    named.mkdir()
    (named / "report.md").write_text(results)
    code = cli.main(["report", "--results", str(named / "report.md"), "--no-plots"])
    assert code == 2 and "report.md" in capsys.readouterr().err
    assert (named / "report.md").read_text() == results and sorted(p.name for p in named.iterdir()) == ["report.md"]

    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "results.json").write_text(results)
    elsewhere = tmp_path / "elsewhere"
    assert cli.main(["report", "--results", str(linked / "results.json"), "--out", str(elsewhere),
                     "--no-plots"]) == 0
    (linked / "report.md").symlink_to(elsewhere / "report.md")
    code = cli.main(["report", "--results", str(linked / "results.json"), "--no-plots"])
    err = capsys.readouterr().err
    assert code == 2 and "report.md" in err and len(err.strip().splitlines()) == 1, err
    assert (linked / "report.md").is_symlink()


# ---- bad values are refused, naming the file, the layer and the field ----------------------------

NAN, INF = math.nan, math.inf


def _drop_trial_number(results):
    del results["problems"][0]["trials"][2]["number"]


#: (what is wrong, the change, what the one-line error must name besides the file)
BAD_VALUES = [
    ("a string where a time is", set_at("problems", 1, "autoconv_ms", "fast"), ["layer1.0.conv2", "autoconv_ms"]),
    ("a list where an object is", set_at("problems", 0, "params", [64, 32]), ["conv1", "params"]),
    ("a list for the environment", set_at("environment", ["H100"]), ["environment"]),
    ("a list for the errors", set_at("problems", 0, "errors_vs_reference", [1e-7]),
     ["conv1", "errors_vs_reference"]),
    ("a trial that is a list", set_at("problems", 0, "trials", [[0, 1.0]]), ["conv1", "trials[0]"]),
    ("a trial without its number", _drop_trial_number, ["conv1", "trials[2]", "number"]),
    ("NaN time", set_at("problems", 2, "autoconv_ms", NAN), ["layer4.0.conv1", "autoconv_ms", "NaN"]),
    ("zero time", set_at("problems", 2, "cudnn_strict_ms", 0), ["layer4.0.conv1", "cudnn_strict_ms"]),
    ("negative time", set_at("problems", 0, "autoconv_ms", -0.5), ["conv1", "autoconv_ms", "-0.5"]),
    ("Infinity time", set_at("problems", 1, "cudnn_strict_ms", INF), ["layer1.0.conv2", "cudnn_strict_ms"]),
    ("a subnormal time", set_at("problems", 1, "autoconv_ms", 5e-324), ["layer1.0.conv2", "autoconv_ms"]),
    ("NaN in a family's best", set_at("problems", 0, "family_best_ms", "direct", NAN),
     ["conv1", "family_best_ms", "direct"]),
    ("NaN in an error", set_at("problems", 0, "errors_vs_reference", {"autoconv": NAN}),
     ["conv1", "errors_vs_reference", "autoconv"]),
    ("NaN in a trial", set_at("problems", 0, "trials", 1, "value_ms", NAN), ["conv1", "trials[1]", "value_ms"]),
    ("negative GFLOP", set_at("problems", 2, "gflop", -1.0), ["layer4.0.conv1", "gflop"]),
    ("a count as text", set_at("problems", 0, "count", "2"), ["conv1", "count"]),
    ("a count of zero", set_at("problems", 0, "count", 0), ["conv1", "count"]),
    ("a count of true", set_at("problems", 0, "count", True), ["conv1", "count"]),
    ("a huge count", set_at("problems", 0, "count", 2 ** 1000), ["conv1", "count"]),
    ("an unknown precision", set_at("problems", 0, "precision", "fp64"), ["conv1", "precision", "fp32"]),
    ("a name that is a number", set_at("problems", 1, "name", 42), ["problems[1]", "name"]),
    ("an object as the GPU's name", set_at("environment", "gpu", {"a": 1}), ["environment.gpu"]),
    ("tuning seconds as text", set_at("tuning_seconds", "long"), ["tuning_seconds"]),
    ("a peak of zero", set_at("peak_tflops", 0.0), ["peak_tflops"]),
    ("rounds as text", set_at("method", "rounds", "three"), ["method.rounds"]),
    ("NaN in the stored geometric means", set_at("geomean", {"speedup_vs_cudnn": NAN}),
     ["geomean.speedup_vs_cudnn"]),
]


@pytest.mark.parametrize("change, names", [case[1:] for case in BAD_VALUES], ids=[case[0] for case in BAD_VALUES])
def test_a_bad_value_is_refused_naming_the_file_layer_and_field(tmp_path, capsys, change, names):
    results = sample_results()
    change(results)
    source = tmp_path / "results.json"
    source.write_text(json.dumps(results))
    out = tmp_path / "out"
    code = cli.main(["report", "--results", str(source), "--out", str(out), "--no-plots"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"autoconv report: error: {source}: "), err
    for name in names:
        assert name in err, (name, err)
    assert not out.exists()  # refused before anything was written
    with pytest.raises(ReportError):
        check_results(results)


@pytest.mark.parametrize("text, says", [
    ('{"schema": 1, "environment": ' + "[" * 100_000 + "]" * 100_000 + ', "problems": []}', "nested too deeply"),
    ('{"schema": 1, "environment": {}, "peak_tflops": 1' + "0" * 5000 + ', "problems": []}', "digits"),
    (json.dumps(sample_results()).replace('"peak_tflops": 60.0', '"peak_tflops": 1e400'),
     "peak_tflops is Infinity"),
], ids=["100,000-deep", "a 5,000-digit number", "1e400"])
def test_json_that_python_reads_badly_is_refused_in_one_line(tmp_path, capsys, text, says):
    source = tmp_path / "results.json"
    source.write_text(text)
    assert cli.main(["report", "--results", str(source), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(source) in err and says in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_every_recorded_results_file_passes_the_checks():
    """The checks refuse what bench never writes, not what it does (the checkout's record)."""
    records = sorted((REPO / "results").glob("**/results.json"))
    if not records:
        pytest.skip("no results/ record in this checkout")
    for path in records:
        load_results(path)


# ---- names cannot break report.md ------------------------------------------------------------------

HOSTILE = "conv1 | evil\n# heading <img src=x onerror=alert(1)> `tick` *b* _u_ [l](u) &amp; $x$ \\|"


def _hostile_results():
    results = sample_results()
    first, worst = results["problems"][0], results["problems"][1]  # worst: the summary names it
    first["name"] = HOSTILE
    worst["name"] = "worst\r\n<!-- the rest is a comment"
    first["family"] = "implicit_gemm<script>"
    first["params"] = {"BM": "6|4", "X": "<b>"}
    first["shape"] = "1x8 | `x` ``y"
    first["cudnn_strict_plan"] = "eng`1|2"
    first["family_best_ms"] = {"dir|ect": 3.0, "<i>": 0.5}
    first["torch_note"] = "failed: <!-- x\n| a | b |"
    env = results["environment"]
    env.update(gpu="H100\n## fake section", driver="<b>580</b>", command="autoconv bench `x` | y\nz", date=None)
    return results


def _cells(line: str) -> int:
    """The number of cell separators in a Markdown table line, as GFM splits it: at each
    ``|`` not escaped by a backslash (code spans do not protect a ``|`` in a table)."""
    count, escaped = 0, False
    for char in line:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "|":
            count += 1
    return count


def _outside_code(line: str) -> str:
    """``line`` without its backslash escapes and code spans: the text Markdown interprets."""
    line = re.sub(r"\\.", "", line)
    return re.sub(r"(`+)(?:.*?[^`])??\1(?!`)", "", line)


def test_names_cannot_break_the_markdown(tmp_path):
    from autoconv.bench.report import report_markdown

    markdown = report_markdown(_hostile_results(), results_path="a|b`.json", command="autoconv report `x`")
    lines = markdown.splitlines()
    headings = [line for line in lines if line.startswith("#")]
    assert headings[0].startswith("# autoconv vs cuDNN on H100 ")
    assert not any("fake section" in h or "heading" in h for h in headings[1:]), headings
    tables, table = [], []
    for line in lines + [""]:
        if line.startswith("|"):
            table.append(line)
        elif table:
            tables.append(table)
            table = []
    assert len(tables) >= 3
    for rows in tables:
        assert len({_cells(row) for row in rows}) == 1, rows
    for line in lines:
        plain = _outside_code(line)
        assert not re.search(r"[<>&`]", plain), line  # no HTML, entity or stray code span
        assert "*b*" not in plain and "_u_" not in plain and "$x$" not in plain and "](u)" not in plain, line
    assert "conv1 \\| evil \\# heading \\<img" in markdown  # what the name said, as text


def test_plots_draw_names_that_look_like_mathtext_or_run_long(tmp_path):
    """Matplotlib reads ``$...$`` as mathematics (and fails on a broken formula); a 10,000
    character name would make a figure too large to save."""
    pytest.importorskip("matplotlib")
    results = sample_results()
    results["problems"][0]["name"] = r"conv $\frac{$"
    results["problems"][1]["name"] = "x" * 10_000
    results["problems"][0]["family_best_ms"] = {"$a": 1.0, "implicit_gemm": 0.5}
    results["environment"]["gpu"] = "$^"
    results["problems"][2]["trials"] = _trials([1.0, 0.5])
    source = tmp_path / "results.json"
    source.write_text(json.dumps(results))
    assert cli.main(["report", "--results", str(source), "--out", str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(["report.md", "results.csv", *PLOTS])
