"""Writes that find no room, and paths that are not files (issue 65): a full disk or ``ulimit -f``
said "File too large" or "disk I/O error" without naming the file (and for the cache advised
deleting it); ``storage: /dev/null`` reached through the library was opened as a journal; a cache
at ``/proc/self/mem`` raised a bare "Input/output error".

The file-size limit is set in a subprocess (``RLIMIT_FSIZE``, with ``SIGXFSZ`` ignored, so that a
write past it fails with ``EFBIG`` instead of killing the process), as ``ulimit -f`` does.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autoconv.cache.winners import WinnerCache
from autoconv.errors import CacheError, StorageError
from autoconv.search.storage import make_storage
from tests.helpers import fake_env, repo_env, tune_argv

#: A journal of the problem below outgrows this within its trials; the cache (20 KB) does not.
JOURNAL_LIMIT = 40_000

TUNE = """\
problems:
  - name: odd
    spec: "N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1"
families: [direct]
budget: {trials: 300}
cache: state/cache.sqlite
storage: state/studies.journal
results: results
"""


def _limited(limit: int):
    def start() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return start


def _run(argv: list[str], cwd: Path, env: dict[str, str], limit: int | None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          preexec_fn=None if limit is None else _limited(limit))


def test_a_journal_past_the_file_size_limit_is_named_kept_whole_and_resumed(tmp_path):
    config = tmp_path / "tune.yaml"
    config.write_text(TUNE)
    journal = tmp_path / "state" / "studies.journal"
    done = _run(tune_argv(config), tmp_path, fake_env(), JOURNAL_LIMIT)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert f"study storage {journal}: cannot append to it (File too large: " in done.stderr
    assert "`ulimit -f`" in done.stderr
    assert journal.read_bytes().endswith(b"\n")  # (the failed append taken back: no record cut short)
    again = _run([*tune_argv(config), "--trials", "1"], tmp_path, fake_env(), None)  # (its trials are spent)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "removed an incomplete last record" not in again.stderr


def test_a_cache_past_the_file_size_limit_says_so_and_not_to_delete_it(tmp_path):
    config = tmp_path / "tune.yaml"
    config.write_text(TUNE.replace("trials: 300", "trials: 2"))
    done = _run(tune_argv(config), tmp_path, fake_env(), 9_000)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert f"cache {tmp_path / 'state' / 'cache.sqlite'}: " in done.stderr
    assert "(its file-size limit, `ulimit -f`)" in done.stderr and "delete" not in done.stderr


def test_write_atomically_past_the_file_size_limit_names_the_file(tmp_path):
    target = tmp_path / "tune.json"
    script = textwrap.dedent(f"""\
        from autoconv.files import write_atomically
        try:
            write_atomically({str(target)!r}, "x" * 5000)
        except OSError as err:
            print(err)
        """)
    done = _run([sys.executable, "-c", script], tmp_path, repo_env(), 1000)
    assert done.returncode == 0, done.stderr
    assert str(target) in done.stdout and "File too large: " in done.stdout and "`ulimit -f`" in done.stdout
    assert os.listdir(tmp_path) == []  # (no temporary file left)


def test_storage_that_is_a_device_is_refused_and_nothing_created_beside_it():
    had_lock = Path("/dev/null.flock").exists()
    with pytest.raises(StorageError, match=r"^study storage /dev/null: not a regular file \(a device") as raised:
        make_storage("/dev/null")
    assert "(null.flock)" in str(raised.value)
    assert Path("/dev/null.flock").exists() == had_lock


def test_storage_that_is_a_fifo_is_refused_without_reading_it(tmp_path):
    fifo = tmp_path / "studies.journal"
    os.mkfifo(fifo)
    with pytest.raises(StorageError, match="not a regular file"):
        make_storage(fifo)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["studies.journal"]


def test_a_cache_whose_reads_fail_is_named():
    with pytest.raises(CacheError, match=r"^cache /proc/self/mem: cannot be read \(Input/output error\)"):
        WinnerCache("/proc/self/mem")
