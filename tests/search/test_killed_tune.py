"""Reliability (issue 7): ``autoconv tune`` killed with SIGKILL at random moments, then
re-run: no completed trial is repeated, no cached winner is lost, the cache ends with each
study's best, and no half-written file or stray process is left.

The real command runs in subprocesses with the fake backend (``AUTOCONV_BACKEND=fake``:
deterministic synthetic timings; ``AUTOCONV_FAKE_DELAY_S`` makes each candidate take a
while, so that there is something to kill). Kill moments come from the ``seed`` fixture
and are printed (``pytest -s``; ``AUTOCONV_TEST_SEED`` repeats a run). The GPU test kills
a real tune (its GPU worker and compilers) on the device.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import time

import optuna
import pytest
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState

from autoconv.cache.winners import WinnerCache
from autoconv.search.finish import REVERIFY_CANDIDATES
from autoconv.search.points import config_key
from autoconv.search.study import EVALUATED
from tests.helpers import (
    ONE_PROBLEM,
    STATE_FILES,
    THREE_PROBLEMS,
    alive,
    assert_best_is_cached,
    cache_times,
    completed,
    descendants,
    fake_env,
    load_studies,
    repo_env,
    trial_key,
    tune_argv,
)


@pytest.mark.slow
def test_tune_killed_at_random_moments_resumes_without_repeats_or_losses(tmp_path, seed):
    kills, trials = 4, 10
    rng = random.Random(seed)
    config = tmp_path / "tune.yaml"
    config.write_text(THREE_PROBLEMS.format(trials=trials, seed=seed % 1000))
    cache, journal = tmp_path / "state" / "cache.sqlite", tmp_path / "state" / "studies.journal"
    # 0.1 s per candidate: a full run is about 1 s of start-up and enumeration, then 1 s
    # of trials per problem; kills land in start-up, in a search, or between winners.
    env = fake_env(AUTOCONV_FAKE_DELAY_S="0.1")
    moments = [round(rng.uniform(0.5, 4.0), 2) for _ in range(kills)]
    print(f"\nSIGKILL moments, seconds after each start: {moments}")

    started = time.monotonic()
    snapshots, completed_before, log = [], set(), []
    for moment in moments:
        with open(tmp_path / "stderr.txt", "w") as stderr:
            process = subprocess.Popen(tune_argv(config), cwd=tmp_path, env=env,
                                       stdout=subprocess.DEVNULL, stderr=stderr)
            try:
                process.wait(timeout=moment)
                assert process.returncode == 0, (tmp_path / "stderr.txt").read_text()
                log.append(f"{moment} s: finished first")
            except subprocess.TimeoutExpired:
                children = descendants(process.pid)
                process.send_signal(signal.SIGKILL)
                process.wait(timeout=30)
                assert process.returncode == -signal.SIGKILL
                deadline = time.monotonic() + 10
                while any(alive(pid) for pid in children) and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert not [pid for pid in children if alive(pid)], "a killed tune left processes behind"
        snapshots.append(cache_times(cache))
        studies = load_studies(journal)
        completed_before |= {(key, trial_key(t)) for key, trials_ in studies.items() for t in completed(trials_)}
        log.append(f"{moment} s: {sum(len(completed(t)) for t in studies.values())} trials completed, "
                   f"{len(snapshots[-1])} winners cached")
    print("\n".join(log))

    final = subprocess.run(tune_argv(config), cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=120)
    assert final.returncode == 0, final.stdout + final.stderr
    assert "Traceback" not in final.stderr
    print(f"{kills} kills and the final run took {time.monotonic() - started:.1f} s")

    studies = load_studies(journal)
    assert len(studies) == 3
    for problem_key, trials_ in studies.items():
        evaluated = [t for t in trials_ if t.user_attrs.get("status") in EVALUATED]
        assert len(evaluated) == trials, problem_key  # abandoned trials do not count
        keys = [trial_key(t) for t in completed(trials_)]
        assert len(keys) == len(set(keys)), f"{problem_key}: a completed configuration ran again"
        for trial in trials_:
            if trial.state == TrialState.RUNNING:
                # Only a trial asked for in the instant before a kill and never claimed.
                assert "owner" not in trial.user_attrs and not trial.params, trial
        assert sum(t.state == TrialState.RUNNING for t in trials_) <= kills
    final_completed = {(key, trial_key(t)) for key, trials_ in studies.items() for t in completed(trials_)}
    assert completed_before <= final_completed, "completed trials were lost"

    after = cache_times(cache)
    for snapshot in snapshots:  # every winner cached before a kill is still there
        for problem_key, time_ms in snapshot.items():
            assert after[problem_key] <= time_ms
    assert_best_is_cached(studies, cache)

    assert {p.name for p in cache.parent.iterdir()} <= STATE_FILES
    assert [p.name for p in (tmp_path / "results").iterdir()] == ["tune.json"]
    summary = json.loads((tmp_path / "results" / "tune.json").read_text())
    assert [p["name"] for p in summary["problems"]] == ["odd", "pointwise", "tall"]
    assert all(p["time_ms"] > 0 for p in summary["problems"])


@pytest.mark.slow
@pytest.mark.gpu
def test_tune_on_the_gpu_killed_mid_search_resumes_and_leaves_no_process(tmp_path, seed):
    config = tmp_path / "tune.yaml"
    config.write_text(ONE_PROBLEM.replace("budget: {trials: 3}", "budget: {trials: 8}")
                      .replace("families: [direct]", "families: [direct, implicit_gemm]") + f"seed: {seed % 1000}\n")
    journal, cache = tmp_path / "state" / "studies.journal", tmp_path / "state" / "cache.sqlite"
    env = repo_env()
    env.pop("AUTOCONV_BACKEND", None)
    process = subprocess.Popen(tune_argv(config), cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None:  # kill after 2 trials are done
        if sum(len(completed(t)) for t in load_studies(journal).values()) >= 2:
            break
        time.sleep(0.2)
    assert process.poll() is None, "the run ended before it could be killed"
    helpers = descendants(process.pid)  # the GPU worker and the NVRTC compilers
    assert helpers
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    deadline = time.monotonic() + 20
    while any(alive(pid) for pid in helpers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in helpers if alive(pid)], "a killed tune left its GPU worker or compilers"
    before = {trial_key(t) for trials in load_studies(journal).values() for t in completed(trials)}

    final = subprocess.run(tune_argv(config), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stdout + final.stderr
    studies = load_studies(journal)
    keys = [trial_key(t) for trials in studies.values() for t in completed(trials)]
    assert len(keys) == len(set(keys)) and before <= set(keys)
    evaluated = [t for trials in studies.values() for t in trials if t.user_attrs.get("status") in EVALUATED]
    assert len(evaluated) == 8, "trials (number, state, status, owner, reason):\n" + "\n".join(
        f"  {t.number} {t.state.name} {t.user_attrs.get('status')} {t.user_attrs.get('owner')} "
        f"{str(t.user_attrs.get('reason', ''))[:120]}" for trials in studies.values() for t in trials)
    with WinnerCache(cache) as winners:
        entry, = winners.entries()
    # The winner is re-timed in full on the GPU, where near-equal candidates may swap: the study
    # says which trial won, and it is one of the fastest that finish() re-times, cached as it is.
    storage = JournalStorage(JournalFileBackend(str(journal)))
    study_name, = optuna.get_all_study_names(storage)
    winner = optuna.load_study(study_name=study_name, storage=storage).user_attrs["winner"]
    ranked = sorted(completed(next(iter(studies.values()))), key=lambda t: t.value)
    won = next(t for t in ranked if t.number == winner["trial"])
    assert won in ranked[:REVERIFY_CANDIDATES]
    # (its time is the cache's own: a later re-timing may replace it, never the configuration)
    assert config_key(entry.family, entry.config) == trial_key(won) and entry.kernel_name == winner["kernel_name"]
    assert {p.name for p in cache.parent.iterdir()} <= STATE_FILES
