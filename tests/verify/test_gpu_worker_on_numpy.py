"""The GPU worker's verification buffers (autoconv.gpu.worker.ProblemBuffers) on the CPU, with
NumPy standing in for CuPy (the code uses only what the two share): for fp32 the buffers are the
values as before; for bf16/fp16 NHWC they are uint16 in the problem's layout, the output is
poisoned with 0xFFFF (a float32 output with NaN), and a kernel's output, written as its bits,
is judged through its values against the reference. tests/gpu/test_16bit.py checks the same on
the GPU with CuPy.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from autoconv.dtypes import encode
from autoconv.gpu.memory import estimate, timing_set_bytes
from autoconv.problems.buffers import kernel_buffer
from autoconv.problems.problem import parse_spec
from autoconv.verify.compare import check_result
from autoconv.verify.reference import conv2d_reference, random_inputs

SPEC = "N=2,C=5,H=7,W=6,K=9,R=3,S=3,pad=1,bias=1"
L2_BYTES = 1 << 16


@pytest.fixture
def numpy_as_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", np)


def _buffers(spec: str):
    from autoconv.gpu.worker import ProblemBuffers

    problem = parse_spec(spec)
    return problem, ProblemBuffers(problem, 5, L2_BYTES, 8)


def test_fp32_buffers_are_the_values_as_before(numpy_as_cupy):
    problem, buffers = _buffers(SPEC)
    x, w, bias = random_inputs(problem, np.random.default_rng(5))
    assert buffers.x.dtype == np.float32 and np.array_equal(buffers.x, x) and np.array_equal(buffers.bias, bias)
    assert np.array_equal(buffers.reference, conv2d_reference(problem, x, w, bias))
    buffers.verification(None)
    assert buffers.y.dtype == np.float32 and np.isnan(buffers.y).all() and buffers.output_values().shape == (2, 9, 7, 6)
    set_bytes = sum(array.nbytes for array in buffers.timing_sets[0].values())
    assert set_bytes == timing_set_bytes(problem)
    assert len(buffers.timing_sets) == estimate(problem, L2_BYTES, max_buffer_sets=8).buffer_sets


@pytest.mark.parametrize("extra", [",precision=bf16,layout=NHWC", ",precision=fp16,layout=NHWC,out_dtype=float32"])
def test_16bit_buffers_follow_the_layout_and_dtype(numpy_as_cupy, extra):
    problem, buffers = _buffers(SPEC + extra)
    x, w, bias = random_inputs(problem, np.random.default_rng(5))
    assert buffers.x.dtype == np.uint16 and np.array_equal(buffers.x, kernel_buffer(problem, "x", x))
    assert buffers.w.shape == problem.weight_storage_shape and buffers.bias.dtype == np.uint16
    assert np.array_equal(buffers.reference, conv2d_reference(problem, x, w, bias))
    out = np.float32 if problem.output_dtype == "float32" else np.uint16
    verification = buffers.verification(None)
    assert verification["y"].dtype == out and verification["y"].shape == problem.output_storage_shape
    if out == np.uint16:
        assert (verification["y"] == 0xFFFF).all()
    assert "never written" in check_result(buffers.output_values(), buffers.reference, buffers.tolerance).message
    # a kernel that writes the reference rounded once, as its bits in NPQK order, passes
    y_stored = np.ascontiguousarray(buffers.reference.transpose(problem.storage_order))
    verification["y"][...] = encode(y_stored, problem.output_dtype)
    verdict = check_result(buffers.output_values(), buffers.reference, buffers.tolerance)
    assert verdict.ok, verdict.message
    # ... one that writes it in NKPQ order does not
    verification["y"][...] = encode(buffers.reference, problem.output_dtype).reshape(problem.output_storage_shape)
    assert not check_result(buffers.output_values(), buffers.reference, buffers.tolerance).ok
    assert buffers.written_inputs() == []
    buffers.x[0, 0, 0, 0] ^= 1
    assert buffers.written_inputs() == ["x"]
    for timing in buffers.timing_sets:
        assert timing["x"].dtype == np.uint16 and timing["y"].dtype == out
    assert sum(array.nbytes for array in buffers.timing_sets[0].values()) == timing_set_bytes(problem)


@pytest.mark.parametrize("turn", [0, 1, 2, 4])
def test_the_warm_up_runs_each_step_once_from_its_turn(numpy_as_cupy, monkeypatch, turn):
    """GPU workers sharing a host start their warm-up at different steps (their turns), so that
    each compiles its first step's kernels while the others compile theirs."""
    from autoconv.gpu import exclusive, worker
    from autoconv.kernels.limits import H100

    monkeypatch.setattr(exclusive.GpuLock, "for_device", classmethod(lambda cls, device: cls("test")))
    ran = []

    def recorded(step):
        return lambda problem, l2_bytes: (ran.append(step.__name__), step(problem, l2_bytes))

    monkeypatch.setattr(worker, "WARM_UP_STEPS", tuple(recorded(step) for step in worker.WARM_UP_STEPS))
    session = worker.WorkerSession(H100, worker.WorkerOptions(warm_up_turn=turn))
    session.warm_up()  # (on NumPy: every step runs through)
    names = ["_warm_reference", "_warm_timing_sets", "_warm_verification"]
    assert ran == names[turn % 3:] + names[:turn % 3]
    assert session.buffers is None and not session.kept


def test_a_warm_up_turn_is_not_an_option_a_launched_worker_must_match():
    from autoconv.gpu.worker import WorkerOptions

    assert WorkerOptions(device_id=1, warm_up_turn=2) == WorkerOptions(device_id=1)
    assert WorkerOptions(device_id=1, warm_up_turn=2) != WorkerOptions(device_id=0, warm_up_turn=2)


def test_the_inputs_come_from_the_array_modules_generator_seeded(numpy_as_cupy):
    """The verification inputs are made by the array module's generator (on the GPU, CuPy's:
    milliseconds where NumPy on the host took seconds at batch 256) from the seed alone: the same
    for the same seed, in every process; other inputs for another."""
    from autoconv.verify.on_gpu import verification_inputs

    problem = parse_spec(SPEC)
    again, other = verification_inputs(problem, 5), verification_inputs(problem, 6)
    for name, first, second in zip(("x", "w", "bias"), _buffers(SPEC)[1].pristine.values(), again):
        assert first.dtype == np.float32 and np.array_equal(first, second), name
    assert not np.array_equal(again[0], other[0])


def test_a_worker_makes_a_problems_buffers_holding_the_gpu(monkeypatch):
    """Inputs, float64 reference and timing sets are all GPU work (the reference would slow
    another worker's measurement): made holding the GPU's lock."""
    import types

    from autoconv.gpu import worker

    events: list = []

    class RecordingLock:
        def __enter__(self):
            events.append("lock")

        def __exit__(self, *exc):
            events.append("unlock")

    memory_pool = types.SimpleNamespace(free_all_blocks=lambda: None)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(
        get_default_memory_pool=lambda: memory_pool,
        cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(memGetInfo=lambda: (1 << 40, 1 << 40)))))
    monkeypatch.setattr(worker, "ProblemBuffers", lambda problem, seed, l2_bytes, max_sets: events.append("buffers"))
    session = worker.WorkerSession.__new__(worker.WorkerSession)
    session.gpu_lock = RecordingLock()
    session.limits = types.SimpleNamespace(name="a GPU", l2_bytes=L2_BYTES)
    session.options = worker.WorkerOptions()
    session._allocate(parse_spec(SPEC), 5)
    assert events == ["lock", "buffers", "unlock"]
