"""``autoconv tune``, ``show`` and ``cache`` from the command line, without a GPU: the
fake backend (``AUTOCONV_BACKEND=fake``) stands in for the GPU where one would be
needed; ``--dry-run`` really compiles with nvcc."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autoconv.cache.winners import WinnerCache
from autoconv.search import full_study, transfer
from tests.helpers import repo_env, run_cli

CONFIG = """\
problems:
  - name: odd
    spec: "N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1"
  - name: pointwise
    N: 1
    C: 8
    H: 9
    W: 9
    K: 12
    R: 1
    S: 1
    bias: true
families: [direct, im2col_gemm]
budget: {trials: 6}
cache: state/cache.sqlite
storage: state/studies.journal
results: results
"""


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "tune.yaml"
    path.write_text(CONFIG)
    return path


def test_tune_without_a_gpu_says_so_and_fails(config, tmp_path):
    env = repo_env(CUDA_VISIBLE_DEVICES="", AUTOCONV_BACKEND="cupy")
    done = subprocess.run([sys.executable, "-m", "autoconv", "tune", str(config)], capture_output=True,
                          text=True, env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("autoconv tune: error:")
    assert "GPU" in done.stderr and "--dry-run" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "state" / "cache.sqlite").exists()


def test_tune_fills_storage_cache_and_summary_then_serves_from_cache(config, tmp_path, capsys, fake_gpu):
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 0, err
    assert "odd" in out and "pointwise" in out and "tuned" in out
    assert "2/2 problems with a verified winner" in out
    assert (tmp_path / "state" / "studies.journal").stat().st_size > 0
    summary = json.loads((tmp_path / "results" / "tune.json").read_text())
    assert [p["name"] for p in summary["problems"]] == ["odd", "pointwise"]
    assert all(p["trials_run"] == 6 and p["time_ms"] > 0 for p in summary["problems"])
    # the compile cost per candidate: 12 candidates, 14 compiles of the fake backend's 0.008 CPU-s
    # (the two winners' re-verifications compile once more each)
    assert summary["candidates"] == 12 and "12 candidates" in out
    cpu_s = sum(p["compile_cpu_s"] for p in summary["problems"])
    assert cpu_s == pytest.approx(14 * 0.008) and summary["candidates_per_compile_cpu_s"] == round(12 / cpu_s, 3)
    load = summary["load"]  # what the run kept busy, over its wall time
    assert load["host_cores"] == os.cpu_count() and load["gpus"] == 1
    assert load["compile_cores_busy"] == round(cpu_s / summary["wall_s"], 2)
    assert load["cores_allow"] == pytest.approx(os.cpu_count() * summary["wall_s"] / cpu_s, rel=1e-2)
    assert "cores busy" in out
    with WinnerCache(tmp_path / "state" / "cache.sqlite") as cache:
        assert len(cache) == 2

    code, out, err = run_cli(capsys, "tune", config)
    assert code == 0 and "cache" in out and "tuned" not in out

    # More trials with --retune continue the same studies: 3 more each.
    code, out, err = run_cli(capsys, "tune", config, "--retune", "--trials", "9", "--families", "direct,im2col_gemm")
    assert code == 0, err
    summary = json.loads((tmp_path / "results" / "tune.json").read_text())
    assert [(p["trials_run"], p["trials_total"]) for p in summary["problems"]] == [(3, 9), (3, 9)]


def test_show_and_cache_export_clear_import(config, tmp_path, capsys, fake_gpu):
    assert run_cli(capsys, "tune", config)[0] == 0
    cache = tmp_path / "state" / "cache.sqlite"
    code, out, _ = run_cli(capsys, "show", config)
    assert code == 0 and "2 cached winners" in out and "current" in out and "17x3x3" in out

    exported = tmp_path / "winners.json"
    code, out, _ = run_cli(capsys, "cache", "export", exported, "--cache", cache)
    assert code == 0 and "exported 2 winners" in out
    code, out, _ = run_cli(capsys, "cache", "clear", "--cache", cache)
    assert code == 0 and not cache.exists()
    code, out, _ = run_cli(capsys, "show", "--cache", cache)
    assert code == 0 and "0 cached winners" in out
    code, out, _ = run_cli(capsys, "cache", "import", exported, "--cache", cache)
    assert code == 0 and "imported 2 winners" in out
    code, out, _ = run_cli(capsys, "show", "--cache", cache)
    assert "2 cached winners" in out


def test_a_corrupt_cache_is_reported_with_the_way_out(config, tmp_path, capsys, fake_gpu):
    cache = tmp_path / "state" / "cache.sqlite"
    cache.parent.mkdir()
    cache.write_bytes(b"\x00garbage" * 100)
    for argv in (("show", config), ("tune", config)):
        code, out, err = run_cli(capsys, *argv)
        assert code == 2
        assert str(cache) in err and "pass another cache" in err and "autoconv cache clear" not in err
    # Not recognisably autoconv's: `cache clear` refuses it; its owner moves it away.
    code, _, err = run_cli(capsys, "cache", "clear", "--cache", cache)
    assert code == 2 and "not an SQLite database" in err and cache.exists()
    cache.unlink()
    assert run_cli(capsys, "tune", config)[0] == 0


def test_pipeline_depth_bounds_the_candidates_in_flight(config, tmp_path, capsys, fake_gpu, monkeypatch):
    """--pipeline-depth N: never more than N candidates submitted and not yet collected, N
    reached, and the depth recorded in tune.json; a depth below 1 is a usage error."""
    from autoconv.backends.fake import FakeBackend

    in_flight, most = [0], [0]
    submit, result = FakeBackend.submit, FakeBackend.result

    def counting_submit(self, plan, **kwargs):
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        return submit(self, plan, **kwargs)

    def counting_result(self, ticket):
        in_flight[0] -= 1
        return result(self, ticket)
    monkeypatch.setattr(FakeBackend, "submit", counting_submit)
    monkeypatch.setattr(FakeBackend, "result", counting_result)
    code, _, err = run_cli(capsys, "tune", config, "--pipeline-depth", "3")
    assert code == 0, err
    assert most[0] == 3
    assert json.loads((tmp_path / "results" / "tune.json").read_text())["pipeline_depth"] == 3
    with pytest.raises(SystemExit) as refused:  # argparse's own refusal of the value
        run_cli(capsys, "tune", config, "--pipeline-depth", "0")
    err = capsys.readouterr().err
    assert refused.value.code == 2 and "--pipeline-depth" in err and ">= 1" in err and "Traceback" not in err


def test_rank_tries_the_history_models_best_after_the_warm_start(config, tmp_path, capsys, fake_gpu):
    code, _, err = run_cli(capsys, "tune", config)
    assert code == 0, err
    code, _, err = run_cli(capsys, "tune", config, "--retune", "--trials", "14", "--rank", "3")
    assert code == 0, err
    assert json.loads((tmp_path / "results" / "tune.json").read_text())["ranked"] == 3


def test_prefilter_is_off_unless_asked_for(config, tmp_path, capsys, fake_gpu):
    code, _, err = run_cli(capsys, "tune", config)
    assert code == 0, err
    assert json.loads((tmp_path / "results" / "tune.json").read_text())["prefilter"] is False
    code, _, err = run_cli(capsys, "tune", config, "--retune", "--trials", "14", "--prefilter")
    assert code == 0, err
    assert json.loads((tmp_path / "results" / "tune.json").read_text())["prefilter"] is True


def test_transfer_is_on_where_the_history_allows_unless_turned_off(config, tmp_path, capsys, fake_gpu, monkeypatch):
    def searches():
        summary = json.loads((tmp_path / "results" / "tune.json").read_text())
        return summary["transfer"], {problem["search"] for problem in summary["problems"]}

    monkeypatch.setattr(transfer, "MIN_PROBLEMS", 2)  # (the config's own two problems are the history)
    # (a study begun full does not become a transfer here: on a slow host the first run's second study
    # would, once the first has timed candidates)
    monkeypatch.setattr(full_study, "TRANSFER_CHECK_S", float("inf"))
    code, _, err = run_cli(capsys, "tune", config, "--trials", "60")
    assert code == 0, err
    assert searches() == (True, {"full"})  # (an empty history: full studies)
    code, _, err = run_cli(capsys, "tune", config, "--retune", "--no-transfer")
    assert code == 0, err
    assert searches() == (False, {"full"})
    code, _, err = run_cli(capsys, "tune", config, "--retune")
    assert code == 0, err
    assert searches() == (True, {"transfer"})
    code, _, err = run_cli(capsys, "tune", config, "--retune", "--transfer")
    assert code == 0, err
    assert searches() == (True, {"transfer"})


def test_run_time_sizes_are_off_unless_asked_for(config, tmp_path, capsys, fake_gpu):
    code, _, err = run_cli(capsys, "tune", config)
    assert code == 0, err
    summary = json.loads((tmp_path / "results" / "tune.json").read_text())
    assert summary["run_time_sizes"] is False
    # (and the tuning processes' time by phase, summed over the problems)
    assert list(summary["phases_s"]) == ["start", "ask", "wait", "record", "finish"]
    assert sum(summary["phases_s"].values()) == pytest.approx(
        sum(sum(problem["phases_s"].values()) for problem in summary["problems"]), abs=0.01)
    # (and the process's moments: before the first candidate and after the last result)
    moments = summary["milestones_s"]
    assert list(moments) == ["process", "backend", "storage", "first_submit", "last_result", "tuned", "closed"]
    assert list(moments.values()) == sorted(moments.values()) and moments["closed"] <= summary["wall_s"] + 0.1
    code, _, err = run_cli(capsys, "tune", config, "--retune", "--trials", "14", "--run-time-sizes")
    assert code == 0, err
    assert json.loads((tmp_path / "results" / "tune.json").read_text())["run_time_sizes"] is True


def test_bad_arguments_are_errors_not_tracebacks(config, tmp_path, capsys, fake_gpu):
    code, _, err = run_cli(capsys, "tune", config, "--families", "implicit_gem")
    assert code == 2 and "--families='implicit_gem': unknown kernel family" in err and "implicit_gemm" in err
    code, _, err = run_cli(capsys, "tune", config, "--families", ",,,")
    assert code == 2 and "names no family" in err and "Traceback" not in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("problems:\n  - name: x\n    N: 0\n")
    code, _, err = run_cli(capsys, "tune", bad)
    assert code == 2 and f"{bad}:3" in err
    code, _, err = run_cli(capsys, "cache", "import", tmp_path / "missing.json")
    assert code == 2 and "no such file" in err


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_dry_run_compiles_with_nvcc_without_a_gpu(config, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv("AUTOCONV_BACKEND", "cupy")  # would fail: --dry-run must not need it
    code, out, err = run_cli(capsys, "tune", config, "--dry-run", "--families", "direct")
    assert code == 0, out + err
    assert "2 of 2 candidates compiled" in out and "nothing ran" in out
    assert not (tmp_path / "state").exists()  # no cache, no storage


def _url_storage_config(tmp_path) -> Path:
    """A config whose studies are in a database (an SQLite URL) and that names no cache:
    the winners go into that database (docs/multi-gpu.md)."""
    path = tmp_path / "url.yaml"
    path.write_text(CONFIG.replace("cache: state/cache.sqlite\n", "")
                    .replace("storage: state/studies.journal", "storage: sqlite:///state/studies.db"))
    return path


def test_show_config_reads_the_cache_tune_wrote_into_the_storage_database(tmp_path, capsys, fake_gpu,
                                                                         monkeypatch):
    """``show CONFIG`` used to read the config's default cache while ``tune`` wrote into the
    storage database: it listed no winners."""
    default = tmp_path / "default-cache.sqlite"
    monkeypatch.setenv("AUTOCONV_CACHE", str(default))
    config = _url_storage_config(tmp_path)
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 0, out + err
    with WinnerCache(f"sqlite:///{tmp_path}/state/studies.db") as cache:
        assert len(cache) == 2
    code, out, err = run_cli(capsys, "show", config)
    assert code == 0 and "2 cached winners" in out, out + err
    assert not default.exists()


def test_bench_reads_the_cache_tune_wrote_into_the_storage_database(tmp_path, capsys, fake_gpu, monkeypatch):
    """``bench CONFIG``'s side of autoconv used to open the config's default cache while
    ``tune`` wrote into the storage database: it found no winner and tuned again (or, with
    ``--no-tune``, failed). It opens the session's cache now; the fake GPU's identity
    stands in for the device it would read."""
    from autoconv.backends.fake import FAKE_IDENTITY
    from autoconv.bench import benchmark
    from autoconv.kernels.limits import H100
    from autoconv.search.session import TuneSession

    default = tmp_path / "default-cache.sqlite"
    monkeypatch.setenv("AUTOCONV_CACHE", str(default))
    config = _url_storage_config(tmp_path)
    assert run_cli(capsys, "tune", config)[0] == 0
    monkeypatch.setattr(benchmark, "read_device", lambda device: (H100, FAKE_IDENTITY))
    session = TuneSession.load(config)
    side = benchmark.AutoconvSide(session)
    try:
        assert side.cache.location == f"sqlite:///{tmp_path}/state/studies.db"
        for item in session.config.problems:
            entry = side.cached(item.problem)
            assert entry is not None and entry.trials > 0
            assert side.history(entry).trials  # the study is in the session's storage too
    finally:
        side.close()
    assert not default.exists()


def test_tune_never_replaces_a_summary_it_did_not_write(config, tmp_path, capsys, fake_gpu):
    foreign = tmp_path / "results" / "tune.json"
    foreign.parent.mkdir()
    foreign.write_text("someone's notes\n")
    code, _, err = run_cli(capsys, "tune", config)
    assert code == 2 and "is not a summary of `autoconv tune`" in err and "Traceback" not in err
    assert foreign.read_text() == "someone's notes\n"
    assert not (tmp_path / "state").exists()  # refused before any tuning
    foreign.unlink()
    assert run_cli(capsys, "tune", config)[0] == 0
    assert run_cli(capsys, "tune", config)[0] == 0  # its own summary is replaced


def test_an_output_tune_could_not_write_stops_it_before_any_work(config, tmp_path, capsys, fake_gpu):
    """A results folder that is a file would lose the summary after the whole tune: refused first,
    naming it, with nothing tuned, cached or created."""
    (tmp_path / "taken").write_text("a file")
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = run_cli(capsys, "tune", config, "--results", str(tmp_path / "taken"))
    assert code == 2 and str(tmp_path / "taken") in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # (no storage, no cache)
