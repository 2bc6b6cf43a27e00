"""summary.md from call1/ncu_raw.csv.gz (ncu's raw page, one row per kernel) and the SASS source pages
(call1/sass_before.csv.gz: templates at 53b6d32; call1/sass_after.csv.gz: at d131098, the warp-uniform
descriptors): per kernel its time, grid, cluster, SM cycles, tensor pipe use, instructions, top stalls.
    python3 summarize.py > summary.md
"""
import csv
import gzip
import io

METRICS = [("us", "gpu__time_duration.sum", 1e-3), ("grid", "launch__grid_size", None),
           ("cluster", "launch__cluster_dim_x", None), ("regs", "launch__registers_per_thread", None),
           ("SM active kcycles", "sm__cycles_active.avg", 1e-3), ("elapsed kcycles", "gpc__cycles_elapsed.max", 1e-3),
           ("tensor pipe % (active)", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", None),
           ("tensor pipe % (elapsed)", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", None),
           ("L2 %", "lts__throughput.avg.pct_of_peak_sustained_elapsed", None),
           ("instructions (M)", "smsp__inst_executed.sum", 1e-6)]


def number(text):
    return float(text.replace(",", ""))


def rows_of(text):
    rows = list(csv.reader(io.StringIO(text)))
    header = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    return rows[header], [r for r in rows[header + 2:] if len(r) == len(rows[header])]


def sass_totals(path):
    lines = gzip.open(path, "rt").read().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith('"Kernel Name"')] + [len(lines)]
    totals = []
    for a, b in zip(starts, starts[1:]):
        rows = list(csv.reader(lines[a + 1:b]))
        column = rows[0].index("Instructions Executed")
        totals.append(sum(int(r[column] or 0) for r in rows[1:] if len(r) == len(rows[0])))
    return totals


header, data = rows_of(gzip.open("call1/ncu_raw.csv.gz", "rt").read())
stalls = [c for c in header if c.startswith("smsp__pcsamp_warps_issue_stalled_") and not c.endswith("_not_issued")]
print("| kernel | " + " | ".join(name for name, _, _ in METRICS) + " | top stalls (share of samples) |")
print("|---" * (len(METRICS) + 2) + "|")
for row in data:
    cells = []
    for _, metric, scale in METRICS:
        value = number(row[header.index(metric)])
        cells.append(f"{value * scale:.2f}" if scale else f"{value:g}")
    samples = {c.replace("smsp__pcsamp_warps_issue_stalled_", ""): number(row[header.index(c)]) for c in stalls}
    total = sum(samples.values()) or 1
    top = ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(samples.items(), key=lambda kv: -kv[1])[:4])
    print(f"| {row[header.index('Kernel Name')][:60]} | " + " | ".join(cells) + f" | {top} |")
before, after = sass_totals("call1/sass_before.csv.gz"), sass_totals("call1/sass_after.csv.gz")
print("\nInstructions executed by our kernels (SASS source page, the same launches), before and after the")
print("warp-uniform descriptors: " + "; ".join(f"{b / 1e6:.2f}M -> {a / 1e6:.2f}M ({a / b:.2f})" for b, a in zip(before, after)))
