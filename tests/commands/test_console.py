"""The terminal's progress (:class:`autoconv.commands.console.RichReporter`) with two studies in
flight: each problem has its bar until it ends, whichever ends first."""

from __future__ import annotations

import io

from rich.console import Console

from autoconv.backends.base import Status, TrialResult
from autoconv.commands.console import RichReporter
from autoconv.config.budget import Budget
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.search.outcome import ProblemOutcome


def test_two_problems_in_flight_each_keep_their_bar():
    reporter = RichReporter(Console(file=io.StringIO(), force_terminal=False, width=200))
    first = NamedProblem("first", parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1"))
    second = NamedProblem("second", parse_spec("N=1,C=4,H=9,W=9,K=8,R=3,S=3,pad=1"))
    plan = get_family("direct").plan(first.problem, get_family("direct").space.default_config(first.problem, H100),
                                     H100)
    best = TrialResult(status=Status.OK, time_ms=0.5, tflops=1.0)
    budget = Budget(trials=20)
    reporter.run_started([first, second], budget)
    reporter.problem_started(first, "a", 0, budget)
    reporter.problem_started(second, "b", 0, budget)
    reporter.trial_finished(first, 0, plan, best, best, 1)  # (the first's, after the second began)

    def bars():
        return {task.description: task.completed for task in reporter.progress.tasks}

    assert bars() == {"problems": 0, "first": 1, "second": 0}
    reporter.problem_finished(ProblemOutcome(name="second", problem=second.problem))
    assert bars() == {"problems": 1, "first": 1}
    reporter.trial_finished(first, 1, plan, best, best, 2)
    reporter.problem_finished(ProblemOutcome(name="first", problem=first.problem))
    assert bars() == {"problems": 2}
    reporter.run_finished([])


def test_a_problem_finished_again_counts_once():
    """A run ends by evaluating what killed workers left, or neighbours' winners: a problem then
    finishes a second time, and the problems' bar read "4/2"."""
    reporter = RichReporter(Console(file=io.StringIO(), force_terminal=False, width=200))
    first = NamedProblem("first", parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1"))
    second = NamedProblem("second", parse_spec("N=1,C=4,H=9,W=9,K=8,R=3,S=3,pad=1"))
    reporter.run_started([first, second], Budget(trials=20))
    for _ in range(3):
        reporter.problem_finished(ProblemOutcome(name="first", problem=first.problem))
    assert {task.description: task.completed for task in reporter.progress.tasks} == {"problems": 1}
