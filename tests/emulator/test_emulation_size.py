"""verify --emulate refuses problems whose emulation would take minutes, before any work."""

from __future__ import annotations

import time

import pytest

from autoconv.commands.main import main
from autoconv.emulator.check import estimated_seconds
from autoconv.kernels.families import get_family
from autoconv.problems.problem import parse_spec

#: 1000 rows and columns of padding on a 2x2 image: a million outputs (the issue's case took 300 s for 3 configs).
HUGE_OUTPUT = "N=1,C=3,H=2,W=2,K=8,R=3,S=3,pad=0:1000:0:1000"


def test_a_problem_too_large_to_emulate_is_refused_at_once(capsys):
    started = time.perf_counter()
    assert main(["verify", "--emulate", "--problem", HUGE_OUTPUT]) == 2
    assert time.perf_counter() - started < 20
    err = capsys.readouterr().err
    assert "would take about" in err and "--max-seconds" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_the_estimate_admits_the_test_problems_and_the_limit_can_be_raised(capsys):
    problem = parse_spec("N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1")
    for name in ("direct", "im2col_gemm", "implicit_gemm", "implicit_gemm_wgmma"):
        assert estimated_seconds(get_family(name).plan(problem, None)) < 10
    with pytest.raises(SystemExit) as exit_info:  # argparse's own refusal of the flag
        main(["verify", "--emulate", "--problem", HUGE_OUTPUT, "--max-seconds", "0"])
    assert exit_info.value.code == 2 and "--max-seconds: must be > 0" in capsys.readouterr().err
