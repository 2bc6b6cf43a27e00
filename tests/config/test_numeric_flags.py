"""Budget and numeric flags on the command line follow the same rules as the config
(issue 18, finding 2): ``--trials 0`` used to run, ``--seconds nan`` to exit 0 doing nothing."""

from __future__ import annotations

import math

import pytest

from autoconv.commands.main import build_parser, main
from autoconv.config.budget import BUDGET_RULES, Budget
from autoconv.config.load import load_config_text
from autoconv.errors import ConfigError, UsageError
from tests.helpers import REPO

QUICKSTART = REPO / "examples" / "quickstart.yaml"
PROBLEM = "problems:\n  - name: a\n    spec: 'N=1,C=1,H=8,W=8,K=1,R=3,S=3'\n"


@pytest.mark.parametrize("argv, flag, fragment", [
    (["tune", QUICKSTART, "--trials", "0"], "--trials", "must be >= 1, got '0'"),
    (["tune", QUICKSTART, "--trials", "-3"], "--trials", "must be >= 1, got '-3'"),
    (["tune", QUICKSTART, "--trials", "2.5"], "--trials", "expected an integer, got '2.5'"),
    (["tune", QUICKSTART, "--seconds", "0"], "--seconds", "must be >= 0.5 (one candidate takes"),
    (["tune", QUICKSTART, "--seconds", "-1"], "--seconds", "must be >= 0.5 (one candidate takes"),
    (["tune", QUICKSTART, "--seconds", "nan"], "--seconds", "expected a number of seconds, got 'nan'"),
    (["tune", QUICKSTART, "--seconds", "inf"], "--seconds", "expected a number of seconds, got 'inf'"),
    (["tune", QUICKSTART, "--patience", "0"], "--patience", "must be >= 1, got '0'"),
    (["tune", QUICKSTART, "--patience", "-2"], "--patience", "must be >= 1, got '-2'"),
    (["tune", QUICKSTART, "--dry-run", "--per-family", "-1"], "--per-family", "must be >= 1"),
    (["tune", QUICKSTART, "--dry-run", "--per-family", "0"], "--per-family", "must be >= 1"),
    (["verify", "--emulate", "--problem", "N=1,C=1,H=4,W=4,K=1,R=1,S=1", "--jobs", "0"], "--jobs", "must be >= 1"),
    (["verify", "--emulate", "--problem", "N=1,C=1,H=4,W=4,K=1,R=1,S=1", "--jobs", "-1"], "--jobs", "must be >= 1"),
])
def test_bad_numeric_flags_exit_2_naming_the_flag(argv, flag, fragment, capsys, monkeypatch):
    monkeypatch.setenv("AUTOCONV_BACKEND", "fake")
    with pytest.raises(SystemExit) as info:
        main([str(a) for a in argv])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: {fragment}" in err


@pytest.mark.parametrize("field, value", [("trials", 0), ("trials", -3), ("trials", 1.5), ("trials", True),
                                          ("seconds", 0), ("seconds", -1.0), ("seconds", math.nan),
                                          ("seconds", math.inf), ("patience", 0), ("patience", -2)])
def test_budget_refuses_what_the_config_and_the_flags_refuse(field, value):
    with pytest.raises(UsageError) as info:
        Budget(**{field: value})
    assert info.value.field == field
    # The config file says the same (its message comes from the same rule).
    reason = BUDGET_RULES[field](value)
    assert reason and reason in str(info.value)


@pytest.mark.parametrize("text, message", [
    ("{trials: 0}", "budget.trials: must be >= 1, got 0"),
    ("{seconds: .nan}", "budget.seconds: expected a number of seconds, got nan"),
    ("{patience: -2}", "budget.patience: must be >= 1, got -2"),
    ("{trials: '5'}", "budget.trials: expected a number, got '5'"),
])
def test_the_config_uses_the_same_rules(text, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        load_config_text(PROBLEM + f"budget: {text}\n", "test.yaml")


def test_good_flags_still_parse():
    args = build_parser().parse_args(["tune", str(QUICKSTART), "--trials", "7", "--seconds", "2.5", "--patience", "3",
                              "--per-family", "2"])
    assert (args.trials, args.seconds, args.patience, args.per_family) == (7, 2.5, 3, 2)
