"""Several workers tuning together (``autoconv tune --gpus``, or the same command on
several hosts sharing a database), without a GPU: the fake backend stands in for each
GPU. Storages: the default journal file, an SQLite URL, and a real PostgreSQL server
when ``$AUTOCONV_TEST_POSTGRES_URL`` names one (``.ci/run`` starts one with
``.ci/postgres``)."""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from autoconv.cache.winners import WinnerCache
from autoconv.errors import AutoconvError
from autoconv.problems.problem import parse_spec
from autoconv.search.fleet import parse_gpus
from autoconv.search.options import SearchSettings
from autoconv.search.outcome import MILESTONES, Milestones, ProblemOutcome, merge_outcomes
from autoconv.search.points import config_key
from autoconv.search.study import EVALUATED, config_of
from tests.helpers import TWO_PROBLEMS, repo_env, run_cli

# ---- --gpus and merging ------------------------------------------------------------------

def test_gpus_are_all_or_distinct_existing_indices():
    assert parse_gpus("all", available=3) == [0, 1, 2]
    assert parse_gpus(" 2, 0 ", available=3) == [2, 0]
    for text, fragment in [("0,0", "listed twice"), ("0,4", "no device 4 on this host (3 GPUs: 0, 1, 2)"),
                           ("one", "'one' is not a device index"), ("0,,1", "'' is not a device index"),
                           ("-1", "'-1' is not a device index")]:
        with pytest.raises(AutoconvError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
            parse_gpus(text, available=3)


def test_merged_outcome_is_the_fastest_winner_with_the_work_of_all():
    problem = parse_spec("N=1,C=8,H=9,W=9,K=12,R=1,S=1")
    slow = ProblemOutcome(name="p", problem=problem, source="tuned", family="direct", time_ms=2.0, tflops=1.0,
                          trials_run=7, trials_total=20, failures={"compile_failed": 1}, compile_s=3.0,
                          gpu_s=1.0, compile_queue_s=2.0, gpu_queue_s=0.25, wall_s=5.0,
                          phases_s={"ask": 1.0, "wait": 3.5, "finish": 0.5})
    fast = dataclasses.replace(slow, family="im2col_gemm", time_ms=1.5, trials_run=13, failures={
        "compile_failed": 2, "wrong_result": 1}, gpu_queue_s=0.5, wall_s=4.0, phases_s={"start": 0.5, "wait": 3.5})
    merged = merge_outcomes([slow, fast])
    assert (merged.family, merged.time_ms, merged.trials_run, merged.trials_total) == ("im2col_gemm", 1.5, 20, 20)
    assert merged.failures == {"compile_failed": 3, "wrong_result": 1}
    assert (merged.compile_s, merged.gpu_s, merged.wall_s, merged.workers) == (6.0, 2.0, 5.0, 2)
    assert (merged.compile_queue_s, merged.gpu_queue_s) == (4.0, 0.75)
    # every process's time by phase, added up (each worker spent it)
    assert merged.phases_s == {"start": 0.5, "ask": 1.0, "wait": 7.0, "record": 0.0, "finish": 0.5}


def test_milestones_count_from_the_runs_start_and_come_out_in_their_order():
    milestones = Milestones(started_at=1000.0)
    milestones.mark("tuned", at=1012.5)
    milestones.mark("process", at=1000.25)
    assert milestones.in_order() == {"process": 0.25, "tuned": 12.5}
    with pytest.raises(ValueError, match="unknown milestone 'begun'"):
        milestones.mark("begun")


def test_passes_one_after_another_merge_into_the_last_winner_with_the_work_of_both():
    """A problem tuned again in one process (a dead worker's trials): the second pass
    re-verified the study's best, so its winner stands even when it was timed slower."""
    problem = parse_spec("N=1,C=8,H=9,W=9,K=12,R=1,S=1")
    first = ProblemOutcome(name="p", problem=problem, source="tuned", family="direct", time_ms=1.5, tflops=1.0,
                           trials_run=7, trials_total=7, invalid=2, repeats=1, failures={"compile_failed": 1},
                           compile_s=3.0, gpu_s=1.0, wall_s=5.0, stop_reason="7 trials")
    second = dataclasses.replace(first, family="im2col_gemm", time_ms=2.0, trials_run=1, trials_total=8,
                                 invalid=0, repeats=3, failures={"wrong_result": 1}, wall_s=0.5,
                                 stop_reason="8 trials")
    merged = merge_outcomes([first, second], parallel=False)
    assert (merged.family, merged.time_ms, merged.trials_total, merged.stop_reason) == \
        ("im2col_gemm", 2.0, 8, "8 trials")
    assert (merged.trials_run, merged.invalid, merged.repeats) == (8, 2, 4)
    assert merged.failures == {"compile_failed": 1, "wrong_result": 1}
    assert (merged.compile_s, merged.gpu_s, merged.wall_s, merged.workers) == (6.0, 2.0, 5.5, 1)
    # A second pass without a winner keeps the first's.
    lost = dataclasses.replace(second, time_ms=None, family=None, source="none")
    assert merge_outcomes([first, lost], parallel=False).family == "direct"


@pytest.mark.parametrize("parallel", [False, True])
def test_a_merged_outcome_says_the_most_sampled_search_of_its_passes(parallel):
    """(A full study revisited at the run's end by a transfer pass, or joined by a worker once the
    history was enough, was searched full.)"""
    problem = parse_spec("N=1,C=8,H=9,W=9,K=12,R=1,S=1")
    full = ProblemOutcome(name="p", problem=problem, source="tuned", family="direct", time_ms=1.5, search="full")
    converted = dataclasses.replace(full, search="full, then transfer")
    transferred = dataclasses.replace(full, time_ms=1.4, search="transfer")
    assert merge_outcomes([full, transferred], parallel=parallel).search == "full"
    assert merge_outcomes([transferred, converted], parallel=parallel).search == "full, then transfer"
    assert merge_outcomes([transferred, transferred], parallel=parallel).search == "transfer"
    unsearched = dataclasses.replace(full, search="")  # (no valid configuration: no study)
    assert merge_outcomes([unsearched], parallel=parallel).search == ""


# ---- the workers' messages -----------------------------------------------------------------

def test_worker_messages_update_the_parents_view_of_the_worker():
    import pickle
    import queue

    from autoconv.backends.base import Status, TrialResult
    from autoconv.kernels.families import get_family
    from autoconv.kernels.limits import H100
    from autoconv.problems.models import NamedProblem
    from autoconv.search.fleet import FleetReporter, WorkerState, _apply
    from autoconv.search.fleet_worker import QueueReporter, WorkerDone, WorkerFailed, WorkerStarted

    class Recorder(FleetReporter):
        def __init__(self):
            self.notes, self.updates = [], 0

        def note(self, text):
            self.notes.append(text)

        def worker_update(self, worker):
            self.updates += 1

    item = NamedProblem("p", parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1"))
    plan = get_family("direct").plan(item.problem, get_family("direct").space.default_config(item.problem, H100), H100)
    best = TrialResult(status=Status.OK, time_ms=0.25, tflops=3.5)
    events = queue.Queue()
    sender = QueueReporter(events, worker=1)
    events.put(WorkerStarted(1, "Fake GPU (sm_90)"))
    sender.problem_started(item, "study", 4, None)
    sender.trial_finished(item, 5, plan, TrialResult(status=Status.TIMEOUT), None, 5)
    sender.trial_finished(item, 6, plan, best, best, 6)
    outcome = ProblemOutcome(name="p", problem=item.problem, source="tuned", time_ms=0.25)
    sender.problem_finished(outcome)
    sender.note("hello")
    events.put(WorkerDone(1, [outcome]))

    worker, finished_by, reporter = WorkerState(worker=1, device=0, process=None, label="GPU 0 #2"), {}, Recorder()
    seen = []
    while not events.empty():
        message = events.get()
        assert pickle.loads(pickle.dumps(message)) == message  # they cross a process boundary
        _apply(message, {1: worker}, finished_by, reporter, set())
        seen.append((worker.gpu, worker.problem, worker.evaluated, worker.best))
    assert seen[:4] == [("Fake GPU (sm_90)", "", 0, "best: -"), ("Fake GPU (sm_90)", "p", 4, "best: -"),
                        ("Fake GPU (sm_90)", "p", 5, "best: -"),
                        ("Fake GPU (sm_90)", "p", 6, "best 0.2500 ms (3.5 TFLOP/s)")]
    assert finished_by == {"p": {1: outcome}} and worker.finished == {"p"} and worker.problem == ""
    assert reporter.notes == ["GPU 0 #2: hello"] and reporter.updates == 7
    assert worker.status == "done" and worker.outcomes == [outcome]

    _apply(WorkerFailed(1, "boom"), {1: worker}, finished_by, reporter, set())
    assert worker.error == "boom" and reporter.notes[-1] == "GPU 0 #2: failed: boom"
    with pytest.raises(TypeError, match="not a worker message"):
        _apply(("note", 1, "an old tuple"), {1: worker}, finished_by, reporter, set())


def test_a_note_said_once_a_run_is_said_by_the_first_worker_only():
    from autoconv.search.fleet import FleetReporter, WorkerState, _apply
    from autoconv.search.fleet_worker import WorkerNote

    class Recorder(FleetReporter):
        def __init__(self):
            self.notes = []

        def note(self, text):
            self.notes.append(text)

    workers = {number: WorkerState(worker=number, device=0, process=None, label=f"GPU 0 #{number}")
               for number in (1, 2)}
    reporter, said_once = Recorder(), set()
    for message in [WorkerNote(2, "b: full, reason x", once="x"), WorkerNote(1, "a: full, reason x", once="x"),
                    WorkerNote(1, "c: full, reason y", once="y"), WorkerNote(2, "plain"), WorkerNote(1, "plain")]:
        _apply(message, workers, {}, reporter, said_once)
    assert reporter.notes == ["GPU 0 #2: b: full, reason x", "GPU 0 #1: c: full, reason y",
                              "GPU 0 #2: plain", "GPU 0 #1: plain"]


# ---- storages ----------------------------------------------------------------------------

@pytest.fixture
def postgres_url(postgres_databases):
    """A fresh database on the test server (see conftest), dropped afterwards."""
    return postgres_databases()


@pytest.fixture(params=["journal", "postgresql"])
def storage(request, tmp_path):
    if request.param == "journal":
        return str(tmp_path / "state" / "studies.journal")
    return request.getfixturevalue("postgres_url")


def fake_environment(**extra) -> dict:
    return repo_env(AUTOCONV_BACKEND="fake", AUTOCONV_FAKE_DEVICES="2", **extra)


def studies(storage_url: str) -> dict[str, list]:
    """Every study's trials, by the problem it tunes."""
    import optuna

    from autoconv.search.storage import make_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    opened = make_storage(storage_url)
    return {summary.user_attrs["problem"]: optuna.load_study(study_name=summary.study_name, storage=opened).trials
            for summary in optuna.get_all_study_summaries(opened)}


def check_shared_studies(storage_url: str, trials: int, workers: int, all_busy: bool = True) -> dict[str, float]:
    """Each study: ``trials`` evaluated (the budget, plus at most one per extra worker
    that raced for the last), no configuration evaluated twice, none left running, and
    (with ``all_busy``) trials from several workers. Returns each problem's best."""
    from optuna.trial import TrialState

    best = {}
    for problem, all_trials in studies(storage_url).items():
        evaluated = [t for t in all_trials if t.user_attrs.get("status") in EVALUATED]
        keys = [config_key(t.params["family"], config_of(t.params, t.params["family"])) for t in evaluated]
        duplicates = [key for key, count in collections.Counter(keys).items() if count > 1]
        assert not duplicates, f"{problem}: evaluated twice: {duplicates}"
        assert trials <= len(evaluated) <= trials + workers - 1, (problem, len(evaluated))
        assert not [t.number for t in all_trials if t.state == TrialState.RUNNING], problem
        owners = {t.user_attrs["owner"] for t in evaluated}
        if workers > 1 and all_busy:
            assert len(owners) >= 2, f"{problem}: one worker did everything ({owners})"
        best[problem] = min(t.value for t in all_trials if t.state == TrialState.COMPLETE)
    return best


# ---- autoconv tune --gpus ------------------------------------------------------------------

@pytest.mark.slow
def test_two_workers_tune_a_config_together_and_the_cache_keeps_the_best(tmp_path, storage):
    (tmp_path / "tune.yaml").write_text(TWO_PROBLEMS.format(trials=24))
    command = [sys.executable, "-m", "autoconv", "tune", "tune.yaml", "--gpus", "all", "--storage", storage]
    done = subprocess.run(command, cwd=tmp_path, env=fake_environment(AUTOCONV_FAKE_DELAY_S=0.02),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "on 2 GPUs (0, 1)" in done.stderr and "Traceback" not in done.stderr + done.stdout
    # The workers start on different problems (and may meet on one): no configuration
    # twice, the budget kept, both workers busy.
    best = check_shared_studies(storage, trials=24, workers=2, all_busy=False)
    owners = {t.user_attrs["owner"] for trials in studies(storage).values() for t in trials
              if t.user_attrs.get("status") in EVALUATED}
    assert len(owners) == 2, owners

    # The config names a cache file: the winners went there, the best of both workers.
    with WinnerCache(tmp_path / "state" / "cache.sqlite") as cache:
        entries = {entry.key.problem_key: entry for entry in cache.entries()}
    assert set(entries) == set(best)
    for problem, entry in entries.items():
        assert entry.time_ms == pytest.approx(best[problem]), problem  # the fake timings repeat exactly
    summary = json.loads((tmp_path / "results" / "tune.json").read_text())
    assert summary["gpus"] == [0, 1] and [w["status"] for w in summary["workers"]] == ["done", "done"]
    assert all(p["trials_run"] >= 24 for p in summary["problems"])


@pytest.mark.slow
def test_two_workers_share_one_gpu(tmp_path):
    """``--workers-per-gpu 2`` on a one-GPU host: two worker processes tune the config together,
    as workers on two GPUs do, and the summary names them."""
    (tmp_path / "tune.yaml").write_text(TWO_PROBLEMS.format(trials=24))
    storage = str(tmp_path / "studies.journal")
    command = [sys.executable, "-m", "autoconv", "tune", "tune.yaml", "--workers-per-gpu", "2", "--storage", storage]
    env = repo_env(AUTOCONV_BACKEND="fake", AUTOCONV_FAKE_DEVICES="1", AUTOCONV_FAKE_DELAY_S="0.02")
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "on 1 GPU (0, 2 workers each)" in done.stderr and "Traceback" not in done.stderr + done.stdout
    check_shared_studies(storage, trials=24, workers=2, all_busy=False)
    owners = {t.user_attrs["owner"] for trials in studies(storage).values() for t in trials
              if t.user_attrs.get("status") in EVALUATED}
    assert len(owners) == 2, owners
    summary = json.loads((tmp_path / "results" / "tune.json").read_text())
    assert summary["gpus"] == [0] and summary["workers_per_gpu"] == 2
    assert [(w["name"], w["gpu"], w["status"]) for w in summary["workers"]] == [("GPU 0 #1", 0, "done"),
                                                                               ("GPU 0 #2", 0, "done")]
    # each worker's moments, from the command's start: all of them, in order, within the run
    for worker in summary["workers"]:
        moments = worker["milestones_s"]
        assert list(moments) == list(MILESTONES), moments
        assert moments["process"] <= moments["backend"] <= moments["first_submit"] < moments["last_result"]
        assert moments["storage"] <= moments["first_submit"] and moments["last_result"] <= moments["tuned"]
        assert 0 < moments["process"] and moments["tuned"] <= moments["closed"] <= summary["wall_s"] + 0.5


@pytest.mark.slow
def test_workers_are_told_to_transfer(tmp_path):
    """``--transfer`` reaches the worker processes' tuners: with no history they say why their
    studies are full ones, each reason once however many workers meet it."""
    (tmp_path / "tune.yaml").write_text(TWO_PROBLEMS.format(trials=8))
    command = [sys.executable, "-m", "autoconv", "tune", "tune.yaml", "--workers-per-gpu", "2", "--transfer",
               "--storage", str(tmp_path / "studies.journal")]
    env = repo_env(AUTOCONV_BACKEND="fake", AUTOCONV_FAKE_DEVICES="1")
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    said = " ".join(done.stderr.split())
    assert "a full study, not a transfer: the tuning history" in said
    for reason in ("models none of its kernel families", "fewer than the 8 tuned problems"):
        assert said.count(reason) <= 1, said
    summary = json.loads((tmp_path / "results" / "tune.json").read_text())
    assert summary["transfer"] is True and {p["search"] for p in summary["problems"]} == {"full"}


def test_workers_per_gpu_must_be_positive(tmp_path, capsys):
    (tmp_path / "tune.yaml").write_text(TWO_PROBLEMS.format(trials=4))
    code, _, err = run_cli(capsys, "tune", str(tmp_path / "tune.yaml"), "--workers-per-gpu", "0")
    assert code != 0 and "--workers-per-gpu=0: give 1 to 64 worker processes per GPU" in err


@pytest.mark.slow
def test_workers_on_one_problem_spread_its_trials(tmp_path, storage):
    """With fewer problems than workers, they all tune the same study together."""
    config = TWO_PROBLEMS.format(trials=30)
    config = config[:config.index("  - name: pointwise")] + config[config.index("families:"):]
    (tmp_path / "tune.yaml").write_text(config)
    command = [sys.executable, "-m", "autoconv", "tune", "tune.yaml", "--gpus", "0,1", "--storage", storage]
    done = subprocess.run(command, cwd=tmp_path, env=fake_environment(AUTOCONV_FAKE_DELAY_S=0.05),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "after 30 trials by 2 workers" in done.stderr or "after 31 trials by 2 workers" in done.stderr, done.stderr
    check_shared_studies(storage, trials=30, workers=2, all_busy=True)


def test_an_sqlite_url_is_refused_for_several_workers(tmp_path):
    (tmp_path / "tune.yaml").write_text(TWO_PROBLEMS.format(trials=4))
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    command = [sys.executable, "-m", "autoconv", "tune", "tune.yaml", "--gpus", "0,1", "--storage", url]
    done = subprocess.run(command, cwd=tmp_path, env=fake_environment(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"--storage {url}: several workers cannot share an SQLite database" in done.stderr
    assert "journal file" in done.stderr and "postgresql" in done.stderr


@pytest.mark.slow
def test_killing_a_worker_loses_nothing(tmp_path, postgres_url):
    """SIGKILL one of two workers while it evaluates: the other finishes every problem,
    the killed worker's running trials are failed and their configurations evaluated by
    the survivor, and the summary says what happened."""
    (tmp_path / "tune.yaml").write_text(TWO_PROBLEMS.format(trials=40))
    command = [sys.executable, "-m", "autoconv", "tune", "tune.yaml", "--gpus", "0,1", "--storage", postgres_url]
    process = subprocess.Popen(command, cwd=tmp_path, env=fake_environment(AUTOCONV_FAKE_DELAY_S=0.1),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        victim = _wait_for_two_owners(postgres_url, timeout_s=120)
        os.kill(victim, signal.SIGKILL)
        out, err = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err[-3000:]
    assert "exit code -9" in err and "retried by the others" in err, err[-3000:]
    check_shared_studies(postgres_url, trials=40, workers=2, all_busy=False)
    abandoned = 0
    for problem, trials in studies(postgres_url).items():
        retried = {t.user_attrs.get("origin") for t in trials}
        for trial in trials:
            if trial.user_attrs.get("status") == "abandoned":
                abandoned += 1
                # (a trial killed before its first suggestion has no configuration to retry)
                assert not trial.params or f"retry of trial {trial.number} (abandoned)" in retried, problem
    assert abandoned, "the killed worker had a trial running: it must be failed as abandoned"
    summary = json.loads((tmp_path / "results" / "tune.json").read_text())
    assert sorted(w["status"] for w in summary["workers"]) == ["done", "failed"]
    assert all(p["time_ms"] for p in summary["problems"])


def _wait_for_two_owners(storage_url: str, timeout_s: float) -> int:
    """The pid of one of two workers, once both have evaluated trials and it is busy."""
    from optuna.trial import TrialState

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            all_trials = [t for trials in studies(storage_url).values() for t in trials]
        except Exception:  # the tables are not there yet
            all_trials = []
        owners = {t.user_attrs.get("owner") for t in all_trials if t.user_attrs.get("status") in EVALUATED}
        running = [t.user_attrs.get("owner") for t in all_trials if t.state == TrialState.RUNNING
                   and t.user_attrs.get("owner") in owners]
        if len(owners) >= 2 and running:
            return int(running[0].rpartition(":")[2])
        time.sleep(0.2)
    raise AssertionError("the two workers never both evaluated trials")


# ---- heartbeats (workers on other hosts) ------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite-url", "postgresql"])
def test_a_trial_whose_heartbeat_stopped_is_failed_and_retried(kind, tmp_path, monkeypatch, request):
    """A worker on another host (its process id means nothing here) is known dead only by
    its heartbeats: after the grace period its trial is failed and its configuration
    enqueued again."""
    import optuna
    from optuna.trial import TrialState

    from autoconv.backends.fake import FakeBackend
    from autoconv.config.budget import Budget
    from autoconv.search.optuna_adapter import trial_id
    from autoconv.search.storage import HEARTBEAT_GRACE_INTERVALS, make_storage
    from autoconv.search.tuner import Tuner

    url = f"sqlite:///{tmp_path / 'studies.db'}" if kind == "sqlite-url" else request.getfixturevalue("postgres_url")
    monkeypatch.setenv("AUTOCONV_HEARTBEAT_S", "1")
    storage = make_storage(url)
    study = optuna.create_study(study_name="s", storage=storage)
    lost = study.ask()
    lost.suggest_categorical("family", ["direct", "im2col_gemm"])
    lost.set_user_attr("owner", "elsewhere[0123abcd]:4242")
    storage.record_heartbeat(trial_id(storage, study, lost.number))
    alive = study.ask()
    alive.suggest_categorical("family", ["direct", "im2col_gemm"])
    alive.set_user_attr("owner", "elsewhere[0123abcd]:4343")

    tuner = Tuner(FakeBackend(), SearchSettings(["direct"], Budget(trials=1)), storage=storage)
    tuner.liveness.fail_abandoned(study, force=True)
    assert study.trials[lost.number].state == TrialState.RUNNING  # within its grace period
    time.sleep(HEARTBEAT_GRACE_INTERVALS * 1 + 1.5)
    storage.record_heartbeat(trial_id(storage, study, alive.number))
    tuner.liveness.fail_abandoned(study, force=True)
    trials = study.trials
    assert trials[lost.number].state == TrialState.FAIL
    assert trials[alive.number].state == TrialState.RUNNING  # its heartbeat is fresh
    retries = [t for t in trials if t.state == TrialState.WAITING]
    # (an enqueued trial holds its params as fixed params until it is asked for)
    assert [(t.system_attrs["fixed_params"], t.user_attrs["retries"]) for t in retries] == \
        [(trials[lost.number].params, 1)]
    assert "heartbeats" in retries[0].user_attrs["origin"]


@pytest.mark.slow
def test_the_trials_this_process_evaluates_keep_beating(tmp_path, monkeypatch):
    """:class:`autoconv.search.liveness.Liveness` beats for the trials it evaluates (in a
    thread, by trial number: no private trial ids), so they outlive the grace period a
    silent trial does not; once done, a trial is no longer this process's to keep."""
    import optuna
    from optuna.trial import TrialState

    from autoconv.search import optuna_adapter
    from autoconv.search.liveness import Liveness
    from autoconv.search.storage import HEARTBEAT_GRACE_INTERVALS, make_storage

    monkeypatch.setenv("AUTOCONV_HEARTBEAT_S", "1")
    storage = make_storage(f"sqlite:///{tmp_path / 'studies.db'}")
    study = optuna.create_study(study_name="s", storage=storage)
    liveness = Liveness(storage, "host[0123abcd]:1")
    assert liveness.heartbeat.enabled and liveness.heartbeat.interval_s == 1.0
    beating, silent = study.ask(), study.ask()
    for trial, owner in ((beating, liveness.owner), (silent, "elsewhere[0123abcd]:4242")):
        trial.suggest_categorical("family", ["direct"])
        trial.set_user_attr("owner", owner)
    liveness.evaluating(study, beating.number)
    optuna_adapter.record_heartbeat(storage, optuna_adapter.trial_id(storage, study, silent.number))
    time.sleep(HEARTBEAT_GRACE_INTERVALS * 1 + 1.5)
    assert liveness.fail_abandoned(study, force=True) == 1
    states = {t.number: t.state for t in study.trials}
    assert states[beating.number] == TrialState.RUNNING and states[silent.number] == TrialState.FAIL
    liveness.done(study, beating.number)  # (not told: as if this process had lost it)
    assert liveness.fail_abandoned(study, force=True) == 1  # an earlier run's, now
    assert study.trials[beating.number].user_attrs["status"] == "abandoned"


@pytest.mark.slow
def test_a_database_storage_holds_the_winners_too(tmp_path, postgres_url):
    """With ``--storage URL`` and no cache named anywhere, the winners go into the same
    database: every host sharing the studies then shares the winners."""
    config = TWO_PROBLEMS.format(trials=6).replace("cache: state/cache.sqlite\n", "")
    (tmp_path / "tune.yaml").write_text(config)
    command = [sys.executable, "-m", "autoconv", "tune", "tune.yaml", "--gpus", "all", "--storage", postgres_url]
    environment = fake_environment(AUTOCONV_CACHE=tmp_path / "never-used.sqlite")
    done = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    best = check_shared_studies(postgres_url, trials=6, workers=2, all_busy=False)
    with WinnerCache(postgres_url) as cache:
        assert {e.key.problem_key: e.time_ms for e in cache.entries()} == pytest.approx(best)
    assert not (tmp_path / "never-used.sqlite").exists()


@pytest.mark.slow
def test_two_hosts_running_the_same_command_cooperate(tmp_path, postgres_url):
    """Two independent ``autoconv tune`` processes (as on two hosts) against one database:
    every study's budget kept, no configuration evaluated twice, both contributed, and the
    winners in the shared database are the best of both."""
    config = TWO_PROBLEMS.format(trials=20).replace("cache: state/cache.sqlite\n", "")
    (tmp_path / "tune.yaml").write_text(config)
    command = [sys.executable, "-m", "autoconv", "tune", "tune.yaml", "--storage", postgres_url]
    environment = fake_environment(AUTOCONV_FAKE_DELAY_S=0.05, AUTOCONV_CACHE=tmp_path / "never-used.sqlite")
    hosts = [subprocess.Popen(command, cwd=tmp_path, env=environment, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for host in hosts:
        out, err = host.communicate(timeout=300)
        assert host.returncode == 0, err[-3000:]
    best = check_shared_studies(postgres_url, trials=20, workers=2, all_busy=False)
    owners = {t.user_attrs["owner"] for trials in studies(postgres_url).values() for t in trials
              if t.user_attrs.get("status") in EVALUATED}
    assert len(owners) == 2, owners
    with WinnerCache(postgres_url) as cache:
        assert {e.key.problem_key: e.time_ms for e in cache.entries()} == pytest.approx(best)


def test_default_workers_per_gpu_follows_the_cores(monkeypatch):
    from autoconv.search import fleet

    monkeypatch.setenv("AUTOCONV_BACKEND", "cupy")
    monkeypatch.setattr(fleet, "device_count", lambda: 2)
    journal = "studies.journal"
    assert fleet.default_workers_per_gpu(1, journal, cores=16) == 3
    assert fleet.default_workers_per_gpu(2, journal, cores=32) == 3
    assert fleet.default_workers_per_gpu(1, journal, cores=64) == fleet.MAX_WORKERS_PER_GPU
    assert fleet.default_workers_per_gpu(1, journal, cores=2) == 1
    assert fleet.default_workers_per_gpu(2, journal, cores=16) == 1
    # Where several workers cannot work: SQLite storage, the fake backend, no GPU.
    assert fleet.default_workers_per_gpu(1, "sqlite:///studies.db", cores=16) == 1
    monkeypatch.setattr(fleet, "device_count", lambda: (_ for _ in ()).throw(
        fleet.BackendUnavailable("no GPU")))
    assert fleet.default_workers_per_gpu(1, journal, cores=16) == 1
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")
    monkeypatch.setattr(fleet, "device_count", lambda: 1)
    assert fleet.default_workers_per_gpu(1, journal, cores=16) == 1


def test_a_worker_reads_a_journal_in_a_thread_and_opens_a_database_in_its_own(tmp_path, monkeypatch):
    """A journal's records load beside the GPU worker's start; a database storage opens in the
    worker's main thread: in a thread of its own it imported SQLAlchemy while the winners' cache
    did, and the worker saw a module of it partly initialized (seen in CI)."""
    import concurrent.futures
    import threading

    from autoconv.search import fleet_worker
    from autoconv.search.outcome import Reporter

    opened_in = {}

    def make_storage(storage, on_repair=None):
        opened_in[str(storage)] = threading.current_thread().name
        return storage

    monkeypatch.setattr(fleet_worker, "make_storage", make_storage)
    journal, database = str(tmp_path / "studies.journal"), "postgresql+psycopg://user@host/db"
    with concurrent.futures.ThreadPoolExecutor(1, "loader") as loader:
        assert fleet_worker._load_storage(loader, journal, Reporter()).result() == journal
        assert fleet_worker._load_storage(loader, database, Reporter()).result() == database
    assert opened_in[journal].startswith("loader") and opened_in[database] == threading.current_thread().name


def test_a_worker_line_shows_the_problem_it_began_last_of_the_two_it_tunes():
    """A worker's tuner begins its next study while one waits on its last candidates: the line
    follows the one begun last, and falls back to the other when it ends first."""
    from autoconv.search.fleet import FleetReporter, WorkerState, _apply
    from autoconv.search.fleet_worker import ProblemFinished, ProblemStarted, TrialFinished

    worker, finished_by = WorkerState(worker=1, device=0, process=None), {}
    first, second = ProblemOutcome(name="a", problem=parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1")), \
        ProblemOutcome(name="b", problem=parse_spec("N=1,C=4,H=9,W=9,K=8,R=3,S=3,pad=1"))

    def line():
        return worker.problem, worker.evaluated, worker.best

    for message, shown in [
            (ProblemStarted(1, "a", 0), ("a", 0, "best: -")),
            (TrialFinished(1, "a", "direct", True, 0.5, 1.0, 12), ("a", 12, "best 0.5000 ms (1.0 TFLOP/s)")),
            (ProblemStarted(1, "b", 3), ("b", 3, "best: -")),
            (TrialFinished(1, "a", "direct", True, 0.25, 2.0, 13), ("b", 3, "best: -")),  # (a's: not shown)
            (TrialFinished(1, "b", "direct", True, 0.75, 1.5, 4), ("b", 4, "best 0.7500 ms (1.5 TFLOP/s)")),
            (ProblemFinished(1, second), ("a", 13, "best 0.2500 ms (2.0 TFLOP/s)")),
            (ProblemFinished(1, first), ("", 0, "best: -"))]:
        _apply(message, {1: worker}, finished_by, FleetReporter(), set())
        assert line() == shown, message
    assert worker.finished == {"a", "b"} and not worker.running


def test_a_worker_whose_early_gpu_worker_cannot_start_leaves_it_to_its_backend(monkeypatch):
    """(the backend's own start then fails with the reason, reported like any worker's error)"""
    import pickle

    from autoconv.search import fleet_entry, fleet_worker

    def cannot_start(options):
        raise OSError("no more processes")

    given = {}
    monkeypatch.setattr(fleet_entry, "launch_worker", cannot_start)
    monkeypatch.setattr(fleet_worker, "worker_main",
                        lambda session, job, connection, compile_connection, launched: given.update(
                            session=session, job=job, launched=launched))
    monkeypatch.setattr(fleet_entry, "exit_with_parent", lambda pid: None)
    fleet_entry.worker_process(pickle.dumps("the session"), pickle.dumps("the job"), 0, None, 1, None)
    assert given == {"session": "the session", "job": "the job", "launched": None}
