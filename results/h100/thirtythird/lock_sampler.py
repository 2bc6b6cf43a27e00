"""How busy each GPU's lock is during a tune: every INTERVAL seconds, try each lock file
(autoconv.gpu.exclusive: $TMPDIR/autoconv-gpu-<bus id>.lock) without blocking; held if that fails
(a free lock is taken and released at once, some microseconds). Until SIGTERM; then writes, per lock,
the fraction of samples held, overall and per second of the run, to OUT (json).
    python3 lock_sampler.py OUT [INTERVAL]
"""
import fcntl
import glob
import json
import os
import signal
import sys
import tempfile
import time

out = sys.argv[1]
interval = float(sys.argv[2]) if len(sys.argv) > 2 else 0.005
started = time.time()
samples: dict[str, list[tuple[float, int]]] = {}
descriptors: dict[str, int] = {}
running = True


def stop(*_):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)
while running:
    for path in glob.glob(os.path.join(tempfile.gettempdir(), "autoconv-gpu-*.lock")):
        if path not in descriptors:
            descriptors[path] = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(descriptors[path], fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(descriptors[path], fcntl.LOCK_UN)
            held = 0
        except BlockingIOError:
            held = 1
        samples.setdefault(path, []).append((time.time() - started, held))
    time.sleep(interval)
result = {}
for path, rows in samples.items():
    seconds: dict[int, list[int]] = {}
    for at, held in rows:
        seconds.setdefault(int(at), []).append(held)
    result[os.path.basename(path)] = {
        "samples": len(rows), "first_s": rows[0][0], "last_s": rows[-1][0],
        "held": sum(h for _, h in rows) / len(rows),
        "held_per_second": {s: round(sum(v) / len(v), 2) for s, v in sorted(seconds.items())}}
json.dump(result, open(out, "w"), indent=1)
