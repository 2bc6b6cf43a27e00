"""NVRTC --fdevice-time-trace (Chrome trace) of one compile: the top self-time entries per phase."""
import sys, json, collections, glob, os; sys.path.insert(0, "/work/main/.probe/compile_cost")
import nvrtc_ct as n
f = sys.argv[1]; out = f"/tmp/trace_{os.path.basename(f)}"
for p in glob.glob(out + "*"): os.remove(p)
src = open(f).read(); n.compile(src, n.tuner_options())
r = n.compile(src, n.tuner_options() + [f"--fdevice-time-trace={out}"]); assert r["ok"]
for path in sorted(glob.glob(out + "*")):
    data = json.load(open(path)); ev = data["traceEvents"] if isinstance(data, dict) else data
    tot = collections.Counter(); 
    for e in ev:
        if e.get("ph") == "X" and e.get("name", "").startswith("Total"):
            tot[e["name"]] += e.get("dur", 0)
    top = collections.Counter()
    for e in ev:
        if e.get("ph") == "X" and not e.get("name", "").startswith("Total"):
            top[e["name"] + ("" if "detail" not in e.get("args", {}) else "")] += e.get("dur", 0)
    print(path, "events", len(ev))
    print("  Totals (ms):", {k: round(v / 1e3, 1) for k, v in tot.most_common(14)})
    print("  Top names (ms, inclusive):", {k: round(v / 1e3, 1) for k, v in top.most_common(14)})
