"""Each run's winners against the fastest run's, layer by layer, from a compare_runs comparison.

    python3 results/h100/thirtyeighth/per_layer.py call1/compare.json [OVER]

For each run: the geometric mean of its layers' times over the fastest run's on each layer, its
worst layer, and how many layers are over OVER (default 1.04) the fastest; then each such (run,
layer) with the parameters in which its winner differs from the fastest run's (none: the same
configuration re-timed apart, the comparison's noise on that layer).
"""

from __future__ import annotations

import json
import math
import re
import sys

PARAMETER = re.compile(r"_([A-Z][A-Z_]*?)([0-9]+|[a-z]+)(?=_)")


def parameters(kernel_name: str) -> dict[str, str]:
    return dict(PARAMETER.findall(kernel_name))


def main(path: str, over: float) -> None:
    layers = json.load(open(path))
    runs = list(layers[0]["ms"])
    ratios: dict[str, list[float]] = {run: [] for run in runs}
    misses = []
    for layer in layers:
        fastest = min(layer["ms"], key=layer["ms"].get)
        for run in runs:
            ratio = layer["ms"][run] / layer["ms"][fastest]
            ratios[run].append(ratio)
            if ratio > over:
                mine, best = parameters(layer["kernels"][run]), parameters(layer["kernels"][fastest])
                differ = sorted(name for name in mine.keys() | best.keys() if mine.get(name) != best.get(name))
                misses.append(f"  {run} {layer['layer']} {ratio:.3f} differs in: {', '.join(differ) or 'none'}")
    for run in runs:
        geomean = math.exp(sum(map(math.log, ratios[run])) / len(ratios[run]))
        print(f"{run}: geomean over the fastest per layer {geomean:.4f}, worst {max(ratios[run]):.3f}, "
              f"{sum(ratio > over for ratio in ratios[run])} over {over}")
    print("\n".join(misses))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 1.04)
