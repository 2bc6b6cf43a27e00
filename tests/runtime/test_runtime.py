"""The runtime's choice of what runs a problem, decided from a cache entry (no GPU)."""

from __future__ import annotations

import json
import warnings

import pytest

from autoconv.cache.winners import CacheEntry, CacheKey
from autoconv.problems.problem import parse_spec
from autoconv.runtime import selection

PROBLEM = parse_spec("N=2,C=19,H=11,W=13,K=12,R=3,S=2,stride=1x2,pad=1,bias=1")
KEY = CacheKey(gpu_name="NVIDIA H100 80GB HBM3", compute_capability="9.0", cuda_runtime=13020,
               cuda_driver=13000, autoconv_version="0", templates_hash="0", problem_key=PROBLEM.key(),
               dtype="float32")


def entry(time_ms=1.0, baseline_time_ms=None, baseline_plan=None):
    return CacheEntry(key=KEY, family="implicit_gemm", config={}, kernel_name="k", source_hash="h",
                      time_ms=time_ms, tflops=1.0, workspace_bytes=0, baseline_name="cudnn-strict",
                      baseline_time_ms=baseline_time_ms, baseline_plan=baseline_plan)


PLAN = json.dumps({"mode": "strict", "plan_name": "eng0_k2=1"})


@pytest.mark.parametrize("case", [entry(), entry(baseline_time_ms=2.0, baseline_plan=PLAN),
                                  entry(baseline_time_ms=1.0, baseline_plan=PLAN),
                                  entry(baseline_time_ms=0.5, baseline_plan=None)])
def test_the_winner_runs_unless_cudnn_was_measured_faster(case):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is even tried, so nothing warns
        assert selection._cudnn_if_faster(PROBLEM, case) is None


def test_cudnn_faster_but_unusable_warns_and_runs_the_winner(monkeypatch):
    import autoconv.bench.cudnn as cudnn

    def missing_frontend():
        raise cudnn.BackendUnavailable("the cuDNN frontend cannot be imported (test)")

    monkeypatch.setattr(cudnn, "import_cudnn", missing_frontend)
    with pytest.warns(selection.CudnnFallbackWarning, match=r"0\.5 ms vs 1 ms.*cannot be imported"):
        assert selection._cudnn_if_faster(PROBLEM, entry(baseline_time_ms=0.5, baseline_plan=PLAN)) is None
    with pytest.warns(selection.CudnnFallbackWarning, match="malformed"):
        assert selection._cudnn_if_faster(PROBLEM, entry(baseline_time_ms=0.5, baseline_plan="{not json")) is None


@pytest.mark.parametrize("kind", ["file", "sqlite-url"])
def test_the_runtime_lookup_creates_no_cache(kind, tmp_path):
    from autoconv.backends.fake import FAKE_IDENTITY
    from autoconv.kernels.limits import H100
    from autoconv.runtime.selection import KernelRegistry

    path = tmp_path / "absent" / "winners.sqlite3"
    registry = KernelRegistry()
    registry.set_cache(path if kind == "file" else f"sqlite:///{path}")
    plan, origin, why, entry = registry.winner_plan(PROBLEM, H100, FAKE_IDENTITY)
    assert (plan, entry) == (None, None) and "no winners' cache" in why
    assert not path.exists() and not path.parent.exists()
