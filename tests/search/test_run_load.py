"""What a tuning run kept busy (RunLoad): the compilers' cores, the GPUs, and the bound the host's
cores put on any run of the same compiles."""

import pytest
from rich.console import Console

from autoconv.commands.console import summary_table
from autoconv.problems.problem import ConvProblem
from autoconv.search.outcome import ProblemOutcome, run_load

PROBLEM = ConvProblem(N=1, C=8, H=9, W=7, K=16, R=3, S=3)


def outcome(compile_cpu_s: float, gpu_s: float) -> ProblemOutcome:
    return ProblemOutcome(name="layer", problem=PROBLEM, source="tuned", compile_cpu_s=compile_cpu_s, gpu_s=gpu_s,
                          trials_run=10, time_ms=0.1)


def test_cores_busy_gpu_busy_and_the_bound_of_the_cores():
    load = run_load([outcome(300.0, 12.0), outcome(100.0, 8.0)], wall_s=50.0, gpus=2, host_cores=32)
    assert load.compile_cores == pytest.approx(8.0)      # 400 CPU-s over 50 s
    assert load.gpu_busy == pytest.approx(0.2)           # 20 GPU-s over 50 s x 2 GPUs
    assert load.cores_allow == pytest.approx(4.0)        # 400 CPU-s on 32 cores take 12.5 s at least
    assert load.as_dict() == {"host_cores": 32, "compile_cores_busy": 8.0, "gpus": 2, "gpu_busy": 0.2,
                              "cores_allow": 4.0}


def test_a_run_that_compiled_nothing_has_no_bound():
    load = run_load([outcome(0.0, 0.0)], wall_s=1.0, gpus=1, host_cores=16)
    assert load.cores_allow is None and load.as_dict()["cores_allow"] is None
    console = Console(record=True, width=400)
    console.print(summary_table([outcome(0.0, 0.0)], 1.0, load))
    assert "cores busy" not in " ".join(console.export_text().split())


def test_the_summary_says_it():
    outcomes = [outcome(240.0, 30.0)]
    console = Console(record=True, width=400)
    console.print(summary_table(outcomes, 60.0, run_load(outcomes, 60.0, gpus=1, host_cores=16)))
    text = " ".join(console.export_text().split())  # (the caption wraps)
    assert "the compilers kept 4.0 of the host's 16 cores busy, the candidates' runs the GPU 50% of the time" in text
    assert "allow the same compiles at most 4.00x as fast" in text
