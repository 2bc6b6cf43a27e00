"""fsync and flock cost on this host's /tmp: N appends of a 200-byte line, each flushed and
fsynced under an flock, as Optuna's journal backend does with autoconv's lock."""
import fcntl, os, sys, time
path = sys.argv[1]; n = int(sys.argv[2])
line = b"x" * 199 + b"\n"
lock = open(path + ".flock", "w")
for sync in (True, False):
    t = time.perf_counter()
    for _ in range(n):
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(path, "ab") as f:
            f.write(line); f.flush()
            if sync:
                os.fsync(f.fileno())
        fcntl.flock(lock, fcntl.LOCK_UN)
    print(f"fsync={sync}: {(time.perf_counter() - t) / n * 1e3:.3f} ms per append")
