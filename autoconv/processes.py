"""Helper processes that end with the process that started them.

``autoconv tune`` uses pools of spawned processes (enumerating search spaces, compiling
candidates). A ``ProcessPoolExecutor`` worker waits on a queue whose pipe it holds both
ends of, so when its parent is killed (SIGKILL: no clean-up runs) it would wait forever.
:func:`exit_with_parent`, run as the pool's initializer, makes it end instead.
"""

from __future__ import annotations

import os
import threading
import time

#: Seconds between two looks at whether the parent still runs.
PARENT_POLL_S = 0.5


def exit_with_parent(parent_pid: int) -> None:
    """End this process (exit status 1) soon after process ``parent_pid`` is gone: a
    daemon thread watches for this process being handed to another parent."""
    if os.getppid() != parent_pid:  # already gone before this process got going
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="autoconv-parent-watch", daemon=True).start()


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (someone else's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _process_namespace() -> str:
    """A short id of this machine's boot and process-id namespace: two processes with
    the same id see each other's process ids. (Containers on one host share a hostname
    often, on several hosts too; they never share this.)"""
    import hashlib

    parts = []
    for path in ("/proc/sys/kernel/random/boot_id", "/proc/self/ns/pid"):
        try:
            parts.append(os.readlink(path) if path.startswith("/proc/self") else open(path).read().strip())
        except OSError:
            parts.append("?")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:8]


def process_owner() -> str:
    """``host[namespace]:pid``: who holds a trial, such that :func:`owner_is_dead` can
    tell, from any process, whether that holder is gone."""
    import socket

    return f"{socket.gethostname()}[{_process_namespace()}]:{os.getpid()}"


def owner_is_dead(owner: str) -> bool:
    """Whether the process named by :func:`process_owner`'s ``owner`` is known to be gone:
    it ran in this process namespace (same host, same boot) and no longer exists. A
    holder elsewhere is never declared dead here (heartbeats tell that)."""
    where, _, pid = owner.rpartition(":")
    here = process_owner().rpartition(":")[0]
    return where == here and pid.isdigit() and not process_alive(int(pid))
