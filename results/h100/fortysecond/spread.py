"""How far apart one kernel's times are in one process: a compare_caches.py output whose labels all
name the same cache (so every layer's labels hold one kernel), and the GPU's samples beside it.
    python3 spread.py SAME.json SMI.csv
SMI.csv: nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,
clocks_event_reasons.active --format=csv,noheader,nounits (one GPU). Prints each layer's spread
(slowest label's median over the fastest's), the largest first, then the samples' ranges.
"""
import collections
import json
import statistics
import sys


def main():
    rows = json.load(open(sys.argv[1]))
    spreads = []
    for row in rows:
        if len(set(row["kernels"].values())) != 1:
            sys.exit(f"{row['layer']}: its labels hold different kernels; give one cache under every label")
        spreads.append((max(row["ms"].values()) / min(row["ms"].values()), row["layer"], min(row["ms"].values())))
    spreads.sort(reverse=True)
    middle = statistics.median(spread for spread, _, _ in spreads)
    print(f"{len(spreads)} layers; one kernel's medians apart by: median {middle:.4f}, largest {spreads[0][0]:.4f}")
    for spread, layer, ms in spreads[:6]:
        print(f"  {layer:32s} {spread:.4f}  ({ms:.4f} ms)")
    samples = [line.split(", ") for line in open(sys.argv[2]) if line.strip()]
    columns = collections.defaultdict(list)
    for sample in samples:
        for name, value in zip(("sm_mhz", "mem_mhz", "power_w", "temp_c"), sample[1:5]):
            try:
                columns[name].append(float(value))
            except ValueError:
                pass
    if not columns:
        print("  no GPU samples (nvidia-smi refused the query?)")
    for name, values in columns.items():
        print(f"  {name}: min {min(values):g}, median {statistics.median(values):g}, max {max(values):g} "
              f"({len(values)} samples)")
    reasons = collections.Counter(sample[5].strip() for sample in samples if len(sample) > 5)
    print("  throttle reasons (bitmask: count):", dict(reasons.most_common(5)))


if __name__ == "__main__":
    main()
