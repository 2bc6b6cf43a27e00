"""Damaged study journals, resumed: cut at a random byte, at a record's end or inside its first
record; a line changed, removed, repeated, swapped or added in the middle; garbage or a stray
record at the end; emptied. Each with and without its ``.index`` and its ``.flock``. A resumed
run either refuses, naming the file and leaving it as it was, or goes on and keeps every
completed trial the file held (the harness checks both); where the index was there to tell,
what the cut took away is named too."""

from __future__ import annotations

import os
import random

import pytest

from tests.hostile.harness import JOURNAL, TUNE_WRITES, Case, held_trials, params
from tests.hostile.states import copy_tuned


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")[:-1]


def _join(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def cut_random(data: bytes, rng: random.Random) -> bytes:
    return data[:rng.randrange(1, len(data))]


def cut_at_a_record_end(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    return _join(lines[:rng.randrange(1, len(lines))])


def cut_in_the_first_record(data: bytes, rng: random.Random) -> bytes:
    return data[:rng.randrange(1, data.index(b"\n"))]


def flip_a_byte(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data) // 4, 3 * len(data) // 4)
    changed = bytearray(data)
    changed[at] = (changed[at] + 1 + rng.randrange(254)) % 256
    return bytes(changed)


def remove_a_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    del lines[rng.randrange(1, len(lines) - 1)]
    return _join(lines)


def repeat_a_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    at = rng.randrange(1, len(lines) - 1)
    return _join(lines[:at] + [lines[at]] + lines[at:])


def swap_two_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    at = rng.randrange(1, len(lines) - 2)
    lines[at], lines[at + 1] = lines[at + 1], lines[at]
    return _join(lines)


def add_a_garbage_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    at = rng.randrange(1, len(lines) - 1)
    return _join(lines[:at] + [b"this line is not a record"] + lines[at:])


def zero_a_block(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data) // 4, len(data) // 2)
    return data[:at] + b"\0" * 512 + data[at + 512:]


def append_a_cut_record(data: bytes, rng: random.Random) -> bytes:
    return data + b'{"op_code":6,"worker_id":"x","trial_id":3,"user_a'


def append_a_stray_record(data: bytes, rng: random.Random) -> bytes:
    return data + b'{"op_code":6,"worker_id":"x","trial_id":99999,"state":1,"values":[0.0],"datetime_complete":"x"}\n'


def empty(data: bytes, rng: random.Random) -> bytes:
    return b""


DAMAGE = [cut_random, cut_at_a_record_end, cut_in_the_first_record, flip_a_byte, remove_a_line, repeat_a_line,
          swap_two_lines, add_a_garbage_line, zero_a_block, append_a_cut_record, append_a_stray_record, empty]


def _case(damage, index: bool, lock: bool) -> Case:
    name = f"journal-{damage.__name__.replace('_', '-')}{'' if index else '-no-index'}{'' if lock else '-no-flock'}"
    state = {}

    def setup(box):
        copy_tuned(box)
        journal = box.path(JOURNAL)
        state["original"] = held_trials(journal, box.root.parent / "scratch")
        journal.write_bytes(damage(journal.read_bytes(), random.Random(box.seed)))
        if not index:
            os.remove(box.path(JOURNAL + ".index"))
        if not lock:
            os.remove(box.path(JOURNAL + ".flock"))

    def act(box):
        outcome = box.cli("tune", "tune.yaml", "--retune", "--trials", "10")
        if outcome.code == 0 and index:
            after = held_trials(box.path(JOURNAL), box.root.parent / "scratch")
            lost = state["original"] - after
            if lost and f"{len(lost)} completed trial" not in outcome.text:
                box.problems.append(f"(c) {len(lost)} completed trials the index knew of are gone, and the "
                                    "run did not say so")
    return Case(name, setup=setup, act=act, writes=TUNE_WRITES)


CASES = [_case(damage, index, lock) for damage in DAMAGE for index in (True, False) for lock in (True, False)
         if lock or damage in (cut_random, flip_a_byte, append_a_cut_record)]


@pytest.mark.parametrize("case", params(CASES))
def test_damaged_journal(hostile, case):
    hostile(case)


def test_a_journal_resumed_twice_after_a_cut_record(hostile):
    """The cut record a crash leaves is dropped once, with a note; the second run finds nothing."""
    def setup(box):
        copy_tuned(box)
        box.path(JOURNAL).write_bytes(append_a_cut_record(box.path(JOURNAL).read_bytes(), random.Random(0)))

    def act(box):
        first = box.cli("tune", "tune.yaml", "--retune", "--trials", "10")
        second = box.cli("tune", "tune.yaml", "--retune", "--trials", "11")
        assert first.code == second.code == 0, (first.text, second.text)
        assert "cut short" in first.text or "incomplete" in first.text, first.text
    hostile(Case("journal-cut-record-resumed-twice", setup=setup, act=act, writes=TUNE_WRITES))
