"""Killed, starved and raced ``autoconv tune`` runs (child processes, fake backend): SIGKILL,
SIGTERM and SIGINT of the parent of one worker or of several, at moments set by what the
journal and the cache hold (never by a sleep); a file-size limit (``ulimit -f``, a full disk to
the process) at several sizes; two runs on one cache and journal at once. Every run ends without
a traceback (its workers' output included), leaves no process behind, and the resumed run keeps
every trial and winner there was at the kill (the harness's checkpoints)."""

from __future__ import annotations

import random
import signal

import pytest

from tests.hostile.harness import CACHE, JOURNAL, TUNE_WRITES, Case, cached_times, held_trials, params, wait_until
from tests.hostile.states import config, copy_tuned

#: Seconds each candidate takes on the fake backend here: a run lasts long enough to be killed.
DELAY = "0.05"
TRIALS = 12


def _fresh(box) -> None:
    box.write("tune.yaml", config(box.seed, TRIALS))


def _completed(box) -> int:
    return len(held_trials(box.path(JOURNAL), box.root.parent / "scratch"))


def _after_trials(count: int):
    return lambda box: _completed(box) >= count


#: When to kill, given the seed's random numbers: a condition on the sandbox.
MOMENTS = {
    "at-start": lambda rng: lambda box: box.path(JOURNAL).exists(),
    "after-trials": lambda rng: _after_trials(rng.randint(1, 5)),
    "after-a-winner": lambda rng: lambda box: len(cached_times(box.path(CACHE))) >= 1,
}


def _kill_case(moment: str, signum: int, workers: int, kills: int = 1) -> Case:
    name = f"kill-{signal.Signals(signum).name}-{moment}-{workers}-worker{'s' if workers > 1 else ''}" + (
        f"-{kills}-times" if kills > 1 else "")
    flags = ["--workers-per-gpu", str(workers)] if workers > 1 else []

    def kill_once(box, rng) -> None:
        child = box.spawn("tune", "tune.yaml", *flags, AUTOCONV_FAKE_DELAY_S=DELAY)
        ready = MOMENTS[moment](rng)
        wait_until(lambda: child.process.poll() is not None or ready(box), timeout=60)
        if child.process.poll() is None:
            child.kill(signum)
        else:
            child.wait()
        box.checkpoint(f"after the {signal.Signals(signum).name} at {moment}")

    def act(box):
        rng = random.Random(box.seed)
        for _ in range(kills):
            kill_once(box, rng)
        final = box.cli("tune", "tune.yaml")
        if final.code != 0:
            box.problems.append(f"the run after the kill ended with {final.code}")
    return Case(name, setup=_fresh, act=act, writes=TUNE_WRITES)


KILLS = [_kill_case(moment, signum, workers)
         for signum in (signal.SIGKILL, signal.SIGTERM) for moment in MOMENTS for workers in (1, 2)]
KILLS += [_kill_case("after-trials", signal.SIGINT, 1), _kill_case("after-trials", signal.SIGINT, 2),
          _kill_case("after-trials", signal.SIGKILL, 2, kills=3), _kill_case("after-trials", signal.SIGKILL, 3)]


def _limit_case(name: str, limit: int, tuned: bool) -> Case:
    """A file-size limit: a write past it fails (EFBIG) where the disk would be full."""
    def setup(box):
        if tuned:
            copy_tuned(box)
        else:
            _fresh(box)

    def act(box):
        flags = ["--retune", "--trials", "40"] if tuned else []
        limited = box.spawn("tune", "tune.yaml", *flags, limit_fsize=limit).wait()
        if limited.code not in (0, 1) and not any(p in limited.err for p in ("studies.journal", "cache.sqlite",
                                                                             "tune.json")):
            box.problems.append(f"the run under `ulimit -f` did not name the file it could not write:\n"
                                f"{limited.err[-800:]}")
        box.checkpoint(f"after the run limited to {limit} bytes a file")
        final = box.cli("tune", "tune.yaml", *flags)
        if final.code != 0:
            box.problems.append(f"the run after the full disk ended with {final.code}")
    return Case(f"full-disk-{name}", setup=setup, act=act, writes=TUNE_WRITES)


LIMITS = [_limit_case("4k-fresh", 4096, False), _limit_case("40k-fresh", 40_000, False),
          _limit_case("100k-tuned", 100_000, True), _limit_case("20k-tuned", 20_000, True)]


def _race_case(name: str, flags: list[str]) -> Case:
    def act(box):
        children = [box.spawn("tune", "tune.yaml", "--pipeline-depth", "4", *flags, AUTOCONV_FAKE_DELAY_S="0.02")
                    for _ in range(2)]
        for child in children:
            if child.wait().code != 0:
                box.problems.append(f"{child.what} ended with {child.process.returncode}")
    return Case(f"race-{name}", setup=_fresh, act=act, writes=TUNE_WRITES)


RACES = [_race_case("two-tunes", []), _race_case("two-tunes-two-workers-each", ["--workers-per-gpu", "2"])]


@pytest.mark.parametrize("case", params(KILLS + LIMITS + RACES))
def test_killed_starved_raced(hostile, case):
    hostile(case)
