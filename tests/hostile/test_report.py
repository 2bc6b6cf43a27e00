"""Hostile ``autoconv report``: values of the wrong type, NaN, Infinity, zero and negative
times, deep nesting, names that would break Markdown, and ``--out`` or ``--results`` pointing at
files and places report did not write."""

from __future__ import annotations

import json
import math
import os

import pytest

from tests.bench.test_report import sample_results
from tests.helpers import delete_at, set_at
from tests.hostile.harness import Case, params

#: What report may write into its folder.
REPORT_FILES = ("report.md", "results.csv")
OUT = tuple(f"out/{name}" for name in REPORT_FILES) + ("out",)
BESIDE = REPORT_FILES


HOSTILE_NAME = "a | b\n# h <img src=x onerror=alert(1)> `t` [l](u) &amp; $x$ \\|\r<!--"

#: (id, change to the sample results)
VALUES = [
    ("time-text", set_at("problems", 0, "autoconv_ms", "fast")),
    ("time-nan", set_at("problems", 0, "autoconv_ms", math.nan)),
    ("time-inf", set_at("problems", 1, "autoconv_ms", math.inf)),
    ("time-neg-inf", set_at("problems", 1, "cudnn_strict_ms", -math.inf)),
    ("time-zero", set_at("problems", 2, "autoconv_ms", 0)),
    ("time-negative", set_at("problems", 2, "cudnn_strict_ms", -1.0)),
    ("time-subnormal", set_at("problems", 0, "autoconv_ms", 5e-324)),
    ("time-huge", set_at("problems", 0, "autoconv_ms", 1e308)),
    ("time-bool", set_at("problems", 0, "autoconv_ms", True)),
    ("time-null", set_at("problems", 0, "autoconv_ms", None)),
    ("time-list", set_at("problems", 0, "autoconv_ms", [1.0])),
    ("count-zero", set_at("problems", 0, "count", 0)),
    ("count-negative", set_at("problems", 0, "count", -3)),
    ("count-2**63", set_at("problems", 0, "count", 2**63)),
    ("count-float", set_at("problems", 0, "count", 1.5)),
    ("count-text", set_at("problems", 0, "count", "2")),
    ("gflop-nan", set_at("problems", 1, "gflop", math.nan)),
    ("name-number", set_at("problems", 1, "name", 42)),
    ("name-null", set_at("problems", 1, "name", None)),
    ("problems-object", set_at("problems", {"a": 1})),
    ("problems-empty", set_at("problems", [])),
    ("problem-string", set_at("problems", 0, "x")),
    ("params-list", set_at("problems", 0, "params", [1, 2])),
    ("trials-dict", set_at("problems", 0, "trials", {"0": 1})),
    ("trial-nan", set_at("problems", 0, "trials", 0, "value_ms", math.nan)),
    ("family-best-inf", set_at("problems", 0, "family_best_ms", "direct", math.inf)),
    ("environment-list", set_at("environment", ["H100"])),
    ("environment-missing", delete_at("environment")),
    ("gpu-object", set_at("environment", "gpu", {"a": [1]})),
    ("peak-negative", set_at("peak_tflops", -60.0)),
    ("schema-future", set_at("schema", 999)),
    ("schema-text", set_at("schema", "1")),
    ("precision-unknown", set_at("problems", 0, "precision", "fp64")),
    ("geomean-nan", set_at("geomean", {"speedup_vs_cudnn": math.nan})),
    ("name-markdown", set_at("problems", 0, "name", HOSTILE_NAME)),
    ("name-huge", set_at("problems", 1, "name", "x" * 100_000)),
    ("family-html", set_at("problems", 0, "family", "<script>alert(1)</script>")),
    ("gpu-markdown", set_at("environment", "gpu", "H100\n## fake | section")),
    ("command-backticks", set_at("environment", "command", "```\n| a | b |\n```")),
]


def _results_case(name, change):
    def setup(box):
        results = sample_results()
        change(results)
        box.write("in/results.json", json.dumps(results))
    return Case(f"report-{name}", setup=setup, writes=OUT,
                act=lambda box: box.cli("report", "--results", "in/results.json", "--out", "out", "--no-plots"))


#: (id, the text of the results file)
TEXTS = [
    ("deep-100000", '{"schema": 1, "environment": ' + "[" * 100_000 + "]" * 100_000 + ', "problems": []}'),
    ("deep-objects", '{"schema": 1, "environment": {}, "problems": ' + '{"a":' * 50_000 + "1" + "}" * 50_000 + "}"),
    ("digits-5000", '{"schema": 1, "environment": {}, "peak_tflops": 1' + "0" * 5000 + ', "problems": []}'),
    ("float-1e400", json.dumps(sample_results()).replace('"peak_tflops": 60.0', '"peak_tflops": 1e400')),
    ("bare-NaN", json.dumps(sample_results()).replace('"peak_tflops": 60.0', '"peak_tflops": NaN')),
    ("empty", ""),
    ("not-json", "this is not json\n"),
    ("a-list", "[1, 2, 3]"),
    ("a-number", "42"),
    ("cut-short", json.dumps(sample_results())[:500]),
    ("binary", "\x00\x01\x02\xff"),
    ("duplicate-keys", '{"schema": 1, "schema": 2, "environment": {}, "problems": []}'),
    ("bom", "\ufeff" + json.dumps(sample_results())),
]


def _text_case(name, text):
    def setup(box):
        box.write("in/results.json", text.encode("utf-8", "surrogatepass"))
    return Case(f"report-text-{name}", setup=setup, writes=OUT,
                act=lambda box: box.cli("report", "--results", "in/results.json", "--out", "out", "--no-plots"))


def _good(box, relative="in/results.json"):
    box.write(relative, json.dumps(sample_results(), separators=(",", ":")))


def _foreign(box, folder, names):
    for name in names:
        box.write(f"{folder}/{name}", f"{name}: someone else's file\n")


def _fifo(box, relative):
    os.mkfifo(box.path(relative))


def _read_only(box, relative):
    box.path(relative).mkdir(parents=True, exist_ok=True)
    box.path(relative).chmod(0o555)


#: (id, setup, argv after `report`, what it may write, outside paths, run in a child)
PLACES = [
    # --out and its folder
    ("beside-own-input", lambda b: _good(b), ["--results", "in/results.json"], ("in/report.md", "in/results.csv"), ()),
    ("beside-a-bench-results", lambda b: (_good(b, "in/results.json"), _good(b, "in/other.json")),
     ["--results", "in/other.json"], ("in/report.md", "in/results.csv"), ()),
    ("foreign-report-md", lambda b: (_good(b), _foreign(b, "out", ["report.md"])),
     ["--results", "in/results.json", "--out", "out"], (), ()),
    ("foreign-results-csv", lambda b: (_good(b), _foreign(b, "out", ["results.csv"])),
     ["--results", "in/results.json", "--out", "out"], (), ()),
    ("foreign-results-json-in-out", lambda b: (_good(b), _foreign(b, "out", ["results.json"])),
     ["--results", "in/results.json", "--out", "out"], ("out/report.md", "out/results.csv"), ()),
    ("input-named-report-md", lambda b: _good(b, "in/report.md"), ["--results", "in/report.md"], (), ()),
    ("out-is-a-file", lambda b: (_good(b), _foreign(b, ".", ["out"])),
     ["--results", "in/results.json", "--out", "out"], (), ()),
    ("out-read-only", lambda b: (_good(b), _read_only(b, "out")),  # (root may write there)
     ["--results", "in/results.json", "--out", "out"], OUT, ()),
    ("out-dev-null", lambda b: _good(b), ["--results", "in/results.json", "--out", "/dev/null"], (), ("/dev/null",)),
    ("out-proc", lambda b: _good(b), ["--results", "in/results.json", "--out", "/proc/self"], (), ()),
    ("out-link-to-elsewhere", lambda b: (_good(b), b.path("elsewhere").mkdir(),
                                          b.path("out").mkdir(), b.path("out/report.md").symlink_to("../elsewhere/x")),
     ["--results", "in/results.json", "--out", "out"], (), ()),
    ("out-deep", lambda b: _good(b), ["--results", "in/results.json", "--out", "x/" + "d/" * 1200], (), ()),
    ("out-too-long", lambda b: _good(b), ["--results", "in/results.json", "--out", "x/" + "d/" * 2100], (), ()),
    ("out-empty-string", lambda b: _good(b), ["--results", "in/results.json", "--out", ""],
     ("in/report.md", "in/results.csv"), ()),
    # --results
    ("results-missing", None, ["--results", "in/none.json", "--out", "out"], (), ()),
    ("results-a-folder", lambda b: b.path("in/results.json").mkdir(parents=True),
     ["--results", "in/results.json", "--out", "out"], (), ()),
    ("results-dev-null", None, ["--results", "/dev/null", "--out", "out"], (), ("/dev/null",)),
    ("results-dev-zero", None, ["--results", "/dev/zero", "--out", "out"], (), ("/dev/zero",)),
    ("results-proc-mem", None, ["--results", "/proc/self/mem", "--out", "out"], (), ()),
    ("results-unreadable", lambda b: (_good(b), b.path("in/results.json").chmod(0)),
     ["--results", "in/results.json", "--out", "out"], OUT, ()),
    ("results-empty-string", None, ["--results", "", "--out", "out"], (), ()),
    ("suite-without-out", None, ["--suite", "headline"], (), ()),
    ("suite-out-empty", lambda b: b.path("suite").mkdir(), ["--suite", "headline", "--out", "suite"], (), ()),
    ("suite-unknown", lambda b: b.path("suite").mkdir(), ["--suite", "nonesuch", "--out", "suite"], (), ()),
]


def _place_case(name, setup, argv, writes, outside):
    return Case(f"report-place-{name}", setup=setup, writes=writes, outside=outside,
                act=lambda box: box.cli("report", *argv, "--no-plots"))


def _fifo_case():
    """A FIFO as --results: refused without opening it (opening one blocks until a writer comes)."""
    def act(box):
        box.spawn("report", "--results", "in/fifo.json", "--out", "out", "--no-plots").wait(timeout=60)
    return Case("report-place-results-fifo", setup=lambda b: (b.path("in").mkdir(), _fifo(b, "in/fifo.json")),
                act=act)


def _plots_case():
    def setup(box):
        results = sample_results()
        results["problems"][0]["name"] = r"conv $\frac{$ | `x`"
        results["problems"][1]["name"] = "y" * 5000
        results["environment"]["gpu"] = "$^"
        box.write("in/results.json", json.dumps(results))
    return Case("report-plots-mathtext-names", setup=setup, writes=("out", "out/*", "home/.cache/matplotlib/**"),
                act=lambda box: box.cli("report", "--results", "in/results.json", "--out", "out"))


CASES = ([_results_case(*v) for v in VALUES] + [_text_case(*t) for t in TEXTS]
         + [_place_case(*p) for p in PLACES] + [_fifo_case()])


@pytest.mark.parametrize("case", params(CASES))
def test_report(hostile, case):
    hostile(case)


def test_report_with_plots(hostile):
    pytest.importorskip("matplotlib")
    hostile(_plots_case())
