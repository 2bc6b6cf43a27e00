"""Startup trace (thirtieth session): every Python process started with this folder on its path
writes, to $AUTOCONV_TRACE_DIR/<pid>.txt, when it started (the interpreter, before its imports),
its parent, its command line, and when it exited with its multiprocessing name."""
import atexit
import os
import sys
import time

_folder = os.environ.get("AUTOCONV_TRACE_DIR")
if _folder:
    _path = os.path.join(_folder, f"{os.getpid()}.txt")
    with open(_path, "w") as _file:
        _file.write(f"start {time.time():.4f} ppid {os.getppid()} argv {' '.join(sys.argv)[:200]}\n")

    def _ended() -> None:
        import multiprocessing
        with open(_path, "a") as file:
            file.write(f"end {time.time():.4f} name {multiprocessing.current_process().name}\n")

    atexit.register(_ended)
