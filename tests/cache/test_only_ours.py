"""Issue 18: destructive commands touch only what autoconv created, and readers create
nothing.

``cache clear`` deletes a file only when it is an autoconv cache (its ``meta`` table with
autoconv's format, any schema version; or a damaged one whose schema is autoconv's) and
drops only autoconv's tables from a database; ``cache export`` overwrites only an
earlier export; ``report --out`` replaces only the files of an earlier report; the
advice for a foreign cache never names ``cache clear``. ``show`` and ``cache export``
create no file, folder or table where there is no cache."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from autoconv.backends.fake import FAKE_IDENTITY
from autoconv.cache.entries import CacheKey
from autoconv.cache.schema import SCHEMA_VERSION
from autoconv.cache.winners import WinnerCache
from autoconv.problems.problem import parse_spec
from tests.cache.entries import tuned_entry
from tests.helpers import run_cli

PROBLEM = parse_spec("N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1")


@pytest.fixture
def key() -> CacheKey:
    return CacheKey.for_problem(FAKE_IDENTITY, PROBLEM)


def _foreign_database(path: Path) -> None:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE photos (id INTEGER, jpeg BLOB)")
    connection.execute("INSERT INTO photos VALUES (1, x'ffd8')")
    connection.commit()
    connection.close()


@pytest.mark.parametrize("kind", ["text", "foreign-sqlite", "other-meta-format", "binary"])
def test_cache_clear_refuses_what_autoconv_did_not_create(tmp_path, capsys, kind):
    path = tmp_path / "thing.db"
    if kind == "text":
        path.write_text("my thesis\n" * 50)
    elif kind == "foreign-sqlite":
        _foreign_database(path)
    elif kind == "other-meta-format":  # autoconv's table names, someone else's format
        connection = sqlite3.connect(path)
        connection.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        connection.execute("CREATE TABLE winners (x INTEGER)")
        connection.execute("INSERT INTO meta VALUES ('format', 'another-tool')")
        connection.commit()
        connection.close()
    else:
        path.write_bytes(bytes(range(256)) * 16)
    wal = tmp_path / "thing.db-wal"
    wal.write_bytes(b"theirs")
    before = path.read_bytes()
    code, out, err = run_cli(capsys, "cache", "clear", "--cache", path)
    assert code == 2, out
    assert len(err.strip().splitlines()) == 1 and str(path) in err and "does not delete it" in err
    assert path.read_bytes() == before and wal.read_bytes() == b"theirs"

    # show and tune name the way out: another cache, never `cache clear` of someone's file.
    code, _, err = run_cli(capsys, "show", "--cache", path)
    assert code == 2 and "pass another cache" in err and "autoconv cache clear" not in err
    assert path.read_bytes() == before


@pytest.mark.parametrize("kind", ["good", "newer-schema", "empty-file", "truncated"])
def test_cache_clear_deletes_an_autoconv_cache_even_a_damaged_one(tmp_path, capsys, key, kind):
    path = tmp_path / "c.sqlite"
    if kind == "empty-file":
        path.write_bytes(b"")  # what a process killed right after creating a cache leaves
    else:
        with WinnerCache(path) as cache:
            for i in range(200):
                cache.put(tuned_entry(replace(key, problem_key=f"N={i + 1},C=1,H=4,W=4,K=1,R=1,S=1"),
                                      study_name="s" * 200))
        if kind == "newer-schema":
            connection = sqlite3.connect(path)
            connection.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'", (str(SCHEMA_VERSION + 1),))
            connection.commit()
            connection.close()
        if kind == "truncated":
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])
    code, out, err = run_cli(capsys, "cache", "clear", "--cache", path)
    assert code == 0, err
    assert f"deleted {path}" in out and not path.exists()


def test_cache_clear_of_a_url_drops_only_autoconvs_tables(tmp_path, capsys, key):
    database = tmp_path / "shared.db"
    _foreign_database(database)
    url = f"sqlite:///{database}"
    with WinnerCache(url) as cache:
        cache.put(tuned_entry(key))
    code, out, _ = run_cli(capsys, "cache", "clear", "--cache", url)
    assert code == 0 and "dropped the tables" in out
    tables = {row[0] for row in sqlite3.connect(database).execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"photos"}
    # An autoconv_meta of someone else's is theirs: refused, nothing dropped.
    connection = sqlite3.connect(database)
    connection.execute("CREATE TABLE autoconv_meta (id INTEGER)")
    connection.commit()
    connection.close()
    code, _, err = run_cli(capsys, "cache", "clear", "--cache", url)
    assert code == 2 and "does not drop it" in err and len(err.strip().splitlines()) == 1
    tables = {row[0] for row in sqlite3.connect(database).execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"photos", "autoconv_meta"}


@pytest.mark.parametrize("kind", ["text", "cache", "other-json"])
def test_cache_export_never_overwrites_a_file_that_is_not_an_export(tmp_path, capsys, key, kind):
    cache = tmp_path / "c.sqlite"
    with WinnerCache(cache) as winners:
        winners.put(tuned_entry(key))
    target = tmp_path / "out.json"
    if kind == "text":
        target.write_text("my notes\n")
    elif kind == "cache":
        target = cache  # exporting over the cache itself
    else:
        target.write_text(json.dumps({"format": "something-else"}))
    before = target.read_bytes()
    code, _, err = run_cli(capsys, "cache", "export", target, "--cache", cache)
    assert code == 2 and str(target) in err and "does not overwrite it" in err
    assert target.read_bytes() == before


def test_cache_export_replaces_its_own_export(tmp_path, capsys, key):
    cache = tmp_path / "c.sqlite"
    with WinnerCache(cache) as winners:
        winners.put(tuned_entry(key))
    target = tmp_path / "out.json"
    assert run_cli(capsys, "cache", "export", target, "--cache", cache)[0] == 0
    code, out, err = run_cli(capsys, "cache", "export", target, "--cache", cache)
    assert code == 0 and "exported 1 winner" in out, err


def test_readers_create_nothing(tmp_path, capsys):
    missing = tmp_path / "new" / "folder" / "c.sqlite"
    code, out, err = run_cli(capsys, "show", "--cache", missing)
    assert code == 0 and "no cache at" in out and "0 cached winners" in out, err
    assert not (tmp_path / "new").exists()
    code, _, err = run_cli(capsys, "cache", "export", tmp_path / "w.json", "--cache", missing)
    assert code == 2 and "nothing to export" in err
    assert not (tmp_path / "new").exists() and not (tmp_path / "w.json").exists()
    # A SQLite URL: no file, no folder; an existing database: no tables.
    code, out, _ = run_cli(capsys, "show", "--cache", f"sqlite:///{missing}")
    assert code == 0 and "0 cached winners" in out and not (tmp_path / "new").exists()
    database = tmp_path / "shared.db"
    _foreign_database(database)
    code, out, _ = run_cli(capsys, "show", "--cache", f"sqlite:///{database}")
    assert code == 0 and "0 cached winners" in out
    tables = {row[0] for row in sqlite3.connect(database).execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"photos"}
