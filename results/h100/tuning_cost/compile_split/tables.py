"""The README's tables from measure.json and interleaved.json (python tables.py)."""

import json
import statistics
from pathlib import Path

here = Path(__file__).parent
measure = json.loads((here / "measure.json").read_text())
inter = json.loads((here / "interleaved.json").read_text())
VARIANTS = ("pch", "minimal", "minimal_pch", "no_source_include", "split_compile_0", "dopt_on", "Ofast_compile_min")


def short(config: dict) -> str:
    return " ".join(f"{k}{v}" for k, v in config.items() if k not in ("GATHER", "MIN_BLOCKS"))


def phases(text: str) -> dict:
    return {line.split(",")[1].strip(): float(line.split(",")[2]) for line in text.strip().splitlines()}


print("| family | layer | config | cubin ms | PTX ms | front end / NVVM / ptxas ms (`--time`) "
      "| trivial kernel, same includes ms | trivial, no includes ms |")
print("|---|---|---|---|---|---|---|---|")
for r in measure["rows"]:
    p = phases(r["phases"])
    print(f"| {r['family']} | {r['layer'].removeprefix('resnet50.')} | {short(r['config'])} | "
          f"{r['cubin_ms']:.0f} | "
          f"{r['ptx_ms']:.0f} | {p['CUDA C++ Frontend']:.0f} / {p['NVVM Optimizer']:.0f} / "
          f"{p['PTX Translation']:.0f} | "
          f"{r['header_only_ms']:.0f} | {r['empty_ms']:.0f} |")
print()
print("| family | layer | baseline ms | " + " | ".join(VARIANTS) + " |")
print("|---|---|---|" + "---|" * len(VARIANTS))
for r in measure["rows"]:
    cells = []
    for v in VARIANTS:
        x = r[v]
        if "error" in x:
            cells.append("fails")
        else:
            mark = "=" if x["bytes_identical"] else ("SASS=" if x["sass_identical"] else "**SASS differs**")
            cells.append(f"{x['ms']:.0f} {mark}")
    print(f"| {r['family']} | {r['layer'].removeprefix('resnet50.')} | {r['cubin_ms']:.0f} | "
          + " | ".join(cells) + " |")
print()
print("| family | layer | baseline CPU ms | pch | minimal | minimal + pch |")
print("|---|---|---|---|---|---|")
for r in inter["rows"]:
    print(f"| {r['family']} | {r['layer'].removeprefix('resnet50.')} | {r['baseline_cpu_ms']:.0f} | "
          f"{r['pch']:.3f} | {r['minimal']:.3f} | {r['minimal_pch']:.3f} |")
print()
families = sorted({r["family"] for r in inter["rows"]}, key=[r["family"] for r in inter["rows"]].index)
print("| family | pch | minimal | minimal + pch |")
print("|---|---|---|---|")
for f in families:
    rows = [r for r in inter["rows"] if r["family"] == f]
    print(f"| {f} | " + " | ".join(f"{min(r[v] for r in rows):.2f}-{max(r[v] for r in rows):.2f}"
                                   for v in ("pch", "minimal", "minimal_pch")) + " |")
print("| all 24 (median) | " + " | ".join(f"{statistics.median(r[v] for r in inter['rows']):.3f}"
                                           for v in ("pch", "minimal", "minimal_pch")) + " |")
