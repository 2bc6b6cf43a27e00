"""Every option of ``autoconv tune`` reaches the fleet's worker processes.

The workers of ``--gpus`` and ``--workers-per-gpu`` used to re-read the config file and get the
other settings re-typed one by one: ``--precision`` and ``--layout`` were lost on the way (a
float32 NCHW model was tuned where tf32 NHWC was asked for). Now the parent's session travels to
them whole. The fake backend stands in for two GPUs here.
"""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest

from autoconv.cache.winners import WinnerCache
from autoconv.commands.main import build_parser
from autoconv.commands.tune import tune_options
from autoconv.config.load import load_config_text
from autoconv.problems.problem import parse_spec
from autoconv.search import fleet
from autoconv.search.options import SearchOptions, TuneOptions
from autoconv.search.session import TuneSession
from autoconv.search.study import EVALUATED
from tests.helpers import TWO_PROBLEMS, load_studies, run_cli
from tests.search.fleet_recorder import recording_worker_process

#: The one family that computes tf32 in NHWC (the config's own families compute neither).
TF32_NHWC_FAMILY = "implicit_gemm_wgmma_tma"
TRIALS = 4

#: Every option of ``autoconv tune`` away from its default, except ``--dry-run`` (which tunes
#: nothing), in a combination the fake backend tunes in a few seconds; the paths are under the
#: test's folder (``{tmp}``).
EVERY_OPTION = ["--families", TF32_NHWC_FAMILY, "--trials", str(TRIALS), "--seconds", "300", "--patience", "50",
                "--storage", "{tmp}/elsewhere/studies.journal", "--cache", "{tmp}/elsewhere/cache.sqlite",
                "--results", "{tmp}/elsewhere/results",
                "--precision", "tf32", "--layout", "nhwc", "--retune", "--pipeline-depth", "3", "--rank", "2",
                "--prefilter", "--run-time-sizes", "--no-transfer", "--gpus", "all", "--workers-per-gpu", "1",
                "--per-family", "2"]


def every_option(tmp_path) -> TuneOptions:
    argv = ["tune", "tune.yaml", *(item.format(tmp=tmp_path) for item in EVERY_OPTION)]
    return tune_options(build_parser().parse_args(argv))


def test_the_command_line_sets_every_option(tmp_path):
    """Each field of the options has a flag (a field added without one fails here), and the
    flags not given leave the fields' defaults."""
    options = every_option(tmp_path)
    for cls, values in ((TuneOptions, options), (SearchOptions, options.search)):
        defaults = cls()
        for field in dataclasses.fields(cls):
            if field.name not in ("search", "dry_run"):
                assert getattr(values, field.name) != getattr(defaults, field.name), field.name
    assert options.families == (TF32_NHWC_FAMILY,) and options.layout == "NHWC"
    assert options.search == SearchOptions(retune=True, pipeline_depth=3, ranked=2, prefilter=True,
                                           run_time_sizes=True, transfer=False)
    assert tune_options(build_parser().parse_args(["tune", "tune.yaml", "--dry-run"])) == TuneOptions(dry_run=True)
    several = build_parser().parse_args(["tune", "c.yaml", "--families", "direct, im2col_gemm", "--families",
                                         "implicit_gemm"])
    assert tune_options(several).families == ("direct", "im2col_gemm", "implicit_gemm")


def test_a_session_with_every_option_survives_pickling(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOCONV_CACHE", str(tmp_path / "default.sqlite"))
    config = load_config_text(TWO_PROBLEMS.format(trials=5), base_dir=str(tmp_path))
    session = TuneSession.from_config(config, every_option(tmp_path))
    assert pickle.loads(pickle.dumps(session)) == session
    assert {(item.problem.precision, item.problem.layout) for item in session.config.problems} == {("tf32", "NHWC")}
    assert session.budget.trials == TRIALS and session.settings.search.pipeline_depth == 3


@pytest.mark.slow
def test_every_option_reaches_every_worker(tmp_path, capsys, monkeypatch):
    """Two workers (two fake GPUs) receive the session the parent made, equal to it in every field;
    what they tuned shows the precision, the layout, the families, the trial budget, the transfer
    turned off and the retune."""
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")
    monkeypatch.setenv("AUTOCONV_FAKE_DEVICES", "2")
    monkeypatch.setattr(fleet, "worker_process", recording_worker_process)
    config = tmp_path / "tune.yaml"
    config.write_text(TWO_PROBLEMS.format(trials=5))
    options = every_option(tmp_path)
    code, out, err = run_cli(capsys, "tune", config, *(item.format(tmp=tmp_path) for item in EVERY_OPTION))
    assert code == 0, out + err

    parents = TuneSession.load(config, options)
    results = tmp_path / "elsewhere" / "results"  # (--results)
    received = [pickle.loads((results / f"received-{worker}.pickle").read_bytes()) for worker in (0, 1)]
    assert [session for session, _ in received] == [parents, parents]
    assert [(job.worker, job.device) for _, job in received] == [(0, 0), (1, 1)]

    with WinnerCache(tmp_path / "elsewhere" / "cache.sqlite") as cache:
        entries = cache.entries()
    assert len(entries) == 2
    for entry in entries:
        problem = parse_spec(entry.key.problem_key)
        assert (problem.precision, problem.layout, entry.family) == ("tf32", "NHWC", TF32_NHWC_FAMILY)
    studies = load_studies(tmp_path / "elsewhere" / "studies.journal")
    assert len(studies) == 2
    for problem_key, trials in studies.items():
        problem = parse_spec(problem_key)
        assert (problem.precision, problem.layout) == ("tf32", "NHWC")
        assert {trial.params["family"] for trial in trials if trial.params} == {TF32_NHWC_FAMILY}
        evaluated = [trial for trial in trials if trial.user_attrs.get("status") in EVALUATED]
        assert TRIALS <= len(evaluated) <= TRIALS + 1  # (the budget; two workers may race for the last)
    summary = json.loads((tmp_path / "elsewhere" / "results" / "tune.json").read_text())
    assert [worker["status"] for worker in summary["workers"]] == ["done", "done"]
    assert {problem["search"] for problem in summary["problems"]} == {"full"}  # (--no-transfer)

    # Again: with --retune the workers search the cached problems again (their studies' budget is
    # spent, so each re-verifies its winner); without it they take the cached winners.
    def sources(*drop: str) -> set[str]:
        argv = [item.format(tmp=tmp_path) for item in EVERY_OPTION if item not in drop]
        code, out, err = run_cli(capsys, "tune", config, *argv)
        assert code == 0, out + err
        summary = json.loads((tmp_path / "elsewhere" / "results" / "tune.json").read_text())
        return {problem["source"] for problem in summary["problems"]}

    assert sources() == {"tuned"}
    assert sources("--retune") == {"cache"}
