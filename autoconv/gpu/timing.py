"""GPU timing shared by the tuner and the cuDNN baseline, so both are measured alike.

What is timed is the GPU work, not Python: ``enqueue(i)`` puts one call (e.g. a plan's
launches, or a cuDNN execute) for buffer set ``i`` on the current stream; many such
calls are captured back-to-back in a CUDA graph, and the graph's replays are timed
between one pair of CUDA events. The calls rotate over ``buffer_sets`` independent
input/output sets, chosen by the caller to exceed the L2 cache together, so no call
finds its operands already in L2. Warm-up replays come first; the result is the median
(with min and max) of several replays, divided by the calls per replay.

The tuner's search times each candidate with :data:`SCREENING` effort (shorter replays, fewer
of them): it only has to rank candidates, and most are far from the best; the winner is then
timed again in full (:data:`FULL`), which is the time it is cached and reported with.

If the calls cannot be captured (some libraries refuse stream capture), they are
enqueued back-to-back between the events instead: host overhead is still amortised
as long as the host enqueues faster than the GPU runs.

Only CuPy is needed; it is imported when a function here is called.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Aim for replays of about this many milliseconds: long enough that event resolution
#: (~0.5 us) and launch gaps vanish, short enough to keep tuning fast.
TARGET_REPLAY_MS = 4.0
MAX_CALLS_PER_REPLAY = 2000


@dataclass(frozen=True)
class TimingEffort:
    """How long to measure: ``samples`` timed replays of about ``target_ms`` each (the
    median is reported) after ``warmup`` untimed ones."""

    samples: int
    warmup: int
    target_ms: float


#: Reported times: the winners' (cache, report) and the baselines'.
FULL = TimingEffort(samples=7, warmup=2, target_ms=TARGET_REPLAY_MS)
#: The search's ranking of candidates: a sixth of FULL's replay time (1 ms replays still
#: amortise launch gaps and event resolution to well under 1%). In full, FULL's replays were most
#: of a candidate's GPU time; screening more than halved a ResNet-50 tune's GPU seconds
#: (docs/lab-notes/2026-11-24-one-gpu-tune-compute-cache-depth-screening-workers.md).
SCREENING = TimingEffort(samples=5, warmup=1, target_ms=1.0)


@dataclass(frozen=True)
class Timing:
    """Milliseconds per call."""

    median_ms: float
    min_ms: float
    max_ms: float
    samples_ms: tuple[float, ...]
    calls_per_sample: int
    graph: bool  # captured in a CUDA graph (True) or enqueued back-to-back (False)
    cut_short: bool = False  # one call, timed alone: it took longer than the caller's cut-off

    def tflops(self, flops: int) -> float:
        return flops / (self.median_ms * 1e-3) / 1e12

    @property
    def spread(self) -> float:
        """(max - min) / median: how noisy the measurement was."""
        return (self.max_ms - self.min_ms) / self.median_ms if self.median_ms > 0 else math.inf


def buffer_sets_for(bytes_per_set: int, l2_bytes: int, max_sets: int = 256) -> int:
    """How many independent buffer sets together exceed twice the L2 cache."""
    if bytes_per_set <= 0:
        return 1
    return max(1, min(max_sets, 2 * l2_bytes // bytes_per_set + 1))


def time_calls(enqueue: Callable[[int], None], buffer_sets: int, *, samples: int = FULL.samples,
               warmup: int = FULL.warmup, target_ms: float = FULL.target_ms,
               use_graph: bool = True, cutoff_ms: float | None = None) -> Timing:
    """Time ``enqueue`` (see the module docstring). With ``cutoff_ms``, one call is timed
    alone first; if it takes longer, and so does a second (the first may include first-use
    costs, and either a stall of the host between the events), the shorter is the result
    (``cut_short``): a candidate many times slower than the search's best needs no precise
    time, and its replays took most of a tune's GPU time (80% of a ResNet-50 tune's went to
    candidates over twice their layer's best). Raises whatever the calls raise (a CUDA error
    from a faulting kernel, say): callers decide what a failure means."""
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        if cutoff_ms is not None:
            probe_ms = _elapsed_ms(stream, lambda: enqueue(0))
            if probe_ms > cutoff_ms:
                probe_ms = min(probe_ms, _elapsed_ms(stream, lambda: enqueue(0)))
            if probe_ms > cutoff_ms:
                return Timing(median_ms=probe_ms, min_ms=probe_ms, max_ms=probe_ms, samples_ms=(probe_ms,),
                              calls_per_sample=1, graph=False, cut_short=True)
        # One untimed call per buffer set: first-launch costs (module load, lazy
        # allocations, cuDNN plan set-up) stay out of the numbers.
        for i in range(buffer_sets):
            enqueue(i)
        stream.synchronize()
        single_ms = _elapsed_ms(stream, lambda: enqueue(0))
        calls = _calls_per_replay(single_ms, target_ms, buffer_sets)

        graph = _capture(stream, enqueue, calls, buffer_sets) if use_graph else None
        if graph is not None:
            graph.upload(stream)
            run = lambda: graph.launch(stream)  # noqa: E731
        else:
            def run():
                for call in range(calls):
                    enqueue(call % buffer_sets)
        for _ in range(warmup):
            run()
        stream.synchronize()
        per_call = [_elapsed_ms(stream, run) / calls for _ in range(samples)]
    return Timing(median_ms=statistics.median(per_call), min_ms=min(per_call),
                  max_ms=max(per_call), samples_ms=tuple(per_call), calls_per_sample=calls,
                  graph=graph is not None)


def _calls_per_replay(single_ms: float, target_ms: float, buffer_sets: int) -> int:
    calls = int(target_ms / max(single_ms, 1e-3))
    calls = max(buffer_sets, min(calls, MAX_CALLS_PER_REPLAY))
    # Whole rotations, so every buffer set is used equally often.
    return max(1, round(calls / buffer_sets)) * buffer_sets


def _elapsed_ms(stream, run: Callable[[], None]) -> float:
    import cupy

    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record(stream)
    run()
    end.record(stream)
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end)


def _capture(stream, enqueue: Callable[[int], None], calls: int, buffer_sets: int):
    """A CUDA graph of ``calls`` back-to-back calls, or None if capture is refused."""
    import cupy

    try:
        stream.begin_capture()
    except cupy.cuda.runtime.CUDARuntimeError:
        return None
    try:
        for call in range(calls):
            enqueue(call % buffer_sets)
    except Exception:
        # A library refused to be captured (or the call itself failed): end the capture
        # so the stream is usable again, then let the caller fall back to plain launches.
        try:
            stream.end_capture()
        except cupy.cuda.runtime.CUDARuntimeError:
            pass
        return None
    try:
        return stream.end_capture()
    except cupy.cuda.runtime.CUDARuntimeError:
        # The capture was invalidated by a call that is not capturable (cudaMalloc in a
        # library, a synchronisation): time the calls back-to-back instead.
        return None


def geometric_mean(values: Sequence[float]) -> float:
    values = [v for v in values if v > 0 and math.isfinite(v)]
    if not values:
        return math.nan
    return math.exp(sum(math.log(v) for v in values) / len(values))
