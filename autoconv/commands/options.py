"""Arguments several commands share."""

from __future__ import annotations

import argparse

from autoconv.kernels.limits import H100

#: The device that ``render`` and ``space`` plan for: the H100's limits (no GPU needed).
RENDER_DEVICE = H100


def add_problem_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--problem", required=True, metavar="SPEC",
                        help="problem spec, e.g. N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1,dilation=1")
