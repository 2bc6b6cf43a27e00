"""Reliability (issue 7): autoconv keeps working when things go wrong, on the CPU.

- ``autoconv tune`` killed with SIGKILL at random moments, then re-run: no completed
  trial is repeated, no cached winner is lost, the cache ends with each study's best,
  and no half-written file or stray process is left.
- Two ``autoconv tune`` processes on one cache and one study journal at once.
- Corrupt, truncated or foreign cache and journal files: a clear error naming the file
  and the way out (exit status 2, no traceback), or, for a journal whose last record
  was cut short, a repair; never a wrong kernel.
- Stale cache entries (other templates, another GPU): neither ``tune`` nor
  ``autoconv.conv2d`` uses them.
- Bad input refused with file, line and field; problems too large for the device's
  memory refused before anything is allocated.
- Search-space expressions: random syntax trees never run code.
- ``autoconv.conv2d`` refuses host arrays without CuPy.

The real command runs in subprocesses with the fake backend (``AUTOCONV_BACKEND=fake``:
deterministic synthetic timings; ``AUTOCONV_FAKE_DELAY_S`` makes each candidate take a
while, so that there is something to kill). Kill moments come from the ``seed`` fixture
and are printed (``pytest -s``; ``AUTOCONV_TEST_SEED`` repeats a run).
"""

from __future__ import annotations

import ast
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import optuna
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from optuna.storages.journal import JournalFileBackend, JournalStorage
from optuna.trial import TrialState

from autoconv.runtime import api as runtime
from autoconv.cache.winners import SCHEMA_VERSION, CacheEntry, CacheKey, WinnerCache
from autoconv.commands.main import main
from autoconv.problems.config import Budget
from autoconv.kernels.limits import H100
from autoconv.errors import (BackendUnavailable, DeviceMemoryError, ExpressionError, ProblemError,
                             StorageError)
from autoconv.backends.factory import make_backend
from autoconv.backends.fake import FAKE_IDENTITY, FakeBackend
from autoconv.problems.expressions import FUNCTIONS, compile_expression
from autoconv.kernels.families import get_family
from autoconv.files import write_atomically
from autoconv.gpu.memory import RUNTIME_RESERVE_BYTES, check_fits, estimate
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.search.storage import JournalFlock, check_journal, make_storage
from autoconv.search.outcome import Reporter
from autoconv.search.points import config_key
from autoconv.search.study import EVALUATED, study_name
from autoconv.search.tuner import Tuner

REPO = Path(__file__).resolve().parent.parent

#: Three small problems, two quick families: a full run takes a few seconds.
THREE_PROBLEMS = """\
problems:
  - name: odd
    spec: "N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1"
  - name: pointwise
    spec: "N=1,C=8,H=9,W=9,K=12,R=1,S=1,bias=1"
  - name: tall
    spec: "N=1,C=5,H=11,W=7,K=9,R=3,S=1,pad=1"
families: [direct, im2col_gemm]
budget: {{trials: {trials}}}
seed: {seed}
cache: state/cache.sqlite
storage: state/studies.journal
results: results
"""

#: One tiny problem, one family: for the in-process CLI checks.
ONE_PROBLEM = """\
problems:
  - name: small
    spec: "N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1"
families: [direct]
budget: {trials: 3}
cache: state/cache.sqlite
storage: state/studies.journal
results: results
"""

#: What a state folder may hold once runs are over: the cache, the journal and its lock.
STATE_FILES = {"cache.sqlite", "studies.journal", "studies.journal.flock"}


# ---- helpers ------------------------------------------------------------------------------

def tune_argv(config: Path) -> list[str]:
    return [sys.executable, "-m", "autoconv", "tune", str(config)]


def fake_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "AUTOCONV_BACKEND": "fake", "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]), **extra}


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def load_studies(journal: Path) -> dict[str, list]:
    """problem key -> the study's trials, read with plain Optuna (not autoconv's code)."""
    if not journal.exists():
        return {}
    storage = JournalStorage(JournalFileBackend(str(journal)))
    studies = {}
    for name in optuna.get_all_study_names(storage):
        study = optuna.load_study(study_name=name, storage=storage)
        studies[study.user_attrs.get("problem", name)] = study.get_trials(deepcopy=False)
    return studies


def trial_key(trial) -> str:
    family = trial.params["family"]
    prefix = family + "."
    return config_key(family, {k[len(prefix):]: v for k, v in trial.params.items() if k.startswith(prefix)})


def completed(trials) -> list:
    return [t for t in trials if t.state == TrialState.COMPLETE and t.user_attrs.get("status") == "ok"]


def cache_times(path: Path) -> dict[str, float]:
    if not path.exists():
        return {}
    with WinnerCache(path) as cache:
        return {entry.key.problem_key: entry.time_ms for entry in cache.entries()}


def descendants(pid: int) -> set[int]:
    """Processes below ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def assert_best_is_cached(studies: dict[str, list], cache_path: Path) -> None:
    """The cache holds, per problem, the fastest completed trial of its study."""
    with WinnerCache(cache_path) as cache:
        entries = {entry.key.problem_key: entry for entry in cache.entries()}
    assert set(entries) == set(studies)
    for problem_key, trials in studies.items():
        best = min(completed(trials), key=lambda t: t.value)
        entry = entries[problem_key]
        assert config_key(entry.family, entry.config) == trial_key(best), problem_key
        assert entry.time_ms == pytest.approx(best.value, rel=1e-12)


# ---- 1. SIGKILL at random moments -----------------------------------------------------------

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


# ---- 2. two processes at once --------------------------------------------------------------

def test_two_tune_processes_share_one_cache_and_one_journal(tmp_path, seed):
    config = tmp_path / "tune.yaml"
    config.write_text(THREE_PROBLEMS.format(trials=16, seed=seed % 1000).replace(
        '  - name: tall\n    spec: "N=1,C=5,H=11,W=7,K=9,R=3,S=1,pad=1"\n', ""))
    env = fake_env(AUTOCONV_FAKE_DELAY_S="0.03")
    processes = [subprocess.Popen(tune_argv(config), cwd=tmp_path, env=env, stdout=subprocess.PIPE,
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
    tuner = Tuner(backend, storage=str(tmp_path / "studies.journal"), families=("direct",),
                  budget=Budget(trials=1000))
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


# ---- 3. corrupt, truncated and foreign files --------------------------------------------------

def _sqlite_file(path: Path, statement: str) -> None:
    connection = sqlite3.connect(path)
    connection.execute(statement)
    connection.commit()
    connection.close()


def _damage_cache(kind: str, path: Path, good: bytes) -> str:
    """Damage the cache at ``path`` (a good one's bytes: ``good``); the fix the error must name."""
    if kind == "garbage":
        path.write_bytes(os.urandom(3000))
    elif kind == "cut-header":
        path.write_bytes(good[:10])
    elif kind == "cut-in-half":
        path.write_bytes(good[: len(good) // 2])
    elif kind == "foreign-sqlite":
        path.unlink()
        _sqlite_file(path, "CREATE TABLE photos (id INTEGER, jpeg BLOB)")
    elif kind == "text":
        path.write_text("my notes\n" * 100)
    elif kind == "newer-schema":
        _sqlite_file(path, f"UPDATE meta SET value = '{SCHEMA_VERSION + 1}' WHERE name = 'schema_version'")
        return "upgrade autoconv"
    elif kind == "malformed-entry":
        _sqlite_file(path, "UPDATE winners SET config = '{not json'")
    return "autoconv cache clear"


@pytest.mark.parametrize("kind", ["garbage", "cut-header", "cut-in-half", "foreign-sqlite", "text",
                                  "newer-schema", "malformed-entry"])
def test_a_damaged_cache_stops_tune_with_the_file_and_the_way_out(tmp_path, capsys, monkeypatch, kind):
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")
    config = tmp_path / "tune.yaml"
    config.write_text(ONE_PROBLEM)
    assert run_cli(capsys, "tune", config)[0] == 0
    cache = tmp_path / "state" / "cache.sqlite"
    if kind == "cut-in-half":  # big enough that half of it loses pages of the winners table
        with WinnerCache(cache) as winners:
            entry, = winners.entries()
            for i in range(400):
                winners.put(replace(entry, key=replace(entry.key, problem_key=f"N={i + 1},C=1,H=4,W=4,K=1,R=1,S=1"),
                                    study_name="s" * 300))
    fix = _damage_cache(kind, cache, cache.read_bytes())
    damaged = cache.read_bytes()

    # (--retune does not read the entry of a damaged row, only writes past it.)
    retune = [] if kind == "malformed-entry" else [("tune", config, "--retune")]
    for argv in [("tune", config), *retune, ("show", "--cache", cache)]:
        code, out, err = run_cli(capsys, *argv)
        assert code == 2, (argv, out, err)
        assert f"autoconv {argv[0]}: error: cache {cache}" in err and fix in err, err
        assert "Traceback" not in err
    assert cache.read_bytes() == damaged  # nothing written into a file autoconv does not understand

    # Never a wrong kernel: autoconv.conv2d's lookup finds nothing in it (and says why).
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runtime.REGISTRY, "_cache_location", cache)
        plan, origin, why, _ = runtime.REGISTRY.winner_plan(parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1"), H100,
                                                  FAKE_IDENTITY)
    assert plan is None and str(cache) in why

    assert run_cli(capsys, "cache", "clear", "--cache", cache)[0] == 0
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 0 and "cache" in out  # the studies were kept: the winner comes back at once


GOOD_RECORD = b'{"op_code":0,"worker_id":"w","study_name":"s","directions":[1]}\n'


@pytest.mark.parametrize("content, fragment", [
    (b"\x00\x01binary junk" * 40, "line 1 is not an Optuna journal record"),
    (b"line one\nline two\n", "line 1 is not JSON"),
    (b'{"a": 1}\n', "line 1 is not an Optuna journal record (no integer op_code)"),
    (GOOD_RECORD + b'{"op_code": 0, "worker_id": "w"}\n', "Optuna cannot replay it"),
    (GOOD_RECORD + b"\x00" * 64 + b"\n" + GOOD_RECORD, "line 2 is not JSON"),
    (GOOD_RECORD + b"\xff\xfe\n", "line 2 is not UTF-8 text"),
], ids=["binary", "text", "foreign-json", "bad-record", "hole", "not-utf8"])
def test_a_damaged_journal_stops_tune_with_the_file_and_the_way_out(tmp_path, capsys, monkeypatch,
                                                                    content, fragment):
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")
    config = tmp_path / "tune.yaml"
    config.write_text(ONE_PROBLEM)
    journal = tmp_path / "state" / "studies.journal"
    journal.parent.mkdir()
    journal.write_bytes(content)
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 2, out + err
    assert f"autoconv tune: error: study storage {journal}: {fragment}" in err, err
    assert "Move it away or delete it" in err and "winners already cached stay" in err
    assert "Traceback" not in err
    assert journal.read_bytes() == content  # left as it was for the user to look at
    journal.unlink()
    assert run_cli(capsys, "tune", config)[0] == 0


def test_a_journal_cut_short_is_repaired_and_the_study_resumes(tmp_path, capsys, monkeypatch, seed):
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")
    config = tmp_path / "tune.yaml"
    config.write_text(ONE_PROBLEM)
    assert run_cli(capsys, "tune", config)[0] == 0
    journal = tmp_path / "state" / "studies.journal"
    data = journal.read_bytes()
    before = {trial_key(t) for trials in load_studies(journal).values() for t in completed(trials)}

    # Cut inside a record (as a write that never completed would): at a random byte of
    # the last quarter that is not just after a newline.
    rng = random.Random(seed)
    cut = rng.randrange(3 * len(data) // 4, len(data) - 1)
    while data[cut - 1:cut] == b"\n":
        cut -= 1
    journal.write_bytes(data[:cut])
    kept = data[:cut].rfind(b"\n") + 1
    # Without the cached winner, tune opens the study again (and re-verifies its best).
    assert run_cli(capsys, "cache", "clear", "--cache", tmp_path / "state" / "cache.sqlite")[0] == 0
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 0, out + err
    assert f"removed an incomplete last record ({cut - kept} bytes)" in err
    assert journal.read_bytes()[:kept] == data[:kept]
    after = load_studies(journal)
    keys = [trial_key(t) for trials in after.values() for t in completed(trials)]
    assert len(keys) == len(set(keys)) == 3
    survived = {trial_key(t) for trials in load_studies_from_bytes(tmp_path, data[:kept]).values()
                for t in completed(trials)}
    assert survived <= set(keys) and survived <= before


def load_studies_from_bytes(tmp_path: Path, content: bytes) -> dict[str, list]:
    copy = tmp_path / "copy.journal"
    copy.write_bytes(content)
    return load_studies(copy)


def test_check_journal_cuts_only_a_record_cut_short(tmp_path):
    journal = tmp_path / "j.journal"
    journal.write_bytes(GOOD_RECORD + GOOD_RECORD[:20])
    assert check_journal(journal) == 20 and journal.read_bytes() == GOOD_RECORD
    assert check_journal(journal) == 0
    journal.write_bytes(GOOD_RECORD + b'{"op_co')  # shorter than a record's start
    assert check_journal(journal) == 7
    journal.write_bytes(GOOD_RECORD + b"junk without a newline")
    with pytest.raises(StorageError, match="line 2 is not an Optuna journal record"):
        check_journal(journal)
    assert journal.read_bytes() == GOOD_RECORD + b"junk without a newline"
    with pytest.raises(StorageError, match="is a folder"):
        check_journal(tmp_path)


def test_an_unreadable_database_storage_is_a_clear_error(tmp_path, capsys, monkeypatch):
    pytest.importorskip("sqlalchemy")
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")
    config = tmp_path / "tune.yaml"
    config.write_text(ONE_PROBLEM)
    database = tmp_path / "studies.db"
    database.write_bytes(b"\x00not a database" * 100)
    code, out, err = run_cli(capsys, "tune", config, "--storage", f"sqlite:///{database}")
    assert code == 2 and f"study storage sqlite:///{database}: cannot open it" in err, err
    assert "Traceback" not in err


def test_a_killed_journal_writer_holds_no_lock(tmp_path):
    journal = tmp_path / "j.journal"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from autoconv.search.storage import JournalFlock; "
         "JournalFlock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(600)", str(journal)],
        stdout=subprocess.PIPE, text=True, env=fake_env())
    try:
        assert holder.stdout.readline().strip() == "held"
        def wait_for_the_lock():
            lock = JournalFlock(journal)
            lock.acquire()
            lock.release()
        waiter = threading.Thread(target=wait_for_the_lock, daemon=True)
        waiter.start()
        waiter.join(timeout=0.5)
        assert waiter.is_alive(), "the lock did not exclude a second writer"
    finally:
        holder.kill()
        holder.wait()
    waiter.join(timeout=5)
    assert not waiter.is_alive(), "the lock of a killed process was not released"
    started = time.monotonic()
    storage = make_storage(journal)
    optuna.create_study(storage=storage, study_name="after-the-kill")
    assert time.monotonic() - started < 5


def _dead_pid() -> int:
    """A process id that is not running (a child that has exited and been reaped)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def test_write_atomically_replaces_whole_files_and_removes_what_dead_writers_left(tmp_path, monkeypatch):
    target = tmp_path / "tune.json"
    target.write_text('{"old": 1}\n')
    dead = tmp_path / f".tune.json.{_dead_pid()}.tmp"
    dead.write_text('{"half": ')
    live = tmp_path / f".tune.json.{os.getppid()}.tmp"  # another writer, still running
    live.write_text("being written")
    other = tmp_path / f".other.json.{_dead_pid()}.tmp"  # not this target's
    other.write_text("x")
    write_atomically(target, '{"new": 1}\n')
    assert json.loads(target.read_text()) == {"new": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, live.name, other.name])

    def interrupted(source, destination):  # killed between writing and renaming
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomically(target, '{"newer": 1}\n')
    assert json.loads(target.read_text()) == {"new": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, live.name, other.name])


SMALL = NamedProblem("small", parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1"))


def test_a_trial_no_process_claimed_is_abandoned_once_old(tmp_path, monkeypatch):
    import autoconv.search.liveness

    tuner = Tuner(FakeBackend(), storage=str(tmp_path / "j.journal"), families=("direct",), budget=Budget(trials=2))
    study = optuna.create_study(study_name=study_name(SMALL.problem, FAKE_IDENTITY.gpu_name, ("direct",)),
                                storage=tuner.storage, direction="minimize")
    unclaimed = study.ask()  # its process was killed before it wrote its owner

    def state():
        trial, = [t for t in study.get_trials(deepcopy=False) if t.number == unclaimed.number]
        return trial.state, trial.user_attrs.get("status")
    tuner.tune_problem(SMALL)
    assert state() == (TrialState.RUNNING, None)  # young: maybe a live process about to claim it
    monkeypatch.setattr(autoconv.search.liveness, "UNCLAIMED_TRIAL_AGE_S", 0.0)
    tuner.tune_problem(SMALL)
    assert state() == (TrialState.FAIL, "abandoned")


# ---- 4. stale entries ------------------------------------------------------------------------

def _change_templates(monkeypatch, digest: str) -> None:
    """As if the templates, search spaces or launch code had changed."""
    import autoconv.cache.winners
    import autoconv.search.study

    monkeypatch.setattr(autoconv.cache.winners, "templates_hash", lambda: digest)
    monkeypatch.setattr(autoconv.search.study, "templates_hash", lambda: digest)


def test_changed_templates_or_another_gpu_are_tuned_again(tmp_path, monkeypatch):
    cache_path, journal = tmp_path / "cache.sqlite", str(tmp_path / "j.journal")

    def tune(backend):
        with WinnerCache(cache_path) as cache:
            outcome, = Tuner(backend, storage=journal, families=("direct",), budget=Budget(trials=4),
                             cache=cache).tune([SMALL])
        return outcome

    first = tune(FakeBackend())
    assert first.source == "tuned" and tune(FakeBackend()).source == "cache"
    with monkeypatch.context() as patch:
        _change_templates(patch, "0123456789abcdef")
        changed = tune(FakeBackend())
        assert changed.source == "tuned" and changed.trials_run == 4  # a new study, not the old trials
        assert changed.study_name != first.study_name
        with WinnerCache(cache_path) as cache:
            assert [e.key.is_current for e in cache.entries()].count(False) == 1
    other_gpu = FakeBackend()
    other_gpu.identity = replace(FAKE_IDENTITY, gpu_name="Fake GPU B")
    moved = tune(other_gpu)
    assert moved.source == "tuned" and moved.trials_run == 4
    with WinnerCache(cache_path) as cache:
        keys = sorted((e.key.gpu_name, e.key.templates_hash == "0123456789abcdef") for e in cache.entries())
    assert keys == [(FAKE_IDENTITY.gpu_name, False), (FAKE_IDENTITY.gpu_name, True), ("Fake GPU B", False)]


@pytest.mark.parametrize("change", [{"source_hash": "0" * 16}, {"config": {"TILE_P": 12345}},
                                    {"family": "winograd"}], ids=["other-source", "invalid-config", "no-family"])
def test_a_cached_entry_this_autoconv_cannot_use_is_tuned_again_and_replaced(tmp_path, change):
    cache_path, journal = tmp_path / "cache.sqlite", str(tmp_path / "j.journal")
    family = get_family("direct")
    config = family.space.default_config(SMALL.problem, H100)
    plan = family.plan(SMALL.problem, config, H100)
    if "config" in change:
        change = {"config": {**config, **change["config"]}}
    bad = replace(CacheEntry(key=CacheKey.for_problem(FAKE_IDENTITY, SMALL.problem), family="direct",
                             config=config, kernel_name=plan.name, source_hash=plan.source_hash,
                             time_ms=1e-9, tflops=1.0, workspace_bytes=0), **change)  # faster than anything
    with WinnerCache(cache_path) as cache:
        cache.put(bad)
        reporter_notes = []

        class Notes(Reporter):
            def note(self, text):
                reporter_notes.append(text)
        outcome, = Tuner(FakeBackend(), storage=journal, families=("direct",), budget=Budget(trials=3),
                         cache=cache, reporter=Notes()).tune([SMALL])
        entry, = cache.entries()
    assert outcome.source == "tuned" and outcome.trials_run == 3
    assert any("not using its cached winner" in note for note in reporter_notes) or change.get("family"), \
        reporter_notes
    assert entry.time_ms == outcome.time_ms and entry.kernel_name == outcome.kernel_name
    replanned = family.plan(SMALL.problem, dict(entry.config), H100)
    assert entry.source_hash == replanned.source_hash


def test_conv2d_looks_up_only_current_entries_of_this_gpu(tmp_path, monkeypatch):
    problem = SMALL.problem
    monkeypatch.setattr(runtime.REGISTRY, "_cache_location", tmp_path / "cache.sqlite")
    family = get_family("direct")
    config = dict(family.space.points(problem, H100)[-1])  # a valid config, not the default
    assert config != family.space.default_config(problem, H100)
    plan = family.plan(problem, config, H100)
    entry = CacheEntry(key=CacheKey.for_problem(FAKE_IDENTITY, problem), family="direct", config=config,
                       kernel_name=plan.name, source_hash=plan.source_hash, time_ms=1.0, tflops=1.0,
                       workspace_bytes=plan.workspace_bytes)

    def lookup(identity=FAKE_IDENTITY):
        return runtime.REGISTRY.winner_plan(problem, H100, identity)

    def store(changed):
        WinnerCache.clear(runtime.cache_path())
        with WinnerCache(runtime.cache_path()) as cache:
            cache.put(changed)

    assert lookup()[2] .startswith("no winners' cache")
    store(entry)
    found, origin, _, _ = lookup()
    assert origin == "cache" and found.source_hash == plan.source_hash and dict(found.config) == config
    assert lookup(replace(FAKE_IDENTITY, gpu_name="Fake GPU B"))[0] is None
    assert lookup(replace(FAKE_IDENTITY, cuda_driver=1))[0] is None
    with monkeypatch.context() as patch:
        _change_templates(patch, "0123456789abcdef")
        found, _, why, _ = lookup()
        assert found is None and "no tuned kernel" in why
    for changed, fragment in [
        (replace(entry, source_hash="0" * 16), "stale entry"),
        (replace(entry, config={**config, "TILE_P": 12345}), "no longer fits"),
        (replace(entry, family="winograd"), "not part of this autoconv"),
    ]:
        store(changed)
        found, _, why, _ = lookup()
        assert found is None and fragment in why, why


# ---- 5. input refused ---------------------------------------------------------------------------

LAYER = """\
problems:
  - name: layer
    N: 2
    C: 13
    H: 31
    W: 29
    K: 17
    R: 3
    S: 3
    padding: 1
"""


@pytest.mark.parametrize("text, expected", [
    (LAYER.replace("N: 2", "N: [2"), ":4: invalid YAML"),
    (LAYER + "budget: {trails: 3}\n", ":11: budget.trails: unknown key (did you mean 'trials'?)"),
    (LAYER.replace("H: 31", "H: tall"), ":5: problems[0].H: expected an integer, got 'tall'"),
    (LAYER.replace("K: 17", "K: 0"), ":7: problems[0].K: must be >= 1, got 0"),
    (LAYER.replace("C: 13", "C: -13"), ":4: problems[0].C: must be >= 1, got -13"),
    (LAYER.replace("R: 3", "R: 40"), ":8: problems[0].R: R=40: filter height with dilation (40) exceeds"),
    (LAYER.replace("N: 2", "N: 40000").replace("C: 13", "C: 256").replace("H: 31", "H: 224")
     .replace("W: 29", "W: 224"), "beyond the 32-bit indexing"),
], ids=["malformed", "unknown-key", "wrong-type", "zero", "negative", "impossible", "32-bit"])
def test_bad_configs_are_refused_with_file_line_and_field(tmp_path, capsys, monkeypatch, text, expected):
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 2 and f"{config}:" in err and expected in err, err
    assert "Traceback" not in err and not (tmp_path / "state").exists()


def test_memory_estimate_counts_every_buffer():
    # N=2, C=3, 10x8 input, K=5, 3x3 filter, stride 2, pad 1: P=5, Q=4
    problem = parse_spec("N=2,C=3,H=10,W=8,K=5,R=3,S=3,stride=2,pad=1,bias=1")
    x, w, bias, y = 2 * 3 * 10 * 8, 5 * 3 * 3 * 3, 5, 2 * 5 * 5 * 4
    padded, window = 2 * 3 * 12 * 10, 2 * 3 * 5 * 4
    per_set = 4 * (x + w + y + bias)
    sets = -(-2 * 16384 // per_set)  # enough sets to exceed twice a 16 KiB L2
    need = estimate(problem, 16384, workspace_bytes=1000)
    assert (need.inputs, need.reference, need.reference_scratch, need.output) == (
        8 * (x + w + bias), 8 * y, 8 * (x + w + padded + window + y), 4 * y)
    assert (need.buffer_sets, need.timing_sets) == (sets, sets * per_set)
    steady = 8 * (x + w + bias) + 8 * y + 4 * y + sets * per_set
    assert need.total == steady + 1000 + RUNTIME_RESERVE_BYTES
    assert need.fixed == steady + RUNTIME_RESERVE_BYTES
    assert check_fits(problem, need.fixed, "GPU", 16384) is not None
    with pytest.raises(DeviceMemoryError, match=r"2x3x10x8 .*needs about .*timing buffer sets.* but GPU has"):
        check_fits(problem, need.fixed - 1, "GPU", 16384)


def test_a_problem_too_large_for_the_device_memory_is_refused_before_anything(tmp_path):
    big = NamedProblem("big", parse_spec("N=64,C=64,H=56,W=56,K=64,R=3,S=3,pad=1"))
    memory = 256 << 20
    assert estimate(SMALL.problem, H100.l2_bytes).total < memory < estimate(big.problem, H100.l2_bytes).total
    backend = FakeBackend(memory_bytes=memory)
    storage = optuna.storages.InMemoryStorage()
    tuner = Tuner(backend, storage=storage, families=("direct", "im2col_gemm"), budget=Budget(trials=3))
    small_outcome, big_outcome = tuner.tune([SMALL, big])
    assert small_outcome.source == "tuned"
    assert (big_outcome.source, big_outcome.stop_reason) == ("none", "too large for GPU memory")
    message = big_outcome.message
    assert message.startswith("big (64x64x56x56 * 64x3x3") and "needs about" in message
    assert "float64 reference" in message and "but Fake GPU" not in message  # the device's name...
    assert H100.name in message and "256.0 MiB" in message and "N=64" in message  # ...size and fix
    assert all(plan.problem == SMALL.problem for plan in backend.evaluated)
    assert len(optuna.get_all_study_names(storage)) == 1  # no study, no enumeration for it


def test_candidates_whose_workspace_does_not_fit_are_never_evaluated():
    problem = NamedProblem("ws", parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3"))
    plenty = FakeBackend()
    Tuner(plenty, storage=optuna.storages.InMemoryStorage(), families=("direct", "im2col_gemm"),
          budget=Budget(trials=8)).tune_problem(problem)
    assert {plan.family for plan in plenty.evaluated} == {"direct", "im2col_gemm"}

    backend = FakeBackend(memory_bytes=estimate(problem.problem, H100.l2_bytes).fixed + 1000)
    tuner = Tuner(backend, storage=optuna.storages.InMemoryStorage(), families=("direct", "im2col_gemm"),
                  budget=Budget(trials=8))
    assert tuner.problem_workspace_limit(problem) == 1000
    outcome = tuner.tune_problem(problem)
    assert outcome.source == "tuned" and outcome.trials_run == 8
    # im2col_gemm's column buffer (C*R*S * N*P*Q floats = 7056 bytes) does not fit in what is left.
    assert {plan.family for plan in backend.evaluated} == {"direct"}


def test_tune_refuses_a_problem_too_large_for_the_device(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")
    monkeypatch.setenv("AUTOCONV_FAKE_MEMORY_MB", "32")
    config = tmp_path / "tune.yaml"
    config.write_text(ONE_PROBLEM)
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 1 and "Traceback" not in err
    text = " ".join(err.split())  # (the terminal output wraps)
    assert "x small: no winner (too large for GPU memory; small (1x4x9x9 * 6x3x3 s1 p1 d1) needs about" in text
    assert "CuPy's own 64.0 MiB), but NVIDIA H100 80GB HBM3 has 32.0 MiB; nothing was allocated" in text
    summary = json.loads((tmp_path / "results" / "tune.json").read_text())
    assert "needs about" in summary["problems"][0]["message"] and "32.0 MiB" in summary["problems"][0]["message"]


def test_fake_backend_knobs_are_checked(monkeypatch):
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")
    monkeypatch.setenv("AUTOCONV_FAKE_DELAY_S", "0.01")
    monkeypatch.setenv("AUTOCONV_FAKE_MEMORY_MB", "64")
    backend = make_backend()
    assert backend.available_memory_bytes() == 64 << 20 and backend._delay_s == 0.01
    for value in ("soon", "-1", "nan"):
        monkeypatch.setenv("AUTOCONV_FAKE_DELAY_S", value)
        with pytest.raises(BackendUnavailable, match="AUTOCONV_FAKE_DELAY_S"):
            make_backend()


# ---- 6. expressions: random syntax trees never run code ---------------------------------------

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Audit events that would mean code ran, a module was imported or a file opened.
DANGEROUS_EVENTS = ("exec", "import", "open", "os.system", "os.exec", "os.posix_spawn", "os.fork",
                    "subprocess.Popen", "ctypes.dlopen", "object.__getattr__", "builtins.input")
_audit = {"on": False, "events": []}


def _audit_hook(event: str, args) -> None:
    if _audit["on"] and event in DANGEROUS_EVENTS:
        _audit["events"].append(event)


sys.addaudithook(_audit_hook)


class watching:
    """``with watching() as events:`` collects the dangerous audit events raised inside."""

    def __enter__(self) -> list:
        _audit["events"] = []
        _audit["on"] = True
        return _audit["events"]

    def __exit__(self, *exc) -> None:
        _audit["on"] = False


def test_the_audit_watch_sees_code_run():
    with watching() as events:
        eval("1 + 1")  # noqa: S307 (the point: the watch must see this)
    assert "exec" in events


NAMES = ["a", "b", "K", *FUNCTIONS, "__import__", "open", "eval", "exec", "getattr", "_x", "__builtins__",
         "os", "True", "None"]
BINARY = [ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.BitAnd,
          ast.BitOr, ast.BitXor, ast.MatMult]
COMPARE = [ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn, ast.Is, ast.IsNot]
NO_ARGUMENTS = dict(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _name(identifier: str) -> ast.Name:
    return ast.Name(identifier, ast.Load())


leaves = st.one_of(
    st.integers(-5, 70).map(ast.Constant),
    st.floats(-1e308, 1e308, allow_nan=False).map(ast.Constant),
    st.sampled_from(["rsc", "", "x" * 80, None, b"x", 1j, ...]).map(ast.Constant),
    st.sampled_from(NAMES).map(_name),
)


def _grow(inner):
    """Whitelisted constructions half of the time (so that accepted trees are not rare),
    anything else the other half."""
    return st.one_of(_grow_allowed(inner), _grow_anything(inner))


def _grow_allowed(inner):
    return st.one_of(
        st.builds(ast.BinOp, inner, st.sampled_from(BINARY[:7]).map(lambda op: op()), inner),
        st.builds(ast.UnaryOp, st.sampled_from([ast.USub, ast.Not]).map(lambda op: op()), inner),
        st.builds(ast.BoolOp, st.sampled_from([ast.And, ast.Or]).map(lambda op: op()),
                  st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda left, op, right: ast.Compare(left, [op()], [right]), inner,
                  st.sampled_from(COMPARE[:6]), inner),
        st.builds(ast.IfExp, inner, inner, inner),
        st.builds(lambda name, args: ast.Call(_name(name), args, []), st.sampled_from(list(FUNCTIONS)),
                  st.lists(inner, min_size=1, max_size=3)),
    )


def _grow_anything(inner):
    return st.one_of(
        st.builds(ast.BinOp, inner, st.sampled_from(BINARY).map(lambda op: op()), inner),
        st.builds(ast.UnaryOp, st.sampled_from([ast.USub, ast.UAdd, ast.Not, ast.Invert]).map(lambda op: op()),
                  inner),
        st.builds(ast.BoolOp, st.sampled_from([ast.And, ast.Or]).map(lambda op: op()),
                  st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda left, rest: ast.Compare(left, [op() for op, _ in rest], [c for _, c in rest]),
                  inner, st.lists(st.tuples(st.sampled_from(COMPARE), inner), min_size=1, max_size=2)),
        st.builds(ast.IfExp, inner, inner, inner),
        st.builds(lambda function, args, keywords: ast.Call(function, args, keywords),
                  st.one_of(st.sampled_from(NAMES).map(_name), inner),
                  st.lists(inner, max_size=3),
                  st.lists(st.builds(ast.keyword, st.sampled_from(["key", "x"]), inner), max_size=1)),
        st.builds(lambda value, attr: ast.Attribute(value, attr, ast.Load()), inner,
                  st.sampled_from(["__class__", "__globals__", "__subclasses__", "real", "system", "x"])),
        st.builds(lambda value, index: ast.Subscript(value, index, ast.Load()), inner, inner),
        st.builds(lambda body: ast.Lambda(ast.arguments(**NO_ARGUMENTS), body), inner),
        st.lists(inner, max_size=3).map(lambda items: ast.List(items, ast.Load())),
        st.lists(inner, max_size=3).map(lambda items: ast.Tuple(items, ast.Load())),
        st.lists(inner, min_size=1, max_size=2).map(lambda items: ast.Dict(items, items)),
        st.builds(lambda element, iterable: ast.ListComp(element, [ast.comprehension(
            ast.Name("i", ast.Store()), iterable, [], 0)]), inner, inner),
        st.builds(lambda value: ast.NamedExpr(ast.Name("y", ast.Store()), value), inner),
        st.builds(lambda value: ast.JoinedStr([ast.FormattedValue(value, -1, None)]), inner),
        st.builds(lambda value: ast.Starred(value, ast.Load()), inner),
    )


syntax_trees = st.recursive(leaves, _grow, max_leaves=10)

ALLOWED_NODES = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.BoolOp,
                 ast.Compare, ast.IfExp, ast.Call, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv,
                 ast.Mod, ast.Pow, ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or, ast.Eq, ast.NotEq,
                 ast.Lt, ast.LtE, ast.Gt, ast.GtE)


@FUZZ
@given(syntax_trees, st.lists(st.one_of(st.integers(-2**40, 2**40), st.floats(-1e6, 1e6)), min_size=1,
                              max_size=4))
def test_fuzz_random_syntax_trees_never_run_code(tree, numbers):
    try:
        text = ast.unparse(ast.fix_missing_locations(ast.Expression(tree)))
    except Exception:  # a tree with no text form (the strategy builds odd ones on purpose)
        return
    expression = result = None
    with watching() as events:
        try:
            expression = compile_expression(text)
            values = {name: numbers[i % len(numbers)] for i, name in enumerate(sorted(expression.names))}
            result = expression.evaluate(values)
        except ExpressionError:
            pass
    assert not events, f"{text!r} raised audit events {events}"
    if expression is None:
        return
    # Accepted: only whitelisted syntax, names without underscores, calls of the pure
    # functions by name, strings only as operands of == and !=.
    parsed = ast.parse(text, mode="eval")
    parents = {child: node for node in ast.walk(parsed) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(parsed):
        assert isinstance(node, ALLOWED_NODES), (text, type(node).__name__)
        if isinstance(node, ast.Name):
            assert not node.id.startswith("_"), text
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and not node.keywords, text
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            parent = parents.get(node)
            assert isinstance(parent, ast.Compare) and isinstance(node.value, str), text
            assert all(isinstance(op, (ast.Eq, ast.NotEq)) for op in parent.ops), text
    assert result is None or isinstance(result, (bool, int, float)), (text, result)


# ---- 7. autoconv.conv2d refuses host arrays, with or without CuPy -----------------------------

class CudaArrayLike:
    """Stands for a GPU array (it has ``__cuda_array_interface__``); never converted here."""

    __cuda_array_interface__ = {"shape": (1, 2, 5, 5), "typestr": "<f4", "data": (0, False), "version": 3}


class HostDLPack:
    """An array of another library on the CPU (DLPack device type 1), or in pinned host memory (3)."""

    def __init__(self, device_type: int):
        self.device_type = device_type

    def __dlpack__(self, stream=None):
        raise AssertionError("a host array must not be converted")

    def __dlpack_device__(self):
        return (self.device_type, 0)


def test_conv2d_refuses_host_arrays_even_without_cupy(monkeypatch):
    import numpy

    import autoconv
    import autoconv.gpu.device

    def no_cupy():
        raise BackendUnavailable("CuPy is not installed (test)")
    monkeypatch.setattr(autoconv.gpu.device, "require_cupy", no_cupy)
    x = numpy.zeros((1, 2, 5, 5), numpy.float32)
    w = numpy.zeros((3, 2, 3, 3), numpy.float32)
    gpu = CudaArrayLike()
    cases = [
        ((x, gpu), {}, "x", "x is a NumPy array in host memory"),
        ((gpu, w), {}, "w", "cupy.asarray(w)"),
        ((gpu, gpu), {"bias": numpy.zeros(3, numpy.float32)}, "bias", "host memory"),
        ((gpu, gpu), {"out": numpy.zeros((1, 3, 3, 3), numpy.float32)}, "out", "host memory"),
        ((x.tolist(), gpu), {}, "x", "expected a CuPy array, a CUDA tensor"),
        ((HostDLPack(1), gpu), {}, "x", "not in CUDA device memory (DLPack device type 1"),
        ((HostDLPack(3), gpu), {}, "x", "DLPack device type 3"),
        ((gpu, 3.0), {}, "w", "expected a CuPy array"),
    ]
    for args, kwargs, name, fragment in cases:
        with pytest.raises(ProblemError) as caught:
            autoconv.conv2d(*args, **kwargs)
        message = str(caught.value)
        assert message.startswith(f"{name}=") and fragment in message, message
        assert "CuPy arrays or CUDA tensors" in message, message
    # GPU-looking arrays get as far as needing CuPy.
    with pytest.raises(BackendUnavailable, match="CuPy"):
        autoconv.conv2d(gpu, gpu)


# ---- GPU (run on the device) -----------------------------------------------------------------

@pytest.mark.gpu
def test_memory_estimate_covers_what_a_problem_allocates():
    import cupy

    from autoconv.gpu.device import read_device
    from autoconv.gpu.worker import ProblemBuffers

    limits, _ = read_device(0)
    problem = parse_spec("N=4,C=32,H=40,W=36,K=48,R=3,S=3,pad=1,bias=1")
    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    before = pool.total_bytes()
    buffers = ProblemBuffers(problem, 0, limits.l2_bytes, 256)
    cupy.cuda.runtime.deviceSynchronize()
    held = pool.total_bytes() - before  # blocks in use plus freed ones kept: about the peak
    need = estimate(problem, limits.l2_bytes)
    del buffers
    pool.free_all_blocks()
    assert held <= need.total, (held, need)
    assert held >= 0.5 * (need.total - need.reserve), (held, need)


@pytest.mark.gpu
def test_conv2d_never_runs_a_stale_entry(tmp_path, seed):
    import cupy
    import numpy

    import autoconv
    from autoconv.gpu.device import read_device
    from autoconv.verify.reference import conv2d_reference, random_inputs
    from autoconv.verify.compare import check_result

    limits, identity = read_device(0)
    problem = parse_spec("N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1")
    family = get_family("implicit_gemm")
    config = dict(family.space.points(problem, limits)[-1])
    plan = family.plan(problem, config, limits)
    current = CacheKey.for_problem(identity, problem)
    with WinnerCache(tmp_path / "cache.sqlite") as cache:
        # Entries for this problem that must not be used: a source this autoconv no longer
        # renders, other templates, another GPU.
        cache.put(CacheEntry(key=current, family=family.name, config=config, kernel_name=plan.name,
                             source_hash="0" * 16, time_ms=1e-3, tflops=1.0, workspace_bytes=plan.workspace_bytes))
        for key in (replace(current, templates_hash="f" * 16), replace(current, gpu_name="Another GPU")):
            cache.put(CacheEntry(key=key, family=family.name, config=config, kernel_name=plan.name,
                                 source_hash=plan.source_hash, time_ms=1e-3, tflops=1.0,
                                 workspace_bytes=plan.workspace_bytes))
    runtime.set_cache(tmp_path / "cache.sqlite")
    runtime.clear_loaded()
    try:
        x, w, _ = random_inputs(problem, numpy.random.default_rng(seed))
        with pytest.warns(runtime.UntunedWarning, match="stale entry"):
            y = autoconv.conv2d(cupy.asarray(x), cupy.asarray(w), stride=(2, 1), padding=1)
        assert runtime.REGISTRY.loaded_runner(problem, 0).origin == "default"
        verdict = check_result(cupy.asnumpy(y), conv2d_reference(problem, x, w))
        assert verdict.ok, verdict.message
    finally:
        runtime.set_cache(None)
        runtime.clear_loaded()


@pytest.mark.gpu
def test_tune_on_the_gpu_killed_mid_search_resumes_and_leaves_no_process(tmp_path, seed):
    config = tmp_path / "tune.yaml"
    config.write_text(ONE_PROBLEM.replace("budget: {trials: 3}", "budget: {trials: 8}")
                      .replace("families: [direct]", "families: [direct, implicit_gemm]") + f"seed: {seed % 1000}\n")
    journal, cache = tmp_path / "state" / "studies.journal", tmp_path / "state" / "cache.sqlite"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
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
    assert len(evaluated) == 8
    with WinnerCache(cache) as winners:
        entry, = winners.entries()
    best = min(completed(next(iter(studies.values()))), key=lambda t: t.value)
    assert config_key(entry.family, entry.config) == trial_key(best)  # re-timed, so times differ a little
    assert {p.name for p in cache.parent.iterdir()} <= STATE_FILES
