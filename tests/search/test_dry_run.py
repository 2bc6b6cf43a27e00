"""``autoconv tune --dry-run`` reports its progress as the compiles end (a config of thousands of
problems must not sit silent for hours); nvcc is replaced by a stand-in, no compiler needed."""

from __future__ import annotations

from autoconv.kernels.nvcc import CompileReport
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.search import dry_run as dry_run_module


def test_progress_is_reported_from_zero_to_every_candidate(monkeypatch):
    monkeypatch.setattr(dry_run_module, "nvcc_available", lambda: True)
    monkeypatch.setattr(dry_run_module, "compile_cubin",
                        lambda source, arch, label: CompileReport(arch=arch, kernels={}, log="", seconds=0.01))
    problems = [NamedProblem(f"p{i}", parse_spec(f"N=1,C={4 + i},H=9,W=9,K=6,R=3,S=3,pad=1")) for i in range(3)]
    calls: list[tuple[int, int]] = []
    results = dry_run_module.dry_run(problems, ["direct", "implicit_gemm"], per_family=2, workers=2,
                                     progress=lambda done, total: calls.append((done, total)))
    total = len(results)
    assert total == 3 * 2 * 2 and all(result.ok for result in results)
    assert calls[0] == (0, total) and calls[-1] == (total, total)
    assert [done for done, _ in calls] == list(range(total + 1)) and {t for _, t in calls} == {total}
    assert [(r.name, r.family) for r in results] == [(f"p{i}", f) for i in range(3)
                                                     for f in ("direct", "direct", "implicit_gemm", "implicit_gemm")]
