"""Budgets as ``tune.json`` reports them (issue 65): ``--seconds S`` ends a problem, its winner's
re-verification included, within about one candidate's time of ``S`` (0.2 s candidates ran 6.2 s
for ``--seconds 1``: the pipeline's candidates in flight were all awaited, then the winner's); and a run whose best
is slower than the winner another run cached reports the cached winner, with its own best named
apart.

The command runs in this process on the fake backend (``AUTOCONV_FAKE_DELAY_S``: each candidate's
time). The budget is measured with the tuner's own clock (``wall_s`` in ``tune.json``: from the
study's opening to its winner's caching), so a busy host does not lengthen what is checked beyond
the tuner's own work after the deadline (:data:`MARGIN_S`).
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from optuna.trial import TrialState

from autoconv.cache.winners import WinnerCache
from tests.helpers import ONE_PROBLEM, TWO_PROBLEMS, load_studies, run_cli

CANDIDATE_S = 0.3
SECONDS = 1.0
#: Candidates asked ahead: each one asked is a few journal writes, which a busy host slows.
PIPELINE_DEPTH = 8
#: The tuner's own work after its deadline, beyond the one candidate it may wait for: telling the
#: withdrawn candidates and caching the winner (tens of milliseconds on an idle host).
MARGIN_S = 1.0

#: ``TWO_PROBLEMS`` with a time budget and a seed (``.format(seconds=..., seed=...)``).
SECONDS_CONFIG = TWO_PROBLEMS.replace("{{trials: {trials}}}", "{{seconds: {seconds}}}") + "seed: {seed}\n"


def test_seconds_hold_within_one_candidate_finals_included(tmp_path, monkeypatch, capsys, fake_gpu, seed):
    monkeypatch.setenv("AUTOCONV_FAKE_DELAY_S", str(CANDIDATE_S))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tune.yaml").write_text(SECONDS_CONFIG.format(seconds=SECONDS, seed=seed % 1000))
    code, out, err = run_cli(capsys, "tune", "tune.yaml", "--pipeline-depth", PIPELINE_DEPTH)
    assert code == 0, out + err
    problems = json.loads((tmp_path / "results" / "tune.json").read_text())["problems"]
    assert len(problems) == 2
    for problem in problems:
        assert problem["source"] == "tuned" and problem["stop_reason"] == f"{SECONDS:g} s", problem
        assert problem["wall_s"] <= SECONDS + CANDIDATE_S + MARGIN_S, (problem["name"], problem["wall_s"])
    # No silent loss: the candidates withdrawn at the deadline are ended, saying why, none left running.
    for trials in load_studies(tmp_path / "state" / "studies.journal").values():
        assert not [t for t in trials if t.state is TrialState.RUNNING]
        withdrawn = [t for t in trials if "were spent" in t.user_attrs.get("reason", "")]
        assert all(t.user_attrs["status"] == "abandoned" for t in withdrawn)


def test_tune_json_reports_the_winner_the_cache_holds(tmp_path, monkeypatch, capsys, fake_gpu):
    """Another run cached a faster winner meanwhile (two runs on one cache: the cache keeps the
    fastest): ``tune.json`` says what the cache holds, and this run's own best apart."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tune.yaml").write_text(ONE_PROBLEM)
    code, out, err = run_cli(capsys, "tune", "tune.yaml")
    assert code == 0, out + err
    cache_path = tmp_path / "state" / "cache.sqlite"
    with WinnerCache(cache_path) as cache:
        (ours,) = cache.entries()
        # (the other run's measurement of a kernel: faster than any this run can time)
        cache.put(dataclasses.replace(ours, kernel_name="another_runs_winner", time_ms=ours.time_ms / 2,
                                      tflops=ours.tflops * 2))
    code, out, err = run_cli(capsys, "tune", "tune.yaml", "--retune")
    assert code == 0, out + err
    (problem,) = json.loads((tmp_path / "results" / "tune.json").read_text())["problems"]
    with WinnerCache(cache_path) as cache:
        (held,) = cache.entries()
    assert held.kernel_name == "another_runs_winner"
    assert (problem["kernel_name"], problem["time_ms"], problem["tflops"]) == (held.kernel_name, held.time_ms,
                                                                             held.tflops)
    best = problem["this_run_best"]
    assert best["kernel_name"] == ours.kernel_name and best["time_ms"] == pytest.approx(ours.time_ms)
    assert "cached by another run" in problem["message"]
