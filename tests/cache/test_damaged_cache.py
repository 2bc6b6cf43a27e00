"""Reliability (issue 7): a corrupt, truncated or foreign winners' cache stops ``tune``
and ``show`` with a clear error naming the file and the way out (exit status 2, no
traceback), is left as it was, and never gives ``autoconv.conv2d`` a wrong kernel.

Issue 18: the way out of a damaged autoconv cache is ``autoconv cache clear``; a file that
is not (or cannot be told to be) an autoconv cache is not autoconv's to delete: ``clear``
refuses it (exit status 2, the reason) and the way out is another cache."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from autoconv.backends.fake import FAKE_IDENTITY
from autoconv.cache.schema import SCHEMA_VERSION
from autoconv.cache.winners import WinnerCache
from autoconv.kernels.limits import H100
from autoconv.problems.problem import parse_spec
from autoconv.runtime import api as runtime
from tests.helpers import ONE_PROBLEM, run_cli

#: The way out where the file is not recognisably an autoconv cache.
NOT_OURS = "pass another cache"


def _sqlite_file(path: Path, statement: str) -> None:
    connection = sqlite3.connect(path)
    connection.execute(statement)
    connection.commit()
    connection.close()


def _damage_cache(kind: str, path: Path, good: bytes) -> str:
    """Damage the cache at ``path`` (a good one's bytes: ``good``); the fix the error must name
    (:data:`NOT_OURS` where the file is no longer recognisably autoconv's)."""
    if kind == "garbage":
        path.write_bytes(os.urandom(3000))
        return NOT_OURS
    elif kind == "cut-header":
        path.write_bytes(good[:10])
        return NOT_OURS
    elif kind == "cut-in-half":
        path.write_bytes(good[: len(good) // 2])
    elif kind == "foreign-sqlite":
        path.unlink()
        _sqlite_file(path, "CREATE TABLE photos (id INTEGER, jpeg BLOB)")
        return NOT_OURS
    elif kind == "text":
        path.write_text("my notes\n" * 100)
        return NOT_OURS
    elif kind == "newer-schema":
        _sqlite_file(path, f"UPDATE meta SET value = '{SCHEMA_VERSION + 1}' WHERE name = 'schema_version'")
        return "upgrade autoconv"
    elif kind == "malformed-entry":
        _sqlite_file(path, "UPDATE winners SET config = '{not json'")
    return "autoconv cache clear"


@pytest.mark.parametrize("kind", ["garbage", "cut-header", "cut-in-half", "foreign-sqlite", "text",
                                  "newer-schema", "malformed-entry"])
def test_a_damaged_cache_stops_tune_with_the_file_and_the_way_out(tmp_path, capsys, fake_gpu, kind):
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

    code, out, err = run_cli(capsys, "cache", "clear", "--cache", cache)
    if fix == NOT_OURS:  # not autoconv's to delete: refused, with the reason, and left as it was
        assert code == 2 and f"autoconv cache: error: cache {cache}: " in err and "does not delete it" in err
        assert len(err.strip().splitlines()) == 1 and cache.read_bytes() == damaged
        cache.unlink()  # the owner moves it away
    else:
        assert code == 0, err
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 0 and "cache" in out  # the studies were kept: the winner comes back at once
