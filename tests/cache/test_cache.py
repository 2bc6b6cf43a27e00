"""The winners' cache: keys, best-wins merging, several writer processes, corrupt files,
export and import."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
from dataclasses import replace

import pytest

from autoconv.backends.base import BackendIdentity
from autoconv.backends.fake import FAKE_IDENTITY
from autoconv.cache.entries import CacheKey
from autoconv.cache.exchange import EXPORT_FORMAT, ImportResult
from autoconv.cache.schema import SCHEMA_VERSION
from autoconv.cache.winners import WinnerCache
from autoconv.errors import CacheError
from autoconv.kernels.fingerprint import templates_hash
from autoconv.problems.problem import parse_spec
from tests.cache.entries import tuned_entry
from tests.helpers import cache_entry as entry

PROBLEM = parse_spec("N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1")


@pytest.fixture
def key():
    return CacheKey.for_problem(FAKE_IDENTITY, PROBLEM)


def test_key_covers_device_versions_templates_and_problem(key):
    from autoconv import __version__

    assert (key.gpu_name, key.compute_capability) == (FAKE_IDENTITY.gpu_name, "9.0")
    assert (key.autoconv_version, key.templates_hash, key.problem_key, key.dtype) == (
        __version__, templates_hash(), PROBLEM.key(), "float32")
    assert key.is_current


def test_round_trip_best_wins_and_baseline_survives(tmp_path, key):
    with WinnerCache(tmp_path / "c.sqlite") as cache:
        assert cache.get(key) is None
        assert cache.put(entry(key, 2.0))
        assert not cache.put(entry(key, 3.0, kernel_name="slower"))
        assert cache.get(key).time_ms == 2.0
        assert cache.set_baseline(key, name="cudnn", plan='{"engine": 1}', time_ms=1.5, tflops=9.0)
        assert cache.put(entry(key, 1.0, kernel_name="faster", config={"BM": 128}))
        got = cache.get(key)
    assert (got.time_ms, got.kernel_name, dict(got.config)) == (1.0, "faster", {"BM": 128})
    assert (got.baseline_name, got.baseline_time_ms, got.baseline_plan) == ("cudnn", 1.5, '{"engine": 1}')
    # Values are JSON text, not pickles.
    raw = sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT config FROM winners").fetchone()[0]
    assert json.loads(raw) == {"BM": 128}


@pytest.mark.parametrize("change", [
    {"gpu_name": "NVIDIA A100-SXM4-80GB"}, {"compute_capability": "8.0"}, {"cuda_runtime": 12040},
    {"cuda_driver": 12020}, {"autoconv_version": "0.0.9"}, {"templates_hash": "ffffffffffffffff"},
    {"problem_key": parse_spec("N=2,C=13,H=31,W=29,K=17,R=3,S=3,pad=1").key()}, {"dtype": "float16"},
])
def test_entries_of_another_gpu_or_version_are_never_used(tmp_path, key, change):
    with WinnerCache(tmp_path / "c.sqlite") as cache:
        cache.put(entry(replace(key, **change)))
        assert cache.get(key) is None
        assert len(cache) == 1


def test_stale_entries_are_marked(key):
    assert not replace(key, templates_hash="0" * 16).is_current
    assert not replace(key, autoconv_version="0.0.1").is_current


def _writer(path: str, worker: int, count: int) -> None:
    identity = BackendIdentity("GPU", (9, 0), 1, 2, "fake")
    with WinnerCache(path) as cache:
        for i in range(count):
            own = CacheKey.for_problem(identity, parse_spec(f"N={worker + 1},C={i + 1},H=8,W=8,K=4,R=3,S=3"))
            cache.put(entry(own, 1.0 + i))
            shared = CacheKey.for_problem(identity, PROBLEM)
            cache.put(entry(shared, 10.0 + worker * count + i, kernel_name=f"w{worker}_{i}"))


@pytest.mark.slow
def test_concurrent_writers_lose_nothing(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    context = multiprocessing.get_context("spawn")
    workers, count = 4, 25
    processes = [context.Process(target=_writer, args=(path, w, count)) for w in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
        assert process.exitcode == 0
    with WinnerCache(path) as cache:
        entries = cache.entries()
    own = [e for e in entries if e.key.problem_key != PROBLEM.key()]
    shared = [e for e in entries if e.key.problem_key == PROBLEM.key()]
    assert len(own) == workers * count
    assert len(shared) == 1 and shared[0].time_ms == 10.0 and shared[0].kernel_name == "w0_0"


def _open_at(path: str, start: float, results) -> None:
    import time

    while time.time() < start:  # every process opens at the same moment
        pass
    try:
        with WinnerCache(path) as cache:
            cache.entries()
        results.put("ok")
    except CacheError as err:
        results.put(str(err))


@pytest.mark.slow
def test_processes_opening_a_new_cache_at_once_all_succeed(tmp_path):
    """Six processes open one new file at the same instant, eight times over. Before the WAL
    switch retried SQLite's deadlock refusal, about one race in ten failed one of them with
    "the database is unreadable (database is locked)"."""
    import time

    context = multiprocessing.get_context("spawn")
    for attempt in range(8):
        path = str(tmp_path / f"new{attempt}.sqlite")
        results = context.Queue()
        start = time.time() + 1.0  # after the spawned interpreters have imported autoconv
        processes = [context.Process(target=_open_at, args=(path, start, results)) for _ in range(6)]
        for process in processes:
            process.start()
        outcomes = [results.get(timeout=120) for _ in processes]
        for process in processes:
            process.join(timeout=60)
        assert outcomes == ["ok"] * 6, [o for o in outcomes if o != "ok"][0]


class _RefusingWalSwitch:
    """A connection whose first ``refusals`` WAL switches fail as SQLite's deadlock check does."""

    def __init__(self, connection, refusals: int, message: str = "database is locked"):
        self.connection, self.refusals, self.message = connection, refusals, message

    def execute(self, sql, *parameters):
        if sql.startswith("PRAGMA journal_mode") and self.refusals > 0:
            self.refusals -= 1
            raise sqlite3.OperationalError(self.message)
        return self.connection.execute(sql, *parameters)


def test_the_wal_switch_retries_a_locked_refusal_and_reports_other_errors(tmp_path):
    from autoconv.cache.sql import SqliteFile

    database = SqliteFile(tmp_path / "cache.sqlite")
    real = database.connection
    database.connection = _RefusingWalSwitch(real, refusals=3)
    database.ready()
    assert database.connection.refusals == 0
    assert real.execute("PRAGMA journal_mode").fetchone() == ("wal",)

    database.connection = _RefusingWalSwitch(real, refusals=1, message="disk I/O error")
    with pytest.raises(CacheError, match=r"the database is unreadable \(disk I/O error\); delete "):
        database.ready()
    real.close()


def test_a_file_that_is_not_a_cache_gives_a_clear_error(tmp_path):
    path = tmp_path / "notes.sqlite"
    path.write_text("these are my notes, not a database\n" * 10)
    with pytest.raises(CacheError) as caught:
        WinnerCache(path)
    message = str(caught.value)
    assert str(path) in message and "not an SQLite database" in message and "another cache" in message
    assert "autoconv cache clear" not in message  # it is not autoconv's to delete
    with pytest.raises(CacheError, match="does not delete it"):
        WinnerCache.clear(path)
    assert path.read_text().startswith("these are my notes")  # untouched

    foreign = tmp_path / "foreign.sqlite"
    connection = sqlite3.connect(foreign)
    connection.execute("CREATE TABLE photos (id INTEGER)")
    connection.commit()
    connection.close()
    with pytest.raises(CacheError, match="something else") as caught:
        WinnerCache(foreign)
    assert "autoconv cache clear" not in str(caught.value)
    with pytest.raises(CacheError, match=r"tables photos\), so `autoconv cache clear` does not delete it"):
        WinnerCache.clear(foreign)
    assert foreign.exists()


def test_a_truncated_cache_gives_a_clear_error_and_clear_recovers(tmp_path, key):
    path = tmp_path / "c.sqlite"
    with WinnerCache(path) as cache:
        for i in range(300):
            cache.put(entry(replace(key, problem_key=f"N={i + 1},C=1,H=4,W=4,K=1,R=1,S=1"), 1.0,
                            study_name="s" * 200))
    size = path.stat().st_size
    assert size > 16 * 4096
    with open(path, "r+b") as handle:
        handle.truncate(size // 3)
    with pytest.raises(CacheError) as caught:
        with WinnerCache(path) as cache:
            cache.entries()
    assert str(path) in str(caught.value) and "autoconv cache clear" in str(caught.value)
    assert WinnerCache.clear(path)
    with WinnerCache(path) as cache:
        assert len(cache) == 0


def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "c.sqlite"
    WinnerCache(path).close()
    connection = sqlite3.connect(path)
    connection.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    connection.commit()
    connection.close()
    with pytest.raises(CacheError, match="newer than this autoconv"):
        WinnerCache(path)


def test_export_import_round_trip_keeps_the_faster(tmp_path, key):
    other = replace(key, problem_key="N=1,C=1,H=4,W=4,K=1,R=1,S=1")
    with WinnerCache(tmp_path / "a.sqlite") as a:
        a.put(tuned_entry(key, 1.0))
        a.put(tuned_entry(other, 5.0))
        a.set_baseline(key, name="cudnn", plan=None, time_ms=0.9, tflops=1.1)
        assert a.export(tmp_path / "winners.json") == 2
    document = json.loads((tmp_path / "winners.json").read_text())
    assert document["format"] == EXPORT_FORMAT and len(document["entries"]) == 2
    with WinnerCache(tmp_path / "b.sqlite") as b:
        b.put(tuned_entry(other, 2.0, study_name="faster_here"))
        assert b.import_file(tmp_path / "winners.json") == ImportResult(stored=1, kept=1)
        assert b.get(other).study_name == "faster_here"
        imported = b.get(key)
        assert imported.time_ms == 1.0 and imported.baseline_time_ms == 0.9
        # Again: the entry taken is there already (identical), the faster one here stays.
        assert b.import_file(tmp_path / "winners.json") == ImportResult(identical=1, kept=1)


@pytest.mark.parametrize("content, match", [
    ("not json", "invalid JSON"),
    ('{"format": "something"}', "not an autoconv cache export"),
    (json.dumps({"format": EXPORT_FORMAT, "schema_version": SCHEMA_VERSION, "entries": [{"key": {}}]}),
     r"entries\[0\] is malformed"),
])
def test_a_bad_export_is_refused_whole(tmp_path, content, match):
    (tmp_path / "bad.json").write_text(content)
    with WinnerCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(CacheError, match=match):
            cache.import_file(tmp_path / "bad.json")
        assert len(cache) == 0
