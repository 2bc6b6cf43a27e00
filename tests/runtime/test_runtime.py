"""The runtime's choice of what runs a problem, decided from a cache entry (no GPU)."""

from __future__ import annotations

import json
import logging
import warnings
from dataclasses import replace

import pytest

from autoconv.cache.entries import CacheEntry, CacheKey
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
    import autoconv.runtime.cudnn as cudnn

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


# ---- precision: the argument, the cache lookup by precision, the defaults -----------------------

TF32_PROBLEM = PROBLEM.with_(precision="tf32")


@pytest.mark.parametrize("bad, hint", [("bf17", "did you mean 'bf16'"), ("TF32", "did you mean 'tf32'"),
                                       ("ieee", "PyTorch's 'ieee' is autoconv's 'fp32'"), (32, ""), (b"fp32", "")])
def test_conv2d_refuses_an_unknown_precision_before_anything_else(bad, hint, monkeypatch):
    import autoconv
    import autoconv.gpu.device
    from autoconv.errors import BackendUnavailable, ProblemError
    from tests.runtime.test_host_arrays import CudaArrayLike

    def no_cupy():
        raise BackendUnavailable("CuPy is not installed (test)")
    monkeypatch.setattr(autoconv.gpu.device, "require_cupy", no_cupy)
    gpu = CudaArrayLike()
    with pytest.raises(ProblemError) as caught:
        autoconv.conv2d(gpu, gpu, precision=bad)
    message = str(caught.value)
    assert caught.value.field == "precision" and message.startswith("precision=")
    assert "'fp32'" in message and "'tf32'" in message and "None" in message and hint in message
    for good in (None, "fp32", "tf32"):  # accepted: these get as far as needing CuPy
        with pytest.raises(BackendUnavailable):
            autoconv.conv2d(gpu, gpu, precision=good)
    for sixteen in ("bf16", "fp16"):  # valid precisions, but for PyTorch's 16-bit tensors only
        with pytest.raises(ProblemError, match="16-bit convolutions take PyTorch tensors"):
            autoconv.conv2d(gpu, gpu, precision=sixteen)


def _winner(problem, family_name, cache_path, time_ms=1.0, **changes):
    """Store ``family_name``'s default config as the winner of ``problem`` (for FAKE_IDENTITY)."""
    from autoconv.backends.fake import FAKE_IDENTITY
    from autoconv.cache.winners import WinnerCache
    from autoconv.kernels.families import get_family
    from autoconv.kernels.limits import H100

    plan = get_family(family_name).plan(problem, None, H100)
    stored = replace(CacheEntry(key=CacheKey.for_problem(FAKE_IDENTITY, problem), family=family_name,
                                config=dict(plan.config), kernel_name=plan.name, source_hash=plan.source_hash,
                                time_ms=time_ms, tflops=1.0, workspace_bytes=plan.workspace_bytes), **changes)
    with WinnerCache(cache_path) as cache:
        cache.put(stored, only_if_faster=False)
    return plan


class _FakeLoadedPlan:
    """Stands for autoconv.gpu.kernels.LoadedPlan: nothing is loaded on a GPU."""

    def __init__(self, plan, cubin):
        self.plan = plan

    def resource_problem(self, limits):
        return None

    def configure(self):
        pass

    def function_handles(self):
        return {launch.kernel: 1 for launch in self.plan.launches}


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """A registry on a fake device (H100 limits, FAKE_IDENTITY) whose kernels are neither
    compiled nor loaded: what it chooses, without a GPU."""
    import autoconv.gpu.kernels
    import autoconv.runtime.cubins
    from autoconv.backends.fake import FAKE_IDENTITY
    from autoconv.kernels.limits import H100

    class Compiled:
        ok, cubin = True, b""

    monkeypatch.setattr(autoconv.runtime.cubins, "compile_cached", lambda *args, **kwargs: Compiled())
    monkeypatch.setattr(autoconv.gpu.kernels, "LoadedPlan", _FakeLoadedPlan)
    chooser = selection.KernelRegistry()
    chooser.set_cache(tmp_path / "winners.sqlite3")
    chooser._devices[0] = (H100, FAKE_IDENTITY)
    monkeypatch.setattr(chooser, "_load", chooser._load_on_current_device)  # (no CuPy device switch)
    return chooser


def test_a_tf32_problem_runs_its_tf32_winner(registry, tmp_path, caplog):
    _winner(PROBLEM, "direct", tmp_path / "winners.sqlite3")
    tf32 = _winner(TF32_PROBLEM, "implicit_gemm", tmp_path / "winners.sqlite3", time_ms=2.0)
    with warnings.catch_warnings(), caplog.at_level(logging.INFO, logger="autoconv.runtime.selection"):
        warnings.simplefilter("error")
        runner = registry.runner(TF32_PROBLEM, 0)
        registry.runner(TF32_PROBLEM, 0)  # (loaded: said once)
    assert [record.getMessage() for record in caplog.records] == [
        f"cuda:0 runs {tf32.name} for {TF32_PROBLEM.spec()} (cache)"]
    assert runner.origin == "cache" and runner.plan.name == tf32.name and "_tf32_" in tf32.name
    assert runner.plan.problem.precision == "tf32" and runner.note == ""
    loaded, = registry.loaded()
    assert loaded["problem"].endswith("precision=tf32") and loaded["note"] == ""


def test_a_tf32_problem_without_a_tf32_winner_runs_the_fp32_winner_and_says_so(registry, tmp_path):
    fp32 = _winner(PROBLEM, "direct", tmp_path / "winners.sqlite3")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # tuned: no UntunedWarning
        runner = registry.runner(TF32_PROBLEM, 0)
        strict = registry.runner(PROBLEM, 0)
    assert runner.origin == "cache" and runner.plan.name == fp32.name and runner.plan.problem == PROBLEM
    assert runner.problem == TF32_PROBLEM
    assert "no tf32 winner is cached" in runner.note and "fp32 winner" in runner.note
    assert "float32 accuracy" in runner.note
    assert strict.plan.name == fp32.name and strict.note == ""  # the fp32 problem itself: no note
    notes = {entry["problem"]: entry["note"] for entry in registry.loaded()}
    assert notes == {TF32_PROBLEM.spec(): runner.note, PROBLEM.spec(): ""}


def test_a_stale_tf32_winner_gives_way_to_the_fp32_winner(registry, tmp_path):
    _winner(TF32_PROBLEM, "implicit_gemm", tmp_path / "winners.sqlite3", source_hash="0" * 16)
    fp32 = _winner(PROBLEM, "direct", tmp_path / "winners.sqlite3")
    runner = registry.runner(TF32_PROBLEM, 0)
    assert runner.plan.name == fp32.name
    assert runner.note.startswith("the tf32 winner cannot run (") and "stale entry" in runner.note


def test_a_tf32_problem_without_winners_runs_the_tf32_default_and_warns_naming_the_precision(registry):
    with pytest.warns(selection.UntunedWarning) as caught:
        runner = registry.runner(TF32_PROBLEM, 0)
    assert runner.origin == "default" and runner.plan.family == selection.TF32_DEFAULT_FAMILY  # H100: wgmma
    message = str(caught[0].message)
    assert "precision tf32" in message and "precision=tf32" in message
    assert "no winners' cache" in message and "; fp32:" not in message  # one reason: no cache at all
    assert registry.loaded()[0]["note"] == ""


def test_the_untuned_warning_names_both_lookups_where_the_cache_has_neither(registry, tmp_path):
    _winner(PROBLEM.with_(K=PROBLEM.K + 1), "direct", tmp_path / "winners.sqlite3")  # the cache exists
    with pytest.warns(selection.UntunedWarning) as caught:
        registry.runner(TF32_PROBLEM, 0)
    message = str(caught[0].message)
    assert "no tuned kernel for this problem (tf32)" in message and "; fp32: no tuned kernel" in message


def test_the_fp32_entry_may_run_cudnn_for_a_tf32_problem(registry, tmp_path, monkeypatch):
    _winner(PROBLEM, "direct", tmp_path / "winners.sqlite3", baseline_time_ms=0.5, baseline_plan=PLAN)
    asked = []

    class FakeCudnn:
        plan_name, workspace_bytes = "eng0_k2=1", 0

    def cudnn_if_faster(problem, entry):
        asked.append(problem)
        return FakeCudnn()
    monkeypatch.setattr(selection, "_cudnn_if_faster", cudnn_if_faster)
    runner = registry.runner(TF32_PROBLEM, 0)
    assert asked == [PROBLEM]  # cuDNN's plan of the fp32 entry is built for the fp32 problem
    assert runner.origin == "cudnn" and "cuDNN plan" in runner.note


def test_the_default_for_tf32_is_wgmma_on_hopper_else_the_fallback_family():
    from autoconv.kernels.limits import H100

    ampere = replace(H100, name="A100 (test)", compute_capability=(8, 0))
    assert selection._default_plan(TF32_PROBLEM, H100).family == "implicit_gemm_wgmma"
    assert selection._default_plan(TF32_PROBLEM, ampere).family == selection.FALLBACK_FAMILY
    assert selection._default_plan(PROBLEM, H100).family == selection.FALLBACK_FAMILY
    plan = selection._default_plan(TF32_PROBLEM, ampere)
    message = selection.untuned_message(TF32_PROBLEM, "no cache", plan)
    assert "precision tf32, computed at float32 accuracy" in message and "precision=tf32" in message
    strict = selection.untuned_message(PROBLEM, "no cache", selection._default_plan(PROBLEM, H100))
    assert "precision fp32" in strict and "float32 accuracy" not in strict


def test_the_default_for_nhwc_problems_is_the_tma_family_where_it_runs():
    """bf16, fp16 and tf32 NHWC problems default to implicit_gemm_wgmma_tma on Hopper (its default
    measured 0.84x cuDNN on ResNet-50's bf16 layers, the cp.async family's 0.66x), strides over 8
    included (its copy of x then holds every tap: FOLD_FILTER); a 16-bit problem its tensor maps
    cannot describe (padding past the im2col box's 128) falls to the cp.async family."""
    from autoconv.kernels.limits import H100
    from autoconv.problems.problem import parse_spec

    for precision in ("bf16", "fp16", "tf32"):
        for stride in (1, 9):
            problem = parse_spec(f"N=2,C=16,H=40,W=40,K=32,R=3,S=3,stride={stride},pad=1,layout=NHWC,"
                                 f"precision={precision}")
            assert selection._default_plan(problem, H100).family == selection.NHWC_DEFAULT_FAMILY
    padded = parse_spec("N=1,C=16,H=8,W=8,K=32,R=3,S=3,pad=130,layout=NHWC,precision=bf16")
    assert selection._default_plan(padded, H100).family == "implicit_gemm_wgmma_f16"


@pytest.mark.gpu
def test_cupy_arrays_compute_fp32_unless_told_tf32(tmp_path, seed):
    cupy = pytest.importorskip("cupy")
    import numpy

    import autoconv
    from autoconv.runtime import api
    from autoconv.verify.reference import conv2d_reference, random_inputs

    api.set_cache(tmp_path / "empty.sqlite3")
    api.clear_loaded()
    try:
        x, w, bias = random_inputs(PROBLEM, numpy.random.default_rng(seed))
        want = conv2d_reference(PROBLEM, x, w, bias)
        args = (cupy.asarray(x), cupy.asarray(w), cupy.asarray(bias), (1, 2), 1)
        errors = {}
        for precision in (None, "fp32", "tf32"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", selection.UntunedWarning)
                y = cupy.asnumpy(autoconv.conv2d(*args, precision=precision))
            errors[precision] = float(numpy.linalg.norm(y - want) / numpy.linalg.norm(want))
        specs = sorted(entry["problem"] for entry in api.loaded_kernels())
        assert specs == sorted([PROBLEM.spec(), TF32_PROBLEM.spec()])  # None is fp32 for CuPy arrays
        assert errors[None] < 1e-5 and errors["fp32"] < 1e-5
        assert errors["tf32"] < 5e-3  # inputs rounded to TF32 (10 mantissa bits)
    finally:
        api.set_cache(None)
        api.clear_loaded()


# ---- untuned problems: the nearest tuned problem's winner configuration, checked once --------

def test_an_untuned_problem_runs_the_nearest_tuned_winners_configuration_once_checked(registry, tmp_path,
                                                                                       monkeypatch):
    near = PROBLEM.with_(K=PROBLEM.K + 1)
    tuned = _winner(near, "direct", tmp_path / "winners.sqlite3")
    checked = []
    monkeypatch.setattr(selection, "verify_runner", lambda runner: checked.append(runner) or None)
    with pytest.warns(selection.UntunedWarning) as caught:
        runner = registry.runner(PROBLEM, 0)
    assert runner.origin == "predicted" and runner.plan.family == "direct"
    assert dict(runner.plan.config) == dict(tuned.config) and runner.plan.problem == PROBLEM
    assert checked == [runner]  # checked against a reference before its first use
    assert near.spec() in runner.note and "distance" in runner.note
    message = str(caught[0].message)
    assert "checked against a reference" in message and near.spec() in message
    assert registry.loaded()[0]["origin"] == "predicted"
    registry.runner(PROBLEM, 0)
    assert len(checked) == 1  # once


def test_a_neighbours_winner_that_does_not_fit_is_moved_to_the_nearest_valid_configuration():
    """A winner with GATHER = rsc (whole K tiles per filter tap) predicts for a problem whose C
    is no multiple of the K tile as the same configuration in the other reduction order."""
    from autoconv.backends.fake import FAKE_IDENTITY
    from autoconv.kernels.families import get_family
    from autoconv.kernels.limits import H100

    tuned = parse_spec("N=8,C=64,H=28,W=28,K=128,R=3,S=3,pad=1")
    untuned = tuned.with_(C=50)
    family = get_family("implicit_gemm")
    config = {**family.space.default, "GATHER": "rsc"}
    plan = family.plan(tuned, config, H100)
    entry = CacheEntry(key=CacheKey.for_problem(FAKE_IDENTITY, tuned), family=family.name, config=config,
                       kernel_name=plan.name, source_hash=plan.source_hash, time_ms=1.0, tflops=1.0,
                       workspace_bytes=plan.workspace_bytes)
    assert not family.space.is_valid(config, untuned, H100)
    neighbour, predicted = selection.predicted_plan(untuned, [entry], H100, FAKE_IDENTITY.gpu_name)
    assert neighbour.problem == tuned and predicted.problem == untuned
    assert dict(predicted.config) == {**config, "GATHER": "crs"}


def test_a_predicted_kernel_that_fails_its_check_gives_way_to_the_default(registry, tmp_path, monkeypatch):
    _winner(PROBLEM.with_(K=PROBLEM.K + 1), "direct", tmp_path / "winners.sqlite3")
    monkeypatch.setattr(selection, "verify_runner", lambda runner: "relative L2 error 0.3 exceeds 1e-05")
    with pytest.warns(selection.UntunedWarning) as caught:
        runner = registry.runner(PROBLEM, 0)
    assert runner.origin == "default" and runner.plan.family == selection.FALLBACK_FAMILY
    assert any("failed its check (relative L2 error 0.3" in str(w.message) for w in caught)


def test_no_prediction_from_another_gpu_or_precision(registry, tmp_path, monkeypatch):
    from autoconv.cache.winners import WinnerCache

    _winner(PROBLEM.with_(K=PROBLEM.K + 1, precision="tf32"), "implicit_gemm", tmp_path / "winners.sqlite3")
    other_gpu = _winner(PROBLEM.with_(K=PROBLEM.K + 2), "direct", tmp_path / "other.sqlite3")
    with WinnerCache(tmp_path / "other.sqlite3") as source, WinnerCache(tmp_path / "winners.sqlite3") as target:
        entry, = source.entries()
        target.put(replace(entry, key=replace(entry.key, gpu_name="another GPU")), only_if_faster=False)
    monkeypatch.setattr(selection, "verify_runner", lambda runner: pytest.fail("nothing to predict from"))
    with pytest.warns(selection.UntunedWarning):
        runner = registry.runner(PROBLEM, 0)
    assert runner.origin == "default" and other_gpu.name != runner.plan.name


def test_a_predicted_kernel_that_does_not_compile_gives_way_to_the_default(registry, tmp_path, monkeypatch):
    import autoconv.runtime.cubins

    _winner(PROBLEM.with_(K=PROBLEM.K + 1), "direct", tmp_path / "winners.sqlite3")

    class Compiled:
        def __init__(self, ok):
            self.ok, self.cubin = ok, b""

        def reason(self):
            return "error: something the compiler refused"

    monkeypatch.setattr(autoconv.runtime.cubins, "compile_cached",
                        lambda source, arch, name, **kwargs: Compiled(not name.startswith("direct")))
    monkeypatch.setattr(selection, "verify_runner", lambda runner: pytest.fail("not compiled: nothing to check"))
    with pytest.warns(selection.UntunedWarning) as caught:
        runner = registry.runner(PROBLEM, 0)
    assert runner.origin == "default"
    assert any("failed its check" in str(w.message) and "does not compile" in str(w.message) for w in caught)
