"""The headline suite (``autoconv bench --suite headline``): its benchmarks, the configs they
run, the folders and tables it writes, resuming and refusing, with a fake step runner (no GPU)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from autoconv.bench import suite
from autoconv.bench.results import ReportError
from autoconv.bench.suite import (
    HEADLINE,
    TABLE_BEGIN,
    TABLE_END,
    Benchmark,
    benchmark_config,
    gpu_folder_name,
    run_suite,
    select,
)
from autoconv.commands import main as cli
from autoconv.config.load import load_config
from autoconv.errors import AutoconvError, UsageError
from tests.bench.test_report import _problem
from tests.helpers import process_table

#: The folder names of ResNet-50 at batch 32 that the README and the record rely on.
RESNET_NAMES = ("resnet50_n32_fp32", "resnet50_n32_tf32_nchw", "resnet50_n32_tf32_nhwc", "resnet50_n32_bf16_nhwc",
                "resnet50_n32_fp16_nhwc")

#: The per-layer benchmarks of the suite (the end-to-end one is tested in test_end_to_end.py).
LAYER_BENCHMARKS = tuple(b for b in HEADLINE if isinstance(b, Benchmark))


def test_headline_names_and_modes():
    names = [b.name for b in HEADLINE]
    assert names[:5] == list(RESNET_NAMES) and names[-1] == "e2e_resnet50"
    assert len(set(names)) == len(names) == 11 and len(LAYER_BENCHMARKS) == 10
    assert {(b.precision, b.layout) for b in LAYER_BENCHMARKS} == {
        ("fp32", "NCHW"), ("tf32", "NCHW"), ("tf32", "NHWC"), ("bf16", "NHWC"), ("fp16", "NHWC")}
    for benchmark in LAYER_BENCHMARKS:
        suffix = benchmark.precision if benchmark.precision == "fp32" else \
            f"{benchmark.precision}_{benchmark.layout.lower()}"
        assert benchmark.name.endswith(suffix)


@pytest.mark.parametrize("benchmark", LAYER_BENCHMARKS, ids=lambda b: b.name)
def test_each_benchmark_config_loads_with_its_precision_layout_and_fresh_places(benchmark, tmp_path):
    work, folder = tmp_path / "work", tmp_path / "out" / benchmark.name
    work.mkdir()
    config = load_config(benchmark_config(benchmark, work, folder))
    assert {item.problem.precision for item in config.problems} == {benchmark.precision}
    assert {item.problem.layout for item in config.problems} == {benchmark.layout}
    assert Path(config.storage) == work / "studies.journal"
    assert Path(config.cache) == work / "winners.sqlite3"
    assert Path(config.results) == folder
    expected = 23 if benchmark.name.startswith("resnet50") else 39
    assert len(config.problems) == expected


def test_select_and_refusals():
    assert select("headline") == HEADLINE
    assert [b.name for b in select("headline", ["resnet50_n32_bf16_nhwc", "resnet50_n32_fp32"])] == [
        "resnet50_n32_fp32", "resnet50_n32_bf16_nhwc"]  # the suite's order
    with pytest.raises(UsageError, match="--suite.*known: headline"):
        select("nightly")
    with pytest.raises(UsageError, match="--only.*resnet51"):
        select("headline", ["resnet51"])


@pytest.mark.parametrize("name, folder", [("NVIDIA H200", "h200"), ("NVIDIA H100 80GB HBM3", "h100_80gb_hbm3"),
                                          ("  nvidia a100-sxm4-40gb ", "a100_sxm4_40gb"), ("???", "gpu")])
def test_gpu_folder_name(name, folder):
    assert gpu_folder_name(name) == folder


# ---- running, with a fake runner ---------------------------------------------------------------

def _problems(speedups, torch=1.5):
    """Layers autoconv runs in 1 ms, cuDNN (strict FP32) in each speedup's ms, PyTorch in ``torch``."""
    return [{**_problem(f"layer{i}|x", 1, 1.0, 1.0, s, torch_ms=torch), "precision": "fp32"}
            for i, s in enumerate(speedups)]


class FakeRunner:
    """Does what tune, bench and report would write, fails the steps it is told to."""

    def __init__(self, fail=()):
        self.fail = set(fail)
        self.calls = []

    def __call__(self, argv, env, log_path):
        step = argv[3] if argv[3] != "report" else "report"
        config = Path(argv[4]) if step in ("tune", "bench") else None
        self.calls.append((step, dict(env)))
        log_path.write_text(f"{step} log line\n")
        if step in self.fail:
            return 1
        if step == "tune":
            folder = Path(load_config(config).results)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "tune.json").write_text(json.dumps({"wall_s": 31.4}))
        elif step == "bench":
            out = Path(argv[argv.index("--out") + 1])
            environment = {"gpu": "NVIDIA H200", "driver": "580.1", "cudnn": "9.19.0", "torch": "2.11.0",
                           "git_commit": "abc1234def", "date": "2026-12-02T10:00:00+00:00"}
            out.write_text(json.dumps({"schema": 1, "environment": environment,
                                       "problems": _problems([2.0, 1.5, 0.8])}))
        else:
            (Path(argv[argv.index("--out") + 1]) / "report.md").write_text("# autoconv vs cuDNN on ...\n")
        return 0


def _readme(tmp_path, body="old table"):
    path = tmp_path / "README.md"
    path.write_text(f"# title\n\ntext\n{TABLE_BEGIN}\n{body}\n{TABLE_END}\nafter\n")
    return path


def test_run_suite_writes_folders_tables_and_readme(tmp_path):
    runner, readme = FakeRunner(), _readme(tmp_path)
    root = tmp_path / "results" / "h200"
    chosen = select("headline", ["resnet50_n32_fp32", "resnet50_n32_bf16_nhwc"])
    outcomes = run_suite(chosen, root, command="autoconv bench --suite headline", readme=readme, runner=runner,
                         log=lambda line: None)
    assert [o.status for o in outcomes] == ["ok", "ok"]
    assert [step for step, _ in runner.calls] == ["tune", "bench", "report"] * 2
    for _, env in runner.calls:  # every cache starts empty, in the benchmark's own folder
        assert Path(env["AUTOCONV_CACHE"]).parent == Path(env["CUPY_CACHE_DIR"]).parent
        assert not Path(env["AUTOCONV_CACHE"]).parent.exists()  # (removed once the benchmark is done)
    env = json.loads((root / "resnet50_n32_fp32" / "env.json").read_text())
    assert env["status"] == "ok" and env["git_commit"] == "abc1234def" and env["config"] == "examples/resnet50.yaml"
    assert env["steps"]["tune"] == "autoconv tune $WORK/config.yaml"
    text = readme.read_text()
    assert text.startswith("# title\n\ntext\n" + TABLE_BEGIN + "\n") and text.endswith(TABLE_END + "\nafter\n")
    assert "old table" not in text
    row = next(line for line in text.splitlines() if "resnet50_n32_fp32/report.md" in line)
    # speedups 2.0, 1.5, 0.8: geometric mean 2.4 ** (1/3) = 1.339; PyTorch 1.5 everywhere
    assert "**1.34x** cuDNN strict FP32" in row and "2 of 3" in row and "0.80x (layer2/x)" in row
    assert "| 1.50x |" in row and "31 s" in row
    assert "| ResNet-50, batch 32, tf32 NCHW | not run |" in text
    assert "abc1234def" in text and "cuDNN 9.19.0" in text
    local = (root / "README.md").read_text()
    assert "](resnet50_n32_fp32/report.md)" in local


def test_a_failed_benchmark_is_recorded_and_the_suite_goes_on(tmp_path):
    root = tmp_path / "h200"
    chosen = select("headline", ["resnet50_n32_fp32", "resnet50_n32_tf32_nchw"])

    class FailFirstBench(FakeRunner):
        def __call__(self, argv, env, log_path):
            if argv[3] == "bench" and not any(step == "bench" for step, _ in self.calls):
                self.calls.append(("bench", dict(env)))
                log_path.write_text("Traceback: the reason\n")
                return 3
            return super().__call__(argv, env, log_path)

    outcomes = run_suite(chosen, root, command="autoconv bench --suite headline", runner=FailFirstBench(),
                         log=lambda line: None)
    assert [o.status for o in outcomes] == ["failed: bench (exit 3)", "ok"]
    env = json.loads((root / "resnet50_n32_fp32" / "env.json").read_text())
    assert env["status"] == "failed: bench (exit 3)" and "the reason" in env["failure_log_tail"]
    assert "| ResNet-50, batch 32, fp32 NCHW | failed: bench (exit 3) |" in (root / "README.md").read_text()


def test_resume_keeps_completed_benchmarks_and_reruns_the_others(tmp_path):
    root = tmp_path / "h200"
    chosen = select("headline", ["resnet50_n32_fp32", "resnet50_n32_tf32_nchw"])
    run_suite(chosen, root, command="autoconv bench --suite headline", runner=FakeRunner(fail={"report"}),
              log=lambda line: None)
    runner = FakeRunner()
    outcomes = run_suite(chosen, root, command="autoconv bench --suite headline", resume=True, runner=runner,
                         log=lambda line: None)
    assert [o.status for o in outcomes] == ["ok", "ok"]  # both had failed at the report: neither is kept
    runner = FakeRunner()
    outcomes = run_suite(chosen, root, command="autoconv bench --suite headline", resume=True, runner=runner,
                         log=lambda line: None)
    assert [o.status for o in outcomes] == ["kept", "kept"] and runner.calls == []


def test_nothing_the_suite_did_not_write_is_replaced(tmp_path):
    root = tmp_path / "h200"
    foreign = root / "resnet50_n32_fp32"
    foreign.mkdir(parents=True)
    (foreign / "notes.txt").write_text("mine")
    runner = FakeRunner()
    with pytest.raises(AutoconvError, match="resnet50_n32_fp32 holds files the suite did not write"):
        run_suite(select("headline", ["resnet50_n32_tf32_nchw", "resnet50_n32_fp32"]), root, command="autoconv "
                  "bench --suite headline", runner=runner, log=lambda line: None)
    assert runner.calls == [] and (foreign / "notes.txt").read_text() == "mine"

    (root / "README.md").write_text("# my own notes\n")
    with pytest.raises(AutoconvError, match="README.md is not a table the suite wrote"):
        run_suite(select("headline", ["resnet50_n32_tf32_nchw"]), root, command="autoconv bench --suite headline",
                  runner=runner, log=lambda line: None)
    assert runner.calls == []


def test_a_readme_without_the_markers_is_refused_before_any_work(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n{TABLE_END}\n{TABLE_BEGIN}\n")
    runner = FakeRunner()
    with pytest.raises(ReportError, match="expected one line <!-- headline-table:begin -->"):
        run_suite(select("headline", ["resnet50_n32_fp32"]), tmp_path / "h200", command="x", readme=readme,
                  runner=runner, log=lambda line: None)
    assert runner.calls == [] and not (tmp_path / "h200").exists()


def test_the_checkout_readme_has_the_markers():
    text = (suite.CHECKOUT_ROOT / "README.md").read_text()
    assert text.count(TABLE_BEGIN) == 1 and text.count(TABLE_END) == 1


@pytest.mark.parametrize("argv, message", [
    (["bench", "--suite", "headline", "examples/resnet50.yaml"], "either a config or --suite"),
    (["bench", "--suite", "headline", "--rounds", "5"], "--rounds.*does not go with --suite"),
    (["bench", "--suite", "headline", "--no-trials"], "--no-trials.*does not go with --suite"),
    (["bench", "examples/resnet50.yaml", "--only", "resnet50_n32_fp32"], "--only.*goes with --suite only"),
    (["bench", "--suite", "headline", "--only", "nope"], "--only='nope': not a benchmark"),
    (["bench"], "give a config file"),
])
def test_bench_command_line_refusals(argv, message, capsys):
    assert cli.main(argv) == 2
    assert re.search(message, capsys.readouterr().err)


def test_report_suite_writes_the_tables_again_without_a_gpu(tmp_path, capsys):
    root = tmp_path / "h200"
    run_suite(select("headline", ["resnet50_n32_fp32"]), root, command="autoconv bench --suite headline",
              runner=FakeRunner(), log=lambda line: None)
    (root / "README.md").unlink()
    readme = _readme(tmp_path)
    assert cli.main(["report", "--suite", "headline", "--out", str(root), "--readme", str(readme)]) == 0
    assert "**1.34x** cuDNN strict FP32" in (root / "README.md").read_text()
    assert "](h200/resnet50_n32_fp32/report.md)" in readme.read_text()  # (from the README's folder)
    assert cli.main(["report", "--suite", "headline", "--out", str(tmp_path / "none")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_a_relative_results_folder_gets_every_file(tmp_path, monkeypatch):
    """The steps run with the config in a temporary folder: a relative --out must still be where
    the files land (tune.json included), and the benchmark counts as complete."""
    monkeypatch.chdir(tmp_path)
    run_suite(select("headline", ["resnet50_n32_fp32"]), Path("results/h200"), command="x", runner=FakeRunner(),
              log=lambda line: None)
    folder = tmp_path / "results" / "h200" / "resnet50_n32_fp32"
    assert {"tune.json", "results.json", "report.md", "env.json"} <= {p.name for p in folder.iterdir()}
    assert suite.is_complete(folder)


def test_a_run_cut_short_leaves_the_earlier_folder_and_resumes(tmp_path):
    root = tmp_path / "h200"
    chosen = select("headline", ["resnet50_n32_fp32"])
    run_suite(chosen, root, command="x", runner=FakeRunner(), log=lambda line: None)
    before = {p.name: p.read_bytes() for p in (root / "resnet50_n32_fp32").iterdir()}

    class Killed(FakeRunner):
        def __call__(self, argv, env, log_path):
            if argv[3] == "bench":
                raise KeyboardInterrupt  # (the run stops in the middle of a benchmark)
            return super().__call__(argv, env, log_path)

    with pytest.raises(KeyboardInterrupt):
        run_suite(chosen, root, command="x", runner=Killed(), log=lambda line: None)
    assert {p.name: p.read_bytes() for p in (root / "resnet50_n32_fp32").iterdir()} == before
    runner = FakeRunner()
    assert [o.status for o in run_suite(chosen, root, command="x", resume=True, runner=runner,
                                        log=lambda line: None)] == ["kept"]


def test_a_folder_is_known_by_its_suite_whatever_the_command_looked_like(tmp_path):
    root = tmp_path / "h200"
    chosen = select("headline", ["resnet50_n32_fp32"])
    run_suite(chosen, root, command="autoconv --log-level info bench --only resnet50_n32_fp32 --suite headline",
              runner=FakeRunner(), log=lambda line: None)
    folder = root / "resnet50_n32_fp32"
    assert json.loads((folder / "env.json").read_text())["suite"] == "headline"
    assert suite.is_suite_folder(folder) and suite.is_complete(folder)
    link = root / "resnet50_n32_tf32_nchw"
    link.symlink_to(folder, target_is_directory=True)
    assert not suite.is_suite_folder(link)  # a link is never replaced
    with pytest.raises(AutoconvError, match="resnet50_n32_tf32_nchw holds files the suite did not write"):
        run_suite(select("headline", ["resnet50_n32_tf32_nchw"]), root, command="x", runner=FakeRunner(),
                  log=lambda line: None)


def test_a_benchmark_sees_none_of_the_callers_autoconv_variables(tmp_path):
    base = {"PATH": "/bin", "AUTOCONV_BACKEND": "fake", "AUTOCONV_FAKE_DELAY_S": "1", "AUTOCONV_CACHE": "/shared",
            "AUTOCONV_GIT_COMMIT": "abc1234"}
    env = suite.fresh_environment(tmp_path, base)
    assert "AUTOCONV_BACKEND" not in env and "AUTOCONV_FAKE_DELAY_S" not in env
    assert env["AUTOCONV_CACHE"] == str(tmp_path / "winners.sqlite3") and env["AUTOCONV_GIT_COMMIT"] == "abc1234"
    assert env["PATH"] == "/bin"


def test_a_step_past_its_time_is_stopped_with_everything_it_started(tmp_path):
    import os
    import sys

    child_pid = tmp_path / "child.pid"
    script = ("import subprocess, sys, time\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
              f"open({str(child_pid)!r}, 'w').write(str(child.pid))\n"
              "time.sleep(120)\n")
    started = __import__("time").monotonic()
    code = suite.run_step([sys.executable, "-c", script], dict(os.environ), tmp_path / "step.log", timeout_s=3)
    assert code == suite.TIMED_OUT and __import__("time").monotonic() - started < 60
    assert "(stopped after 3 s)" in (tmp_path / "step.log").read_text()
    pid = int(child_pid.read_text())
    for _ in range(100):  # (the kill is sent; the kernel reaps the orphan shortly)
        if process_table().get(pid, ["Z"])[0] == "Z":
            break
        __import__("time").sleep(0.1)
    else:
        raise AssertionError("the step's child still runs")


@pytest.mark.parametrize("text", [
    f"# t\nbefore {TABLE_BEGIN}\nx\n{TABLE_END}\n",          # text on the marker's line
    f"# t\n{TABLE_BEGIN}\nx\n{TABLE_END} after\n",
    f"# t\n{TABLE_BEGIN}{TABLE_END}\n",
])
def test_markers_must_stand_alone_on_their_lines(tmp_path, text):
    readme = tmp_path / "README.md"
    readme.write_text(text)
    with pytest.raises(ReportError, match="each alone on its line"):
        suite.readme_table_span(readme)


def test_the_table_replaces_only_the_lines_between_the_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_bytes(f"# t\r\nkeep\r\n{TABLE_BEGIN}\r\nold\r\n{TABLE_END}\r\nafter\r\n".encode())
    run_suite(select("headline", ["resnet50_n32_fp32"]), tmp_path / "out" / "h200", command="x",
              readme=readme, runner=FakeRunner(), log=lambda line: None)
    data = readme.read_bytes()
    assert data.startswith(f"# t\r\nkeep\r\n{TABLE_BEGIN}\r\n".encode())
    assert data.endswith(f"{TABLE_END}\r\nafter\r\n".encode()) and b"old" not in data
    assert b"](out/h200/resnet50_n32_fp32/report.md)" in data  # (linked from the README's folder)


def test_report_suite_refuses_a_folder_without_the_suites_benchmarks(tmp_path, capsys):
    (tmp_path / "results").mkdir()
    readme = _readme(tmp_path)
    assert cli.main(["report", "--suite", "headline", "--out", str(tmp_path / "results"), "--readme",
                     str(readme)]) == 2
    assert "holds no benchmark of the headline suite" in capsys.readouterr().err
    assert "old table" in readme.read_text() and not (tmp_path / "results" / "README.md").exists()


def test_a_results_file_changed_since_the_run_is_a_row_that_says_so(tmp_path):
    root = tmp_path / "h200"
    run_suite(select("headline", ["resnet50_n32_fp32"]), root, command="x", runner=FakeRunner(),
              log=lambda line: None)
    results = root / "resnet50_n32_fp32" / "results.json"
    results.write_text(results.read_text().replace('"autoconv_ms": 1.0', '"autoconv_ms": "fast"'))
    table = suite.write_tables(root)
    row = next(line for line in table.splitlines() if "fp32 NCHW" in line)
    assert "results unreadable" in row and "autoconv_ms" in row
