"""The end-to-end benchmark (``autoconv bench --end-to-end``, the suite's ``e2e_resnet50``): the
request refused before any work, the records' check, the tables, and the suite's steps, folder and
tables with a fake step runner (no GPU); on a GPU, the measurement of a two-layer model."""

from __future__ import annotations

import copy
import json
import math
import re
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

from autoconv.bench import end_to_end, suite
from autoconv.bench.end_to_end import MODES, RECORD_FIELDS, Request, check_records, headline_line, records_table
from autoconv.bench.results import ReportError
from autoconv.bench.suite import E2E_RESNET50, HEADLINE, TABLE_BEGIN, TABLE_END, end_to_end_steps, run_suite, select
from autoconv.commands import main as cli
from autoconv.errors import UsageError
from tests.bench.test_suite import FakeRunner


def _record(batch=32, mode="tf32_nchw", runner="eager", torch_ms=5.5, autoconv_ms=5.0, **changes):
    record = {"model": "resnet50", "batch": batch, "input": [batch, 3, 224, 224], "mode": mode, "runner": runner,
              "torch_ms": torch_ms, "autoconv_ms": autoconv_ms, "speedup": torch_ms / autoconv_ms,
              "errors": {"torch": 1.2e-3, "autoconv": 1.4e-3},
              "round_spread": {"torch": [torch_ms, torch_ms], "autoconv": [autoconv_ms, autoconv_ms]},
              "conv_layers": 53, "layers": {"cache": 37, "default": 0, "cudnn": 16},
              "problems": {"cache": 15, "default": 0, "cudnn": 8}}
    record.update(changes)
    return record


def _records():
    """Every (batch, mode, runner) of ResNet-50's benchmark: tf32 NCHW eager 1.10x at batch 32,
    the CUDA graph 1.25x, torch.compile 1.20x and 1.15x in a graph; 0.80x, 1.50x, 0.90x and 1.30x at
    batch 1; 1.0x elsewhere."""
    speeds = {(32, "eager"): 1.10, (32, "cuda_graph"): 1.25, (32, "compile"): 1.20, (32, "compile_graph"): 1.15,
              (1, "eager"): 0.80, (1, "cuda_graph"): 1.50, (1, "compile"): 0.90, (1, "compile_graph"): 1.30}
    return [_record(batch, mode, runner, torch_ms=speeds[batch, runner] if mode == "tf32_nchw" else 1.0,
                    autoconv_ms=1.0)
            for batch in (32, 1) for mode in MODES for runner in end_to_end.RUNNERS]


# ---- the request ---------------------------------------------------------------------------------

def test_a_request_takes_every_mode_and_runner_by_default():
    request = Request("torchvision.models:resnet50", ((32, 3, 224, 224), (1, 3, 224, 224)))
    assert request.modes == ("tf32_nchw", "tf32_nhwc", "bf16_nhwc_autocast", "fp32_nchw_strict")
    assert request.runners == ("eager", "cuda_graph", "compile", "compile_graph") and request.name == "resnet50"
    assert end_to_end.parse_shapes("32x3x224x224, 1x3x224x224") == ((32, 3, 224, 224), (1, 3, 224, 224))


@pytest.mark.parametrize("changes, message", [
    ({"modes": ("tf32_nchw", "fp64_nchw")}, "--modes='fp64_nchw': unknown; known: tf32_nchw"),
    ({"modes": ()}, "--modes.*name at least one"),
    ({"modes": ("tf32_nchw", "tf32_nchw")}, "each name once"),
    ({"runners": ("compiled",)}, "--runners='compiled': unknown; known: eager, cuda_graph, compile, compile_graph"),
    ({"shapes": ((0, 3, 224, 224),)}, "--input='0x3x224x224'.*positive integers"),
    ({"shapes": ((-1, 3, 224, 224),)}, "--input.*positive integers"),
    ({"shapes": ((32, 3, 224),)}, "--input.*NxCxHxW"),
    ({"shapes": ((32, 3, 224, 224), (32, 3, 112, 112))}, "each batch size once"),
    ({"shapes": ()}, "at least one input shape"),
    ({"rounds": 0}, "--rounds=0: must be a whole number >= 1"),
    ({"iterations": -2}, "--iterations"),
    ({"model": "resnet50"}, "--end-to-end='resnet50': expected module:factory"),
])
def test_bad_requests_are_refused(changes, message):
    arguments = {"model": "torchvision.models:resnet50", "shapes": ((1, 3, 224, 224),), **changes}
    with pytest.raises(UsageError, match=message):
        Request(**arguments)


@pytest.mark.parametrize("text", ["0x3x224x224", "32x3x224", "32x3x224x224,", "-1x3x224x224", "ax3x224x224"])
def test_bad_input_shapes_are_refused(text):
    with pytest.raises(UsageError, match="--input"):
        end_to_end.parse_shapes(text)


@pytest.fixture
def measure_calls(monkeypatch):
    """The measurement replaced by one that records its calls (none may happen on a refusal)."""
    pytest.importorskip("torch")
    from autoconv.bench import end_to_end_measure

    calls = []

    def fake_measure(request, *, convert, command, log):
        calls.append(request)
        return [_record(batch=shape[0], mode=mode) for shape in request.shapes for mode in request.modes], {
            "end_to_end": True, "command": command, "environment": {"gpu": "NVIDIA H200"}, "method": {}}

    monkeypatch.setattr(end_to_end_measure, "measure", fake_measure)
    return calls


@pytest.mark.parametrize("argv, message", [
    (["--input", "0x3x224x224"], "--input='0x3x224x224'"),
    (["--input", "1x3x224x224", "--modes", "tf32_nchw,fp16_nhwc"], "--modes='fp16_nhwc': unknown"),
    (["--input", "1x3x224x224", "--runners", "graph"], "--runners='graph': unknown"),
    (["--input", "1x3x224x224", "--rounds", "0"], "--rounds=0"),
    (["--input", "1x3x224x224", "--precision", "tf32"], "--precision.*does not go with --end-to-end"),
    (["--input", "1x3x224x224", "--suite", "headline"], "one of a config, --suite or --end-to-end"),
    ([], "--input: --end-to-end needs the input shapes"),
])
def test_the_command_refuses_bad_input_before_any_work(argv, message, measure_calls, capsys, tmp_path):
    code = cli.main(["bench", "--end-to-end", "torchvision.models:resnet50", "--out", str(tmp_path / "e2e"), *argv])
    assert code == 2 and re.search(message, capsys.readouterr().err)
    assert measure_calls == [] and not (tmp_path / "e2e").exists()


def test_end_to_end_flags_go_with_end_to_end_only(capsys):
    assert cli.main(["bench", "examples/resnet50.yaml", "--modes", "tf32_nchw"]) == 2
    assert "--modes='tf32_nchw': goes with --end-to-end only" in capsys.readouterr().err


def test_the_command_writes_records_env_and_report_and_replaces_only_its_own(measure_calls, tmp_path, capsys):
    out = tmp_path / "e2e"
    argv = ["bench", "--end-to-end", "torchvision.models:resnet50", "--input", "2x3x32x32", "--modes",
            "fp32_nchw_strict", "--iterations", "3", "--out", str(out)]
    assert cli.main(argv) == 0
    assert measure_calls[0].iterations == 3 and measure_calls[0].modes == ("fp32_nchw_strict",)
    records = check_records(json.loads((out / "results.json").read_text()))
    assert [(r["batch"], r["mode"]) for r in records] == [(2, "fp32_nchw_strict")]
    assert json.loads((out / "env.json").read_text())["end_to_end"] is True
    assert "| 2 | fp32_nchw_strict | eager |" in (out / "report.md").read_text()
    assert cli.main(argv) == 0  # (its own files are replaced)
    (out / "notes.txt").write_text("mine")
    assert cli.main(argv) == 2
    assert "holds files this command did not write (notes.txt)" in capsys.readouterr().err
    assert len(measure_calls) == 2


# ---- the records and tables ----------------------------------------------------------------------

def test_hand_written_records_pass_the_check_and_every_field_is_required():
    records = _records()
    assert check_records(records) is records and len(records) == 32
    for field in RECORD_FIELDS:
        broken = _records()
        del broken[3][field]
        with pytest.raises(ReportError, match=f"record #3 lacks {field}"):
            check_records(broken)


@pytest.mark.parametrize("changes, message", [
    ({"speedup": math.nan}, "speedup must be a finite number > 0"),
    ({"autoconv_ms": "fast"}, "autoconv_ms must be a finite number > 0, got 'fast'"),
    ({"torch_ms": 0}, "torch_ms must be a finite number > 0"),
    ({"mode": "tf32"}, "mode 'tf32'"),
    ({"runner": "graph"}, "runner 'graph'"),
    ({"batch": 0}, "batch must be a whole number >= 1"),
    ({"errors": {"torch": 1e-3}}, "errors must be an object with torch and autoconv"),
    ({"errors": {"torch": -1.0, "autoconv": 0.1}}, "errors.torch must be a finite number >= 0"),
    ({"layers": {"cuda": 3}}, "layers must map origins"),
    ({"layers": {"cache": 2.5}}, "layers must map origins"),
])
def test_records_with_wrong_values_are_refused(changes, message):
    with pytest.raises(ReportError, match=re.escape(message)):
        check_records([_record(), {**_record(), **changes}])


def test_a_side_without_a_time_or_error_is_refused():
    for changes in ({"autoconv_ms": None}, {"speedup": None}, {"errors": {"torch": 1e-3, "autoconv": None}}):
        with pytest.raises(ReportError, match="must be a finite number"):
            check_records([{**_record(), **changes}])


@pytest.mark.parametrize("data", [{}, [], ["x"], {"records": []}])
def test_a_file_that_is_not_a_list_of_records_is_refused(data):
    with pytest.raises(ReportError):
        check_records(data)


def test_the_table_orders_by_batch_mode_and_runner_and_the_line_quotes_pytorchs_defaults():
    records = list(reversed(_records()))
    table = records_table(records).splitlines()
    assert table[2].startswith("| 32 | tf32_nchw | eager | 1.100 | 1.000 | **1.10x** | 37 / 16 / 0 |")
    assert table[3].startswith("| 32 | tf32_nchw | CUDA graph | 1.250 | 1.000 | **1.25x** |")
    assert table[4].startswith("| 32 | tf32_nchw | torch.compile | 1.200 | 1.000 | **1.20x** | 15 / 8 / 0 problems |")
    assert table[-1].startswith("| 1 | fp32_nchw_strict | torch.compile, CUDA graph |")
    assert len(table) == 2 + 32
    assert headline_line(records) == (
        "batch 32 eager **1.10x**, CUDA graph **1.25x**, torch.compile **1.20x**, torch.compile, CUDA graph **1.15x**; "
        "batch 1 eager **0.80x**, CUDA graph **1.50x**, torch.compile **0.90x**, torch.compile, CUDA graph **1.30x**")
    assert headline_line([r for r in records if r["runner"] == "eager"]).endswith("torch.compile, CUDA graph -")


def test_layers_left_to_pytorch_or_not_told_are_named():
    record = _record(layers={"cache": 50, "cudnn": 1, "default": 0, "pytorch": 2})
    assert "| 50 / 1 / 0 (2 pytorch) |" in records_table([record])


# ---- in the suite --------------------------------------------------------------------------------

def test_the_suite_runs_the_end_to_end_benchmark_last_and_selects_it_by_name():
    assert HEADLINE[-1] is E2E_RESNET50 and E2E_RESNET50.name == "e2e_resnet50"
    assert select("headline", ["e2e_resnet50", "resnet50_n32_fp32"]) == (HEADLINE[0], E2E_RESNET50)
    assert E2E_RESNET50.shapes == ((32, 3, 224, 224), (1, 3, 224, 224))
    assert E2E_RESNET50.modes == tuple(MODES)


def test_each_mode_is_tuned_at_each_batch_with_its_precision_and_layout_then_measured(tmp_path):
    steps = end_to_end_steps(E2E_RESNET50, tmp_path, tmp_path / "out", "python")
    labels = [run.label for run in E2E_RESNET50.tuning_runs()]
    assert labels == ["tf32_nchw_n32", "tf32_nchw_n1", "tf32_nhwc_n32", "tf32_nhwc_n1", "bf16_nhwc_autocast_n32",
                      "bf16_nhwc_autocast_n1", "fp32_nchw_strict_n32", "fp32_nchw_strict_n1",
                      "tf32_nchw_n32_compiled", "tf32_nchw_n1_compiled"]  # (NHWC under torch.compile)
    assert list(steps) == [f"{kind}_{label}" for label in labels for kind in ("tune", "bench")] + ["measure"]
    parser = cli.build_parser()
    for label, mode, shape, compiled in E2E_RESNET50.tuning_runs():
        tune = parser.parse_args(steps[f"tune_{label}"][3:])  # (the real command line accepts each step)
        assert (tune.model, tune.input) == ("torchvision.models:resnet50", f"{shape[0]}x3x224x224")
        assert (tune.precision, tune.layout, tune.compile) == (
            MODES[mode].precision, None if compiled else MODES[mode].layout, compiled)
        assert Path(tune.write_config).parent == tmp_path
        bench = parser.parse_args(steps[f"bench_{label}"][3:])
        assert bench.config == tune.write_config and bench.no_tune and bench.no_trials
    measure = parser.parse_args(steps["measure"][3:])
    assert measure.end_to_end == "torchvision.models:resnet50" and measure.out == str(tmp_path / "out")
    assert end_to_end.parse_shapes(measure.input) == E2E_RESNET50.shapes
    assert tuple(measure.modes.split(",")) == tuple(MODES)
    assert [(m.precision, m.layout) for m in MODES.values()] == [("tf32", "NCHW"), ("tf32", "NHWC"),
                                                                  ("bf16", "NHWC"), ("fp32", "NCHW")]


class EndToEndRunner(FakeRunner):
    """What tune --model, bench and bench --end-to-end would write; fails the steps it is told to."""

    def __call__(self, argv, env, log_path):
        if not ("--model" in argv or "--end-to-end" in argv
                or (argv[3] == "bench" and Path(argv[4]).name != "config.yaml")):  # (a layer benchmark's)
            return super().__call__(argv, env, log_path)
        step = "measure" if "--end-to-end" in argv else argv[3]
        self.calls.append((step, dict(env)))
        log_path.write_text(f"{step} log line\n")
        if step in self.fail:
            return 1
        out = Path(argv[argv.index("--results" if step == "tune" else "--out") + 1])
        if step == "tune":
            out.mkdir(parents=True, exist_ok=True)
            (out / "tune.json").write_text(json.dumps({"wall_s": 10.0, "problems": [{}] * 23}))
        elif step == "bench":
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text("{}")
        else:
            environment = {"gpu": "NVIDIA H200", "driver": "580.1", "cudnn": "9.19.0", "torch": "2.11.0",
                           "torch_cudnn": 91900, "git_commit": "abc1234def", "date": "2026-12-02T10:00:00+00:00"}
            (out / "results.json").write_text(json.dumps(_records()))
            (out / "env.json").write_text(json.dumps({"end_to_end": True, "environment": environment,
                                                      "method": {"rounds": 15}}))
            (out / "report.md").write_text("# resnet50 end to end\n")
        return 0


def _readme(tmp_path):
    path = tmp_path / "README.md"
    path.write_text(f"# title\n{TABLE_BEGIN}\nold\n{TABLE_END}\nafter\n")
    return path


def test_the_suite_writes_the_end_to_end_folder_and_tables_beside_the_layer_benchmarks(tmp_path):
    root, readme, runner = tmp_path / "results" / "h200", _readme(tmp_path), EndToEndRunner()
    outcomes = run_suite(select("headline", ["resnet50_n32_fp32", "e2e_resnet50"]), root, command="x",
                         readme=readme, runner=runner, log=lambda line: None)
    assert [o.status for o in outcomes] == ["ok", "ok"]
    assert [step for step, _ in runner.calls] == ["tune", "bench", "report"] + ["tune", "bench"] * 10 + ["measure"]
    caches = {env["AUTOCONV_CACHE"] for step, env in runner.calls[3:]}
    assert len(caches) == 1 and caches != {runner.calls[0][1]["AUTOCONV_CACHE"]}  # (its own, empty)
    folder = root / "e2e_resnet50"
    assert sorted(p.name for p in folder.iterdir()) == ["env.json", "report.md", "results.json", "tune.json"]
    assert suite.is_complete(folder)
    env = json.loads((folder / "env.json").read_text())
    assert env["status"] == "ok" and env["suite"] == "headline" and env["model"] == "torchvision.models:resnet50"
    assert env["gpu"] == "NVIDIA H200" and env["git_commit"] == "abc1234def" and env["torch_cudnn"] == 91900
    assert env["method"] == {"rounds": 15} and env["inputs"] == ["32x3x224x224", "1x3x224x224"]
    assert env["steps"]["tune_bf16_nhwc_autocast_n1"] == (
        "autoconv tune --model torchvision.models:resnet50 --input 1x3x224x224 --precision bf16 --layout NHWC "
        "--write-config $WORK/bf16_nhwc_autocast_n1.yaml --results $WORK/tune/bf16_nhwc_autocast_n1")
    tune = json.loads((folder / "tune.json").read_text())
    assert tune["wall_s"] == 100.0 and tune["runs"]["tf32_nhwc_n1"] == {"mode": "tf32_nhwc", "input": [1, 3, 224, 224],
                                                                       "wall_s": 10.0, "problems": 23}
    local = (root / "README.md").read_text()
    assert "**1.34x** cuDNN strict FP32" in local  # (the layer benchmarks' table as before)
    assert "## [ResNet-50 end to end (torchvision, random weights)](e2e_resnet50/report.md)" in local
    assert "| 32 | tf32_nchw | eager | 1.100 | 1.000 | **1.10x** |" in local and "Tuned in 100 s." in local
    text = readme.read_text()
    assert text.endswith(f"{TABLE_END}\nafter\n") and "old" not in text
    line = next(line for line in text.splitlines() if "e2e_resnet50" in line)
    assert line.startswith("[ResNet-50 end to end (torchvision, random weights)](results/h200/e2e_resnet50/"
                           "report.md)")
    assert line.endswith("PyTorch's defaults (tf32 NCHW): batch 32 eager **1.10x**, CUDA graph **1.25x**, "
                         "torch.compile **1.20x**, torch.compile, CUDA graph **1.15x**; batch 1 eager **0.80x**, "
                         "CUDA graph **1.50x**, torch.compile **0.90x**, torch.compile, CUDA graph **1.30x**.")
    assert not any("e2e" in row for row in text.splitlines() if row.startswith("| "))  # (not a layer row)


def test_a_failed_end_to_end_step_is_recorded_and_tabled(tmp_path):
    root = tmp_path / "h200"
    outcomes = run_suite(select("headline", ["e2e_resnet50"]), root, command="x",
                         runner=EndToEndRunner(fail={"measure"}), log=lambda line: None)
    assert [o.status for o in outcomes] == ["failed: measure (exit 1)"]
    env = json.loads((root / "e2e_resnet50" / "env.json").read_text())
    assert env["status"] == "failed: measure (exit 1)" and "measure log line" in env["failure_log_tail"]
    assert not suite.is_complete(root / "e2e_resnet50")
    assert "## ResNet-50 end to end (torchvision, random weights)\n\nfailed: measure (exit 1)\n" in (
        root / "README.md").read_text()


def test_report_suite_writes_the_end_to_end_tables_again_without_a_gpu(tmp_path, capsys):
    root = tmp_path / "h200"
    run_suite(select("headline", ["e2e_resnet50"]), root, command="x", runner=EndToEndRunner(), log=lambda line: None)
    (root / "README.md").unlink()
    readme = _readme(tmp_path)
    assert cli.main(["report", "--suite", "headline", "--out", str(root), "--readme", str(readme)]) == 0
    assert "| 1 | tf32_nchw | CUDA graph | 1.500 | 1.000 | **1.50x** |" in (root / "README.md").read_text()
    assert "](h200/e2e_resnet50/report.md)" in readme.read_text()
    assert "| ResNet-50, batch 32, fp32 NCHW | not run |" in readme.read_text()
    results = root / "e2e_resnet50" / "results.json"
    results.write_text(results.read_text().replace('"mode": "tf32_nhwc"', '"mode": "nhwc"', 1))
    suite.write_tables(root, readme=readme)
    assert "ResNet-50 end to end (torchvision, random weights): results unreadable:" in readme.read_text()
    assert "mode 'nhwc'" in readme.read_text()


def test_the_end_to_end_benchmark_without_a_run_says_so(tmp_path):
    root = tmp_path / "h200"
    run_suite(select("headline", ["resnet50_n32_fp32"]), root, command="x", runner=FakeRunner(),
              log=lambda line: None)
    assert "## ResNet-50 end to end (torchvision, random weights)\n\nnot run\n" in (root / "README.md").read_text()


# ---- on a GPU ------------------------------------------------------------------------------------

def two_convs():
    """A model of two convolutions (what the GPU test measures end to end)."""
    from torch import nn

    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 8, 1, bias=False))


#: The relative error each mode's output may have against float64, on either side.
MODE_TOLERANCE = {"fp32_nchw_strict": 1e-5, "tf32_nchw": 5e-3, "tf32_nhwc": 5e-3, "bf16_nhwc_autocast": 3e-2}


@pytest.mark.gpu
def test_measures_a_two_convolution_model_in_every_mode_and_runner(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    pytest.importorskip("cupy")
    if not torch.cuda.is_available():
        pytest.skip("gpu test: no CUDA device for PyTorch")
    import autoconv.runtime
    import autoconv.torch
    from autoconv.bench.end_to_end_measure import measure
    from autoconv.runtime import UntunedWarning

    monkeypatch.setenv("AUTOCONV_CACHE", str(tmp_path / "empty.sqlite3"))
    autoconv.runtime.set_cache(None)
    request = Request("tests.bench.test_end_to_end:two_convs", ((1, 3, 20, 24),), rounds=3, iterations=4, warmup=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UntunedWarning)
        records, env = measure(request, convert=autoconv.torch.convert, command="test", log=lambda line: None)
    autoconv.runtime.clear_loaded()
    assert check_records(records) is records
    assert [(r["mode"], r["runner"]) for r in records] == [(m, r) for m in MODES for r in end_to_end.RUNNERS]
    for record in records:
        assert record["model"] == "two_convs" and record["batch"] == 1 and record["input"] == [1, 3, 20, 24]
        assert record["torch_ms"] > 0 and record["autoconv_ms"] > 0
        assert record["speedup"] == pytest.approx(record["torch_ms"] / record["autoconv_ms"])
        compiled = record["runner"] in end_to_end.COMPILED_RUNNERS  # (whose graph hides its layers)
        assert record["conv_layers"] == 2
        assert record["layers"] == ({} if compiled else {"cache": 0, "default": 2, "cudnn": 0})
        assert record["problems"] == {"cache": 0, "default": 2, "cudnn": 0}  # (an empty cache: defaults)
        for side, error in record["errors"].items():
            assert 0 <= error < MODE_TOLERANCE[record["mode"]], (record["mode"], record["runner"], side, error)
        assert all(low <= high for low, high in record["round_spread"].values())
    assert env["end_to_end"] is True and env["environment"]["torch"] == torch.__version__
    assert env["method"]["rounds"] == 3 and env["environment"]["torch_cudnn"] == torch.backends.cudnn.version()


def test_each_converted_layer_is_counted_by_the_problem_it_loaded_or_reused(monkeypatch):
    """The layer count's bookkeeping (CPU): a fake runtime loads a problem per new call, cuDNN's
    plan for 1x1 filters; a layer repeating an earlier call reuses its problem."""
    torch = pytest.importorskip("torch")
    from torch import nn

    from autoconv.bench import end_to_end_measure

    loaded: dict[tuple, dict] = {}
    monkeypatch.setattr(end_to_end_measure, "loaded_kernels", lambda: list(loaded.values()))
    monkeypatch.setattr(end_to_end_measure, "clear_loaded", loaded.clear)

    class Served(nn.Conv2d):
        def forward(self, x):
            key = (tuple(x.shape), tuple(self.weight.shape))
            loaded.setdefault(key, {"problem": str(key), "origin": "cudnn" if self.kernel_size == (1, 1) else "cache"})
            return super().forward(x)

    def convert(model):
        converted = copy.deepcopy(model)
        names = [name for name, m in converted.named_modules() if isinstance(m, nn.Conv2d) and m.groups == 1]
        for name in names:
            converted.get_submodule(name).__class__ = Served
        return converted, SimpleNamespace(converted=names, skipped={"grouped": "grouped convolution"})

    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 1), nn.Conv2d(8, 8, 1),
                          nn.Conv2d(8, 8, 3, padding=1, groups=2))
    converted, report = convert(model)
    loaded[("stale",)] = {"problem": "stale", "origin": "default"}  # (forgotten before the count)
    x = torch.randn(1, 3, 6, 6)
    layers, problems = end_to_end_measure._count_origins(converted, report, lambda: converted(x))
    assert layers == {"cache": 1, "default": 0, "cudnn": 2, "pytorch": 1}
    assert problems == {"cache": 1, "default": 0, "cudnn": 1}
