"""The report folder from a recorded results JSON, and the bench table (no GPU needed)."""

from __future__ import annotations

import copy
import csv
import io
import json
import math
import sys
import warnings

import pytest

from autoconv.bench.report import PLOTS, convergence, results_csv, write_report
from autoconv.bench.results import (
    SCHEMA_VERSION,
    ReportError,
    geomeans,
    geomeans_by_precision,
    load_results,
    write_results,
)
from autoconv.commands import main as cli
from autoconv.errors import AutoconvError, BackendUnavailable

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _problem(name, count, gflop, autoconv_ms, cudnn_ms, *, family="implicit_gemm", tf32_ms=None,
             torch_ms=None, peak=60.0, trials=(), family_best=None):
    tflops = gflop / autoconv_ms
    return {
        "name": name, "count": count, "spec": f"N=1,C=8,H=8,W=8,K=8,R=3,S=3,pad=1  # {name}",
        "shape": "1x8x8x8 * 8x3x3 s1 p1 d1", "gflop": gflop, "family": family,
        "params": {"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 4},
        "autoconv_ms": autoconv_ms, "autoconv_tflops": tflops, "pct_of_peak": 100 * tflops / peak,
        "cudnn_strict_ms": cudnn_ms, "cudnn_strict_plan": "eng70_k2=12_k18=0",
        "cudnn_tf32_ms": tf32_ms, "torch_ms": torch_ms,
        "speedup_vs_cudnn_strict": cudnn_ms / autoconv_ms if cudnn_ms else None,
        "family_best_ms": family_best if family_best is not None else {family: autoconv_ms},
        "workspace_bytes": 0, "trials": list(trials),
    }


def _trials(values, family="implicit_gemm"):
    """Trials numbered from 0; a value of None is a failed trial."""
    return [{"number": i, "family": family, "value_ms": v, "state": "COMPLETE" if v else "FAIL"}
            for i, v in enumerate(values)]


def sample_results():
    """Three layers with round numbers: speedups 2, 0.5 and 4 (geometric mean 4**(1/3))."""
    return {
        "schema": SCHEMA_VERSION,
        "environment": {
            "gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "sm_count": 132,
            "driver": "580.159.04", "cuda_runtime": "13.0 (13000)", "cudnn": "9.19.0",
            "cudnn_frontend": "1.28.0", "cupy": "14.2.0", "torch": None, "python": "3.12.3",
            "autoconv": "0.1.0", "git_commit": "0123456789abcdef", "date": "2026-11-22T10:00:00+00:00",
            "command": "autoconv bench examples/resnet50.yaml --out results.json",
        },
        "peak_tflops": 60.0,
        "method": {"rounds": 3, "samples": 7},
        "tuning_seconds": 1234.5,
        "problems": [
            _problem("conv1", 2, 10.0, 0.5, 1.0, tf32_ms=0.4, torch_ms=1.01,
                     trials=_trials([2.0, None, 1.0, 1.5, 0.5]),
                     family_best={"direct": 3.0, "im2col_gemm": 0.9, "implicit_gemm": 0.5}),
            _problem("layer1.0.conv2", 1, 5.0, 1.0, 0.5, family="im2col_gemm",
                     trials=_trials([4.0, 1.0], family="im2col_gemm"),
                     family_best={"im2col_gemm": 1.0, "implicit_gemm": 1.2}),
            _problem("layer4.0.conv1", 3, 1.0, 0.25, 1.0, trials=[]),
        ],
    }


@pytest.fixture
def results():
    return sample_results()


def test_geometric_means_on_known_numbers(results):
    means = geomeans(results["problems"])
    assert means["speedup_vs_cudnn_strict"] == pytest.approx(4 ** (1 / 3), rel=1e-12)
    assert means["autoconv_tflops"] == pytest.approx((20 * 5 * 4) ** (1 / 3), rel=1e-12)
    assert means["speedup_vs_cudnn"] == means["speedup_vs_cudnn_strict"]  # fp32 layers: cuDNN strict
    assert means["cudnn_tflops"] == pytest.approx((10 * 10 * 1) ** (1 / 3), rel=1e-12)
    assert means["layers"] == 3 and means["layers_autoconv_faster"] == 2
    assert means["worst_layer"] == "layer1.0.conv2" and means["worst_speedup"] == pytest.approx(0.5)
    assert means["total_autoconv_ms"] == pytest.approx(2 * 0.5 + 1.0 + 3 * 0.25)
    assert means["total_cudnn_ms"] == pytest.approx(2 * 1.0 + 0.5 + 3 * 1.0)


def test_tf32_layers_are_compared_with_cudnn_tf32_and_reported_apart(results, tmp_path):
    tf32 = _problem("conv1.tf32", 1, 10.0, 0.25, 1.0, tf32_ms=0.5, torch_ms=0.6)
    tf32.update(precision="tf32", cudnn_mode="tf32", cudnn_ms=0.5, speedup_vs_cudnn=2.0,
                errors_vs_reference={"autoconv": 2.5e-4, "cudnn_tf32": 3.0e-4, "torch": 3.1e-4})
    results["problems"].append(tf32)
    by_precision = geomeans_by_precision(results["problems"])
    assert list(by_precision) == ["fp32", "tf32"]
    assert by_precision["fp32"]["layers"] == 3
    assert by_precision["fp32"]["speedup_vs_cudnn"] == pytest.approx(4 ** (1 / 3), rel=1e-12)
    assert by_precision["tf32"]["layers"] == 1
    assert by_precision["tf32"]["speedup_vs_cudnn"] == pytest.approx(2.0)  # vs cuDNN TF32, not strict (4x)
    assert by_precision["tf32"]["speedup_vs_cudnn_strict"] == pytest.approx(4.0)

    markdown = write_report(results, tmp_path / "report", plots=False)[0].parent.joinpath("report.md").read_text()
    assert "## Per layer, fp32" in markdown and "## Per layer, tf32" in markdown
    tf32_section = markdown[markdown.index("## Per layer, tf32"):]
    assert "cuDNN TF32 ms | speedup | cuDNN strict FP32 ms" in tf32_section
    # 0.25 ms, 40 TFLOP/s, cuDNN TF32 0.5 ms, speedup 2, strict 1.0 ms, torch 0.6 ms, errors side by side
    assert "| 0.2500 | 40.00 | 0.5000 | 2.000 | 1.0000 | 0.6000 | 2.50e-04 | 3.00e-04 | 3.10e-04 |" in tf32_section
    assert "| conv1 |" not in tf32_section.split("## ")[1]  # fp32 layers only in their own table
    assert "over cuDNN TF32 **2.000x** over 1 layers" in markdown


def test_geometric_means_skip_layers_without_a_number(results):
    results["problems"][1]["autoconv_ms"] = None
    means = geomeans(results["problems"])
    assert means["layers"] == 2
    assert means["speedup_vs_cudnn_strict"] == pytest.approx(math.sqrt(2 * 4))


def test_convergence_is_best_so_far_over_completed_trials():
    numbers, best = convergence(_trials([2.0, None, 3.0, 1.0, 1.5]))
    assert numbers == [0, 2, 3, 4]
    assert best == [2.0, 2.0, 1.0, 1.0]


def test_report_folder(results, tmp_path):
    pytest.importorskip("matplotlib")
    written = write_report(results, tmp_path / "report", results_path="results.json",
                           command="autoconv report --out report")
    names = sorted(p.name for p in written)
    assert names == sorted(["report.md", "results.csv", *PLOTS])

    # Each plot is a real, non-trivial PNG.
    from matplotlib import image
    for name in PLOTS:
        data = (tmp_path / "report" / name).read_bytes()
        assert data[:8] == PNG_MAGIC, name
        assert len(data) > 5000, name
        height, width = image.imread(tmp_path / "report" / name).shape[:2]
        assert height > 200 and width > 300, name

    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "# autoconv vs cuDNN on NVIDIA H100 80GB HBM3" in markdown
    assert "**1.587x**" in markdown  # 4 ** (1/3)
    for name in ("conv1", "layer1.0.conv2", "layer4.0.conv1"):
        assert f"| {name} |" in markdown
    # conv1: 0.5 ms, 20 TFLOP/s, 33.3 % of the 60 TFLOP/s peak, speedup 2.
    assert "| 0.5000 | 20.00 | 33.3 | 1.0000 | 2.000 | 0.4000 | 1.0100 |" in markdown
    assert "BM=64 BN=32 BK=8 TM=4 TN=4" in markdown
    # The environment block and the commands.
    for text in ("| GPU | NVIDIA H100 80GB HBM3 |", "| driver | 580.159.04 |", "| cuDNN | 9.19.0 |",
                 "| git commit | 0123456789abcdef |", "| PyTorch | – |",
                 "`autoconv bench examples/resnet50.yaml --out results.json`",
                 "`autoconv report --out report`"):
        assert text in markdown, text
    # The per-family table: direct only measured on conv1.
    assert "| conv1 | 3.0000 | 0.9000 | 0.5000 | 1.0000 |" in markdown
    assert "| layer1.0.conv2 | – | 1.0000 | 1.2000 | 0.5000 |" in markdown
    for name in PLOTS:
        assert f"]({name})" in markdown


def test_csv_holds_the_same_numbers(results, tmp_path):
    rows = list(csv.DictReader(io.StringIO(results_csv(results))))
    assert [r["name"] for r in rows] == ["conv1", "layer1.0.conv2", "layer4.0.conv1"]
    for row, problem in zip(rows, results["problems"]):
        assert float(row["autoconv_ms"]) == problem["autoconv_ms"]
        assert float(row["speedup_vs_cudnn_strict"]) == problem["speedup_vs_cudnn_strict"]
        assert json.loads(row["params"]) == problem["params"]
    assert rows[0]["best_ms_direct"] == "3.0" and rows[1]["best_ms_direct"] == ""
    assert rows[1]["torch_ms"] == ""  # not measured: empty, not zero


def test_the_report_leaves_the_numbers_as_they_were(results, tmp_path):
    """The results are the record: the report reads them (its geometric means recomputed
    apart) and writes no JSON of its own."""
    before = copy.deepcopy(results)
    write_report(results, tmp_path, plots=False)
    assert results == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md", "results.csv"]


def test_bad_results_files_are_explained(results, tmp_path):
    with pytest.raises(ReportError, match="no such results file"):
        load_results(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text("{\"schema\": 1,")
    with pytest.raises(ReportError, match=r"broken.json:1:\d+: not valid JSON"):
        load_results(tmp_path / "broken.json")
    results["schema"] = 99
    (tmp_path / "future.json").write_text(json.dumps(results))
    with pytest.raises(ReportError, match="schema 99; this autoconv reads schema 1"):
        load_results(tmp_path / "future.json")
    results["schema"] = SCHEMA_VERSION
    del results["problems"][1]["cudnn_strict_ms"]
    (tmp_path / "partial.json").write_text(json.dumps(results))
    with pytest.raises(ReportError, match="problem layer1.0.conv2 lacks cudnn_strict_ms"):
        load_results(tmp_path / "partial.json")


def test_without_matplotlib_says_how_to_install(results, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(BackendUnavailable, match=r"pip install 'autoconv\[report\]'"):
        write_report(results, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_report_command(results, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    source = tmp_path / "results.json"
    source.write_text(json.dumps(results))
    assert cli.main(["report", "--results", str(source), "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "speedup.png").read_bytes()[:8] == PNG_MAGIC
    assert "report.md" in capsys.readouterr().out

    # Without --out the report goes next to the results file (which it only reads).
    before = source.read_bytes()
    assert cli.main(["report", "--results", str(source), "--no-plots"]) == 0
    assert (tmp_path / "report.md").exists() and not (tmp_path / "speedup.png").exists()
    assert source.read_bytes() == before

    assert cli.main(["report", "--results", str(tmp_path / "nope.json")]) == 2
    assert "autoconv report: error:" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["report.md", "results.csv", "speedup.png"])
def test_report_out_never_replaces_files_it_did_not_write(results, tmp_path, capsys, name):
    """Issue 18: --out into a folder holding someone's file of a report's name is refused
    (exit status 2, one line naming it) and nothing there changes; a report's own files
    (the last run's) are replaced."""
    plots = name.endswith(".png")
    if plots:
        pytest.importorskip("matplotlib")
    flags = [] if plots else ["--no-plots"]
    source = tmp_path / "results.json"
    source.write_text(json.dumps(results))
    out = tmp_path / "mine"
    out.mkdir()
    (out / name).write_bytes(b"\x89PNG\r\n\x1a\n my own picture" if plots else b"my own notes\n")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    code = cli.main(["report", "--results", str(source), "--out", str(out), *flags])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and name in err and str(out) in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before

    fresh = tmp_path / "fresh"
    assert cli.main(["report", "--results", str(source), "--out", str(fresh), *flags]) == 0
    assert cli.main(["report", "--results", str(source), "--out", str(fresh), *flags]) == 0  # its own: replaced


@pytest.mark.parametrize("kind", ["text", "folder", "under-a-file"])
def test_bench_out_is_checked_before_measuring_and_never_replaces_a_foreign_file(results, tmp_path, capsys,
                                                                               kind):
    """Issue 18: ``bench --out`` that cannot take the results (someone's file, a folder, a
    path through a file) is refused before anything is measured (no GPU is needed to see
    it), and ``write_results`` refuses it too; a results file of its own is replaced."""
    from tests.helpers import ONE_PROBLEM

    config = tmp_path / "bench.yaml"
    config.write_text(ONE_PROBLEM)
    target = tmp_path / "out.json"
    if kind == "text":
        target.write_text("my notes\n")
    elif kind == "folder":
        target.mkdir()
    else:
        (tmp_path / "file").write_text("x")
        target = tmp_path / "file" / "out.json"
    code = cli.main(["bench", str(config), "--out", str(target), "--no-tune"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(target) in err, err
    with pytest.raises(ReportError, match="cannot write the results"):
        write_results(results, target)
    assert kind != "text" or target.read_text() == "my notes\n"
    own = tmp_path / "own.json"
    write_results(results, own)
    write_results(results, own)  # its own: replaced


def test_bench_table(results):
    from autoconv.commands.bench import format_table

    results["geomean"] = geomeans(results["problems"])
    table = format_table(results)
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["layer", "precision", "family"]
    row = next(line for line in lines if line.startswith("conv1 "))
    assert row.split() == ["conv1", "fp32", "implicit_gemm", "0.5000", "20.00", "33.3", "1.0000", "2.00x",
                           "0.4000", "1.0100"]
    last = lines[-1].split()
    assert last[0] == "geomean" and "1.59x" in last
    assert "7.37" in last  # geometric-mean autoconv TFLOP/s, (20 * 5 * 4) ** (1/3)
    # Fixed-width columns: every line (header, rule, rows) equally long.
    assert len({len(line) for line in lines}) == 1


def test_study_history_from_a_tuned_study(tmp_path):
    """What `autoconv bench` reads from the tuner's Optuna study: per-family best times and
    the evaluated trials only (the FakeBackend stands in for the GPU)."""
    pytest.importorskip("optuna")
    import optuna

    from autoconv.backends.fake import FakeBackend
    from autoconv.bench.benchmark import StudyHistory
    from autoconv.config.budget import Budget
    from autoconv.problems.models import NamedProblem
    from autoconv.problems.problem import parse_spec
    from autoconv.search.options import SearchSettings
    from autoconv.search.storage import make_storage
    from autoconv.search.tuner import Tuner

    problem = parse_spec("N=1,C=8,H=9,W=11,K=12,R=3,S=3,pad=1")
    storage = tmp_path / "studies.journal"
    tuner = Tuner(FakeBackend(), SearchSettings(("implicit_gemm", "direct"), Budget(trials=6), seed=1),
                  storage=str(storage))
    (outcome,) = tuner.tune([NamedProblem("p", problem)])
    study = optuna.load_study(study_name=outcome.study_name, storage=make_storage(str(storage)))
    history = StudyHistory.of(study)

    evaluated = [t for t in study.trials if t.user_attrs.get("status") not in (None, "invalid")]
    assert len(history.trials) == len(evaluated) == outcome.trials_total
    assert [t["number"] for t in history.trials] == list(range(len(history.trials)))
    complete = [t for t in history.trials if t["state"] == "COMPLETE"]
    assert complete and all(t["value_ms"] > 0 for t in complete)
    for family in ("implicit_gemm", "direct"):
        times = [t["value_ms"] for t in complete if t["family"] == family]
        assert history.family_best_ms[family] == min(times)
    # The fake backend times a config the same every time: the winner is the fastest trial.
    assert min(history.family_best_ms.values()) == pytest.approx(outcome.time_ms, rel=1e-12)


def test_report_says_why_tensor_core_winners_can_pass_the_fp32_peak(results):
    from autoconv.bench.report import report_markdown

    assert "tensor cores" not in report_markdown(results)   # SIMT winners only
    results["problems"][1]["family"] = "implicit_gemm_wgmma"
    text = report_markdown(results)
    assert ("- In fp32, implicit_gemm_wgmma multiply on TF32 tensor cores at float32 accuracy" in text
            and "can exceed the FP32 FMA peak" in text)


def test_format_params_all_or_the_first_few():
    from autoconv.formatting import format_params

    params = {f"P{i}": i for i in range(10)}
    assert format_params(params) == " ".join(f"P{i}={i}" for i in range(10))  # tables: every one
    assert format_params(params, limit=8) == " ".join(f"P{i}={i}" for i in range(8)) + " ..."  # report.md
    assert format_params({"BM": 64}, limit=8) == "BM=64" and format_params(None) == format_params({}) == ""


def test_write_results_round_trip(results, tmp_path):
    from autoconv.bench.results import write_results

    path = write_results(results, tmp_path / "deep" / "results.json")
    assert load_results(path) == json.loads(json.dumps(results))
    assert [p.name for p in path.parent.iterdir()] == ["results.json"]  # no temporary file left


def test_bench_notes_a_missing_study_without_the_storage_password(postgres_databases, monkeypatch, tmp_path):
    """The note of a winner whose study is not in the storage goes into the results file
    (``study_note``): a storage URL's password must not (it did)."""
    pytest.importorskip("optuna")
    from sqlalchemy.engine import make_url

    from autoconv.backends.fake import FAKE_IDENTITY
    from autoconv.bench import benchmark
    from autoconv.cache.entries import CacheEntry, CacheKey
    from autoconv.config.load import load_config_text
    from autoconv.kernels.limits import H100
    from autoconv.problems.problem import parse_spec
    from autoconv.search.session import TuneSession

    url = postgres_databases()
    spec = "N=1,C=8,H=9,W=11,K=12,R=3,S=3,pad=1"
    config = load_config_text(f"problems:\n  - name: p\n    spec: \"{spec}\"\nstorage: '{url}'\n", base_dir=tmp_path)
    monkeypatch.setattr(benchmark, "read_device", lambda device: (H100, FAKE_IDENTITY))
    side = benchmark.AutoconvSide(TuneSession.from_config(config))
    try:
        entry = CacheEntry(key=CacheKey.for_problem(FAKE_IDENTITY, parse_spec(spec)), family="direct", config={},
                           kernel_name="k", source_hash="0", time_ms=1.0, tflops=1.0, workspace_bytes=0,
                           study_name="imported-elsewhere")
        history = side.history(entry)
    finally:
        side.close()
    assert history.trials == [] and "'imported-elsewhere' is not in postgresql" in history.note
    assert make_url(url).password not in history.note


def test_bf16_layers_are_reported_with_their_share_of_the_tensor_peak(results, tmp_path):
    from autoconv.commands.bench import format_table

    bf16 = _problem("conv1.bf16", 1, 10.0, 0.05, None, torch_ms=0.045)
    bf16.update(precision="bf16", cudnn_mode="bf16", cudnn_ms=0.04, cudnn_plan="eng9_k2=3",
                cudnn_tflops=250.0, speedup_vs_cudnn=0.8, speedup_vs_cudnn_strict=None, cudnn_strict_plan=None,
                tensor_peak_tflops=1000.0,
                pct_of_tensor_peak={"autoconv": 20.0, "cudnn_bf16": 25.0, "torch": 22.2},
                errors_vs_reference={"autoconv": 1.6e-3, "cudnn_bf16": 1.7e-3, "torch": 1.8e-3})
    results["problems"].append(bf16)
    by_precision = geomeans_by_precision(results["problems"])
    assert by_precision["bf16"]["speedup_vs_cudnn"] == pytest.approx(0.8)
    assert by_precision["fp32"]["layers"] == 3  # the bf16 layer has no strict number and is apart

    markdown = write_report(results, tmp_path / "report", plots=False)[0].parent.joinpath("report.md").read_text()
    section = markdown[markdown.index("## Per layer, bf16"):].split("\n\nGeometric mean")[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    assert len({line.count("|") for line in table}) == 1, "header, rule and rows differ in columns"
    assert "% of bf16 tensor peak | cuDNN % | cuDNN bf16 ms | speedup | PyTorch ms |" in table[0]
    assert "cuDNN TF32" not in table[0] and "strict" not in table[0]
    # 0.05 ms, 200 TFLOP/s, 20% and 25% of the peak, cuDNN 0.04 ms, 0.8x, torch 0.045 ms, errors
    assert "| 0.0500 | 200.00 | 20.0 | 25.0 | 0.0400 | 0.800 | 0.0450 | 1.60e-03 | 1.70e-03 | 1.80e-03 |" in table[2]
    assert "over cuDNN bf16 **0.800x** over 1 layers" in markdown
    bf16_rows = [line.split() for line in format_table(results).splitlines() if "bf16" in line]
    # the tensor peak's share, of the layer and of the geometric mean (200 TFLOP/s of 1000)
    assert bf16_rows[0][:7] == ["conv1.bf16", "bf16", "implicit_gemm", "0.0500", "200.00", "20.0", "0.0400"]
    assert bf16_rows[1][:4] == ["geomean", "bf16", "200.00", "20.0"]


def test_bench_names_problems_no_family_computes_before_tuning(monkeypatch, tmp_path):
    """`bench --precision bf16` on an NCHW config: the problems are valid, but the 16-bit family is NHWC only
    (a config naming bf16 NCHW is refused when read); bench says so, naming the problem and each family's
    reason, instead of tuning it to no winner."""
    from autoconv.backends.fake import FAKE_IDENTITY
    from autoconv.bench import benchmark
    from autoconv.config.load import load_config_text
    from autoconv.config.tune_config import with_precision
    from autoconv.kernels.limits import H100
    from autoconv.problems.models import NamedProblem
    from autoconv.search.session import TuneSession

    config = load_config_text(
        "problems:\n  - name: nchw\n    spec: \"N=1,C=8,H=9,W=11,K=16,R=3,S=3,pad=1\"\n"
        "cache: cache.sqlite\nstorage: studies.journal\n", base_dir=tmp_path)
    bf16 = with_precision(config, "bf16").problems
    nhwc = [NamedProblem("nhwc", bf16[0].problem.with_(layout="NHWC"))]
    monkeypatch.setattr(benchmark, "read_device", lambda device: (H100, FAKE_IDENTITY))
    side = benchmark.AutoconvSide(TuneSession.from_config(config))
    try:
        side.check_computable([*config.problems, *nhwc])  # fp32 NCHW and bf16 NHWC: computed
        with pytest.raises(AutoconvError, match=r"no kernel family computes nchw \(1x8x9x11 .* bf16\): .*"
                                                r"implicit_gemm_wgmma_f16 implements layout NHWC, not NCHW") as error:
            side.check_computable([*bf16, *nhwc])
    finally:
        side.close()
    assert "nhwc (" not in str(error.value) and "layout: NHWC" in str(error.value)


def test_bench_names_problems_whose_sizes_no_family_configuration_fits(monkeypatch, tmp_path):
    """A problem every family implements in its precision and layout, but whose sizes no
    configuration fits (tf32 NHWC with padding past the im2col map's corners, which lie in
    [-128, 127]): bench names it and what rules it out, with or without --no-tune, instead of
    saying "run autoconv tune first", which cannot help."""
    from autoconv.backends.fake import FAKE_IDENTITY
    from autoconv.bench import benchmark
    from autoconv.config.load import load_config_text
    from autoconv.kernels.limits import H100
    from autoconv.search.session import TuneSession

    config = load_config_text(
        "problems:\n  - name: wide_pad\n    spec: \"N=1,C=8,H=4,W=4,K=8,R=1,S=1,pad=130\"\n"
        "  - name: fine\n    spec: \"N=1,C=8,H=4,W=4,K=8,R=1,S=1,pad=1\"\n"
        "precision: tf32\nlayout: NHWC\ncache: cache.sqlite\nstorage: studies.journal\n", base_dir=tmp_path)
    monkeypatch.setattr(benchmark, "read_device", lambda device: (H100, FAKE_IDENTITY))
    side = benchmark.AutoconvSide(TuneSession.from_config(config))
    try:
        side.check_computable(config.problems[1:])
        with pytest.raises(AutoconvError, match=r"no kernel family computes wide_pad \(.*"
                                                r"implicit_gemm_wgmma_tma: no valid configuration .*"
                                                r"its default and fallbacks all break: -128 <= LOWER_W"):
            side.check_computable(config.problems)
    finally:
        side.close()


def test_the_report_says_why_pytorch_has_no_number_on_a_layer(results):
    from autoconv.bench.report import report_markdown

    assert "PyTorch's column:" not in report_markdown(results)
    failure = "F.conv2d failed: AcceleratorError: CUDA error: operation failed due to a previous error during capture"
    results["problems"][2]["torch_note"] = failure
    text = report_markdown(results)
    assert f"- PyTorch's column: {failure} (layer4.0.conv1)." in text
    for p in results["problems"]:
        p["torch_note"] = "left out (--no-torch)"
    assert "- PyTorch's column: left out (--no-torch) (every layer)." in report_markdown(results)


def test_without_trials_keeps_every_measurement_and_empties_the_history(results):
    from autoconv.bench.results import check_results, without_trials

    assert any(p["trials"] for p in results["problems"])
    lean = without_trials(results)
    check_results(lean)
    assert all(p["trials"] == [] for p in lean["problems"])
    assert [{k: v for k, v in p.items() if k != "trials"} for p in lean["problems"]] == \
        [{k: v for k, v in p.items() if k != "trials"} for p in results["problems"]]
    assert any(p["trials"] for p in results["problems"])  # (the input is left as it was)


def test_plots_are_palette_pngs_that_a_later_report_knows_as_its_own(results, tmp_path):
    pytest.importorskip("matplotlib")
    from PIL import Image

    write_report(results, tmp_path)
    image = Image.open(tmp_path / "speedup.png")
    assert image.mode == "P" and image.info.get("Software") == "autoconv report"
    write_report(results, tmp_path)  # replaced, not refused as a foreign file


def test_the_commit_given_in_the_environment_wins_over_the_checkouts(monkeypatch):
    from autoconv.bench import benchmark

    monkeypatch.delenv("AUTOCONV_GIT_COMMIT", raising=False)
    commit, _ = benchmark._git_state()
    monkeypatch.setenv("AUTOCONV_GIT_COMMIT", "0123abc")
    if commit is None:  # (not a checkout)
        assert benchmark._git_state() == ("0123abc", None)
    else:  # a variable naming another commit than the checkout's is recorded, with a warning
        with pytest.warns(UserWarning, match="AUTOCONV_GIT_COMMIT=0123abc is recorded, but the checkout"):
            assert benchmark._git_state() == ("0123abc", None)
        monkeypatch.setenv("AUTOCONV_GIT_COMMIT", commit[:10])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert benchmark._git_state() == (commit[:10], None)
