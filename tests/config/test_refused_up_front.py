"""Issue 65: values that used to be accepted, or refused only after the whole tune, are refused
before any work starts, naming the key or flag, the limit and the fix: counts, device indices
and workspace limits of 2**63; ``--families ,,,`` (which meant every family); a time budget too
short for one candidate; and outputs tune cannot write (a results path that is a file or on a
read-only file system, ``storage: /dev/null``, ``cache: /proc/self/mem``)."""

from __future__ import annotations

import pytest

from autoconv.commands.main import main
from autoconv.config.budget import MIN_BUDGET_SECONDS, Budget
from autoconv.config.load import load_config_text
from autoconv.config.tune_config import MAX_DEVICE, MAX_WORKSPACE_LIMIT_MB, parse_families
from autoconv.errors import ConfigError, ProblemError, UsageError
from autoconv.kernels.families import FAMILY_NAMES
from autoconv.problems.models import MAX_COUNT, NamedProblem
from autoconv.problems.problem import parse_spec
from tests.helpers import REPO

QUICKSTART = REPO / "examples" / "quickstart.yaml"
PROBLEM = "problems:\n  - {name: a, spec: 'N=1,C=4,H=8,W=8,K=4,R=3,S=3'}\n"
HUGE = 2**63


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
