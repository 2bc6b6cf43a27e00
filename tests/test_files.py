"""Reliability (issue 7): ``write_atomically`` replaces whole files and removes what dead
writers left."""

from __future__ import annotations

import json
import os

import pytest

from autoconv.files import write_atomically
from tests.helpers import dead_pid


def test_write_atomically_replaces_whole_files_and_removes_what_dead_writers_left(tmp_path, monkeypatch):
    target = tmp_path / "tune.json"
    target.write_text('{"old": 1}\n')
    dead = tmp_path / f".tune.json.{dead_pid()}.tmp"
    dead.write_text('{"half": ')
    live = tmp_path / f".tune.json.{os.getppid()}.tmp"  # another writer, still running
    live.write_text("being written")
    other = tmp_path / f".other.json.{dead_pid()}.tmp"  # not this target's
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
