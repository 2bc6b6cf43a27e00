"""When each VGG-16 run of call 2 asked for its first trial, counted from the process's start.

    python results/h100/tuning_cost/startup/first_trial.py

Reads times.txt (each run's start and end, from call2.sh) and the runs' journals (journal_*.gz:
the earliest ``datetime_start`` of any trial). The journal's times are the device's local time
(UTC), as is times.txt's epoch.
"""

from __future__ import annotations

import datetime
import gzip
import json
import re
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    runs = {}
    for line in (HERE / "times.txt").read_text().splitlines():
        found = re.match(r"tune (\S+) rc=\d+ start=(\S+) end=(\S+)", line)
        if found:
            runs[found.group(1)] = (float(found.group(2)), float(found.group(3)))
    print("| run | first trial asked (s) | process wall (s) | tune.json wall_s | trials |")
    print("|---|---|---|---|---|")
    for name, (start, end) in runs.items():
        summary = json.loads((HERE / f"tune_{name}.json").read_text())
        trials = sum(p["trials_run"] for p in summary["problems"])
        journal = HERE / f"journal_{name}.gz"
        first = "-"
        if journal.exists():
            with gzip.open(journal, "rt") as lines:
                stamps = [datetime.datetime.fromisoformat(record["datetime_start"]).replace(
                          tzinfo=datetime.timezone.utc).timestamp()
                          for record in map(json.loads, lines) if record.get("datetime_start")]
            first = f"{min(stamps) - start:.2f}"
        print(f"| {name} | {first} | {end - start:.1f} | {summary['wall_s']:.1f} | {trials} |")


if __name__ == "__main__":
    main()
