"""`autoconv bench` alternates its sides, and leaves out a failing PyTorch column (CPU)."""

from __future__ import annotations

import pytest

from autoconv.bench.benchmark import alternate_rounds


def recording(calls: list[str], name: str, ms: float = 1.0):
    def timer() -> float:
        calls.append(name)
        return ms
    return timer


def test_the_first_side_of_each_round_rotates():
    calls: list[str] = []
    timers = {name: recording(calls, name) for name in ("autoconv", "cudnn_bf16", "torch")}

    per_round, failure = alternate_rounds(timers, 3, optional="torch")

    assert calls == ["autoconv", "cudnn_bf16", "torch",
                     "cudnn_bf16", "torch", "autoconv",
                     "torch", "autoconv", "cudnn_bf16"]
    assert per_round == {name: [1.0, 1.0, 1.0] for name in timers}
    assert failure is None


def test_a_failing_optional_column_is_left_out_and_the_others_keep_their_rounds():
    calls: list[str] = []
    failures = iter([None, RuntimeError("cuDNN error: CUDNN_STATUS_INTERNAL_ERROR\n(during capture)")])

    def torch_timer() -> float:
        calls.append("torch")
        error = next(failures)
        if error is not None:
            raise error
        return 2.0

    timers = {"autoconv": recording(calls, "autoconv"), "cudnn_bf16": recording(calls, "cudnn_bf16"),
              "torch": torch_timer}

    per_round, failure = alternate_rounds(timers, 3, optional="torch")

    assert per_round == {"autoconv": [1.0, 1.0, 1.0], "cudnn_bf16": [1.0, 1.0, 1.0]}
    assert failure == "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR (during capture)"
    assert calls.count("torch") == 2  # (not asked again once it failed)


def test_a_failing_side_that_is_not_optional_stops_the_measurement():
    def broken() -> float:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    with pytest.raises(RuntimeError, match="illegal memory access"):
        alternate_rounds({"autoconv": broken, "torch": lambda: 1.0}, 2, optional="torch")
