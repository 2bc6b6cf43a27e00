"""GPU tests of the tuning backend, the tuner, the runtime API and the CLI (run on the
device machine: ``python -m pytest -m gpu``).

Every kernel result is compared with a float64 reference computed independently of the
code under test (NumPy on the host, or PyTorch in float64), on random data, with the
output poisoned first.
"""

from __future__ import annotations

import subprocess
import sys
import time
import warnings
from dataclasses import replace

import numpy
import pytest

from autoconv.backends.base import Status
from autoconv.config.budget import Budget
from autoconv.errors import ProblemError
from autoconv.kernels.families import FAMILY_NAMES, KernelPlan, Launch, get_family
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.verify.compare import POISON, check_result
from autoconv.verify.reference import conv2d_reference, random_inputs
from tests.helpers import repo_env

pytestmark = pytest.mark.gpu


#: Awkward shapes on purpose: sizes that divide no tile, non-square stride, asymmetric
#: padding, dilation, bias, a 1x1 and a single-channel input.
ODD_SHAPES = [
    "N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1",
    "N=1,C=3,H=21,W=17,K=24,R=4,S=2,stride=2,pad=same",
    "N=1,C=32,H=28,W=28,K=40,R=3,S=3,pad=2,dilation=2,bias=1",
    "N=3,C=1,H=9,W=40,K=5,R=1,S=5,pad=0:1:2:0,stride=1x3,bias=1",
    "N=2,C=66,H=7,W=7,K=130,R=1,S=1",
]


@pytest.fixture(scope="module")
def device():
    from autoconv.gpu.device import read_device
    return read_device(0)


def _run_in_process(plan: KernelPlan, x, w, bias, limits):
    """Compile with NVRTC and run ``plan`` in this process on poisoned output."""
    import cupy

    from autoconv.gpu.compiler import compile_source
    from autoconv.gpu.kernels import LoadedPlan

    compiled = compile_source(plan.source, limits.arch, plan.name)
    assert compiled.ok, compiled.log
    # NVRTC compiles in this process: its CPU time is measured, and a compile is CPU work
    # (at least 10% of the wall time, however busy the host).
    assert 0.1 * compiled.seconds <= compiled.cpu_seconds, (compiled.seconds, compiled.cpu_seconds)
    loaded = LoadedPlan(plan, compiled.cubin)
    trouble = loaded.resource_problem(limits)
    assert trouble is None or trouble[0] == "spills", trouble
    buffers = {"x": cupy.asarray(x), "w": cupy.asarray(w),
               "y": cupy.full(plan.problem.output_shape, POISON, dtype=cupy.float32)}
    if bias is not None:
        buffers["bias"] = cupy.asarray(bias)
    if plan.workspace_bytes:
        buffers["workspace"] = cupy.full(plan.workspace_elements, POISON, dtype=cupy.float32)
    loaded.launch(buffers)
    cupy.cuda.runtime.deviceSynchronize()
    return cupy.asnumpy(buffers["y"])


@pytest.mark.parametrize("spec", ODD_SHAPES)
def test_every_family_matches_the_reference(spec, device, seed):
    """Each family's default and two random valid configs, on an awkward shape."""
    from autoconv.search.points import sample_valid

    limits, _ = device
    problem = parse_spec(spec)
    x, w, bias = random_inputs(problem, numpy.random.default_rng(seed))
    reference = conv2d_reference(problem, x, w, bias)
    checked, supported = 0, 0
    for name in FAMILY_NAMES:
        family = get_family(name)
        if family.unsupported_reason(problem):
            continue
        supported += 1
        for config in sample_valid(name, problem, limits, 1 << 30, count=3, seed=seed):
            plan = family.plan(problem, config, limits)
            y = _run_in_process(plan, x, w, bias, limits)
            verdict = check_result(y, reference)
            assert verdict.ok, f"{plan.name} on {spec} (seed {seed}): {verdict.message}"
            checked += 1
    assert supported and checked >= supported


def test_one_cubin_runs_problems_of_other_sizes_each_with_its_own(device, seed):
    """implicit_gemm_wgmma's ranking build takes the sizes at run time: the cubin compiled for one
    problem, loaded once per problem with that problem's sizes, computes each one right, launches
    interleaved;
    the compiled-in build of the same configuration gives the same output bit for bit."""
    import cupy

    from autoconv.gpu.compiler import compile_source
    from autoconv.gpu.kernels import LoadedPlan

    limits, _ = device
    if limits.compute_capability != (9, 0):
        pytest.skip("implicit_gemm_wgmma needs sm_90a")
    family = get_family("implicit_gemm_wgmma")
    config = {"BM": 64, "BN": 64, "WGN": 64, "BK": 32, "STAGES": 3, "MMA_OVERLAP": "none", "SPLIT_K": 1,
              "MIN_BLOCKS": 1, "GATHER": "rsc"}
    problems = [parse_spec("N=2,C=64,H=31,W=29,K=33,R=3,S=3,stride=2x1,pad=1:0:2:1,bias=1"),
                parse_spec("N=1,C=32,H=13,W=39,K=130,R=3,S=3,dilation=2,pad=2,bias=1")]
    plans = [family.plan(problem, config, limits, run_time_sizes=True) for problem in problems]
    assert plans[0].source == plans[1].source and plans[0].constants != plans[1].constants
    compiled = compile_source(plans[0].source, limits.arch, plans[0].name)
    assert compiled.ok, compiled.log
    runs = []
    for plan in plans:
        x, w, bias = random_inputs(plan.problem, numpy.random.default_rng(seed))
        buffers = {"x": cupy.asarray(x), "w": cupy.asarray(w), "bias": cupy.asarray(bias),
                   "y": cupy.full(plan.problem.output_shape, POISON, dtype=cupy.float32),
                   "workspace": cupy.full(plan.workspace_elements, POISON, dtype=cupy.float32)}
        runs.append((LoadedPlan(plan, compiled.cubin), buffers, conv2d_reference(plan.problem, x, w, bias)))
    for _ in range(2):
        for loaded, buffers, _reference in runs:
            loaded.launch(buffers)
    cupy.cuda.runtime.deviceSynchronize()
    for (loaded, buffers, reference), problem in zip(runs, problems):
        y = cupy.asnumpy(buffers["y"])
        verdict = check_result(y, reference)
        assert verdict.ok, f"{loaded.plan.name} on {problem.spec()}: {verdict.message}"
        x, w, bias = random_inputs(problem, numpy.random.default_rng(seed))
        compiled_in = family.plan(problem, config, limits)
        assert not compiled_in.constants
        assert numpy.array_equal(_run_in_process(compiled_in, x, w, bias, limits), y)


def test_backend_compiles_a_prepared_plan_once_for_its_submission(device):
    """The tuner prepares the build with constants of its best while it searches: the submission
    then takes that compilation (its cost is the submission's), and a kept cubin is not prepared."""
    from autoconv.gpu.backend import CupyBackend

    limits, _ = device
    problem = parse_spec(ODD_SHAPES[0])
    plan = get_family("implicit_gemm").plan(problem, None, limits)
    with CupyBackend(compile_workers=2) as backend:
        backend.prepare(plan)
        assert list(backend._prepared) == [plan.source_hash]
        started = time.monotonic()
        result = backend.evaluate(plan)
        assert result.ok and result.compile_cpu_s > 0 and not backend._prepared
        # where it waited (tune.json): both measured, within the evaluation's wall time
        assert 0.0 <= result.compile_queue_s and 0.0 < result.gpu_queue_s
        assert result.compile_queue_s + result.gpu_queue_s + result.run_s < time.monotonic() - started
        backend.prepare(plan)  # its cubin is kept now
        assert not backend._prepared
        again = backend.evaluate(plan)
        assert again.ok and again.compile_s == again.compile_cpu_s == 0.0


def _random_awkward_problem(rng):
    """A convolution no test names: any C and K, filters up to 5x5, strides up to 3, dilation
    up to 2, asymmetric padding up to the filter's size, bias or not."""
    from autoconv.problems.problem import make_problem

    while True:
        R, S = (int(v) for v in rng.integers(1, 6, size=2))
        padding = tuple(int(v) for v in (*rng.integers(0, R + 1, size=2), *rng.integers(0, S + 1, size=2)))
        try:
            return make_problem(N=int(rng.integers(1, 4)), C=int(rng.choice([1, 3, 5, 16, 31, 32, 33, 64, 96])),
                                H=int(rng.integers(3, 30)), W=int(rng.integers(3, 30)), K=int(rng.integers(1, 150)),
                                R=R, S=S, stride=tuple(int(v) for v in rng.integers(1, 4, size=2)),
                                dilation=tuple(int(v) for v in rng.integers(1, 3, size=2)), padding=padding,
                                bias=bool(rng.integers(0, 2)))
        except ValueError:  # the dilated filter does not fit
            continue


@pytest.mark.slow
def test_every_family_on_random_awkward_shapes(seed):
    """Six shapes drawn from the run's seed, a random valid config of each family on each
    (the default on the first), through the tuner's crash-isolated worker: each verifies
    against the float64 reference (a configuration that spills is rejected untimed, which
    is allowed; any other failure is not)."""
    from autoconv.gpu.backend import CupyBackend
    from autoconv.search.points import sample_valid

    rng = numpy.random.default_rng(seed)
    failures, checked = [], 0
    with CupyBackend(seed=seed) as backend:
        for index in range(6):
            problem = _random_awkward_problem(rng)
            for name in FAMILY_NAMES:
                family = get_family(name)
                if family.unsupported_reason(problem):
                    continue
                configs = sample_valid(name, problem, backend.device, 1 << 30, count=2,
                                       seed=int(rng.integers(1 << 30)))
                for config in configs[:1] if index == 0 else configs[1:]:
                    result = backend.evaluate(family.plan(problem, config, backend.device))
                    checked += 1
                    if result.status not in (Status.OK, Status.SPILLS):
                        failures.append(f"{name} {config} on {problem.spec()}: {result.status.value}: {result.reason}")
    assert not failures, "\n".join(failures)
    assert checked >= 20


# ---- the shared timer ---------------------------------------------------------------------

def test_timer_replays_a_graph_over_sets_that_defeat_the_l2(device):
    """A streaming kernel (read 4 MiB, write 4 MiB) timed over rotating sets cannot beat
    HBM bandwidth; the same kernel on one set, which stays in the 50 MB L2, is faster."""
    import cupy

    from autoconv.gpu.timing import buffer_sets_for, time_calls

    limits, _ = device
    n = 1 << 20
    scale = cupy.RawKernel(r"""
    extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = 2.0f * x[i];
    }""", "scale")
    sets = buffer_sets_for(8 * n, limits.l2_bytes)
    assert sets * 8 * n > 2 * limits.l2_bytes
    xs = [cupy.random.random(n, dtype=cupy.float32) for _ in range(sets)]
    ys = [cupy.empty_like(x) for x in xs]

    def enqueue(i):
        scale((n // 256,), (256,), (xs[i], ys[i], cupy.int32(n)))

    rotating = time_calls(enqueue, sets)
    plain = time_calls(enqueue, sets, use_graph=False)
    cached = time_calls(lambda i: enqueue(0), 1)
    assert rotating.graph and not plain.graph
    assert rotating.calls_per_sample % sets == 0 and len(rotating.samples_ms) == 7
    assert rotating.min_ms <= rotating.median_ms <= rotating.max_ms
    bandwidth = 8 * n / (rotating.median_ms * 1e-3)
    # The device's DRAM peak from its memory clock and bus (H100 HBM3: 3.35 TB/s, H200: 4.8 TB/s).
    attributes = cupy.cuda.Device().attributes
    clock_khz, bus_bits = attributes.get("MemoryClockRate"), attributes.get("GlobalMemoryBusWidth")
    peak = 2 * clock_khz * 1e3 * bus_bits / 8 if clock_khz and bus_bits else 8e12  # (8 TB/s: beyond any HBM3e)
    assert 0.15 * peak < bandwidth < 1.05 * peak, f"{bandwidth / 1e12:.2f} TB/s of {peak / 1e12:.2f}"
    assert cached.median_ms < rotating.median_ms
    assert 0.5 < plain.median_ms / rotating.median_ms < 3.0  # plain launches add launch gaps
    assert bool(cupy.allclose(ys[-1], 2 * xs[-1]))
    # A cut-off below one call's time: that one call, timed alone, is the result; above it, the
    # full timing. (The call is a few us: 1 ms is far above, 0.1 us far below.)
    cut = time_calls(enqueue, sets, cutoff_ms=1e-4)
    assert cut.cut_short and cut.samples_ms == (cut.median_ms,) and cut.calls_per_sample == 1
    assert 0.5 * rotating.median_ms < cut.median_ms < 20 * rotating.median_ms + 0.02
    whole = time_calls(enqueue, sets, cutoff_ms=1.0)
    assert not whole.cut_short and len(whole.samples_ms) == 7
    print(f"timer: rotating {rotating.median_ms * 1e3:.2f} us ({bandwidth / 1e12:.2f} TB/s, {sets} sets, "
          f"spread {rotating.spread:.3f}); plain launches {plain.median_ms * 1e3:.2f} us; "
          f"one set in L2 {cached.median_ms * 1e3:.2f} us")


# ---- the backend: verification, timing, crash isolation ----------------------------------

def _naive_plan(problem, variant: str = "good") -> KernelPlan:
    """An independent, deliberately simple kernel (one thread per output), and broken
    variants of it: ``wrong`` skips the last output, ``fault`` writes 256 GiB past the
    output (an illegal address), ``hang`` spins forever on a volatile flag."""
    p = problem
    body = {
        "good": "y[i] = acc;",
        "wrong": "if (i + 1 < TOTAL) y[i] = acc;",
        "fault": "y[(size_t)i + (1ull << 36)] = acc;",
        "hang": "if (i == 0) { while (autoconv_test_spin) { } } y[i] = acc;",
    }[variant]
    name = f"naive_conv_{variant}"
    source = f"""
__device__ volatile int autoconv_test_spin = 1;
extern "C" __global__ void {name}(const float* __restrict__ x, const float* __restrict__ w,
                                  {"const float* __restrict__ bias, " if p.bias else ""}float* __restrict__ y)
{{
    constexpr int N = {p.N}, C = {p.C}, H = {p.H}, W = {p.W}, K = {p.K}, R = {p.R}, S = {p.S};
    constexpr int P = {p.P}, Q = {p.Q}, TOTAL = N * K * P * Q;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= TOTAL) return;
    const int q = i % Q, pp = (i / Q) % P, k = (i / (P * Q)) % K, n = i / (K * P * Q);
    float acc = {"bias[k]" if p.bias else "0.0f"};
    for (int c = 0; c < C; ++c)
        for (int r = 0; r < R; ++r)
            for (int s = 0; s < S; ++s) {{
                const int h = pp * {p.stride[0]} - {p.padding[0]} + r * {p.dilation[0]};
                const int ww = q * {p.stride[1]} - {p.padding[2]} + s * {p.dilation[1]};
                if (h >= 0 && h < H && ww >= 0 && ww < W)
                    acc += x[((n * C + c) * H + h) * W + ww] * w[((k * C + c) * R + r) * S + s];
            }}
    {body}
}}
"""
    total = p.N * p.K * p.P * p.Q
    args = ("x", "w", "bias", "y") if p.bias else ("x", "w", "y")
    return KernelPlan(family="test", name=name, problem=p, config={"variant": variant}, source=source,
                      launches=(Launch(name, (-(-total // 128), 1, 1), (128, 1, 1), args),), workspace_bytes=0)


def test_backend_verifies_times_and_survives_faults_and_hangs():
    """good, wrong, fault, good, hang, good: the failures are results with reasons, a
    fresh worker replaces each lost one, and the good candidates after them verify
    and time normally.

    The backend runs candidates in the order their compilations finish, so the hang may run
    after the last good one; a worker is replaced when the next candidate comes. A last good
    candidate, submitted once the others are done, comes after both losses in any order."""
    from autoconv.gpu.backend import CupyBackend

    problem = parse_spec("N=2,C=5,H=17,W=19,K=7,R=3,S=3,pad=1,bias=1")
    variants = ["good", "wrong", "fault", "good", "hang", "good"]
    with CupyBackend(candidate_timeout_s=10.0, compile_workers=4) as backend:
        tickets = [backend.submit(_naive_plan(problem, v)) for v in variants]
        results = [backend.result(t) for t in tickets]
        results.append(backend.result(backend.submit(_naive_plan(problem, "good"))))
        restarts = backend.worker_restarts
    statuses = [r.status for r in results]
    assert statuses == [Status.OK, Status.WRONG_RESULT, Status.RUNTIME_FAILED, Status.OK, Status.TIMEOUT,
                        Status.OK, Status.OK], [(r.status, r.reason) for r in results]
    assert "NaN" in results[1].reason
    assert "illegal" in results[2].reason.lower() or "died" in results[2].reason, results[2].reason
    assert "per-candidate limit" in results[4].reason
    assert restarts == 2
    for good in (results[0], results[3], results[5], results[6]):
        assert good.time_ms > 0 and good.tflops > 0 and good.error < 1e-5
        assert good.registers > 0 and good.spill_bytes == 0
        assert good.min_ms <= good.time_ms <= good.max_ms


def test_backend_rejects_a_compile_error_and_resources_beyond_the_device():
    from autoconv.gpu.backend import CupyBackend

    problem = parse_spec("N=1,C=4,H=8,W=8,K=4,R=3,S=3,pad=1")
    good = _naive_plan(problem)
    broken = replace(good, source=good.source.replace("float acc", "float acc = undeclared_name +"), name="broken")
    too_big = replace(good, launches=(replace(good.launches[0], shared_bytes=400 * 1024),), name="too_big")
    with CupyBackend(compile_workers=2) as backend:
        results = [backend.evaluate(plan) for plan in (broken, too_big, good)]
    assert [r.status for r in results] == [Status.COMPILE_FAILED, Status.OUT_OF_RESOURCES, Status.OK]
    assert "undeclared_name" in results[0].reason
    assert "shared memory" in results[1].reason


def test_backend_runs_a_candidate_compiled_first_before_one_submitted_first():
    """A slow compilation holds back no candidate compiled after it: the GPU runs the first
    ready, and first_done points the tuner at its result."""
    from autoconv.gpu.backend import CupyBackend
    from autoconv.gpu.compiler import CompileJob, CompilePool

    class SlowFirstJob(CompilePool):  # the first job's cubin arrives 2 s after its submission
        def __init__(self, arch: str):
            super().__init__(arch, workers=2)
            self.slow: CompileJob | None = None

        def submit(self, source: str, name: str, arch: str = "", *, priority: float | None = None) -> CompileJob:
            job = super().submit(source, name, arch, priority=priority)
            self.slow = self.slow or job
            return job

        def ready(self, job: CompileJob) -> bool:
            late = job is self.slow and time.monotonic() < job.submitted + 2.0
            return not late and super().ready(job)

        def result(self, job: CompileJob):
            if job is self.slow:
                time.sleep(max(0.0, job.submitted + 2.0 - time.monotonic()))
            return super().result(job)

    problem = parse_spec("N=1,C=4,H=8,W=8,K=4,R=3,S=3,pad=1")
    slow = _naive_plan(problem)
    fast = replace(slow, name="naive_conv_fast", source=slow.source + "\n// (another source: compiled apart)\n")
    with CupyBackend(compiler=SlowFirstJob) as backend:
        submitted = time.monotonic()
        tickets = [backend.submit(slow), backend.submit(fast)]
        assert backend.first_done(tickets) == 1
        first = backend.result(tickets[1])
        assert first.ok and time.monotonic() - submitted < 1.9
        assert backend.result(tickets[0]).ok and time.monotonic() - submitted >= 2.0


def test_backend_abandons_a_candidate_whose_compilation_the_run_cut_short():
    """Not a compile failure (that would mark the configuration failed for good): abandoned, so the
    tuner queues it again."""
    from autoconv.gpu.backend import CupyBackend
    from autoconv.gpu.compile_service import SERVICE_ENDED
    from autoconv.gpu.compiler import CompileJob

    class EndedService:  # a worker's handle on the host's compile service, which has ended
        def __init__(self, arch: str):
            self.arch = arch

        def submit(self, source: str, name: str, *, priority: float | None = None) -> CompileJob:
            return CompileJob(source, name)

        def ready(self, job: CompileJob) -> bool:
            return True

        def result(self, job: CompileJob):
            return SERVICE_ENDED

        def close(self) -> None:
            pass

    with CupyBackend(compiler=EndedService) as backend:
        result = backend.evaluate(_naive_plan(parse_spec("N=1,C=4,H=8,W=8,K=4,R=3,S=3,pad=1")))
    assert result.status is Status.ABANDONED and "compile service ended" in result.reason


def test_the_worker_compiles_no_cupy_kernel_for_a_new_problem_size(tmp_path, monkeypatch):
    """Once one problem has been verified, problems of the same kind and other sizes make the
    GPU worker compile no CuPy kernel: CuPy's reductions (with CUB, its default) compile a
    variant per block size, picked from each array's size (~2 s of NVRTC each while the kernel
    cache is empty, under the GPU's lock), which autoconv.verify.device_sums avoids. Counted as
    the files a kernel cache of the test's own gains."""
    from autoconv.gpu.backend import CupyBackend

    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path))  # (inherited by the spawned worker)
    monkeypatch.delenv("CUPY_ACCELERATORS", raising=False)
    # Outputs of 25 600, 295 936 and 1 605 632 values, biases of 32, 256 and 1024.
    first, *others = [parse_spec(spec) for spec in ("N=2,C=3,H=20,W=20,K=32,R=3,S=3,pad=1,bias=1",
                                                    "N=4,C=16,H=17,W=17,K=256,R=3,S=3,pad=1,bias=1",
                                                    "N=8,C=8,H=14,W=14,K=1024,R=1,S=1,bias=1")]

    def cached() -> list[str]:
        return sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*") if path.is_file())

    family = get_family("implicit_gemm")
    with CupyBackend(compile_workers=2) as backend:
        assert backend.evaluate(family.plan(first, None, backend.device)).ok
        before = cached()
        for problem in others:
            result = backend.evaluate(family.plan(problem, None, backend.device))
            assert result.ok, result.reason
        assert cached() == before, f"{len(cached()) - len(before)} CuPy kernels compiled for new sizes"


def test_device_sums_agree_with_numpy():
    """The verification's own kernels against NumPy: a strided float32 view with NaN and
    infinities, a float16 array, an all-zero reference; bit differences, NaN payloads included."""
    import cupy

    from autoconv.verify.compare import comparison_sums as host_sums
    from autoconv.verify.device_sums import comparison_sums, differing_words

    rng = numpy.random.default_rng(3)
    ref = rng.standard_normal((3, 5, 37, 41))
    out = (ref + 1e-3 * rng.standard_normal(ref.shape)).astype(numpy.float32).transpose(0, 2, 3, 1).copy()
    out[0, 1, 2, 3], out[2, 30, 40, 4], out[1, 0, 0, 0] = numpy.nan, numpy.inf, -numpy.inf
    out_view = out.transpose(0, 3, 1, 2)  # (logical order, not contiguous)
    for host_out, host_ref in ((out_view, ref), (ref.astype(numpy.float16), ref), (out_view, numpy.zeros_like(ref))):
        nonfinite, difference, reference = comparison_sums(cupy.asarray(host_out), cupy.asarray(host_ref))
        expected = host_sums(host_out, host_ref)
        assert nonfinite == expected[0]
        assert difference == pytest.approx(expected[1], rel=1e-12)
        assert reference == pytest.approx(expected[2], rel=1e-12, abs=0.0)
    assert comparison_sums(cupy.asarray(out_view), cupy.asarray(ref))[0] == 3

    words = rng.integers(0, 2**16, size=100_003, dtype=numpy.uint16)
    changed = words.copy()
    changed[[0, 77, 100_002]] ^= 1
    assert differing_words(cupy.asarray(words), cupy.asarray(words.copy())) == 0
    assert differing_words(cupy.asarray(words), cupy.asarray(changed)) == 3
    quiet = numpy.array([numpy.nan], numpy.float32)
    payload = numpy.array([0x7FC00001], numpy.uint32).view(numpy.float32)
    assert differing_words(cupy.asarray(quiet), cupy.asarray(payload)) == 1


# ---- the tuner, the cache and the runtime ------------------------------------------------

@pytest.mark.slow
def test_tune_caches_a_verified_winner_that_conv2d_runs(tmp_path, seed):
    import cupy

    import autoconv
    from autoconv.cache.winners import WinnerCache
    from autoconv.gpu.backend import CupyBackend
    from autoconv.runtime import api as runtime
    from autoconv.search.options import SearchSettings
    from autoconv.search.tuner import Tuner

    problem = parse_spec("N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1,bias=1")
    cache_file = tmp_path / "cache.sqlite"
    with CupyBackend(seed=seed) as backend, WinnerCache(cache_file) as cache:
        tuner = Tuner(backend, SearchSettings(FAMILY_NAMES, Budget(trials=8), seed=seed),
                      storage=tmp_path / "study.journal", cache=cache)
        outcome, = tuner.tune([NamedProblem("odd", problem)])
        entries = cache.entries()
    assert outcome.source == "tuned" and outcome.time_ms > 0, outcome
    assert outcome.trials_run == 8 and len(entries) == 1
    assert entries[0].kernel_name == outcome.kernel_name

    runtime.set_cache(cache_file)
    runtime.clear_loaded()
    try:
        x, w, bias = random_inputs(problem, numpy.random.default_rng(seed + 1))
        with warnings.catch_warnings():
            warnings.simplefilter("error", runtime.UntunedWarning)  # the cached winner must be used
            y = autoconv.conv2d(cupy.asarray(x), cupy.asarray(w), cupy.asarray(bias), stride=(2, 1), padding=1)
        assert runtime.REGISTRY.loaded_runner(problem, 0).origin == "cache"
        assert runtime.REGISTRY.loaded_runner(problem, 0).plan.name == outcome.kernel_name
        verdict = check_result(cupy.asnumpy(y), conv2d_reference(problem, x, w, bias))
        assert verdict.ok, verdict.message
    finally:
        runtime.set_cache(None)
        runtime.clear_loaded()


def test_conv2d_with_cupy_inputs_untuned_warns_once(tmp_path, seed):
    import cupy

    import autoconv
    from autoconv.runtime import api as runtime

    runtime.set_cache(tmp_path / "absent.sqlite")
    runtime.clear_loaded()
    try:
        problem = parse_spec("N=1,C=3,H=21,W=17,K=24,R=4,S=2,stride=2,pad=same")
        x, w, _ = random_inputs(problem, numpy.random.default_rng(seed))
        xd, wd = cupy.asarray(x), cupy.asarray(w)
        with pytest.warns(runtime.UntunedWarning, match="no winners' cache"):
            y = autoconv.conv2d(xd, wd, stride=2, padding="same")
        with warnings.catch_warnings():
            warnings.simplefilter("error", runtime.UntunedWarning)
            out = cupy.full(problem.output_shape, POISON, dtype=cupy.float32)
            again = autoconv.conv2d(xd, wd, stride=2, padding="same", out=out)
        assert again is out
        reference = conv2d_reference(problem, x, w)
        for result in (y, out):
            verdict = check_result(cupy.asnumpy(result), reference)
            assert verdict.ok, verdict.message
        # asymmetric 4-tuple padding equals what 'same' resolved to
        explicit = autoconv.conv2d(xd, wd, stride=2, padding=problem.padding)
        assert bool(cupy.array_equal(explicit, y))
    finally:
        runtime.set_cache(None)
        runtime.clear_loaded()


def test_conv2d_refuses_bad_arguments_without_launching():
    import cupy

    import autoconv

    x = cupy.random.random((2, 4, 9, 9), dtype=cupy.float32)
    w = cupy.random.random((6, 4, 3, 3), dtype=cupy.float32)
    cases = [
        ((x.astype(cupy.float16), w), "float32"),
        ((x, cupy.ascontiguousarray(w[:, :3])), "input channels"),
        ((x[:, :, :, ::2], w), "contiguous"),
        ((cupy.asnumpy(x), w), "host memory"),
        ((x, w, cupy.zeros(5, dtype=cupy.float32)), "one value per filter"),
        ((x[0], w), "4 dimensions"),
    ]
    for args, match in cases:
        with pytest.raises(ProblemError, match=match):
            autoconv.conv2d(*args, padding=1)
    with pytest.raises(ProblemError, match="out.shape"):
        autoconv.conv2d(x, w, padding=1, out=cupy.empty((2, 6, 8, 8), dtype=cupy.float32))
    if cupy.cuda.runtime.getDeviceCount() > 1:
        with cupy.cuda.Device(1):
            other = cupy.asarray(cupy.asnumpy(w))
        with pytest.raises(ProblemError, match="current device"):
            autoconv.conv2d(x, other, padding=1)


def test_conv2d_with_pytorch_tensors(seed):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA")
    import autoconv

    generator = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.rand((2, 13, 31, 29), generator=generator) * 2 - 1
    w = torch.rand((17, 13, 3, 3), generator=generator) * 2 - 1
    b = torch.rand((17,), generator=generator) * 2 - 1
    expected = torch.nn.functional.conv2d(x.double(), w.double(), b.double(), stride=(2, 1), padding=1,
                                          dilation=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = autoconv.conv2d(x.cuda(), w.cuda(), b.cuda(), stride=(2, 1), padding=1, precision="fp32")
        # precision None follows PyTorch's setting for its cuDNN convolutions: TF32 allowed by default
        y_default = autoconv.conv2d(x.cuda(), w.cuda(), b.cuda(), stride=(2, 1), padding=1)
    assert isinstance(y, torch.Tensor) and y.is_cuda and y.dtype == torch.float32
    error = (torch.linalg.norm(y.double().cpu() - expected) / torch.linalg.norm(expected)).item()
    assert error <= 1e-5
    from autoconv.torch import pytorch_precision
    default_error = (torch.linalg.norm(y_default.double().cpu() - expected) / torch.linalg.norm(expected)).item()
    if pytorch_precision() == "tf32":
        assert 3e-5 < default_error < 2e-3  # TF32's size, not float32's
    else:
        assert default_error <= 1e-5
    # 'same' with stride 1 and an even kernel: PyTorch's own padding convention
    w2 = (torch.rand((8, 13, 4, 2), generator=generator) * 2 - 1)
    expected = torch.nn.functional.conv2d(x.double(), w2.double(), padding="same")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = autoconv.conv2d(x.cuda(), w2.cuda(), padding="same", precision="fp32")
    error = (torch.linalg.norm(y.double().cpu() - expected) / torch.linalg.norm(expected)).item()
    assert error <= 1e-5
    with pytest.raises(ProblemError, match="host memory"):
        autoconv.conv2d(x, w.cuda())
    # a non-contiguous input is copied to NCHW first (the PyTorch operator's rule)
    transposed = x.cuda().transpose(2, 3)
    expected = torch.nn.functional.conv2d(transposed.double(), w.cuda().double(), padding=1)
    y = autoconv.conv2d(transposed, w.cuda(), padding=1, precision="fp32")
    assert (torch.linalg.norm(y.double() - expected) / torch.linalg.norm(expected)).item() <= 1e-5


# ---- the CLI -------------------------------------------------------------------------

@pytest.mark.slow
def test_second_tune_is_served_from_the_cache(tmp_path):
    config = tmp_path / "tune.yaml"
    config.write_text(
        "problems:\n"
        "  - name: odd\n"
        "    spec: \"N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1\"\n"
        "budget: {trials: 6}\n"
        "cache: cache.sqlite\nstorage: study.journal\nresults: results\n")
    env = repo_env()
    command = [sys.executable, "-m", "autoconv", "tune", str(config)]
    first = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "tuned" in first.stdout
    started = time.monotonic()
    second = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    elapsed = time.monotonic() - started
    assert second.returncode == 0, second.stdout + second.stderr
    assert "cache" in second.stdout and "tuned" not in second.stdout
    assert elapsed < 30, f"the cached run took {elapsed:.1f} s"
    show = subprocess.run([sys.executable, "-m", "autoconv", "show", str(config)], capture_output=True,
                          text=True, env=env, timeout=60)
    assert show.returncode == 0 and "current" in show.stdout


def test_a_predicted_kernel_is_checked_before_it_runs():
    """verify_runner (what an untuned problem's predicted kernel must pass on first use): a
    right kernel passes; a kernel built for another problem (one filter fewer, so part of y
    stays NaN and the rest is misplaced) is caught."""
    import cupy

    from autoconv.gpu.device import read_device
    from autoconv.runtime import selection

    problem = parse_spec("N=2,C=19,H=11,W=13,K=12,R=3,S=2,stride=1x2,pad=1,bias=1")
    limits, _ = read_device(0)
    with cupy.cuda.Device(0):
        right = selection._loaded_runner(problem, 0, get_family("implicit_gemm").plan(problem, None, limits),
                                         "predicted", limits)
        assert selection.verify_runner(right) is None
        other = problem.with_(K=problem.K - 1)
        wrong = selection._loaded_runner(other, 0, get_family("implicit_gemm").plan(other, None, limits),
                                         "predicted", limits)
        failure = selection.verify_runner(replace(wrong, problem=problem))
    assert failure is not None and ("NaN" in failure or "exceeds" in failure)
