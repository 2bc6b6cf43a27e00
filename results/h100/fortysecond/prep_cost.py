"""What a GPU worker spends making a problem's buffers, per ResNet-50 layer: the verification inputs
made on the host with NumPy and copied (the tree before gpu_inputs.diff) against made on the GPU by
CuPy's generator (after), then the float64 reference and tolerance, and the timing sets (both trees
alike). Each step synchronised and timed once, after a first layer's steps untimed (CuPy's kernels).
    python3 prep_cost.py CONFIG [CONFIG ...]   (on the GPU, with the tree after the diff)
"""
import sys
import time

import cupy
import numpy

from autoconv.dtypes import kernel_buffer
from autoconv.gpu.device import read_device
from autoconv.gpu.worker import reference_and_tolerance, timing_sets, verification_inputs
from autoconv.problems.config import load_config


def host_inputs(problem, seed):  # the tree before the diff: NumPy's uniform in float64, then copied
    rng = numpy.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, problem.input_shape).astype(numpy.float32)
    w = rng.uniform(-1.0, 1.0, problem.weight_shape).astype(numpy.float32)
    return tuple(cupy.asarray(kernel_buffer(problem, name, values)) for name, values in (("x", x), ("w", w)))


def timed(step, *args):
    cupy.cuda.runtime.deviceSynchronize()
    start = time.perf_counter()
    made = step(*args)
    cupy.cuda.runtime.deviceSynchronize()
    return time.perf_counter() - start, made


limits, _ = read_device(0)
warm = load_config(sys.argv[1]).problems[0].problem
reference_and_tolerance(warm, *verification_inputs(warm, 0))
host_inputs(warm, 0), timing_sets(warm, 0, limits.l2_bytes, 1)
print(f"{'layer':34s} {'host in':>8s} {'gpu in':>8s} {'ref+tol':>8s} {'sets':>8s}  (s)")
for config_path in sys.argv[1:]:
    totals = numpy.zeros(4)
    for item in load_config(config_path).problems:
        problem = item.problem
        host_s, _ = timed(host_inputs, problem, 1)
        gpu_s, inputs = timed(verification_inputs, problem, 1)
        reference_s, _ = timed(reference_and_tolerance, problem, *inputs)
        sets_s, _ = timed(timing_sets, problem, 2, limits.l2_bytes, 256)
        row = numpy.array([host_s, gpu_s, reference_s, sets_s])
        totals += row
        print(f"{item.name:34s} " + " ".join(f"{v:8.4f}" for v in row), flush=True)
        del inputs
        cupy.get_default_memory_pool().free_all_blocks()
    print(f"{config_path}: sums " + " ".join(f"{v:8.3f}" for v in totals), flush=True)
