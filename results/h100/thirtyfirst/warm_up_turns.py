"""Three GPU workers' warm-ups at once on one GPU, as a fleet's three workers start them, from an
empty CuPy kernel cache: each in its own process (import, CUDA context, WorkerSession.warm_up),
with the warm-up turns given (0 1 2: the thirty-first session's rotation; 0 0 0: every worker
starting at the same step, as before it). Prints each process's seconds and the slowest.
    CUPY_CACHE_DIR=<empty> python3 results/h100/thirtyfirst/warm_up_turns.py 0 1 2"""
import subprocess
import sys
import time

ONE = """
import sys, time
started = time.perf_counter()
from autoconv.gpu.device import read_device
from autoconv.gpu.worker import WorkerOptions, WorkerSession
limits, _ = read_device(0)
ready = time.perf_counter()
WorkerSession(limits, WorkerOptions(warm_up_turn=int(sys.argv[1]))).warm_up()
print(f"turn {sys.argv[1]}: start {ready - started:.2f} s, warm-up {time.perf_counter() - ready:.2f} s")
"""

started = time.perf_counter()
processes = [subprocess.Popen([sys.executable, "-c", ONE, turn], stdout=subprocess.PIPE, text=True)
             for turn in sys.argv[1:]]
for process in processes:
    print(process.communicate()[0].strip())
print(f"turns {' '.join(sys.argv[1:])}: all done in {time.perf_counter() - started:.2f} s")
