"""Kernels that take the problem's sizes at run time (problem.cu.j2's RUN_TIME_SIZES): one source,
so one compilation, serves every problem of a configuration and filter size, and each run gets its
problem's sizes as ``__constant__`` values (KernelPlan.constants), set by the loader.

implicit_gemm_wgmma has such a build, every size but the filter's at run time, that the tuner ranks
candidates with (Family.plan's run_time_sizes); both builds of each gather order must compute the
same convolution, on awkward shapes.
"""

from __future__ import annotations

import numpy as np
import pytest

from autoconv.emulator import EmulatedKernelFault, compile_program, emulate_plan
from autoconv.errors import SearchSpaceError
from autoconv.kernels.families import get_family
from autoconv.kernels.families.base import declared_constants
from autoconv.kernels.limits import H100
from autoconv.problems.problem import make_problem
from autoconv.verify.compare import check_result
from autoconv.verify.reference import conv2d_reference, random_inputs
from autoconv.verify.tolerance import tolerance

FAMILY = "implicit_gemm_wgmma"
#: One small tile, so the emulated runs are quick: a warpgroup of 64 x 32.
SMALL = {"BM": 64, "BN": 32, "WGN": 32, "BK": 32, "STAGES": 3, "MMA_OVERLAP": "none", "SPLIT_K": 1,
         "MIN_BLOCKS": 1, "GATHER": "rsc"}

# Two problems of one filter size (3x2) that differ in every other size: batch 1 and 3, odd and
# even sizes, channels (C multiples of BK: the rsc order; K odd), strides, dilations, asymmetric
# padding; both with P*Q % 4 == 0 (float4 stores) and bias: the same code paths, so the same source.
# A third without bias and with P*Q % 4 != 0 (one-float stores).
FIRST = make_problem(N=1, C=32, H=9, W=7, K=19, R=3, S=2, stride=(2, 1), dilation=(1, 2), padding=(1, 0, 2, 1),
                     bias=True)
SECOND = make_problem(N=3, C=64, H=7, W=13, K=5, R=3, S=2, padding=(0, 1, 1, 1), bias=True)
THIRD = make_problem(N=2, C=64, H=6, W=7, K=33, R=3, S=3, padding=(2, 1, 0, 1))


def _check(plan, seed: int = 0) -> None:
    x, w, bias = random_inputs(plan.problem, np.random.default_rng(seed))
    y = emulate_plan(plan, x, w, bias)
    expected = conv2d_reference(plan.problem, x, w, bias)
    verdict = check_result(y, expected, tolerance(plan.problem, x, w, expected))
    assert verdict.ok, f"{plan.name} on {plan.problem.spec()}: {verdict.message}"


def test_one_source_serves_every_problem_of_a_configuration():
    family = get_family(FAMILY)
    first, second = (family.plan(problem, SMALL, run_time_sizes=True) for problem in (FIRST, SECOND))
    assert first.values["RUN_TIME_SIZES"] == 1
    assert first.source == second.source and first.source_hash == second.source_hash
    assert first.constants != second.constants
    assert first.constants["N"] == 1 and second.constants["N"] == 3
    assert first.constants["K_TILES"] == first.values["K_TILES"] == 6   # C*R*S = 192 in tiles of 32
    # every declared size is set, and nothing else
    assert set(first.constants) == set(declared_constants(first.source))
    sizes = {"N", "C", "H", "W", "K", "P", "Q", "STRIDE_H", "PAD_LEFT", "GEMM_K", "PARTIALS_OFFSET"}
    assert sizes <= set(first.constants)
    # the filter's size stays compiled in (the crs gather divides each element's k by R*S and S)
    assert not {"R", "S"} & set(first.constants)
    assert "constexpr int R = 3, S = 2;" in first.source
    assert family.plan(FIRST.with_(R=1), SMALL, run_time_sizes=True).source != first.source
    crs = {**SMALL, "GATHER": "crs"}
    assert family.plan(FIRST, crs, run_time_sizes=True).source == \
        family.plan(FIRST.with_(N=2, C=13, H=11, K=7), crs, run_time_sizes=True).source
    # the default build, and a family without the other build, have the sizes compiled in
    assert family.plan(FIRST, SMALL).constants == {} and family.plan(FIRST, SMALL).source != first.source
    assert get_family("implicit_gemm_mma").plan(FIRST, run_time_sizes=True).constants == {}


@pytest.mark.slow
@pytest.mark.parametrize("run_time_sizes", [True, False], ids=["run-time", "compiled-in"])
@pytest.mark.parametrize("split_k", [1, 2])
@pytest.mark.parametrize("gather", ["rsc", "crs"])
def test_both_builds_compute_the_convolution(run_time_sizes, split_k, gather):
    family = get_family(FAMILY)
    for problem in (FIRST, SECOND, THIRD):
        config = {**SMALL, "SPLIT_K": split_k, "GATHER": gather}
        if not family.space.is_valid(config, problem, H100):
            config = {**config, "SPLIT_K": 1}
        plan = family.plan(problem, config, run_time_sizes=run_time_sizes)
        assert bool(plan.constants) == run_time_sizes
        assert plan.values["OUT_VEC"] == (4 if problem.P * problem.Q % 4 == 0 else 1)
        _check(plan)


@pytest.mark.slow
def test_one_program_runs_two_problems_with_their_own_sizes():
    """The emulated program built for one problem's source runs the other's launches when given
    its sizes: nothing of the first problem is left in the build."""
    family = get_family(FAMILY)
    tf32 = {**SMALL, "MMA_OVERLAP": "carry"}
    first = family.plan(FIRST.with_(precision="tf32"), tf32, run_time_sizes=True)
    second = family.plan(SECOND.with_(precision="tf32"), tf32, run_time_sizes=True)
    assert first.source == second.source
    program = compile_program(first.source, [launch.kernel for launch in first.launches], name=first.name,
                              constants=first.constants)
    again = compile_program(second.source, [launch.kernel for launch in second.launches], name=second.name,
                            constants=second.constants)
    assert again.path == program.path
    for plan in (first, second):
        _check(plan, seed=1)


@pytest.mark.slow
def test_an_unset_size_is_refused_not_read_as_zero():
    family = get_family(FAMILY)
    plan = family.plan(FIRST, SMALL, run_time_sizes=True)
    x, w, bias = random_inputs(plan.problem, np.random.default_rng(0))
    program = compile_program(plan.source, [launch.kernel for launch in plan.launches], name=plan.name,
                              constants=plan.constants)
    buffers = {"x": x, "w": w, "bias": bias, "y": np.zeros(plan.problem.output_shape, np.float32),
               "workspace": np.zeros(plan.workspace_elements, np.float32)}
    constants = {name: value for name, value in plan.constants.items() if name != "GEMM_K"}
    with pytest.raises(EmulatedKernelFault, match="does not set __constant__ int GEMM_K"):
        program.run(plan.launches, buffers, constants=constants)


def test_a_size_the_search_space_does_not_derive_is_an_error(monkeypatch):
    """A template that declares a run-time value its search space has no value for fails to plan,
    naming it, instead of running with the value unset."""
    import autoconv.kernels.render as render

    original = render.render_source
    monkeypatch.setattr(render, "render_source",
                        lambda *args, **kwargs: original(*args, **kwargs) + "__constant__ int NOT_DERIVED;\n")
    with pytest.raises(SearchSpaceError, match="declares __constant__ NOT_DERIVED"):
        get_family(FAMILY).plan(FIRST, SMALL, run_time_sizes=True)


def test_declared_constants_reads_the_file_scope_declarations():
    source = "__constant__ int N, C, H;\n  __constant__ int INDENTED;\n__constant__ int K_TILES;   // (x)\n"
    assert declared_constants(source) == ("N", "C", "H", "K_TILES")
