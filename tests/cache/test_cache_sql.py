"""The winners' cache in a database given by a SQLAlchemy URL: an SQLite URL always, and a
real PostgreSQL server when ``AUTOCONV_TEST_POSTGRES_URL`` names one (``eval "$(bash
.ci/postgres start)"`` starts one and prints it). Every PostgreSQL test gets databases of
its own (``CREATE DATABASE``, dropped afterwards), so tests never see each other's rows.

What a fleet of hosts relies on: the same behaviour as a cache file (best wins, baselines,
export and import), the tables living beside other tables (Optuna's) and ``clear`` dropping
only autoconv's, damaged or foreign tables refused with the way out, an unreachable server
named with its password masked, concurrent writers and schema creators never failing and
the fastest entry staying, and ``autoconv.conv2d``'s lookup reading a URL cache."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import random
import socket
from dataclasses import replace

import pytest

from autoconv.backends.base import BackendIdentity
from autoconv.backends.fake import FAKE_IDENTITY
from autoconv.cache.entries import CacheEntry, CacheKey
from autoconv.cache.exchange import ImportResult
from autoconv.cache.location import default_location
from autoconv.cache.schema import SCHEMA_VERSION
from autoconv.cache.winners import WinnerCache
from autoconv.commands.main import main
from autoconv.config.load import load_config_text
from autoconv.errors import CacheError
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.problems.problem import parse_spec
from autoconv.runtime import api as runtime
from autoconv.urls import is_url
from tests.cache.entries import tuned_entry
from tests.helpers import cache_entry as entry
from tests.helpers import run_cli

PROBLEM = parse_spec("N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1")
OTHER_PROBLEM = parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1")
#: A time that a 4-byte float cannot hold exactly (PostgreSQL's REAL would round it).
PRECISE_MS = 0.123456789012345


@pytest.fixture
def key() -> CacheKey:
    return CacheKey.for_problem(FAKE_IDENTITY, PROBLEM)


# ---- databases ------------------------------------------------------------------------

@pytest.fixture(params=["sqlite-url", "postgresql"])
def databases(request, tmp_path):
    """``new()`` -> the URL of a new, empty database of one kind (SQLite, PostgreSQL)."""
    if request.param == "postgresql":
        return request.getfixturevalue("postgres_databases")
    numbers = itertools.count()
    return lambda: f"sqlite:///{tmp_path}/db{next(numbers)}.sqlite"


@pytest.fixture
def url(databases) -> str:
    return databases()


@pytest.fixture(params=["file", "sqlite-url", "postgresql"])
def location(request, tmp_path) -> str:
    """A new cache of each kind: a file path, an SQLite URL, a PostgreSQL URL."""
    if request.param == "file":
        return str(tmp_path / "cache.sqlite")
    if request.param == "postgresql":
        return request.getfixturevalue("postgres_databases")()
    return f"sqlite:///{tmp_path}/cache.sqlite"


def _execute(url: str, *statements: str) -> None:
    """Run SQL in ``url``'s database behind autoconv's back."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            for statement in statements:
                connection.execute(text(statement))
    finally:
        engine.dispose()


def _tables(url: str) -> set[str]:
    from sqlalchemy import create_engine, inspect

    engine = create_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def _secret(url: str) -> str | None:
    from sqlalchemy.engine import make_url

    return make_url(url).password


# ---- the behaviours of a cache file, over URLs ------------------------------------------

def test_is_url_and_the_default_location(monkeypatch, tmp_path):
    assert is_url("postgresql+psycopg://u@h/db") and is_url("sqlite:////abs/c.db")
    assert not is_url(tmp_path / "c.sqlite") and not is_url("relative/c.sqlite")
    monkeypatch.setenv("AUTOCONV_CACHE", "postgresql+psycopg://u:pw@h:5432/db")
    assert default_location() == "postgresql+psycopg://u:pw@h:5432/db"  # as is, not a Path
    monkeypatch.setenv("AUTOCONV_CACHE", str(tmp_path / "c.sqlite"))
    assert default_location() == tmp_path / "c.sqlite"


def test_round_trip_best_wins_and_baseline_survives(location, key):
    with WinnerCache(location) as cache:
        assert cache.get(key) is None and len(cache) == 0
        assert cache.put(entry(key, 2.0))
        assert not cache.put(entry(key, 3.0, kernel_name="slower"))
        assert not cache.put(entry(key, 2.0, kernel_name="as_fast"))  # a tie keeps the first
        assert cache.get(key).kernel_name == "kernel_x"
        assert cache.set_baseline(key, name="cudnn", plan='{"engine": 1}', time_ms=1.5, tflops=9.0)
        assert not cache.set_baseline(replace(key, dtype="float16"), name="cudnn", plan=None, time_ms=1.0,
                                      tflops=1.0)
        assert cache.put(entry(key, PRECISE_MS, kernel_name="faster", config={"BM": 128},
                               workspace_bytes=3 * 2**31 + 5, trials=2**40))
        got = cache.get(key)
        assert len(cache) == 1
        # Forced (not only_if_faster): a slower entry replaces it, the baseline stays.
        assert cache.put(entry(key, 5.0, kernel_name="forced"), only_if_faster=False)
        forced = cache.get(key)
    # Doubles and 64-bit integers come back exactly (PostgreSQL's REAL and INTEGER would not).
    assert (got.time_ms, got.tflops, got.kernel_name, dict(got.config)) == (
        PRECISE_MS, 1.0 / PRECISE_MS, "faster", {"BM": 128})
    assert (got.workspace_bytes, got.trials) == (3 * 2**31 + 5, 2**40)
    assert (got.baseline_name, got.baseline_time_ms, got.baseline_plan) == ("cudnn", 1.5, '{"engine": 1}')
    assert (forced.time_ms, forced.kernel_name, forced.baseline_time_ms) == (5.0, "forced", 1.5)
    with WinnerCache(location) as again:  # stored, not just remembered by the object
        assert again.get(key) == forced


@pytest.mark.parametrize("change", [
    {"gpu_name": "NVIDIA A100-SXM4-80GB"}, {"compute_capability": "8.0"}, {"cuda_runtime": 12040},
    {"cuda_driver": 12020}, {"autoconv_version": "0.0.9"}, {"templates_hash": "ffffffffffffffff"},
    {"problem_key": OTHER_PROBLEM.key()}, {"dtype": "float16"},
])
def test_entries_of_another_gpu_or_version_are_never_used(url, key, change):
    with WinnerCache(url) as cache:
        cache.put(entry(replace(key, **change)))
        assert cache.get(key) is None
        assert len(cache) == 1 and cache.entries()[0].key == replace(key, **change)


def test_export_import_between_a_database_and_a_file(databases, tmp_path, key):
    other = replace(key, problem_key=OTHER_PROBLEM.key())
    first, second = databases(), databases()
    with WinnerCache(first) as a:
        a.put(tuned_entry(key, 1.0))
        a.put(tuned_entry(other, 5.0))
        a.set_baseline(key, name="cudnn", plan=None, time_ms=0.9, tflops=1.1)
        assert a.export(tmp_path / "winners.json") == 2
    assert len(json.loads((tmp_path / "winners.json").read_text())["entries"]) == 2
    for target in (second, tmp_path / "file.sqlite"):  # database -> database, database -> file
        with WinnerCache(target) as b:
            b.put(tuned_entry(other, 2.0, study_name="faster_here"))
            assert b.import_file(tmp_path / "winners.json") == ImportResult(stored=1, kept=1)
            assert b.get(other).study_name == "faster_here"
            imported = b.get(key)
            assert imported.time_ms == 1.0 and imported.baseline_time_ms == 0.9
            assert b.import_file(tmp_path / "winners.json") == ImportResult(identical=1, kept=1)
    with WinnerCache(tmp_path / "file.sqlite") as file:  # file -> a fresh database
        assert file.export(tmp_path / "from_file.json") == 2
    with WinnerCache(databases()) as c:
        assert c.import_file(tmp_path / "from_file.json") == ImportResult(stored=2)
        assert {e.key.problem_key: e.time_ms for e in c.entries()} == {key.problem_key: 1.0,
                                                                        other.problem_key: 2.0}


def test_a_bad_export_is_refused_whole(url, tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps({"format": "autoconv-winners-export",
                                                   "schema_version": SCHEMA_VERSION, "entries": [{"key": {}}]}))
    with WinnerCache(url) as cache:
        with pytest.raises(CacheError, match=r"entries\[0\] is malformed"):
            cache.import_file(tmp_path / "bad.json")
        assert len(cache) == 0


def test_other_tables_are_welcome_and_clear_drops_only_autoconvs(url, key):
    # Optuna's tables (here a stand-in) share the database; a cache opens beside them.
    _execute(url, "CREATE TABLE studies (study_id INTEGER PRIMARY KEY, study_name TEXT)",
             "INSERT INTO studies VALUES (1, 'kept')")
    with WinnerCache(url) as cache:
        cache.put(entry(key))
        assert cache.path is None and cache.location.split("://")[0] == url.split("://")[0]
    assert _tables(url) == {"studies", "autoconv_meta", "autoconv_winners"}
    assert WinnerCache.clear(url)
    assert _tables(url) == {"studies"}
    assert not WinnerCache.clear(url)  # nothing of autoconv's left
    with WinnerCache(url) as cache:
        assert len(cache) == 0
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT study_name FROM studies")).all() == [("kept",)]
    engine.dispose()


#: The way out of tables of autoconv's names that autoconv did not make: another cache.
NOT_OURS = "pass another cache"


@pytest.mark.parametrize("damage, match, fix", [
    (["CREATE TABLE autoconv_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
      "INSERT INTO autoconv_meta VALUES ('format', 'somebody-elses-tool')"],
     "with format 'somebody-elses-tool', not an autoconv cache", NOT_OURS),
    (["CREATE TABLE autoconv_meta (id INTEGER)"], "not autoconv's", NOT_OURS),
    (["CREATE TABLE autoconv_winners (id INTEGER)"], "something else", NOT_OURS),
    ([f"UPDATE autoconv_meta SET value = '{SCHEMA_VERSION + 1}' WHERE name = 'schema_version'"],
     "newer than this autoconv", "upgrade autoconv"),
    (["UPDATE autoconv_meta SET value = 'one' WHERE name = 'schema_version'"], "is not a number",
     "autoconv cache clear"),
])
def test_foreign_or_newer_autoconv_tables_are_refused_with_the_way_out(url, key, damage, match, fix):
    if damage[0].startswith("UPDATE"):
        with WinnerCache(url) as cache:
            cache.put(entry(key))
    _execute(url, *damage)
    before = _tables(url)
    with pytest.raises(CacheError, match=match) as caught:
        WinnerCache(url)
    message = str(caught.value)
    assert message.startswith(f"cache {url.split('://')[0]}://") and fix in message
    if _secret(url):
        assert _secret(url) not in message and "***" in message
    assert _tables(url) == before  # nothing created or written in tables autoconv does not understand
    if fix == NOT_OURS:  # tables autoconv did not make are never dropped
        assert "autoconv cache clear" not in message
        with pytest.raises(CacheError, match="does not drop it"):
            WinnerCache.clear(url)
        assert _tables(url) == before
        _execute(url, *(f"DROP TABLE {table}" for table in before & {"autoconv_meta", "autoconv_winners"}))
    else:
        assert WinnerCache.clear(url)  # the way out works
    with WinnerCache(url) as cache:
        assert cache.put(entry(key)) and len(cache) == 1


def test_a_malformed_entry_is_an_error_not_a_wrong_kernel(url, key):
    with WinnerCache(url) as cache:
        cache.put(entry(key))
    _execute(url, "UPDATE autoconv_winners SET config = '{not json'")
    with WinnerCache(url) as cache:
        with pytest.raises(CacheError, match="malformed config") as caught:
            cache.get(key)
    assert "autoconv cache clear" in str(caught.value)


# ---- servers that cannot be reached --------------------------------------------------

def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens there once the socket is closed


@pytest.mark.parametrize("template, fix", [
    ("postgresql+psycopg://autoconv:s3cret-pw@127.0.0.1:{port}/autoconv", "database server runs"),
    ("nosuchdb://autoconv:s3cret-pw@127.0.0.1:{port}/autoconv", "driver names in the URL"),
])
def test_a_url_that_cannot_be_opened_names_it_masked_and_the_fix(template, fix, capsys):
    url = template.format(port=_closed_port())
    for attempt in (lambda: WinnerCache(url), lambda: WinnerCache.clear(url)):
        with pytest.raises(CacheError) as caught:
            attempt()
        message = str(caught.value)
        assert "s3cret-pw" not in message and url.replace("s3cret-pw", "***") in message
        assert "cannot open it" in message and fix in message and "--cache" in message
    code = main(["show", "--cache", url])
    err = capsys.readouterr().err
    assert code == 2 and "autoconv show: error: cache " in err and fix in err
    assert "s3cret-pw" not in err and "Traceback" not in err


def test_a_database_lost_after_opening_is_an_error_naming_it(postgres_databases, key):
    url = postgres_databases()
    with WinnerCache(url) as cache:
        cache.put(entry(key))
        postgres_databases.drop(url)  # the server cuts the pooled connection, reconnecting fails
        for attempt in (lambda: cache.get(key), lambda: cache.put(entry(key, 0.5))):
            with pytest.raises(CacheError, match="failed") as caught:
                attempt()
            message = str(caught.value)
            assert "check that the database server runs and accepts this user" in message
            assert url.split("@")[-1] in message and _secret(url) not in message


# ---- concurrent writers and schema creators ----------------------------------------------

def _racer(url: str, worker: int, times: list[float], barrier) -> None:
    """Open the (maybe still empty) database when every racer is ready, then put own
    entries and entries of one shared key."""
    identity = BackendIdentity("GPU", (9, 0), 1, 2, "fake")
    shared = CacheKey.for_problem(identity, PROBLEM)
    barrier.wait(timeout=60)
    with WinnerCache(url) as cache:
        for i, time_ms in enumerate(times):
            own = CacheKey.for_problem(identity, parse_spec(f"N={worker + 1},C={i + 1},H=8,W=8,K=4,R=3,S=3"))
            cache.put(entry(own, 1.0 + i))
            cache.put(entry(shared, time_ms, kernel_name=f"w{worker}_{time_ms:g}"))


@pytest.mark.slow
def test_concurrent_processes_create_the_schema_and_the_fastest_stays(url, seed):
    workers, count = 6, 12
    times = [1.0 + k for k in range(workers * count)]
    random.Random(seed).shuffle(times)  # the fastest comes at a random point of a random worker
    shares = [times[w * count:(w + 1) * count] for w in range(workers)]
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(workers)
    processes = [context.Process(target=_racer, args=(url, w, shares[w], barrier)) for w in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=180)
    assert [process.exitcode for process in processes] == [0] * workers
    with WinnerCache(url) as cache:
        entries = cache.entries()
    shared = [e for e in entries if e.key.problem_key == PROBLEM.key()]
    fastest_worker = next(w for w in range(workers) if 1.0 in shares[w])
    assert len(shared) == 1 and (shared[0].time_ms, shared[0].kernel_name) == (1.0, f"w{fastest_worker}_1")
    assert len(entries) - 1 == workers * count  # no own entry lost


def _opener(urls: list[str], barrier) -> None:
    """Open each fresh database together with the other openers."""
    for url in urls:
        barrier.wait(timeout=60)
        WinnerCache(url).close()


@pytest.mark.slow
def test_processes_opening_fresh_databases_together_never_fail(databases):
    """The race of creating the tables, run several times (one round rarely hits it)."""
    workers, rounds = 6, 6
    urls = [databases() for _ in range(rounds)]
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(workers)
    processes = [context.Process(target=_opener, args=(urls, barrier)) for _ in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=180)
    assert [process.exitcode for process in processes] == [0] * workers
    for url in urls:
        assert {"autoconv_meta", "autoconv_winners"} <= _tables(url)
        with WinnerCache(url) as cache:
            assert len(cache) == 0


# ---- where locations are given: the runtime, the config, the command line -----------------

def test_conv2d_lookup_finds_the_winner_in_a_url_cache(url, monkeypatch):
    family = get_family("direct")
    config = dict(family.space.points(OTHER_PROBLEM, H100)[-1])  # a valid config, not the default
    assert config != family.space.default_config(OTHER_PROBLEM, H100)
    plan = family.plan(OTHER_PROBLEM, config, H100)
    with WinnerCache(url) as cache:
        cache.put(CacheEntry(key=CacheKey.for_problem(FAKE_IDENTITY, OTHER_PROBLEM), family="direct",
                             config=config, kernel_name=plan.name, source_hash=plan.source_hash, time_ms=1.0,
                             tflops=1.0, workspace_bytes=plan.workspace_bytes))
    monkeypatch.setattr(runtime.REGISTRY, "_cache_location", None)
    monkeypatch.delenv("AUTOCONV_CACHE", raising=False)
    runtime.set_cache(url)
    assert runtime.cache_path() == url
    found, origin, why, got = runtime.REGISTRY.winner_plan(OTHER_PROBLEM, H100, FAKE_IDENTITY)
    assert (origin, why) == ("cache", "") and found.source_hash == plan.source_hash
    assert dict(found.config) == config and got.kernel_name == plan.name
    # Another GPU's lookup finds nothing, and says where it looked (password masked).
    plan_b, _, why_b, entry_b = runtime.REGISTRY.winner_plan(OTHER_PROBLEM, H100,
                                                             replace(FAKE_IDENTITY, gpu_name="GPU B"))
    assert plan_b is None and entry_b is None and "no tuned kernel" in why_b
    assert url.split("@")[-1] in why_b and (_secret(url) is None or _secret(url) not in why_b)
    # $AUTOCONV_CACHE as a URL is where conv2d looks by default.
    runtime.set_cache(None)
    monkeypatch.setenv("AUTOCONV_CACHE", url)
    assert runtime.cache_path() == url
    assert runtime.REGISTRY.winner_plan(OTHER_PROBLEM, H100, FAKE_IDENTITY)[1] == "cache"


def test_conv2d_lookup_in_an_unreachable_url_says_why():
    runtime_url = f"postgresql+psycopg://autoconv:s3cret-pw@127.0.0.1:{_closed_port()}/autoconv"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runtime.REGISTRY, "_cache_location", None)
        runtime.set_cache(runtime_url)
        plan, origin, why, entry_ = runtime.REGISTRY.winner_plan(OTHER_PROBLEM, H100, FAKE_IDENTITY)
    assert plan is None and entry_ is None and "cannot be used" in why and "s3cret-pw" not in why


@pytest.mark.parametrize("given, expected", [
    ("postgresql+psycopg://user:pw@db.example:5432/tuning", "postgresql+psycopg://user:pw@db.example:5432/tuning"),
    ("sqlite:////abs/cache.db", "sqlite:////abs/cache.db"),
    ("sqlite:///state/cache.db", "sqlite:////base/state/cache.db"),  # relative to the config, as storage
    ("state/cache.sqlite", "/base/state/cache.sqlite"),
])
def test_the_config_cache_may_be_a_url(given, expected):
    from pathlib import Path

    text = f"problems:\n  - name: p\n    spec: \"{PROBLEM.spec()}\"\ncache: '{given}'\n"
    config = load_config_text(text, base_dir="/base")
    assert config.cache == (expected if is_url(expected) else Path(expected)) and config.cache_given


def test_show_export_import_clear_commands_with_a_url(databases, tmp_path, capsys, key):
    url = databases()
    secret = _secret(url)
    with WinnerCache(url) as cache:
        cache.put(tuned_entry(key))
        cache.put(tuned_entry(replace(key, problem_key=OTHER_PROBLEM.key()), 2.0))
    code, out, _ = run_cli(capsys, "show", "--cache", url)
    assert code == 0 and "2 cached winners" in out and (secret is None or secret not in out)
    code, out, _ = run_cli(capsys, "cache", "export", tmp_path / "w.json", "--cache", url)
    assert code == 0 and "exported 2 winners" in out
    code, out, _ = run_cli(capsys, "cache", "clear", "--cache", url)
    assert code == 0 and "dropped the tables autoconv_meta, autoconv_winners" in out
    assert (secret is None or secret not in out) and not {"autoconv_meta", "autoconv_winners"} & _tables(url)
    code, out, _ = run_cli(capsys, "cache", "clear", "--cache", url)
    assert code == 0 and "no cache in" in out
    other = databases()
    code, out, _ = run_cli(capsys, "cache", "import", tmp_path / "w.json", "--cache", other)
    assert code == 0 and "imported 2 winners" in out
    with WinnerCache(other) as cache:
        assert cache.get(key) == tuned_entry(key, measured_at=cache.get(key).measured_at)


def test_tune_stores_its_winner_in_a_url_cache_and_serves_it_from_there(databases, tmp_path, capsys,
                                                                        monkeypatch):
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")  # the fake GPU of the CLI tests
    url = databases()
    config = tmp_path / "tune.yaml"
    config.write_text(f"problems:\n  - name: small\n    spec: \"{OTHER_PROBLEM.spec()}\"\nfamilies: [direct]\n"
                      "budget: {trials: 3}\nstorage: state/studies.journal\nresults: results\n")
    code, out, err = run_cli(capsys, "tune", config, "--cache", url)
    assert code == 0, out + err
    with WinnerCache(url) as cache:
        winner, = cache.entries()
    assert winner.key == CacheKey.for_problem(FAKE_IDENTITY, OTHER_PROBLEM) and winner.family == "direct"
    assert not (tmp_path / "state" / "cache.sqlite").exists()
    code, out, err = run_cli(capsys, "tune", config, "--cache", url)  # the second run finds it cached
    assert code == 0 and "cache" in out and "tuned" not in out, out + err
