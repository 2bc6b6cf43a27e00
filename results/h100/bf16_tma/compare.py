"""The table of README.md: call 4's TMA prototype (tma_bench.json) beside the committed winners and
cuDNN's best bf16 plan (winners.json, examples/family_sweep.py), both from device call 4.

    python3 results/h100/bf16_tma/compare.py results/h100/bf16_tma/call4
"""
import json
import math
import sys


def geometric_mean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


folder = sys.argv[1]
winners = json.load(open(f"{folder}/winners.json"))["rows"]
tma = {row["layer"]: row for row in json.load(open(f"{folder}/tma_bench.json"))["rows"] if row.get("configs")}
print("| layer | cuDNN best plan us | winner us | TMA us (its config) | PyTorch us | winner/cuDNN | TMA/cuDNN | best of both |")
print("|---|---|---|---|---|---|---|---|")
ratios = {"winner": [], "tma": [], "winner22": [], "best": [], "tma_vs_torch": []}
for row in winners:
    name, cudnn, winner = row["layer"], row["cudnn_ms"] * 1e3, row["time_ms"] * 1e3
    ours = tma.get(name)
    ok = [e for e in ours["configs"] if e["status"] == "ok"] if ours else []
    best_tma = min(ok, key=lambda e: e["time_ms"]) if ok else None
    t = best_tma["time_ms"] * 1e3 if best_tma else None
    best = min(winner, t) if t else winner
    ratios["winner"].append(cudnn / winner)
    ratios["best"].append(cudnn / best)
    if t:
        ratios["tma"].append(cudnn / t)
        ratios["winner22"].append(cudnn / winner)
        ratios["tma_vs_torch"].append(ours["torch_ms"] * 1e3 / t)
    config = "" if not best_tma else "{BN}/{CONSUMERS}/{STAGES}".format(**best_tma["config"])
    print(f"| {name.removeprefix('resnet50.')} | {cudnn:.1f} | {winner:.1f} | "
          + (f"{t:.1f} ({config}) | {ours['torch_ms'] * 1e3:.1f} | " if t else "- | - | ")
          + f"{cudnn / winner:.3f} | " + (f"{cudnn / t:.3f}" if t else "-") + f" | {cudnn / best:.3f} |")
print()
print(f"winners, 23 layers: {geometric_mean(ratios['winner']):.3f}x cuDNN's best plan")
print(f"TMA prototype, 22 layers (not conv1): {geometric_mean(ratios['tma']):.3f}x; the winners on the same 22: "
      f"{geometric_mean(ratios['winner22']):.3f}x")
print(f"TMA prototype against PyTorch's cuDNN in its own process: {geometric_mean(ratios['tma_vs_torch']):.3f}x")
print(f"the faster of the two per layer, 23 layers: {geometric_mean(ratios['best']):.3f}x, worst {min(ratios['best']):.3f}x")
