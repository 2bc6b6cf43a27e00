"""``autoconv verify --emulate`` on one problem also checks the code paths that problem does not
take (dilation along each axis, bias, the family's other precisions, tf32 over enough K tiles for
every main loop, the other output type of 16-bit inputs), on problems like it, and lists what
neither reached: paths no variant can take, switch values no valid configuration takes.

Most tests here run the command with the emulator replaced by the exact result (the reference),
so that they check what is run and listed in a second; one runs a planted bug for real.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import autoconv.emulator.check
from autoconv.commands.main import main
from autoconv.emulator.check import PROBLEM_PATHS, problem_variants, switch_pairs, untaken_paths
from autoconv.kernels.families import FAMILY_NAMES, get_family
from autoconv.kernels.limits import H100
from autoconv.problems.problem import parse_spec
from autoconv.verify.reference import conv2d_reference
from tests.emulator.test_families_emulated import PROBLEMS
from tests.emulator.test_wgmma_f16_family import problem_16bit

#: A problem that takes few of the paths: no dilation, no bias, few K tiles.
PLAIN = "N=1,C=3,H=6,W=7,K=5,R=3,S=3,pad=1"
PLAIN_16BIT = PLAIN + ",layout=NHWC,precision=bf16"
#: The heading of the checks on problems like the one given.
VARIANTS = "code paths the problem does not take, on problems like it:\n"


@pytest.fixture
def exact_emulator(monkeypatch):
    """The emulator replaced by the exact result: every check passes at once."""
    monkeypatch.setattr(autoconv.emulator.check, "emulate_plan", lambda plan, x, w, bias, **kw:
                        conv2d_reference(plan.problem, x, w, bias).astype(np.float32))


def _verify(capsys, *args) -> tuple[int, str]:
    code = main(["verify", "--emulate", "--samples", "1", "--seed", "5", *args])
    return code, capsys.readouterr().out


def _variant_lines(out: str) -> dict[str, list[str]]:
    """family -> the specs of the problems like it that were checked, from the output."""
    section = out.split(VARIANTS, 1)
    found: dict[str, list[str]] = {}
    for family, spec in re.findall(r"^  (\S+)\s+[^:\n]+: (N=\S+)$", section[1] if len(section) > 1 else "",
                                   re.MULTILINE):
        found.setdefault(family, []).append(spec)
    return found


def test_a_bug_only_dilation_shows_is_caught_on_a_problem_without_dilation(capsys, monkeypatch):
    """direct with its width dilation read from the height: right for every undilated problem."""
    emulate = autoconv.emulator.check.emulate_plan

    def planted(plan, *args, **kwargs):
        assert plan.source.count("+ s * DILATION_W]") == 1, "templates/direct.cu.j2 changed: update this plant"
        return emulate(dataclasses.replace(plan, source=plan.source.replace("+ s * DILATION_W]", "+ s * DILATION_H]")),
                       *args, **kwargs)

    monkeypatch.setattr(autoconv.emulator.check, "emulate_plan", planted)
    code, out = _verify(capsys, "--problem", PLAIN, "--family", "direct")
    assert code == 1, out
    main_run, variants = out.split(VARIANTS)
    assert "MISMATCH" not in main_run  # the problem itself cannot show the bug
    assert re.search(r"direct +dilation along the height, dilation along the width, bias: .*dilation=2x3", variants)
    assert "MISMATCH" in variants


def test_every_path_a_problem_does_not_take_is_checked_on_a_problem_like_it(capsys, exact_emulator):
    code, out = _verify(capsys, "--problem", PLAIN)
    assert code == 0, out
    variants = _variant_lines(out)
    for name in FAMILY_NAMES:
        family = get_family(name)
        if family.unsupported_reason(parse_spec(PLAIN)) is not None:
            continue
        specs = [parse_spec(spec) for spec in variants[name]]
        for path in untaken_paths(family, parse_spec(PLAIN)):
            assert any(path.taken(problem) for problem in specs), (name, path.name, out)
    # the tf32 loops over enough K tiles: every MMA overlap, quad and carry too (tf32 only)
    wgmma = re.findall(r"implicit_gemm_wgmma_tf32\S*MMA_OVERLAP([a-z]+)_", out)
    assert {"none", "pair", "quad", "carry"} <= set(wgmma), out
    assert "MMA_OVERLAP" not in out.split("not checked:")[-1], out


def test_16bit_problems_are_checked_with_the_other_output_type(capsys, exact_emulator):
    code, out = _verify(capsys, "--problem", PLAIN_16BIT, "--family", "implicit_gemm_wgmma_f16")
    assert code == 0, out
    specs, = _variant_lines(out).values()
    assert any(parse_spec(spec).out_dtype == "float32" for spec in specs), out
    code, out = _verify(capsys, "--problem", PLAIN_16BIT + ",out_dtype=float32", "--family", "implicit_gemm_wgmma_f16")
    assert code == 0, out
    specs, = _variant_lines(out).values()
    assert any(parse_spec(spec).out_dtype is None for spec in specs), out


def test_problem_only_lists_the_paths_and_switch_values_it_did_not_check(capsys, exact_emulator):
    code, out = _verify(capsys, "--problem", PLAIN, "--family", "implicit_gemm_wgmma", "--problem-only")
    assert code == 0, out
    assert VARIANTS not in out
    listed = out.split("not checked:\n", 1)[1]
    line, = [line for line in listed.splitlines() if line.startswith("  implicit_gemm_wgmma ")]
    assert re.search(r"dilation along the height, dilation along the width, bias, tf32 with \d+\+ reduction "
                     r"steps: not run \(--problem-only\)", line), line
    assert re.search(r"MMA_OVERLAP [a-z, ]*quad, carry: no valid configuration", line), line  # (tf32 only)
    code, out = _verify(capsys, "--problem", PLAIN_16BIT, "--family", "implicit_gemm_wgmma_f16", "--problem-only")
    assert "float32 output of 16-bit inputs" in out.split("not checked:\n", 1)[1], out


def test_a_problem_that_takes_every_path_runs_no_variant(capsys, exact_emulator):
    spec = "N=1,C=8,H=8,W=9,K=5,R=3,S=3,pad=1,dilation=2x3,bias=1"
    code, out = _verify(capsys, "--problem", spec, "--family", "direct")
    assert code == 0 and VARIANTS not in out and "not checked" not in out, out


@pytest.mark.parametrize("shape", ["1x7-C1", "3x3-C13-dilation2x1-stride1x2", "1x1-C32-bias-PQ4"])
def test_the_variants_take_every_path_they_name(shape, seed):
    """Whatever the problem (a 1-tap filter height, dilation along one axis, bias; each in fp32 and
    in a 16-bit NHWC form): each variant takes the paths it names, is a problem the family computes
    with valid configurations, and together they take every path the problem does not."""
    rng = np.random.default_rng(seed)
    for base in (PROBLEMS[shape](rng), problem_16bit(shape, seed)):
        for name in FAMILY_NAMES:
            family = get_family(name)
            if family.unsupported_reason(base) is not None:
                continue
            variants, missed = problem_variants(family, base, frozenset(), seed, max_seconds=1e9)
            names = {path.name: path for path in PROBLEM_PATHS}
            assert len(names) == len(PROBLEM_PATHS)
            for variant in variants:
                assert variant.paths and all(names[path].taken(variant.problem) for path in variant.paths)
                assert family.unsupported_reason(variant.problem) is None
                assert variant.configs and all(family.space.is_valid(config, variant.problem, H100)
                                               for config in variant.configs)
            reached = {path for variant in variants for path in variant.paths} | {path for path, _ in missed}
            assert reached == {path.name for path in untaken_paths(family, base)}, (name, base.spec(), missed)
            assert not missed, (name, base.spec(), missed)


def test_variants_take_only_switch_values_not_checked_yet():
    family = get_family("implicit_gemm_wgmma")
    problem = parse_spec(PLAIN)
    everything, _ = problem_variants(family, problem, frozenset(), 1)
    first = everything[0]
    covered = frozenset().union(*(switch_pairs(family, config, first.problem) for config in first.configs))
    again, _ = problem_variants(family, problem, covered, 1)
    assert [len(variant.configs) for variant in again] == [1] * len(again)  # the default alone
