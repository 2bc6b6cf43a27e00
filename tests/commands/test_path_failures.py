"""Every command that reads or writes a path the user names fails on a bad path the way
the README promises: exit status 2, one line on stderr naming the path, no
traceback; and nothing is created or written where it should not be.

The failure classes: a missing path, an unwritable one, a folder, a binary file, and
special files (``/dev/zero`` through a link in the test's folder, never the device itself:
an old ``cache clear`` deleted whatever the path named; a FIFO) that would block or never
end if read. The special
files run in a child process with a time and memory limit, so that a regression fails
instead of hanging the suite."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from autoconv.bench.results import PROBLEM_FIELDS, SCHEMA_VERSION
from tests.helpers import repo_env, run_cli

#: A path no one may write, even root (a read-only kernel file system).
UNWRITABLE = Path("/sys/autoconv-test-not-here")


def _results() -> dict:
    problem = {field: None for field in PROBLEM_FIELDS}
    problem.update(name="conv1", count=1, spec="N=1,C=8,H=8,W=8,K=8,R=3,S=3,pad=1", shape="1x8x8x8",
                   gflop=0.1, family="direct", params={}, autoconv_ms=0.5, autoconv_tflops=0.2,
                   family_best_ms={}, trials=[])
    return {"schema": SCHEMA_VERSION, "environment": {}, "problems": [problem]}


def _bad_path(kind: str, tmp_path: Path) -> Path:
    """A path of the failure class ``kind``."""
    if kind == "missing":
        return tmp_path / "no-such-folder" / "file"
    if kind == "unwritable":
        return UNWRITABLE / "file"
    if kind == "directory":
        (tmp_path / "a-folder").mkdir()
        return tmp_path / "a-folder"
    if kind == "binary":
        path = tmp_path / "photo.jpg"
        path.write_bytes(bytes(range(256)) * 40)
        return path
    if kind == "dev-zero":  # a link, so that a regression that deletes or replaces it harms nothing
        path = tmp_path / "zero"
        path.symlink_to("/dev/zero")
        return path
    if kind == "fifo":
        path = tmp_path / "a-fifo"
        os.mkfifo(path)
        return path
    raise AssertionError(kind)


def _argv(command: str, path: Path, tmp_path: Path) -> list[str]:
    """The command line driving ``path`` into ``command``'s path argument."""
    results = tmp_path / "results.json"
    results.write_text(json.dumps(_results()))
    cache = tmp_path / "cache.sqlite"
    return {
        "cache export": ["cache", "export", str(path), "--cache", str(tmp_path / "made.sqlite")],
        "cache import": ["cache", "import", str(path), "--cache", str(cache)],
        "cache clear": ["cache", "clear", "--cache", str(path)],
        "show": ["show", "--cache", str(path)],
        "report --results": ["report", "--results", str(path), "--out", str(tmp_path / "report"), "--no-plots"],
        "report --out": ["report", "--results", str(results), "--out", str(path), "--no-plots"],
    }[command]


COMMANDS = ("cache export", "cache import", "cache clear", "show", "report --results", "report --out")
KINDS = ("missing", "unwritable", "directory", "binary", "dev-zero", "fifo")

#: The cases that are not errors: nothing to clear or show (and nothing created), a new
#: report folder, or one that is there. ``unwritable`` for import/--results is a missing
#: file under /sys.
SUCCEEDS = {("cache clear", "missing"), ("cache clear", "unwritable"), ("show", "missing"),
            ("show", "unwritable"), ("report --out", "missing"), ("report --out", "directory")}


def _made_cache(tmp_path: Path) -> None:
    """The cache ``cache export`` reads (export refuses to create one)."""
    from autoconv.cache.winners import WinnerCache

    WinnerCache(tmp_path / "made.sqlite").close()


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_path_is_one_line_exit_2_naming_it(tmp_path, capsys, command, kind):
    if kind == "unwritable" and not UNWRITABLE.parent.is_dir():
        pytest.skip("no /sys here")
    path = _bad_path(kind, tmp_path)
    _made_cache(tmp_path)
    argv = _argv(command, path, tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    if kind in ("dev-zero", "fifo"):  # would block or never end if read: a child with limits
        try:
            done = subprocess.run([sys.executable, "-m", "autoconv", *argv], env=repo_env(), capture_output=True,
                                  text=True, timeout=60, preexec_fn=_limit_memory)
        except subprocess.TimeoutExpired:
            pytest.fail(f"autoconv {' '.join(argv)} hung on {path}")
        code, err = done.returncode, done.stderr
    else:
        code, _, err = run_cli(capsys, *argv)
    if (command, kind) in SUCCEEDS:
        assert code == 0, err
        if command == "report --out":
            assert (path / "report.md").is_file()
        else:  # readers and clear create nothing
            assert sorted(p.name for p in tmp_path.rglob("*")) == before
            assert not path.exists() and not path.parent.exists() or kind == "unwritable"
        return
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"autoconv {command.split()[0]}: error: ") and str(path) in lines[0], err
    if kind == "binary":
        assert path.read_bytes() == bytes(range(256)) * 40  # never overwritten or deleted
    if kind == "dev-zero":
        assert path.is_symlink() and path.is_char_device()
    if kind == "directory":
        assert path.is_dir() and not any(path.iterdir())
