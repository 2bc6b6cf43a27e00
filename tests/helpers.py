"""Helpers and configs shared by test files (the fixtures are in conftest.py).

- ``REPO``, :func:`repo_env`, :func:`fake_env`, :func:`tune_argv`: run the real
  ``autoconv`` command in a subprocess, on this checkout (and the fake backend).
- :func:`run_cli`: run it in this process, returning (exit status, stdout, stderr).
- ``ONE_PROBLEM`` (its problem: ``SMALL``), ``TWO_PROBLEMS``, ``THREE_PROBLEMS``: small tune configs.
- :func:`load_studies` and friends: a study journal read with plain Optuna (not
  autoconv's code), the winners' cache, processes below a pid.
- :func:`cache_entry`, :func:`dead_pid`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import optuna
import pytest
from optuna.storages.journal import JournalFileBackend, JournalStorage
from optuna.trial import TrialState

from autoconv.cache.entries import CacheEntry, CacheKey
from autoconv.cache.winners import WinnerCache
from autoconv.commands.main import main
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.search.points import config_key

#: The checkout's root (the folder of pyproject.toml).
REPO = Path(__file__).resolve().parent.parent

#: One tiny problem, one family: for the in-process CLI checks.
ONE_PROBLEM = """\
problems:
  - name: small
    spec: "N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1"
families: [direct]
budget: {trials: 3}
cache: state/cache.sqlite
storage: state/studies.journal
results: results
"""

#: ``ONE_PROBLEM``'s problem.
SMALL = NamedProblem("small", parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1"))

#: Two small problems, two quick families (``.format(trials=...)``).
TWO_PROBLEMS = """\
problems:
  - name: odd
    spec: "N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1"
  - name: pointwise
    spec: "N=1,C=8,H=9,W=9,K=12,R=1,S=1,bias=1"
families: [direct, im2col_gemm]
budget: {{trials: {trials}}}
cache: state/cache.sqlite
storage: state/studies.journal
results: results
"""

#: ``TWO_PROBLEMS`` and a third, with a seed (``.format(trials=..., seed=...)``): a full
#: run takes a few seconds.
THREE_PROBLEMS = TWO_PROBLEMS.replace("families:", """\
  - name: tall
    spec: "N=1,C=5,H=11,W=7,K=9,R=3,S=1,pad=1"
families:""") + "seed: {seed}\n"

#: What a state folder may hold once runs are over: the cache, the journal, its lock and its index.
STATE_FILES = {"cache.sqlite", "studies.journal", "studies.journal.flock", "studies.journal.index"}


# ---- the command ------------------------------------------------------------------------

def repo_env(**extra: object) -> dict[str, str]:
    """This process's environment, with this checkout first on ``PYTHONPATH``, and ``extra``
    (as text)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
            **{name: str(value) for name, value in extra.items()}}


def fake_env(**extra: object) -> dict[str, str]:
    """:func:`repo_env` on the fake backend, with unbuffered output."""
    return repo_env(AUTOCONV_BACKEND="fake", PYTHONUNBUFFERED="1", **extra)


def tune_argv(config: Path) -> list[str]:
    return [sys.executable, "-m", "autoconv", "tune", str(config)]


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """``autoconv *argv`` in this process: (exit status, stdout, stderr)."""
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---- studies, the cache and processes -----------------------------------------------------

def load_studies(journal: Path) -> dict[str, list]:
    """problem key -> the study's trials, read with plain Optuna (not autoconv's code)."""
    if not journal.exists():
        return {}
    storage = JournalStorage(JournalFileBackend(str(journal)))
    studies = {}
    for name in optuna.get_all_study_names(storage):
        study = optuna.load_study(study_name=name, storage=storage)
        studies[study.user_attrs.get("problem", name)] = study.get_trials(deepcopy=False)
    return studies


def trial_key(trial) -> str:
    family = trial.params["family"]
    prefix = family + "."
    return config_key(family, {k[len(prefix):]: v for k, v in trial.params.items() if k.startswith(prefix)})


def completed(trials) -> list:
    return [t for t in trials if t.state == TrialState.COMPLETE and t.user_attrs.get("status") == "ok"]


def cache_times(path: Path) -> dict[str, float]:
    if not path.exists():
        return {}
    with WinnerCache(path) as cache:
        return {entry.key.problem_key: entry.time_ms for entry in cache.entries()}


def assert_best_is_cached(studies: dict[str, list], cache_path: Path) -> None:
    """The cache holds, per problem, the fastest completed trial of its study."""
    with WinnerCache(cache_path) as cache:
        entries = {entry.key.problem_key: entry for entry in cache.entries()}
    assert set(entries) == set(studies)
    for problem_key, trials in studies.items():
        best = min(completed(trials), key=lambda t: t.value)
        entry = entries[problem_key]
        assert config_key(entry.family, entry.config) == trial_key(best), problem_key
        assert entry.time_ms == pytest.approx(best.value, rel=1e-12)


def cache_entry(key: CacheKey, time_ms: float = 1.0, **changes) -> CacheEntry:
    """A made-up winner for ``key`` (``changes`` replace its fields)."""
    values = dict(key=key, family="implicit_gemm", config={"BM": 64, "BN": 32}, kernel_name="kernel_x",
                  source_hash="0123456789abcdef", time_ms=time_ms, tflops=1.0 / time_ms, workspace_bytes=0,
                  trials=5, study_name="study")
    values.update(changes)
    return CacheEntry(**values)


def process_table() -> dict[int, list[str]]:
    """Every process's ``/proc/<pid>/stat`` fields after its name: state, parent, process group, ..."""
    table: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                table[int(entry.name)] = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
    return table


def descendants(pid: int) -> set[int]:
    """Processes below ``pid`` (from /proc)."""
    parents = {child: int(fields[1]) for child, fields in process_table().items()}
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def dead_pid() -> int:
    """A process id that is not running (a child that has exited and been reaped)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def round_mantissa(values, bits: int, ties: str = "away"):
    """float32 ``values`` rounded to ``bits`` explicit mantissa bits, to nearest with ties away
    from zero (10: TF32, as cvt.rna.tf32.f32 rounds; 7: bfloat16's precision) or, with
    ``ties="even"``, to even (TF32 as the TMA copies of TF32 tensor maps round)."""
    import numpy

    dropped = 23 - bits
    raw = numpy.asarray(values, dtype=numpy.float32).view(numpy.uint32)
    kept = numpy.uint32(~((1 << dropped) - 1) & 0xFFFFFFFF)
    half = numpy.uint32(1 << (dropped - 1))
    if ties == "even":   # a tie on an even kept mantissa stays down: add one less than half there
        odd = (raw >> numpy.uint32(dropped)) & numpy.uint32(1)
        half = half - numpy.uint32(1) + odd
    elif ties != "away":
        raise ValueError(f"ties must be 'away' or 'even', not {ties!r}")
    return ((raw + half) & kept).view(numpy.float32)


def family_spec(family_name: str, spec: str) -> str:
    """``spec`` in the first precision and layout family ``family_name`` computes, where it does
    not compute the problem as given (a 16-bit NHWC family given a float32 NCHW shape)."""
    from autoconv.kernels.families import get_family
    from autoconv.problems.problem import parse_spec

    family = get_family(family_name)
    problem = parse_spec(spec)
    if family.unsupported_reason(problem) is None:
        return spec
    return problem.in_precision(family.precisions[0]).with_(layout=family.layouts[0]).spec()


def set_at(*path_and_value):
    """A change to a nested JSON document: the value at a path of keys and indices set
    (``set_at("problems", 0, "count", 2)``), for tests that feed damaged documents."""
    *path, value = path_and_value

    def change(document):
        target = document
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def delete_at(*path):
    """A change to a nested JSON document: the entry at a path of keys and indices deleted."""
    def change(document):
        target = document
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return change
