"""Issue 65: values that used to be accepted, or refused only after the whole tune, are refused
before any work starts, naming the key or flag, the limit and the fix: counts, device indices
and workspace limits of 2**63; ``--families ,,,`` (which meant every family); a time budget too
short for one candidate; and outputs tune cannot write (a results path that is a file or on a
read-only file system, ``storage: /dev/null``, ``cache: /proc/self/mem``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from autoconv.commands.main import main
from autoconv.config.budget import MIN_BUDGET_SECONDS, Budget
from autoconv.config.load import load_config_text
from autoconv.config.outputs import check_outputs, output_problems
from autoconv.config.tune_config import MAX_DEVICE, MAX_WORKSPACE_LIMIT_MB, parse_families
from autoconv.errors import ConfigError, ProblemError, UsageError
from autoconv.kernels.families import FAMILY_NAMES
from autoconv.problems.models import MAX_COUNT, NamedProblem
from autoconv.problems.problem import parse_spec
from tests.helpers import REPO, run_cli

QUICKSTART = REPO / "examples" / "quickstart.yaml"
PROBLEM = "problems:\n  - {name: a, spec: 'N=1,C=4,H=8,W=8,K=4,R=3,S=3'}\n"
HUGE = 2**63
#: A folder no one may create files in, even root (sysfs refuses them whatever the permission bits say).
UNWRITABLE = Path("/sys/autoconv-test-not-here")


def _errors(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config_text(text, "test.yaml", base_dir="/base")
    return info.value.errors


# ---- numbers with a limit ------------------------------------------------------------------

@pytest.mark.parametrize("text, key, limit, why", [
    (PROBLEM.replace("R=3,S=3'", f"R=3,S=3', count: {HUGE}"), "problems[0].count", MAX_COUNT, "occurs"),
    (PROBLEM + f"device: {HUGE}\n", "device", MAX_DEVICE, "CUDA device index"),
    (PROBLEM + f"workspace_limit_mb: {HUGE}\n", "workspace_limit_mb", MAX_WORKSPACE_LIMIT_MB, "more than any GPU"),
])
def test_counts_devices_and_workspace_limits_are_bounded_with_the_reason(text, key, limit, why):
    (error,) = _errors(text)
    assert error.startswith("test.yaml:") and f": {key}: must be <= {limit} (" in error
    assert why in error and error.endswith(f"got {HUGE}")
    # The limits themselves are taken.
    assert load_config_text(text.replace(str(HUGE), str(limit)), "test.yaml", base_dir="/base")


def test_counts_of_merged_duplicates_stay_within_the_limit():
    text = (f"problems:\n  - {{name: a, spec: 'N=1,C=4,H=8,W=8,K=4,R=3,S=3', count: {MAX_COUNT}}}\n"
            f"  - {{name: b, spec: 'N=1,C=4,H=8,W=8,K=4,R=3,S=3', count: 1}}\n")
    (error,) = _errors(text)
    assert error.startswith("test.yaml:3: problems[1]: the same problem as problems[0] (line 2)")
    assert f"add up to {MAX_COUNT + 1}, more than {MAX_COUNT}" in error


def test_a_named_problem_refuses_a_count_out_of_range():
    problem = parse_spec("N=1,C=4,H=8,W=8,K=4,R=3,S=3")
    for count in (0, HUGE, 1.5, True):
        with pytest.raises(ProblemError) as info:
            NamedProblem("a", problem, count)
        assert info.value.field == "count"
    assert NamedProblem("a", problem, MAX_COUNT).count == MAX_COUNT


# ---- --families ----------------------------------------------------------------------------

@pytest.mark.parametrize("values, shown, fragment", [
    ([",,,"], "',,,'", "names no family"),
    ([""], "''", "names no family"),
    (["direct", " , "], "' , '", "names no family"),
    (["direct,,implicit_gemm"], "'direct,,implicit_gemm'", "an empty family name"),
    (["direct,"], "'direct,'", "an empty family name"),
    (["implict_gemm"], "'implict_gemm'", "unknown kernel family (did you mean 'implicit_gemm'?)"),
    (["direct", "direct"], "'direct'", "named twice"),
])
def test_the_families_option_names_at_least_one_known_family(values, shown, fragment):
    with pytest.raises(UsageError) as info:
        parse_families(values)
    assert str(info.value).startswith(f"--families={shown}: ") and fragment in str(info.value)


def test_the_families_option_reads_commas_and_repeats():
    assert parse_families(None) is None and parse_families([]) is None  # not given: the config's
    assert parse_families(["direct, implicit_gemm", "im2col_gemm"]) == ("direct", "implicit_gemm", "im2col_gemm")
    assert parse_families([",".join(FAMILY_NAMES)]) == FAMILY_NAMES


# ---- a time budget ---------------------------------------------------------------------------

@pytest.mark.parametrize("seconds", ["1.0e-300", "0.1", "0", "-1"])
def test_a_time_budget_too_short_for_one_candidate_is_refused(seconds, capsys, monkeypatch):
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")
    with pytest.raises(SystemExit) as info:
        main(["tune", str(QUICKSTART), "--seconds", seconds])
    assert info.value.code == 2
    assert f"argument --seconds: must be >= {MIN_BUDGET_SECONDS:g} (one candidate" in capsys.readouterr().err
    (error,) = _errors(PROBLEM + f"budget: {{seconds: {seconds}}}\n")
    assert f"budget.seconds: must be >= {MIN_BUDGET_SECONDS:g} (" in error
    with pytest.raises(UsageError):
        Budget(seconds=float(seconds))
    assert Budget(seconds=MIN_BUDGET_SECONDS).seconds == MIN_BUDGET_SECONDS


# ---- outputs ---------------------------------------------------------------------------------

def _config(tmp_path: Path, **paths: str) -> Path:
    """A config in ``tmp_path`` with these output paths (its cache in ``tmp_path`` unless given)."""
    paths = {"cache": str(tmp_path / "cache.sqlite"), **paths}
    path = tmp_path / "c.yaml"
    path.write_text(PROBLEM + "budget: {trials: 2}\n" + "".join(f"{key}: {value}\n" for key, value in paths.items()))
    return path


def _tree(folder: Path) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*")}


@pytest.mark.parametrize("kind", ["results is a file", "results under a file", "results read-only",
                                  "storage a device", "storage a folder", "storage under a file",
                                  "cache unreadable", "cache a folder", "cache read-only"])
def test_check_refuses_outputs_tune_could_not_write_naming_them(kind, tmp_path, capsys):
    (tmp_path / "a-file").write_text("mine\n")
    (tmp_path / "a-folder").mkdir()
    key, value, fragment = {
        "results is a file": ("results", tmp_path / "a-file", "is a file, not a folder"),
        "results under a file": ("results", tmp_path / "a-file" / "out", f"{tmp_path / 'a-file'} is not a folder"),
        "results read-only": ("results", UNWRITABLE / "out", "the folder /sys cannot be written"),
        "storage a device": ("storage", "/dev/null", "not a regular file (a device, FIFO or socket), and autoconv "
                             "creates files beside it (null.flock)"),
        "storage a folder": ("storage", tmp_path / "a-folder", "is a folder, not a file"),
        "storage under a file": ("storage", tmp_path / "a-file" / "s.journal", "is not a folder"),
        "cache unreadable": ("cache", "/proc/self/mem", "cannot be read ("),
        "cache a folder": ("cache", tmp_path / "a-folder", "is a folder, not a file"),
        "cache read-only": ("cache", UNWRITABLE / "c.sqlite", "the folder /sys cannot be written"),
    }[kind]
    config = _config(tmp_path, **{key: str(value)})
    before, flock = _tree(tmp_path), Path("/dev/null.flock").exists()
    code, out, err = run_cli(capsys, "check", config)
    assert code == 2 and "Traceback" not in err
    lines = err.splitlines()
    what = "results folder" if key == "results" else key
    assert lines[0].startswith(f"{what} {value}: ") and fragment in lines[0], lines
    assert f"set `{key}:` in the config" in lines[0]
    assert lines[-1] == f"autoconv check: 1 output of {config} cannot be written; `autoconv tune` would refuse to start"
    assert _tree(tmp_path) == before and Path("/dev/null.flock").exists() == flock  # nothing created
    assert (tmp_path / "a-file").read_text() == "mine\n"


def test_outputs_that_can_be_written_pass_and_nothing_is_left_behind(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "studies.journal").write_text("")
    before = _tree(tmp_path)
    assert output_problems(tmp_path / "results", tmp_path / "studies.journal", tmp_path / "cache.sqlite") == []
    # Not yet there: created with their folders by the run.
    assert output_problems(tmp_path / "new" / "results", str(tmp_path / "new" / "deeper" / "s.journal"),
                           f"sqlite:///{tmp_path / 'db' / 'c.sqlite'}") == []
    # A server database is not reached (its server answers when the run opens it).
    assert output_problems(tmp_path, "postgresql+psycopg://u:secret@nowhere.invalid/db", "mysql://nowhere/x") == []
    assert _tree(tmp_path) == before


def test_check_outputs_lists_every_problem_at_once(tmp_path):
    (tmp_path / "a-file").write_text("")
    with pytest.raises(ConfigError) as info:
        check_outputs(tmp_path / "a-file", "/dev/null", f"sqlite:///{tmp_path}")
    assert [line.split(":")[0] for line in info.value.errors] == [
        f"results folder {tmp_path / 'a-file'}", "storage /dev/null", "cache sqlite"]
    assert f"cache sqlite:///{tmp_path}: is a folder, not a file" in info.value.errors[2]


def test_check_of_a_config_whose_outputs_can_be_written_exits_0(tmp_path, capsys):
    code, out, err = run_cli(capsys, "check", _config(tmp_path))
    assert code == 0 and err == "" and "1 problem" in out
    assert os.listdir(tmp_path) == ["c.yaml"]


def test_long_paths_are_refused_or_named_short(tmp_path):
    long = "/tmp/" + "x" * 100_000
    for key in ("cache", "storage", "results"):
        (error,) = _errors(PROBLEM + f"{key}: '{long}'\n")
        assert error.startswith(f"test.yaml:3: {key}: '/tmp/xxx") and "... (100005 characters) is not a path" in error
        assert "PATH_MAX" in error and len(error) < 300
    # From the command line (--cache, --storage) a path is not bounded: the message quotes it short.
    problems = output_problems(long, tmp_path / "s.journal", f"sqlite:///{long}")
    assert [problem.split(" ")[0] for problem in problems] == ["results", "cache"]
    assert all(re.search(r"\.\.\. \(1000\d\d characters\)", problem) and len(problem) < 500
               for problem in problems), problems
