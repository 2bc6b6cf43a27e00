"""NVRTC 13.0 precompiled headers on the realistic tuning case: 8 candidates of a family (sources_pch/),
same header part, different bodies.   .venv/bin/python .probe/compile_cost/pch.py

Per set and form (as rendered; with the static .cuh parts as real #includes, -I templates/):
  process 1 (creator): warm-up; plain compile of candidate 0; compile of candidate 0 with `-pch --pch-dir=D`
           (creates the PCH: its extra cost is what the first compile pays);
  process 2 (a pool worker that did not create it): warm-up; for candidates 1..7, 2 rounds of
           {plain, -pch} in alternating order: paired CPU difference per candidate.
Also `--use-pch`/`--create-pch` (explicit) on one pair, and whether the cubins are identical."""
import hashlib, json, os, re, shutil, statistics, subprocess, sys, tempfile
from pathlib import Path
HERE = Path(__file__).parent; sys.path.insert(0, str(HERE))
PHASE = re.compile(r"^[^,\n]+, ([^,\n]+), (\d+), ms", re.M)

def forms(opts):
    import variants as v
    return {"as rendered": (lambda s: s, opts), ".cuh as #include": (v.split_headers, opts + ["-I/work/main/templates"])}

def one(n, src, options):
    r = n.compile(src, options + ["--time=-"])
    assert r["ok"], r["log"][:500]
    msgs = [l for l in r["log"].splitlines() if "pch" in l.lower() or "precompiled" in l.lower()]
    return {"cpu": r["cpu"], "wall": r["wall"], "sha": hashlib.sha1(r["out"]).hexdigest()[:12],
            "phases": {k: int(ms) for k, ms in PHASE.findall(r["log"])}, "pch_log": msgs[:4], "pch_status": r["pch_status"]}

def worker(role, set_name, form, pch_dir, opts):
    import ctypes, nvrtc_ct as n
    transform, options = forms(opts)[form]
    files = sorted((HERE / "sources_pch").glob(f"{set_name}_[0-9].cu"))
    srcs = [transform(f.read_text()) for f in files]
    pch = ["-pch", f"--pch-dir={pch_dir}"]
    heap = ctypes.c_size_t(); n.nv.nvrtcGetPCHHeapSize(ctypes.byref(heap))
    out = {"heap_bytes": heap.value}
    n.compile(srcs[0], options)   # warm-up
    if role == "create":
        out["plain"] = one(n, srcs[0], options)
        out["create"] = one(n, srcs[0], options + pch)
        out["after"] = one(n, srcs[0], options + pch)     # same process, PCH now exists
        out["files"] = sorted(os.listdir(pch_dir))
    else:
        out["pairs"] = []
        for rnd in range(2):
            for s in srcs[1:]:
                a, b = (one(n, s, options), one(n, s, options + pch)) if rnd == 0 else \
                       tuple(reversed((one(n, s, options + pch), one(n, s, options))))
                out["pairs"].append({"plain": a, "pch": b})
    print(json.dumps(out))

def explicit(opts):
    """--create-pch=F on candidate 0, --use-pch=F on candidate 1 (fresh processes)."""
    import nvrtc_ct as n, variants as v
    d = tempfile.mkdtemp(prefix="pch_explicit_")
    srcs = [v.split_headers(f.read_text()) for f in sorted((HERE / "sources_pch").glob("implicit_gemm_wgmma_fp32_[0-9].cu"))[:2]]
    o = opts + ["-I/work/main/templates"]
    n.compile(srcs[1], o)
    res = {"create": one(n, srcs[0], o + [f"--create-pch={d}/h.pch"]), "files": os.listdir(d)}
    res["plain"] = one(n, srcs[1], o); res["use"] = one(n, srcs[1], o + [f"--use-pch={d}/h.pch"])
    res["plain2"] = one(n, srcs[1], o); res["use2"] = one(n, srcs[1], o + [f"--use-pch={d}/h.pch"])
    shutil.rmtree(d); print(json.dumps(res))

def spawn(*args):
    p = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if p.returncode: raise SystemExit(p.stderr[-2000:])
    return json.loads(p.stdout.strip().splitlines()[-1])

def main():
    import nvrtc_ct as n
    opts = n.tuner_options("sm_90a")
    results = {}
    for set_name in ("implicit_gemm_wgmma_fp32", "implicit_gemm_wgmma_fp32_rts", "implicit_gemm_wgmma_tma_bf16"):
        for form in forms(opts):
            d = tempfile.mkdtemp(prefix="pch_auto_")
            r = {"create": spawn("--worker", "create", set_name, form, d, json.dumps(opts)),
                 "use": spawn("--worker", "use", set_name, form, d, json.dumps(opts))}
            shutil.rmtree(d)
            pairs = r["use"]["pairs"]
            diff = statistics.median(p["plain"]["cpu"] - p["pch"]["cpu"] for p in pairs)
            same = all(p["plain"]["sha"] == p["pch"]["sha"] for p in pairs)
            c = r["create"]
            print(f"{set_name:32s} {form:18s} create +{(c['create']['cpu']-c['plain']['cpu'])*1e3:5.0f} ms  "
                  f"use: plain {statistics.median(p['plain']['cpu'] for p in pairs)*1e3:4.0f} ms, pch "
                  f"{statistics.median(p['pch']['cpu'] for p in pairs)*1e3:4.0f} ms, saved/cand {diff*1e3:4.0f} ms  "
                  f"FE {statistics.median(p['plain']['phases'].get('CUDA C++ Frontend', 0) for p in pairs)}->"
                  f"{statistics.median(p['pch']['phases'].get('CUDA C++ Frontend', 0) for p in pairs)} ms  "
                  f"same cubin {same}  files {c['files']}  log {pairs[0]['pch']['pch_log'][:2]}", flush=True)
            results[f"{set_name} | {form}"] = r
    results["explicit"] = spawn("--explicit", json.dumps(opts))
    e = results["explicit"]
    print("explicit: create", e["files"], e["create"]["pch_log"], "plain", e["plain"]["cpu"], "use", e["use"]["cpu"],
          e["use"]["pch_log"], "plain2", e["plain2"]["cpu"], "use2", e["use2"]["cpu"], "same", e["plain"]["sha"] == e["use"]["sha"])
    (HERE / "results_pch.json").write_text(json.dumps(results, indent=1))

if __name__ == "__main__":
    if "--worker" in sys.argv:
        i = sys.argv.index("--worker"); worker(*sys.argv[i + 1:i + 5], json.loads(sys.argv[i + 5]))
    elif "--explicit" in sys.argv:
        explicit(json.loads(sys.argv[sys.argv.index("--explicit") + 1]))
    else:
        main()
