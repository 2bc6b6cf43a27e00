"""The cuDNN baseline, the PyTorch column and the FP32 peak, on a GPU.

Every cuDNN plan's output is checked inside :func:`find_best_plan`; these tests check
again, independently, that the winning plan rebuilt by name (what ``autoconv.conv2d``
runs from the cache) computes the float64 reference on fresh random inputs: strict FP32
at 1e-5 (TF32 would be ~3e-4), TF32 mode within its looser bound.
"""

from __future__ import annotations

import numpy
import pytest

from autoconv.problems.problem import parse_spec

pytestmark = pytest.mark.gpu

SHAPES = {
    "odd sizes": "N=2,C=13,H=31,W=29,K=17,R=3,S=3,pad=1",
    "stride 2": "N=3,C=8,H=17,W=23,K=16,R=3,S=5,stride=2,pad=1x2",
    "stride 2x1, 1x1 filter": "N=2,C=24,H=15,W=9,K=40,R=1,S=1,stride=2x1",
    "dilation 2": "N=1,C=16,H=20,W=22,K=8,R=3,S=3,dilation=2,pad=2",
    "asymmetric padding": "N=2,C=5,H=12,W=14,K=7,R=4,S=4,pad=1:2:2:1",
    "bias": "N=2,C=19,H=11,W=13,K=12,R=3,S=2,stride=1x2,pad=1:1:0:1,bias=1",
}


def _cudnn_or_skip():
    try:
        import cudnn  # noqa: F401
    except ImportError as err:
        pytest.skip(f"the cuDNN frontend is not installed ({err})")


@pytest.mark.parametrize("mode", ["strict", "tf32"])
@pytest.mark.parametrize("case", list(SHAPES))
def test_cudnn_baseline_agrees_with_reference(case, mode, seed):
    _cudnn_or_skip()
    import cupy

    from autoconv.bench.baseline import TOLERANCES, find_best_plan
    from autoconv.runtime.cudnn import CudnnConv, CudnnUnsupported
    from autoconv.verify.compare import check_result
    from autoconv.verify.reference import conv2d_reference, random_inputs

    problem = parse_spec(SHAPES[case])
    try:
        result = find_best_plan(problem, mode, seed=seed, samples=3)
    except CudnnUnsupported as err:
        top, bottom, left, right = problem.padding
        if top != bottom or left != right:
            pytest.skip(f"this cuDNN builds no plan with asymmetric padding: {err}")
        raise
    assert result.mode == mode
    assert result.time_ms > 0 and result.tflops > 0
    assert result.plans_ok >= 1 and result.plans_tried >= result.plans_ok
    assert result.error_vs_reference <= TOLERANCES[mode]
    assert result.plan_name

    # The winner, rebuilt by name, on inputs it has never seen.
    conv = CudnnConv(problem, mode, result.plan_name)
    assert conv.exact and conv.plan_name == result.plan_name
    x, w, bias = random_inputs(problem, numpy.random.default_rng(seed + 7))
    x_gpu, w_gpu = cupy.asarray(x), cupy.asarray(w)
    bias_gpu = cupy.asarray(bias) if bias is not None else None
    y = cupy.full(problem.output_shape, numpy.nan, dtype=cupy.float32)
    conv(x_gpu.data.ptr, w_gpu.data.ptr, y.data.ptr, None if bias_gpu is None else bias_gpu.data.ptr)
    cupy.cuda.get_current_stream().synchronize()
    reference = conv2d_reference(problem, x_gpu, w_gpu, bias_gpu, xp=cupy)
    verdict = check_result(y, reference, TOLERANCES[mode])
    assert verdict.ok, f"{case} {mode} plan {result.plan_name}: {verdict.message}"
    if mode == "strict":
        assert verdict.error <= 1e-5


def test_strict_mode_excludes_tensor_core_plans():
    """Strict mode's plans are a subset of TF32 mode's, and none of them misses 1e-5."""
    _cudnn_or_skip()
    from autoconv.runtime.cudnn import CudnnGraph, decline_errors

    problem = parse_spec("N=4,C=64,H=28,W=28,K=64,R=3,S=3,pad=1")
    strict, tf32 = CudnnGraph(problem, "strict"), CudnnGraph(problem, "tf32")
    names_tf32 = {tf32.plan_name(i) for i in range(tf32.plan_count)}
    assert names_tf32
    strict_result_plans = []
    for index in range(strict.plan_count):
        try:
            strict.build(index)
        except decline_errors(strict.cudnn):  # declined, or barred by the tensor-core filter
            continue
        strict_result_plans.append(strict.plan_name(index))
    assert strict_result_plans, "no strict FP32 plan builds for a plain 3x3 conv"
    assert set(strict_result_plans) <= names_tf32


def test_torch_column_matches_reference(seed):
    pytest.importorskip("torch")
    from autoconv.bench.baseline import OperandSets, reference_output, time_torch
    from autoconv.verify.reference import random_inputs

    problem = parse_spec("N=2,C=16,H=21,W=19,K=24,R=3,S=3,stride=2,pad=1,bias=1")
    inputs = random_inputs(problem, numpy.random.default_rng(seed))
    operands = OperandSets(problem, inputs, l2_bytes=4 * 1024 * 1024, seed=seed)
    result = time_torch(problem, operands, reference_output(problem, operands), samples=3)
    assert result is not None
    assert result.error_vs_reference <= 1e-5
    assert result.time_ms > 0


def test_fp32_peak_is_plausible():
    import cupy

    from autoconv.bench.peak import measure_fp32_peak

    result = measure_fp32_peak(samples=3, target_ms=10.0)
    device = cupy.cuda.Device()
    major, minor = (int(v) for v in device.compute_capability)
    if major < 8:
        pytest.skip("FP32 lanes per SM are only tabulated here for sm_80 and newer")
    lanes = 64 if (major, minor) == (8, 0) else 128
    clock_khz = device.attributes["ClockRate"]
    theoretical = device.attributes["MultiProcessorCount"] * lanes * 2 * clock_khz * 1e3 / 1e12
    print(f"measured FP32 peak {result.tflops:.1f} TFLOP/s, boost-clock peak {theoretical:.1f}")
    assert 0.6 * theoretical <= result.tflops <= 1.05 * theoretical
    assert max(result.samples_tflops) / min(result.samples_tflops) < 1.2


BENCH_CONFIG = """
problems:
  - name: odd_bias
    spec: "N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1,bias=1"
    count: 2
  - name: small_3x3
    spec: "N=4,C=32,H=20,W=20,K=48,R=3,S=3,pad=1"
budget:
  trials: {trials}
seed: 3
cache: cache.sqlite
storage: studies.journal
"""


def _bench(folder, config_text: str):
    """`autoconv bench` of ``config_text`` (tuning what is not cached) in ``folder``: the results' path."""
    from autoconv.commands import main as cli

    config = folder / "bench.yaml"
    config.write_text(config_text)
    out = folder / "results.json"
    assert cli.main(["bench", str(config), "--out", str(out), "--rounds", "2", "--samples", "3"]) == 0
    return out


@pytest.mark.slow
def test_bench_end_to_end(tmp_path, capsys):
    """`autoconv bench` tunes what is not cached, measures both sides, fills the cache's
    baseline columns, writes a results file `autoconv report` turns into a report; with
    --no-tune a problem without a cached winner is an error naming it."""
    _cudnn_or_skip()
    pytest.importorskip("optuna")
    import cupy

    from autoconv.bench.results import load_results
    from autoconv.cache.entries import CacheKey
    from autoconv.cache.winners import WinnerCache
    from autoconv.commands import main as cli
    from autoconv.gpu.device import read_device
    from autoconv.runtime.cudnn import CudnnConv
    from autoconv.verify.compare import check_result
    from autoconv.verify.reference import conv2d_reference, random_inputs

    config = tmp_path / "bench.yaml"
    out = _bench(tmp_path, BENCH_CONFIG.format(trials=4))
    printed = capsys.readouterr().out
    assert "geomean" in printed and "odd_bias" in printed

    results = load_results(out)
    assert [p["name"] for p in results["problems"]] == ["odd_bias", "small_3x3"]
    assert 1 < results["peak_tflops"] < 1000
    for p in results["problems"]:
        assert p["autoconv_ms"] > 0 and p["cudnn_strict_ms"] > 0 and p["cudnn_tf32_ms"] > 0
        assert p["speedup_vs_cudnn_strict"] == pytest.approx(p["cudnn_strict_ms"] / p["autoconv_ms"])
        assert p["errors_vs_reference"]["autoconv"] <= 1e-5
        assert p["errors_vs_reference"]["cudnn_strict"] <= 1e-5
        assert p["trials"] and p["family_best_ms"]
        assert min(p["family_best_ms"].values()) == pytest.approx(
            min(t["value_ms"] for t in p["trials"] if t["state"] == "COMPLETE"))
    env = results["environment"]
    assert env["gpu"] and env["cudnn"] and env["cudnn_frontend"] and env["command"].startswith("autoconv ")
    assert results["tuning_seconds"] is not None

    # The cache now says what cuDNN does, and the runtime can rebuild its plan from that.
    _, identity = read_device(0)
    problem = parse_spec("N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1,bias=1")
    with WinnerCache(tmp_path / "cache.sqlite") as cache:
        entry = cache.get(CacheKey.for_problem(identity, problem))
    assert entry.baseline_time_ms == pytest.approx(results["problems"][0]["cudnn_strict_ms"])
    assert entry.baseline_name == "cudnn-strict"
    conv = CudnnConv.from_baseline_plan(problem, entry.baseline_plan)
    assert conv.exact and conv.plan_name == results["problems"][0]["cudnn_strict_plan"]
    x, w, bias = (cupy.asarray(a) for a in random_inputs(problem, numpy.random.default_rng(11)))
    verdict = check_result(conv.forward(x, w, bias), conv2d_reference(problem, x, w, bias, xp=cupy))
    assert verdict.ok, verdict.message

    # The report from those numbers.
    assert cli.main(["report", "--results", str(out), "--out", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "convergence.png").stat().st_size > 5000
    assert "| small_3x3 |" in (tmp_path / "report" / "report.md").read_text()

    # --no-tune with a problem nothing was tuned for.
    config.write_text(BENCH_CONFIG.format(trials=4) .replace(
        "problems:\n", "problems:\n  - name: never_tuned\n    spec: \"N=1,C=3,H=9,W=9,K=5,R=2,S=2\"\n"))
    capsys.readouterr()
    assert cli.main(["bench", str(config), "--no-tune", "--out", str(tmp_path / "x.json")]) == 2
    error = capsys.readouterr().err
    assert "never_tuned" in error and "autoconv tune" in error and "odd_bias" not in error


def test_conv2d_runs_cudnn_where_the_cache_says_cudnn_was_faster(tmp_path, seed):
    """The runtime's choice between the tuned winner and cuDNN's recorded plan, with a
    cache entry written by hand so that each branch is taken on purpose."""
    _cudnn_or_skip()
    import json
    import warnings

    import cupy

    import autoconv
    from autoconv.cache.entries import CacheEntry, CacheKey
    from autoconv.cache.winners import WinnerCache
    from autoconv.gpu.device import read_device
    from autoconv.kernels.families import get_family
    from autoconv.runtime import api as runtime
    from autoconv.runtime.cudnn import CudnnConv
    from autoconv.verify.compare import POISON, check_result
    from autoconv.verify.reference import conv2d_reference, random_inputs

    problem = parse_spec("N=2,C=19,H=11,W=13,K=12,R=3,S=2,stride=1x2,pad=1,bias=1")
    limits, identity = read_device(0)
    plan = get_family("implicit_gemm").plan(problem, None, limits)
    key = CacheKey.for_problem(identity, problem)
    cache_file = tmp_path / "cache.sqlite"
    cudnn_plan = CudnnConv(problem, "strict").plan_name
    with WinnerCache(cache_file) as cache:
        cache.put(CacheEntry(key=key, family=plan.family, config=dict(plan.config), kernel_name=plan.name,
                             source_hash=plan.source_hash, time_ms=1.0, tflops=1.0,
                             workspace_bytes=plan.workspace_bytes))

    def record_baseline(time_ms, plan_name):
        with WinnerCache(cache_file) as cache:
            cache.set_baseline(key, name="cudnn-strict", time_ms=time_ms, tflops=1.0,
                               plan=json.dumps({"mode": "strict", "plan_name": plan_name}))

    x, w, bias = (cupy.asarray(a) for a in random_inputs(problem, numpy.random.default_rng(seed)))
    reference = conv2d_reference(problem, x, w, bias, xp=cupy)

    def run():
        runtime.clear_loaded()
        out = cupy.full(problem.output_shape, POISON, dtype=cupy.float32)
        autoconv.conv2d(x, w, bias, stride=(1, 2), padding=1, out=out)
        verdict = check_result(out, reference)
        assert verdict.ok, verdict.message
        loaded, = runtime.loaded_kernels()
        assert loaded["problem"] == problem.spec()
        return loaded

    runtime.set_cache(cache_file)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # neither untuned nor a fallback
            record_baseline(0.5, cudnn_plan)  # cuDNN faster: its plan runs
            assert run() == {"device": 0, "problem": problem.spec(), "origin": "cudnn",
                             "kernel": f"cudnn:{cudnn_plan}", "note": ""}
            runtime.use_cudnn(False)  # the user's choice wins
            assert run()["origin"] == "cache"
            runtime.use_cudnn(True)
            record_baseline(2.0, cudnn_plan)  # cuDNN slower: the winner runs
            assert run() == {"device": 0, "problem": problem.spec(), "origin": "cache", "kernel": plan.name,
                             "note": ""}
        record_baseline(0.5, "eng999_no_such_plan")  # recorded by another cuDNN: say so, run the winner
        with pytest.warns(runtime.CudnnFallbackWarning, match="eng999_no_such_plan|no plan"):
            assert run()["origin"] == "cache"
    finally:
        runtime.use_cudnn(True)
        runtime.set_cache(None)
        runtime.clear_loaded()


# ---- 16-bit problems (issue 17): cuDNN's bf16/fp16 NHWC plans and PyTorch's channels_last -------

SHAPES_16BIT = {
    "odd channels": "N=2,C=13,H=31,W=29,K=17,R=3,S=3,pad=1,layout=NHWC",
    "stride 2, bias": "N=3,C=16,H=17,W=23,K=24,R=3,S=5,stride=2,pad=1x2,bias=1,layout=NHWC",
    "1x1, float32 output": "N=2,C=32,H=15,W=9,K=40,R=1,S=1,layout=NHWC,out_dtype=float32",
}


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
@pytest.mark.parametrize("case", list(SHAPES_16BIT))
def test_cudnn_16bit_baseline_agrees_with_reference(case, precision, seed):
    """The best bf16/fp16 NHWC plan, rebuilt by name, computes the float64 reference of fresh
    inputs within the problem's own bound (float32 sums, one rounding to the output type)."""
    _cudnn_or_skip()
    import cupy

    from autoconv.bench.baseline import find_best_plan
    from autoconv.dtypes import rounded
    from autoconv.problems.buffers import buffer_values, kernel_buffer, output_buffer
    from autoconv.runtime.cudnn import CudnnConv
    from autoconv.verify.compare import check_result
    from autoconv.verify.reference import conv2d_reference, random_inputs
    from autoconv.verify.tolerance import tolerance

    problem = parse_spec(f"{SHAPES_16BIT[case]},precision={precision}")
    result = find_best_plan(problem, precision, seed=seed, samples=3)
    assert result.mode == precision and result.plans_ok >= 1 and result.time_ms > 0

    conv = CudnnConv(problem, precision, result.plan_name)
    assert conv.exact
    values = [None if a is None else rounded(a, problem.dtype)
              for a in random_inputs(problem, numpy.random.default_rng(seed + 7))]
    x, w, bias = (None if a is None else cupy.asarray(kernel_buffer(problem, name, a))
                  for name, a in zip(("x", "w", "bias"), values))
    y = output_buffer(problem, cupy)
    conv(x.data.ptr, w.data.ptr, y.data.ptr, None if bias is None else bias.data.ptr)
    cupy.cuda.get_current_stream().synchronize()
    x_values, w_values = (cupy.asarray(a) for a in values[:2])
    bias_values = None if values[2] is None else cupy.asarray(values[2])
    reference = conv2d_reference(problem, x_values, w_values, bias_values, xp=cupy)
    verdict = check_result(buffer_values(problem, y, cupy), reference,
                           tolerance(problem, x_values, w_values, reference, xp=cupy))
    assert verdict.ok, f"{case} {precision} plan {result.plan_name}: {verdict.message}"


@pytest.mark.parametrize("spec", ["N=2,C=16,H=21,W=19,K=24,R=3,S=3,stride=2,pad=1,bias=1,precision=bf16,layout=NHWC",
                                  "N=2,C=8,H=9,W=11,K=16,R=3,S=3,pad=1,precision=fp16,layout=NHWC,out_dtype=float32"])
def test_torch_column_on_16bit_channels_last(spec, seed):
    pytest.importorskip("torch")
    from autoconv.bench.baseline import OperandSets, reference_output, time_torch
    from autoconv.verify.reference import random_inputs

    problem = parse_spec(spec)
    inputs = random_inputs(problem, numpy.random.default_rng(seed))
    operands = OperandSets(problem, inputs, l2_bytes=4 * 1024 * 1024, seed=seed)
    result = time_torch(problem, operands, reference_output(problem, operands), samples=3)
    assert result is not None and result.time_ms > 0
    assert 1e-4 < result.error_vs_reference < 1e-2  # a 16-bit output's rounding, no more


BENCH_CONFIG_BF16 = """
problems:
  - name: odd_bf16
    spec: "N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1,bias=1"
  - name: nhwc_3x3
    spec: "N=4,C=64,H=20,W=20,K=64,R=3,S=3,pad=1"
precision: bf16
layout: NHWC
families: [implicit_gemm_wgmma_f16]
budget:
  trials: {trials}
seed: 3
cache: cache.sqlite
storage: studies.journal
"""


@pytest.mark.slow
def test_bench_end_to_end_bf16(tmp_path, capsys):
    """`autoconv bench` on bf16 NHWC problems: cuDNN's bf16 plans as the baseline (no strict or
    TF32 columns), PyTorch on channels_last tensors, the share of the tensor peak, the report."""
    _cudnn_or_skip()
    pytest.importorskip("optuna")
    import cupy

    from autoconv.bench.peak import dense_tensor_peak_tflops
    from autoconv.bench.results import load_results
    from autoconv.commands import main as cli

    out = _bench(tmp_path, BENCH_CONFIG_BF16.format(trials=4))
    results = load_results(out)
    peak = dense_tensor_peak_tflops(cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(), "bf16")
    for p in results["problems"]:
        assert p["precision"] == "bf16" and p["cudnn_mode"] == "bf16"
        assert p["autoconv_ms"] > 0 and p["cudnn_ms"] > 0
        assert p["cudnn_strict_ms"] is None and p["cudnn_tf32_ms"] is None
        assert p["speedup_vs_cudnn"] == pytest.approx(p["cudnn_ms"] / p["autoconv_ms"])
        errors = p["errors_vs_reference"]
        assert 1e-4 < errors["autoconv"] < 1e-2 and 1e-4 < errors["cudnn_bf16"] < 1e-2
        if p["torch_ms"] is not None:
            assert 1e-4 < errors["torch"] < 1e-2
        if peak:
            assert p["pct_of_tensor_peak"]["autoconv"] == pytest.approx(100 * p["autoconv_tflops"] / peak)
    assert cli.main(["report", "--results", str(out), "--out", str(tmp_path / "report")]) == 0
    assert "## Per layer, bf16" in (tmp_path / "report" / "report.md").read_text()
