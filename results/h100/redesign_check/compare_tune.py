"""Compare two `autoconv tune` summaries (tune.json) layer by layer: same winner config? time ratio.

    python results/h100/redesign_check/compare_tune.py OLD/tune.json NEW/tune.json

Used for issue 13 (the redesign must not change what tuning finds): OLD is the committed
ResNet-50 run, NEW a fresh tune from an empty cache with the reorganised code.
"""

from __future__ import annotations

import json
import math
import sys


def main(old_path: str, new_path: str) -> None:
    old = {p["name"]: p for p in json.load(open(old_path))["problems"]}
    new = {p["name"]: p for p in json.load(open(new_path))["problems"]}
    ratios, same = [], 0
    print(f"{'layer':32s} {'same config':11s} {'old ms':>8s} {'new ms':>8s} {'new/old':>8s}")
    for name, before in old.items():
        after = new.get(name)
        if after is None or before.get("time_ms") is None or after.get("time_ms") is None:
            print(f"{name:32s} missing")
            continue
        equal = before["config"] == after["config"] and before["family"] == after["family"]
        same += equal
        ratio = after["time_ms"] / before["time_ms"]
        ratios.append(ratio)
        print(f"{name:32s} {str(equal):11s} {before['time_ms']:8.4f} {after['time_ms']:8.4f} {ratio:8.3f}")
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"{same} of {len(ratios)} layers chose the same config; time new/old geomean {geomean:.3f}, "
          f"range {min(ratios):.3f}..{max(ratios):.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
