"""Reliability (issue 7): two ``autoconv tune`` processes on one cache and one study
journal at once, and a configuration another live process is evaluating."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess

import optuna
import pytest

from autoconv.backends.fake import FakeBackend
from autoconv.config.budget import Budget
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.search.options import SearchSettings
from autoconv.search.points import config_key
from autoconv.search.study import EVALUATED, study_name
from autoconv.search.tuner import Tuner
from tests.helpers import TWO_PROBLEMS, assert_best_is_cached, fake_env, load_studies, trial_key, tune_argv


@pytest.mark.slow
def test_two_tune_processes_share_one_cache_and_one_journal(tmp_path, seed):
    config = tmp_path / "tune.yaml"
    config.write_text(TWO_PROBLEMS.format(trials=16) + f"seed: {seed % 1000}\n")
    env = fake_env(AUTOCONV_FAKE_DELAY_S="0.03")
    # A shallow pipeline: at the default depth (24) the first process asks all 16 trials of a
    # study before the second has started, and the two never share one.
    argv = [*tune_argv(config), "--pipeline-depth", "4"]
    processes = [subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [process.communicate(timeout=180) for process in processes]
    for process, (out, err) in zip(processes, outputs):
        assert process.returncode == 0, out + err

    studies = load_studies(tmp_path / "state" / "studies.journal")
    assert len(studies) == 2
    owners = set()
    for problem_key, trials in studies.items():
        keys = [trial_key(t) for t in trials if t.user_attrs.get("status") in EVALUATED]
        assert len(keys) == len(set(keys)), f"{problem_key}: both processes evaluated one configuration"
        assert len(keys) >= 16
        owners.add(frozenset(t.user_attrs["owner"] for t in trials if t.user_attrs.get("status") in EVALUATED))
    assert any(len(o) == 2 for o in owners), "the two processes never worked on one study at once"
    cache = tmp_path / "state" / "cache.sqlite"
    assert sqlite3.connect(cache).execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert_best_is_cached(studies, cache)
    assert json.loads((tmp_path / "results" / "tune.json").read_text())["problems"]


def test_a_configuration_another_process_is_evaluating_is_not_evaluated_again(tmp_path):
    # A space of 12 configs, searched to exhaustion: every config but the one a live
    # process (our parent) is evaluating gets evaluated here.
    problem = NamedProblem("tiny", parse_spec("N=1,C=2,H=4,W=4,K=2,R=3,S=3,pad=1"))
    backend = FakeBackend()
    tuner = Tuner(backend, SearchSettings(("direct",), Budget(trials=1000)), storage=str(tmp_path / "studies.journal"))
    study = optuna.create_study(study_name=study_name(problem.problem, backend.identity.gpu_name, ("direct",)),
                                storage=tuner.storage, direction="minimize")
    points = get_family("direct").space.points(problem.problem, H100)
    held = points[len(points) // 2]
    study.enqueue_trial({"family": "direct", **{f"direct.{k}": v for k, v in held.items()}})
    other = study.ask()
    other.set_user_attr("owner", f"{tuner.owner.rpartition(':')[0]}:{os.getppid()}")
    other.suggest_categorical("family", ["direct"])
    for name, choices in get_family("direct").space.params.items():
        other.suggest_categorical(f"direct.{name}", list(choices))
    outcome = tuner.tune_problem(problem)
    assert outcome.stop_reason == "every valid configuration evaluated"
    searched = [config_key(p.family, p.config) for p in backend.evaluated[:-1]]  # (last: re-verification)
    assert len(searched) == len(set(searched)) == len(points) - 1
    assert config_key("direct", held) not in searched
