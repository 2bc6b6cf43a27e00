"""results_bench2.json -> markdown tables (printed)."""
import json, statistics as st
from pathlib import Path
HERE = Path(__file__).parent
D = json.loads((HERE / "results_bench2.json").read_text())["results"]
C = list(D)
short = {c: c.replace("implicit_gemm_wgmma_", "").replace(".cu", "").replace("_layer", " L").replace("_conv", ".c") for c in C}
LEAKY = ("--Ofast-compile=mid", "to PTX, --Ofast-compile=mid")
def series(c, var):
    out = []
    for r in D[c]["rounds"]:
        p = r["B"] if var == LEAKY[0] else r["C"] if var == LEAKY[1] else r["A"]
        out.append((p[var]["cpu"], p["tuner (cubin)"]["cpu"], p[var]["wall"], p[var].get("phases", {})))
    return out
variants = list(D[C[0]]["rounds"][0]["A"])
variants = variants[:0] + sorted(variants, key=lambda v: list(D[C[0]]["info"]).index(v)) + list(LEAKY)
variants = list(dict.fromkeys(list(D[C[0]]["info"])))
print("| option set | " + " | ".join(f"{short[c]}: CPU ms (Δ vs tuner)" for c in C) + " | cubin = tuner's | ptxas: regs (GEMM) / spills / C7511,C7517 |")
print("|---|" + "---|" * (len(C) + 2))
for v in variants:
    cells = []
    for c in C:
        s = series(c, v)
        cpu = st.median(x[0] for x in s); rel = st.median(x[0] / x[1] - 1 for x in s)
        cells.append(f"{cpu*1e3:.0f} ({rel*100:+.0f}%)" if v != "tuner (cubin)" else f"**{cpu*1e3:.0f}**")
    info = [D[c]["info"][v] for c in C]
    base = [D[c]["info"]["tuner (cubin)"] for c in C]
    same = "—" if ("PTX" in v or "syntax" in v) else ("yes" if all(i["sha"] == b["sha"] for i, b in zip(info, base)) else
            "no (" + ",".join("=" if i["sha"] == b["sha"] else "≠" for i, b in zip(info, base)) + ")")
    ri = "—" if ("PTX" in v or "syntax" in v) else "; ".join(
        f"{max(i['registers'] or [0])}/{max(i['spill_bytes'] or [0])}/{i['C7511']},{i['C7517']}" for i in info)
    print(f"| {v} | " + " | ".join(cells) + f" | {same} | {ri} |")
print()
print("phases (NVRTC --time, median ms over rounds): FE = CUDA C++ front end, NVVM = optimizer, ptxas = PTX translation")
print("| candidate | tuner CPU ms | wall ms | FE | NVVM | ptxas | to-PTX CPU ms | cubin-PTX | syntax-only ms |")
print("|---|---|---|---|---|---|---|---|---|")
for c in C:
    s = series(c, "tuner (cubin)"); ph = [x[3] for x in s]
    g = lambda k: st.median(p.get(k, 0) for p in ph)
    cpu = st.median(x[0] for x in s); wall = st.median(x[2] for x in s)
    ptx = st.median(x[0] for x in series(c, "to PTX (compute_90a)")); syn = st.median(x[0] for x in series(c, "-fdevice-syntax-only"))
    print(f"| {short[c]} | {cpu*1e3:.0f} | {wall*1e3:.0f} | {g('CUDA C++ Frontend'):.0f} | {g('NVVM Optimizer'):.0f} | {g('PTX Translation'):.0f} | {ptx*1e3:.0f} | {(cpu-ptx)*1e3:.0f} | {syn*1e3:.0f} |")
