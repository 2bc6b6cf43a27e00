"""Time ``autoconv.conv2d`` on every problem of a config, next to the time tuning recorded.

    python examples/conv2d_timing.py examples/resnet50.yaml

For each problem with a current cache entry on this GPU, calls ``autoconv.conv2d`` the way
user code does (CuPy arrays in, a preallocated output) and times those calls with the same
timer the tuner uses (a CUDA graph of back-to-back calls over rotating buffer sets larger
than twice the L2 cache, median of 7), then prints both times and their ratio, and what ran (the
tuned kernel's family, or ``cudnn`` where ``autoconv bench`` found cuDNN faster and conv2d
runs cuDNN's plan). A ratio near 1 means the runtime API adds nothing to the tuned kernel;
below 1, cuDNN was faster and conv2d took it. The output of each problem is also checked
against the float64 reference first. Needs a GPU and CuPy.
"""

from __future__ import annotations

import sys

import numpy

import autoconv
from autoconv.cache.entries import CacheKey
from autoconv.cache.winners import WinnerCache
from autoconv.config.load import load_config
from autoconv.gpu.device import read_device
from autoconv.gpu.timing import buffer_sets_for, geometric_mean, time_calls
from autoconv.runtime.api import cache_path
from autoconv.verify.compare import check_result
from autoconv.verify.reference import conv2d_reference, random_inputs


def main(config_file: str) -> int:
    import cupy

    config = load_config(config_file)
    limits, identity = read_device(config.device)
    autoconv.runtime.api.set_cache(config.cache)
    rng = numpy.random.default_rng(config.seed)
    ratios = []
    print(f"{'problem':32s} {'tuned family':22s} {'tuned ms':>9s} {'conv2d ms':>9s} {'ratio':>6s}  conv2d ran")
    with WinnerCache(cache_path()) as cache:
        for item in config.problems:
            problem = item.problem
            entry = cache.get(CacheKey.for_problem(identity, problem))
            if entry is None:
                print(f"{item.name:32s} (no cached winner: run autoconv tune first)")
                continue
            sets = buffer_sets_for(problem.min_bytes, limits.l2_bytes)
            inputs = [random_inputs(problem, rng) for _ in range(sets)]
            device_inputs = [tuple(None if a is None else cupy.asarray(a) for a in xs) for xs in inputs]
            outputs = [cupy.full(problem.output_shape, numpy.nan, dtype=cupy.float32) for _ in range(sets)]

            # The defaults bind this iteration's layer and buffers (it is only called within it).
            def call(i, device_inputs=device_inputs, problem=problem, outputs=outputs):
                x, w, bias = device_inputs[i]
                autoconv.conv2d(x, w, bias, stride=problem.stride, padding=problem.padding,
                                dilation=problem.dilation, out=outputs[i])

            call(0)
            x, w, bias = inputs[0]
            outcome = check_result(cupy.asnumpy(outputs[0]), conv2d_reference(problem, x, w, bias))
            if not outcome.ok:
                print(f"{item.name:32s} WRONG: {outcome.message}")
                return 1
            timing = time_calls(call, sets)
            ratio = timing.median_ms / entry.time_ms
            ratios.append(ratio)
            origins = {k["origin"] for k in autoconv.runtime.api.loaded_kernels() if k["problem"] == problem.spec()}
            print(f"{item.name:32s} {entry.family:22s} {entry.time_ms:9.4f} {timing.median_ms:9.4f} {ratio:6.3f}  "
                  f"{'cudnn' if 'cudnn' in origins else entry.family}")
    if ratios:
        print(f"geometric mean of conv2d / tuned: {geometric_mean(ratios):.3f} over {len(ratios)} problems")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
