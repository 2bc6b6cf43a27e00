"""Time the GPU worker's warm-up (autoconv.gpu.worker.WorkerSession.warm_up) step by step, in this
process, with the CuPy kernel cache that $CUPY_CACHE_DIR names; print the files CuPy compiled.
    CUPY_CACHE_DIR=/tmp/empty python3 results/h100/thirtieth/warm_up.py"""
import os
import time

t0 = time.perf_counter()
import cupy  # noqa: E402

from autoconv.gpu.device import read_device  # noqa: E402
from autoconv.gpu.worker import WorkerOptions, WorkerSession  # noqa: E402
from autoconv.problems.problem import parse_spec  # noqa: E402
from autoconv.verify.compare import check_result  # noqa: E402

marks = [("imports", time.perf_counter())]
limits, identity = read_device(0)
cupy.cuda.Device(0).use()
marks.append(("read_device", time.perf_counter()))
session = WorkerSession(limits, WorkerOptions())
marks.append(("session", time.perf_counter()))
session.set_problem(parse_spec("N=1,C=2,H=5,W=5,K=3,R=3,S=3,pad=1,bias=1"), 0)
cupy.cuda.runtime.deviceSynchronize()
marks.append(("set_problem", time.perf_counter()))
buffers = session.buffers
buffers.verification(None)
buffers.y[...] = buffers.reference
marks.append(("verification", time.perf_counter()))
check_result(buffers.output_values(), buffers.reference, buffers.tolerance)
buffers.y.fill(float("nan"))
check_result(buffers.output_values(), buffers.reference, buffers.tolerance)
marks.append(("check_result", time.perf_counter()))
buffers.written_inputs()
cupy.cuda.runtime.deviceSynchronize()
marks.append(("written_inputs", time.perf_counter()))
last = t0
for name, t in marks:
    print(f"{name:15s} {t - last:7.3f} s")
    last = t
print(f"total {last - t0:.3f} s")
folder = os.environ.get("CUPY_CACHE_DIR", "")
files = sorted(os.listdir(folder)) if folder and os.path.isdir(folder) else []
print(f"{len(files)} files in {folder}: {sum(os.path.getsize(os.path.join(folder, f)) for f in files)} bytes")
