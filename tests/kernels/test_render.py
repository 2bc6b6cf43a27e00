"""Every family renders: its default config for awkward problems, named and headed as the
template conventions say, with launches that honour the backend contract; and the
``autoconv render`` / ``autoconv space`` commands around it.
"""

from __future__ import annotations

import json
import re

import pytest

from autoconv.commands.main import main
from autoconv.kernels.families import BUFFER_NAMES, FAMILY_NAMES, get_family
from autoconv.kernels.limits import H100
from autoconv.kernels.render import GENERATED_BANNER
from autoconv.kernels.tensor_maps import check_map
from autoconv.problems.problem import parse_spec
from tests.helpers import family_spec

RENDER_PROBLEMS = (
    "N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1",
    "N=1,C=1,H=9,W=40,K=3,R=1,S=7,pad=0:0:3:3,bias=1",
    "N=3,C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3",
    "N=2,C=5,H=12,W=7,K=130,R=7,S=1,stride=1x2,pad=3:2:0:1,dilation=2x1,bias=1",
    "N=1,C=64,H=7,W=7,K=9,R=5,S=5,pad=same,dilation=3",
    "N=4,C=512,H=1,W=1,K=1000,R=1,S=1,bias=1",
)

#: A problem every family's default config fits as it is, so that the CLI tests need no
#: enumeration of the space (which takes seconds for large spaces).
CLI_PROBLEM = "N=4,C=32,H=33,W=35,K=96,R=3,S=3,stride=2x1,pad=1:0:1:1"

GRID_LIMITS = (2**31 - 1, 65535, 65535)


def _neighbours(family, problem, count: int) -> list[dict]:
    """Up to ``count`` valid configs that differ from the default in one parameter."""
    default = dict(family.space.default)
    found = []
    for name, choices in family.space.params.items():
        for choice in choices:
            config = {**default, name: choice}
            if choice != default[name] and family.space.is_valid(config, problem, H100):
                found.append(config)
                if len(found) == count:
                    return found
    return found


def _kernel_definition(kernel: str) -> re.Pattern:
    """``extern "C" __global__ void __launch_bounds__(...) <kernel>(``, spread over lines."""
    return re.compile(r'extern "C" __global__ void __launch_bounds__\([\w, ]+\)\s*' + re.escape(kernel) + r"\(")


@pytest.mark.parametrize("family_name", FAMILY_NAMES)
@pytest.mark.parametrize("spec", RENDER_PROBLEMS)
def test_default_config_renders_by_the_conventions(family_name, spec):
    family = get_family(family_name)
    problem = parse_spec(family_spec(family_name, spec))
    plan = family.plan(problem)  # the default config, or the valid point nearest to it
    config = plan.config
    assert not family.space.violations(config, problem, H100)

    header = plan.source.splitlines()[:5]
    assert header[0] == f"// {GENERATED_BANNER}"
    assert header[1] == f"// template: templates/{family.template}"
    assert header[2] == f"// kernel:   {plan.name}"
    assert header[3] == f"// problem:  {problem.spec()}"
    assert json.loads(header[4].removeprefix("// config:   ")) == config
    assert "{{" not in plan.source and "{%" not in plan.source, "unrendered Jinja2 left in the source"

    assert plan.launches, "a plan launches at least one kernel"
    for launch in plan.launches:
        assert launch.kernel.startswith(plan.name)
        assert len(_kernel_definition(launch.kernel).findall(plan.source)) == 1, launch.kernel
        # an argument is a buffer, or one of the plan's tensor maps (passed by value)
        assert set(launch.args) <= set(BUFFER_NAMES) | set(plan.tensor_maps)
        assert len(set(launch.args)) == len(launch.args)
        assert 1 <= launch.threads <= H100.max_threads_per_block
        assert all(1 <= size <= limit for size, limit in zip(launch.grid, GRID_LIMITS)), launch.grid
        assert 0 <= launch.shared_bytes <= H100.max_shared_bytes
        if launch.shared_bytes:
            # the convention: one dynamic array `smem`, at least 16-byte aligned
            assert re.search(r"extern __shared__ __align__\((16|32|64|128)\) unsigned char smem\[\];",
                             plan.source)
            assert f"== {launch.shared_bytes}, " in plan.source, "no static_assert on the shared memory size"

    used = [name for launch in plan.launches for name in launch.args]
    used += [plan.tensor_maps[name].buffer for name in used if name in plan.tensor_maps]   # what a map reads
    assert "x" in used and "w" in used and plan.launches[-1].args[-1] == "y"
    for name, tensor_map in plan.tensor_maps.items():
        assert name in used and tensor_map.buffer in BUFFER_NAMES and check_map(tensor_map) is None
    assert ("bias" in used) == problem.bias
    assert ("workspace" in used) == (plan.workspace_bytes > 0)


@pytest.mark.parametrize("family_name", FAMILY_NAMES)
def test_kernel_names_encode_family_and_differ_between_configs(family_name):
    family = get_family(family_name)
    problem = parse_spec(family_spec(family_name, CLI_PROBLEM))
    configs = [dict(family.space.default)] + _neighbours(family, problem, 2)
    assert len(configs) == 3
    plans = [family.plan(problem, config) for config in configs]
    names = {plan.name for plan in plans}
    assert len(names) == len(configs), names
    for plan in plans:
        tag = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}[problem.dtype]
        assert plan.name.startswith(f"{family_name}_{tag}_")
        assert plan.name.isidentifier()
        for name, value in plan.config.items():
            assert f"{name}{value}" in plan.name
    kernels = [launch.kernel for plan in plans for launch in plan.launches]
    assert len(set(kernels)) == len(kernels)


@pytest.mark.parametrize("family_name", FAMILY_NAMES)
def test_render_command_prints_the_source(family_name, capsys):
    family = get_family(family_name)
    spec = family_spec(family_name, CLI_PROBLEM)
    problem = parse_spec(spec)
    assert main(["render", family_name, "--problem", spec]) == 0
    assert capsys.readouterr().out == family.plan(problem).source

    # A valid config other than the default, given parameter by parameter.
    (config,) = _neighbours(family, problem, 1)
    params = [arg for name, value in config.items() for arg in ("--param", f"{name}={value}")]
    assert main(["render", family_name, "--problem", spec, *params]) == 0
    out = capsys.readouterr().out
    assert out == family.plan(problem, config).source
    assert out.startswith(f"// {GENERATED_BANNER}") and json.dumps(config) in out


@pytest.mark.parametrize("family_name", FAMILY_NAMES)
def test_render_command_names_the_broken_constraint(family_name, capsys):
    family = get_family(family_name)
    spec = family_spec(family_name, CLI_PROBLEM)
    problem = parse_spec(spec)
    # The first combination of valid choices that breaks a constraint.
    config, broken = next((c, v) for c in family.space.all_configs()
                          if (v := family.space.violations(c, problem, H100)))
    params = [arg for name, value in config.items() for arg in ("--param", f"{name}={value}")]
    assert main(["render", family_name, "--problem", spec, *params]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("autoconv render: error:")
    assert "Traceback" not in captured.err
    for reason in broken:
        assert reason in captured.err
    constraint = next(c for c in family.space.constraints if c.expression.text in broken[0])
    assert constraint.why and constraint.why in captured.err


@pytest.mark.parametrize("family_name", FAMILY_NAMES)
def test_render_command_rejects_unknown_parameters_and_choices(family_name, capsys):
    family = get_family(family_name)
    name, choices = next(iter(family.space.params.items()))
    spec = family_spec(family_name, CLI_PROBLEM)
    assert main(["render", family_name, "--problem", spec, "--param", f"{name.lower()}=1"]) == 2
    err = capsys.readouterr().err
    assert f"unknown parameter '{name.lower()}'" in err and f"did you mean '{name}'" in err

    bad_value = max(c for c in choices if isinstance(c, int)) * 2 + 1
    assert main(["render", family_name, "--problem", spec, "--param", f"{name}={bad_value}"]) == 2
    assert f"{name}={bad_value} is not one of" in capsys.readouterr().err


@pytest.mark.parametrize("family_name", FAMILY_NAMES)
def test_space_command_lists_exactly_the_valid_points(family_name, capsys):
    family = get_family(family_name)
    spec = family_spec(family_name, RENDER_PROBLEMS[3])
    points = family.space.points(parse_spec(spec), H100)
    assert main(["space", family_name, "--problem", spec, "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{family_name}: {len(points)} valid configurations of ")
    listed = lines[1:]
    assert len(listed) == len(points) > 0
    assert listed[0].split() == [f"{name}={value}" for name, value in points[0].items()]


# ---- the templates' shared pieces ---------------------------------------------------------

#: Problems on which every code path of every family has a valid config: odd C with bias, C a
#: multiple of 64 (GATHER = rsc) with P*Q a multiple of 4 (float4 stores), a 1x1 filter at stride
#: 1 (im2col_gemm reading x in place), outputs small enough for split-K, and a tf32 problem.
SWITCH_PROBLEMS = (
    "N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1,bias=1",
    "N=1,C=128,H=8,W=8,K=64,R=3,S=3,pad=1",
    "N=2,C=64,H=7,W=7,K=96,R=1,S=1,bias=1",
    # tf32: kernels of their own (MMA_OVERLAP quad; WGN 256, which needs K >= 128)
    "N=1,C=64,H=8,W=8,K=160,R=3,S=3,pad=1,precision=tf32",
    # tf32 in NHWC: float32 outputs, which the TMA family may store directly (EPILOGUE direct)
    "N=1,C=64,H=8,W=8,K=160,R=3,S=3,pad=1,precision=tf32,layout=NHWC",
    # tf32 NCHW 1x1 at stride 1: the TMA family may read x as it lies (A_SOURCE registers)
    "N=2,C=64,H=8,W=8,K=96,R=1,S=1,bias=1,precision=tf32",
)


def _switches(family, problem, config) -> set[tuple[str, object]]:
    """The code paths a config takes: every parameter whose value selects code (string-valued
    ones, SPLIT_K 1 or more, MIN_BLOCKS 1 or more), the bias, and the derived vector widths."""
    values = family.space.context(config, problem, H100)
    switches = {("HAS_BIAS", values["HAS_BIAS"])}
    for name, value in config.items():
        if isinstance(value, str):
            switches.add((name, value))
        elif name in ("SPLIT_K", "MIN_BLOCKS"):
            switches.add((f"{name} > 1", value > 1))
    for name in ("OUT_VEC", "B_VEC", "A_VEC", "FRAG_M", "FRAG_N", "WEIGHT_VEC", "WGN"):
        if name in values:
            switches.add((name, values[name]))
    return switches


@pytest.mark.parametrize("family_name", FAMILY_NAMES)
def test_every_code_path_renders_by_the_conventions(family_name):
    """One config per code path (each value of each switch), rendered: no Jinja left, every
    launched kernel defined once, launch bounds with a minimum of blocks exactly when MIN_BLOCKS > 1."""
    family = get_family(family_name)
    wanted: dict[tuple[str, object], tuple] = {}
    for spec in SWITCH_PROBLEMS:
        problem = parse_spec(family_spec(family_name, spec))
        for config in family.space.points(problem, H100):
            for switch in _switches(family, problem, config) - set(wanted):
                wanted[switch] = (problem, config)
    for name, choices in family.space.params.items():
        for choice in choices:
            if isinstance(choice, str):
                assert (name, choice) in wanted, f"no valid config with {name} = {choice}"
    for name in ("SPLIT_K > 1", "MIN_BLOCKS > 1"):
        if name.split()[0] in family.space.params:
            assert {(name, False), (name, True)} <= set(wanted), name
    assert {("HAS_BIAS", 0), ("HAS_BIAS", 1)} <= set(wanted)

    for problem, config in {id(c): (p, c) for p, c in wanted.values()}.values():
        plan = family.plan(problem, config)
        assert "{{" not in plan.source and "{%" not in plan.source and "{#" not in plan.source
        for launch in plan.launches:
            assert len(_kernel_definition(launch.kernel).findall(plan.source)) == 1, launch.kernel
        if "MIN_BLOCKS" in config:
            with_minimum = "__launch_bounds__(THREADS, MIN_BLOCKS)" in plan.source
            assert with_minimum == (config["MIN_BLOCKS"] > 1), plan.name


def test_headers_are_plain_cuda():
    """A .cuh in templates/ is CUDA that a template pulls in with a Jinja include: rendered with
    no values at all, it comes out unchanged (no Jinja in it, nothing that reads as a Jinja tag)."""
    from autoconv.kernels.render import environment
    from autoconv.kernels.resources import templates_dir

    headers = sorted(templates_dir().glob("*.cuh"))
    assert headers
    for header in headers:
        assert environment().get_template(header.name).render() == header.read_text(), header.name
