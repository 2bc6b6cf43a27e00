"""The PyTorch column's calls keep their outputs alive over a rotation (CPU)."""

from __future__ import annotations

import weakref

import pytest

from autoconv.bench.baseline import call_rotating


class Output:
    """Stands for a call's output tensor: alive while referenced."""


@pytest.mark.parametrize("count", [1, 3, 4])
def test_each_output_outlives_the_next_count_minus_one_calls(count):
    outputs: list[weakref.ref] = []
    alive_at_call: list[int] = []
    calls_seen: list[int] = []

    def call(i):
        # An allocator can hand this call the memory of any output dead by now: with all earlier
        # outputs freed at once, every call would write the same block.
        alive_at_call.append(sum(ref() is not None for ref in outputs))
        calls_seen.append(i)
        out = Output()
        outputs.append(weakref.ref(out))
        return out

    call_rotating(call, 10, count)

    assert calls_seen == [c % count for c in range(10)]
    assert alive_at_call == [min(c, count) for c in range(10)]
