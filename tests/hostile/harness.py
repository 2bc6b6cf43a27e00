"""The hostile run's harness: a sandbox folder per case, and the invariants every case is held
to, checked here rather than case by case.

A :class:`Case` sets its sandbox up (files of its own, foreign files where autoconv's would go,
a tuned state copied in), then runs autoconv through the :class:`Box`: the command line in this
process (:meth:`Box.cli`) or in a child (:meth:`Box.spawn`), or the Python API
(:meth:`Box.api`). :func:`run_case` then holds it to:

(a) no traceback in any output (children's included: they share the sandbox's output files),
    exit status 0, 1 or 2 (docs/*.md), and from the API an :class:`AutoconvError` or a value;
(b) every file the sandbox held that is not among the case's ``writes`` is byte-identical
    afterwards, no new file lies outside ``writes``, and nothing new appears beside the paths
    outside the sandbox that the case names (no ``/dev/null.flock``); a case whose one command
    was refused (status 2) changed no file at all;
(c) no silent loss: every completed trial the study journal held before (read with plain
    Optuna) is still there, or the output names how many were lost; no cached winner is gone or
    replaced by a slower one.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.storages.journal import JournalFileBackend, JournalStorage
from optuna.trial import TrialState

from autoconv.cache.winners import WinnerCache
from autoconv.commands.main import main
from autoconv.errors import AutoconvError
from tests.helpers import REPO, alive, descendants, trial_key

#: The state folder and files a tuned sandbox holds (``tests.hostile.states``).
JOURNAL, CACHE = "state/studies.journal", "state/cache.sqlite"
#: What a tuning run in the sandbox may write: its state and its summary.
TUNE_WRITES = ("state/*", "results/tune.json")
#: Exit statuses the docs give: 0 done, 1 done with problems (a problem without a winner,
#: rejected imports), 2 refused or failed with a one-line error.
EXIT_STATUSES = {0, 1, 2}

optuna.logging.set_verbosity(optuna.logging.ERROR)


@dataclass
class Outcome:
    """One run of autoconv: what it printed and how it ended (``code`` None: the API returned)."""

    what: str
    code: int | None
    out: str
    err: str
    value: Any = None

    @property
    def text(self) -> str:
        return self.out + self.err


@dataclass(frozen=True)
class Case:
    """One hostile case: ``setup`` fills the sandbox, ``act`` runs autoconv in it.

    ``writes``: globs (relative to the sandbox) of the files autoconv may create or change;
    ``outside``: paths outside the sandbox that the case names; ``clears``: the case empties
    the cache on purpose (``cache clear``), so winners may go."""

    id: str
    act: Callable[[Box], object]
    setup: Callable[[Box], object] | None = None
    writes: tuple[str, ...] = ()
    outside: tuple[str, ...] = ()
    clears: bool = False
    marks: tuple = ()


def params(cases: Sequence[Case]) -> list:
    """``cases`` for ``pytest.mark.parametrize("case", ...)``, each with its id and marks."""
    return [pytest.param(case, id=case.id, marks=case.marks) for case in cases]


class Box:
    """A case's sandbox: ``root`` with ``home/`` (``$HOME``) and ``tmp/`` (``$TMPDIR``), the
    fake backend, and the runs made so far."""

    def __init__(self, root: Path, seed: int, monkeypatch, capfd, tuned: Path | None = None):
        self.root, self.seed, self.tuned = root, seed, tuned
        self.home, self.tmp = root / "home", root / "tmp"
        self.home.mkdir(parents=True)
        self.tmp.mkdir()
        self.outcomes: list[Outcome] = []
        self.problems: list[str] = []   # broken invariants, reported together at the end
        self.checkpoints: list[tuple[str, set, dict]] = []
        self._monkeypatch, self._capfd = monkeypatch, capfd

    # ---- files ------------------------------------------------------------------------------

    def path(self, relative: str) -> Path:
        return self.root / relative

    def write(self, relative: str, content: str | bytes) -> Path:
        path = self.path(relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        return path

    def env(self, **extra: object) -> dict[str, str]:
        """The environment autoconv runs in: the fake backend, ``$HOME`` and ``$TMPDIR`` in the
        sandbox, no cache named by the caller's environment."""
        env = {name: value for name, value in os.environ.items()
               if not name.startswith("AUTOCONV_") or name == "AUTOCONV_TEST_SEED"}
        env.update(AUTOCONV_BACKEND="fake", HOME=str(self.home), TMPDIR=str(self.tmp), PYTHONUNBUFFERED="1",
                   PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
        env.update({name: str(value) for name, value in extra.items()})
        return env

    def checkpoint(self, moment: str) -> None:
        """Remember the completed trials and cached winners there are now (after a kill, say):
        :func:`run_case` checks that the end state keeps them, like those from before the case."""
        self.checkpoints.append((moment, held_trials(self.path(JOURNAL), self.root.parent / "scratch"),
                                 cached_times(self.path(CACHE))))

    # ---- running autoconv -------------------------------------------------------------------

    def cli(self, *argv: object, **env: object) -> Outcome:
        """``autoconv *argv`` in this process, in the sandbox."""
        self._enter(env)
        self._capfd.readouterr()
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exit_:   # argparse's usage errors
            code = exit_.code if isinstance(exit_.code, int) else 2
        except BaseException:  # noqa: BLE001 (any other exception is the traceback the run must not show)
            captured = self._capfd.readouterr()
            return self._record(Outcome(f"autoconv {_shown(argv)}", -1, captured.out,
                                        captured.err + traceback.format_exc()))
        captured = self._capfd.readouterr()
        return self._record(Outcome(f"autoconv {_shown(argv)}", code, captured.out, captured.err))

    def api(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Outcome:
        """A call of autoconv's Python API: a value or an :class:`AutoconvError` (its message as
        ``err``, status 2); anything else is a traceback."""
        self._enter({})
        self._capfd.readouterr()
        name = getattr(call, "__qualname__", repr(call))
        try:
            value = call(*args, **kwargs)
        except AutoconvError as err:
            captured = self._capfd.readouterr()
            return self._record(Outcome(name, 2, captured.out, captured.err + str(err)))
        except Exception:  # noqa: BLE001 (the traceback the call must not raise)
            captured = self._capfd.readouterr()
            return self._record(Outcome(name, -1, captured.out, captured.err + traceback.format_exc()))
        captured = self._capfd.readouterr()
        return self._record(Outcome(name, None, captured.out, captured.err, value))

    def spawn(self, *argv: object, limit_fsize: int | None = None, **env: object) -> Child:
        """``autoconv *argv`` in a child process (its own process group), output to files in
        ``tmp/`` that its own children share."""
        number = len(list(self.tmp.glob("child*.out")))
        out, err = self.tmp / f"child{number}.out", self.tmp / f"child{number}.err"

        def limits() -> None:
            if limit_fsize is not None:
                import resource
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit_fsize, limit_fsize))
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails (EFBIG), not kills

        with open(out, "w") as stdout, open(err, "w") as stderr:
            process = subprocess.Popen([sys.executable, "-m", "autoconv", *map(str, argv)], cwd=self.root,
                                       env=self.env(**env), stdout=stdout, stderr=stderr,
                                       preexec_fn=limits, start_new_session=True)
        return Child(self, process, f"autoconv {_shown(argv)}", out, err)

    def _enter(self, env: dict[str, object]) -> None:
        patch = self._monkeypatch
        patch.chdir(self.root)
        for name in [n for n in os.environ if n.startswith("AUTOCONV_") and n != "AUTOCONV_TEST_SEED"]:
            patch.delenv(name)
        for name, value in self.env(**env).items():
            if name.startswith("AUTOCONV_") or name in ("HOME", "TMPDIR"):
                patch.setenv(name, value)
        patch.setattr(tempfile, "tempdir", str(self.tmp))

    def _record(self, outcome: Outcome) -> Outcome:
        self.outcomes.append(outcome)
        if "Traceback (most recent call last)" in outcome.text or outcome.code == -1:
            self.problems.append(f"(a) {outcome.what}: a traceback:\n{outcome.text[-3000:]}")
        elif outcome.code is not None and outcome.code not in EXIT_STATUSES:
            self.problems.append(f"(a) {outcome.what}: exit status {outcome.code}:\n{outcome.text[-1500:]}")
        return outcome


class Child:
    """An ``autoconv`` child process of a :class:`Box`."""

    def __init__(self, box: Box, process: subprocess.Popen, what: str, out: Path, err: Path):
        self.box, self.process, self.what, self.out, self.err = box, process, what, out, err

    def wait(self, timeout: float = 120) -> Outcome:
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(signal.SIGKILL)
            self.box.problems.append(f"{self.what}: still running after {timeout} s (killed)")
            code = self.process.returncode
        return self.box._record(Outcome(self.what, code, self.out.read_text(), self.err.read_text()))

    def kill(self, signum: int, timeout: float = 30) -> Outcome:
        """Send ``signum`` to the parent alone; wait for it and for every process it started to
        end (they watch it), then read what all of them printed."""
        helpers = descendants(self.process.pid)
        self.process.send_signal(signum)
        self.process.wait(timeout=timeout)
        left = _wait_until(lambda: not [pid for pid in helpers if alive(pid)], timeout)
        if not left:
            self.box.problems.append(f"{self.what}: processes left after {signal.Signals(signum).name} "
                                     f"of their parent: {[pid for pid in helpers if alive(pid)]}")
            for pid in helpers:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
        outcome = Outcome(f"{self.what} ({signal.Signals(signum).name})", None, self.out.read_text(),
                          self.err.read_text())
        return self.box._record(outcome)


def _wait_until(condition: Callable[[], bool], timeout: float, step: float = 0.02) -> bool:
    """Poll ``condition`` (a file or the process table: the event itself, not a guess of its time)."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True


def wait_until(condition: Callable[[], bool], timeout: float = 60) -> None:
    assert _wait_until(condition, timeout), "the awaited event did not come"


def _shown(argv: Sequence[object]) -> str:
    text = " ".join(map(str, argv))
    return text if len(text) <= 200 else text[:200] + "..."


# ---- (b) files --------------------------------------------------------------------------------

def snapshot(root: Path) -> dict[str, tuple]:
    """relative path -> what it is: a file's hash and mode, a link's target, a folder, a FIFO."""
    found: dict[str, tuple] = {}
    for folder, folders, files in os.walk(root):
        for name in folders + files:
            path = Path(folder) / name
            relative = str(path.relative_to(root))
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                found[relative] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                found[relative] = ("file", hashlib.sha256(path.read_bytes()).hexdigest(), stat.S_IMODE(info.st_mode))
            elif stat.S_ISDIR(info.st_mode):
                found[relative] = ("folder", stat.S_IMODE(info.st_mode))
            else:
                found[relative] = ("other", stat.S_IFMT(info.st_mode))
    return found


def _allowed(relative: str, writes: Sequence[str]) -> bool:
    """Whether ``writes`` allows creating or changing ``relative``: a glob matches it, a glob
    ending in ``/**`` holds it, or it is a folder on the way to one."""
    if relative == "tmp" or relative.startswith("tmp/"):
        return True
    for pattern in writes:
        if fnmatch.fnmatch(relative, pattern) or pattern.startswith(relative + "/"):
            return True
        if pattern.endswith("/**") and relative.startswith(pattern[:-2]):
            return True
    return False


def _beside(paths: Sequence[str]) -> dict[str, set[str]]:
    """Each named outside path -> the names in its folder that start with its name."""
    found = {}
    for text in paths:
        path = Path(text)
        try:
            found[text] = {p.name for p in path.parent.iterdir() if p.name.startswith(path.name)}
        except OSError:
            found[text] = set()
    return found


# ---- (c) journal and cache ---------------------------------------------------------------------

def held_trials(journal: Path, scratch: Path) -> set[tuple[str, str]]:
    """The completed trials (problem, configuration) that plain Optuna reads from ``journal``,
    or from its whole records up to the first damaged one."""
    if not journal.is_file():
        return set()
    lines = journal.read_bytes().split(b"\n")
    good = []
    for line in lines[:-1]:   # (the last: empty, or a record cut short)
        try:
            json.loads(line)
        except ValueError:
            break
        good.append(line)
    scratch.mkdir(parents=True, exist_ok=True)
    copy = scratch / f"journal{len(list(scratch.iterdir()))}"
    copy.write_bytes(b"".join(line + b"\n" for line in good))
    try:
        storage = JournalStorage(JournalFileBackend(str(copy)))
        held = set()
        for name in optuna.get_all_study_names(storage):
            study = optuna.load_study(study_name=name, storage=storage)
            problem = study.user_attrs.get("problem", name)
            held |= {(problem, trial_key(t)) for t in study.get_trials(deepcopy=False)
                     if t.state == TrialState.COMPLETE and t.user_attrs.get("status") == "ok"}
        return held
    except Exception:  # noqa: BLE001 (what plain Optuna cannot read, autoconv need not keep)
        return set()


def cached_times(cache: Path) -> dict[str, float]:
    if not cache.is_file():
        return {}
    try:
        with WinnerCache(cache) as winners:
            return {f"{e.key.problem_key}|{e.key.gpu_name}": e.time_ms for e in winners.entries()}
    except (AutoconvError, OSError):
        return {}


def _summary_problems(summary: Path, times: dict[str, float]) -> list[str]:
    """Where a summary a run wrote names a slower winner than the cache holds for its problem."""
    try:
        problems = json.loads(summary.read_text())["problems"]
    except (ValueError, KeyError, TypeError):
        return [f"(c) {summary.name}: not a tuning summary"]
    found = []
    for problem in problems:
        cached = [t for key, t in times.items() if key.split("|")[0] == problem.get("problem")]
        if problem.get("time_ms") and cached and problem["time_ms"] > min(cached) * (1 + 1e-9):
            found.append(f"(c) tune.json reports {problem['time_ms']} ms for {problem.get('name')}, the cache a "
                         f"faster winner ({min(cached)} ms)")
    return found


# ---- the run ---------------------------------------------------------------------------------

def run_case(case: Case, root: Path, seed: int, monkeypatch, capfd, tuned: Path | None = None) -> Box:
    """Set ``case`` up in ``root``, run it, and assert the invariants (the module's docstring)."""
    box = Box(root, seed, monkeypatch, capfd, tuned)
    if case.setup:
        case.setup(box)
    scratch = root.parent / "scratch"
    before, beside = snapshot(root), _beside(case.outside)
    trials_before = held_trials(box.path(JOURNAL), scratch)
    times_before = cached_times(box.path(CACHE))
    try:
        case.act(box)
    finally:
        monkeypatch.undo()
    after = snapshot(root)
    problems = list(box.problems)
    refused = len(box.outcomes) == 1 and box.outcomes[0].code == 2
    for relative, was in before.items():
        if relative.startswith("tmp/") or (_allowed(relative, case.writes) and not refused):
            continue
        if after.get(relative) != was:
            problems.append(f"(b) {relative}: changed or removed ({was} -> {after.get(relative)})"
                            + (" by a refused command" if refused else ""))
    for relative in sorted(set(after) - set(before)):
        if not _allowed(relative, case.writes):
            problems.append(f"(b) {relative}: created, not among the case's outputs {case.writes}")
    for text, names in _beside(case.outside).items():
        if names - beside[text]:
            problems.append(f"(b) created outside the sandbox beside {text}: {sorted(names - beside[text])}")
    text = "\n".join(o.text for o in box.outcomes)
    trials_after, times_after = held_trials(box.path(JOURNAL), scratch), cached_times(box.path(CACHE))
    for moment, trials, times in [("before the case", trials_before, times_before), *box.checkpoints]:
        lost = trials - trials_after
        if lost and not re.search(rf"\b{len(lost)} completed trials?\b", text):
            problems.append(f"(c) {len(lost)} of the {len(trials)} completed trials the journal held {moment} "
                            "were lost, and no output says so")
        for key, time_ms in times.items():
            if case.clears:
                break
            if key not in times_after:
                problems.append(f"(c) the winner of {key} cached {moment} is gone")
            elif times_after[key] > time_ms * (1 + 1e-9):
                problems.append(f"(c) the winner of {key} cached {moment} was replaced by a slower one "
                                f"({time_ms} -> {times_after[key]} ms)")
    summary = box.path("results/tune.json")
    if summary.is_file() and after.get("results/tune.json") != before.get("results/tune.json"):
        problems += _summary_problems(summary, times_after)
    if problems:
        runs = "\n".join(f"  {o.what}: {o.code}\n    " + "\n    ".join(o.text.strip().splitlines()[-8:])
                         for o in box.outcomes)
        raise AssertionError(f"{case.id}: " + "\n".join(problems) + f"\nruns:\n{runs}")
    shutil.rmtree(scratch, ignore_errors=True)
    for outcome in box.outcomes:  # (shown with -rP: what each run said)
        print(f"{outcome.what}: {outcome.code}: {' | '.join(outcome.text.strip().splitlines()[-3:])[:400]}")
    return box
