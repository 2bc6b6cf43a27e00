"""CPU time of every process of a tuning run, by role, every 0.2 s (thirty-fourth session).

    python3 proc_sampler.py OUT.jsonl &   # then start `autoconv tune`; kill this afterwards

Each line: {"t": unix time, "r": [the tune's pids], "p": {pid: [ppid, utime+stime in clock ticks,
name]}} for every process
whose command line or an ancestor's is an `autoconv tune` (the tuning command, its compilers and
tuning workers, their GPU workers). Roles are told apart afterwards by the tree (timeline.py)."""
import json
import os
import sys
import time

PERIOD_S = 0.2


def processes() -> dict[int, tuple[int, int, str]]:
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                text = file.read()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        found[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]), name)
    return found


def tune_roots() -> set[int]:
    roots = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as file:
                    words = file.read().split(b"\0")
            except OSError:
                continue
            if b"tune" in words and any(word.endswith(b"autoconv") for word in words):
                roots.add(int(entry))
    return roots


with open(sys.argv[1], "w") as out:
    while True:
        started = time.time()
        table, roots = processes(), tune_roots()
        kept = {}
        for pid, (ppid, ticks, name) in table.items():
            ancestor = pid
            for _ in range(6):
                if ancestor in roots:
                    kept[pid] = [ppid, ticks, name]
                    break
                ancestor = table.get(ancestor, (0,))[0]
                if ancestor <= 1:
                    break
        out.write(json.dumps({"t": round(started, 3), "r": sorted(roots & set(kept)), "p": kept}) + "\n")
        out.flush()
        time.sleep(max(0.0, PERIOD_S - (time.time() - started)))
