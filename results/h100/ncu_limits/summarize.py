"""Summarize ncu_raw.csv (ncu --set full --page raw --csv): per kernel, the duration, the tensor
pipe's activity, shared memory's and L2's throughput, the SMs' activity, and the warps' stall
reasons (pc sampling), as a Markdown table.

    python3 results/h100/ncu_limits/summarize.py results/h100/ncu_limits/ncu_raw.csv
"""
import csv
import sys

COLUMNS = {   # header: raw metric
    "us": "gpu__time_duration.sum",
    "SM active %": "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",   # (cycles with a resident warp)
    "tensor pipe % (elapsed)": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "tensor pipe % (active)": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "gmma inst % (active)": "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active",
    "shared mem % (L1 data pipe)": "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",
    "L1/TEX %": "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
    "L2 %": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "DRAM %": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
}
STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"


def main(path: str) -> None:
    lines = open(path).read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    header, data = rows[0], rows[2:]
    column = {name: i for i, name in enumerate(header)}
    missing = [metric for metric in COLUMNS.values() if metric not in column]
    print("| kernel | grid | " + " | ".join(COLUMNS) + " | top stalls (share of samples) |")
    print("|---" * (len(COLUMNS) + 3) + "|")
    for row in data:
        def value(metric):
            text = row[column[metric]].replace(",", "") if metric in column else ""
            try:
                return float(text)
            except ValueError:
                return None
        stalls = {name[len(STALL_PREFIX):]: value(name) or 0.0 for name in header
                  if name.startswith(STALL_PREFIX) and not name.endswith("_not_issued")}
        total = sum(stalls.values()) or 1.0
        top = sorted(stalls.items(), key=lambda item: -item[1])[:4]
        cells = [f"{value(m) / 1000:.1f}" if key == "us" and value(m) is not None else
                 (f"{value(m):.1f}" if value(m) is not None else "-") for key, m in COLUMNS.items()]
        name = row[column["Kernel Name"]][:48]
        print(f"| {name} | {row[column['Grid Size']]} | " + " | ".join(cells) + " | "
              + ", ".join(f"{k} {v / total:.0%}" for k, v in top) + " |")
    if missing:
        print("\n(not in the file: " + ", ".join(missing) + ")")


if __name__ == "__main__":
    main(sys.argv[1])
