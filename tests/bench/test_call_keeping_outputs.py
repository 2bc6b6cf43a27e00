"""The PyTorch column's calls write their own outputs (CPU)."""

from __future__ import annotations

import weakref

import pytest

from autoconv.bench.baseline import call_keeping_outputs


class Output:
    """Stands for a call's output tensor: alive while referenced."""


@pytest.mark.parametrize("count", [1, 3])
def test_every_output_outlives_the_calls_after_it(count):
    outputs: list[weakref.ref] = []
    alive_at_call: list[int] = []
    calls_seen: list[int] = []

    def call(i):
        # An allocator can hand this call the memory of any output dead by now: with each output
        # freed at once, every call would write the same block.
        alive_at_call.append(sum(ref() is not None for ref in outputs))
        calls_seen.append(i)
        out = Output()
        outputs.append(weakref.ref(out))
        return out

    kept = call_keeping_outputs(call, 7, count)

    assert calls_seen == [c % count for c in range(7)]
    assert alive_at_call == list(range(7))
    assert len(kept) == 7
