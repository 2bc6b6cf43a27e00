"""Per candidate and option set: median of 3 (after one warm-up) of process CPU and wall time of one NVRTC
compile, plus the phase split NVRTC reports with --time=- (a separate compile), and whether the cubin is
byte-identical to the tuner's build.   .venv/bin/python .probe/compile_cost/bench.py --all-sources
Used only with --all-sources (tuner build and PTX of every source). Its default sweep runs all option sets in ONE
process, which --Ofast-compile=mid contaminates (REPORT.md); bench2.py is the sweep the report uses."""
import hashlib, json, re, statistics, subprocess, sys
from pathlib import Path
HERE = Path(__file__).parent; sys.path.insert(0, str(HERE))
import nvrtc_ct as n, variants as v
OPTS = n.tuner_options("sm_90a")            # ['-arch=sm_90a', '-std=c++17', '-I<cuda>/include']
PTX_OPTS = ["-arch=compute_90a"] + OPTS[1:]
ident = lambda s: s
VARIANTS = {  # name: (source transform, options, output)
    "tuner (cubin)": (ident, OPTS, "cubin"),
    "to PTX (compute_90a)": (ident, PTX_OPTS, "ptx"),
    "-fdevice-syntax-only": (ident, OPTS + ["-fdevice-syntax-only"], "none"),
    "-Xptxas -O2": (ident, OPTS + ["--ptxas-options=-O2"], "cubin"),
    "-Xptxas -O1": (ident, OPTS + ["--ptxas-options=-O1"], "cubin"),
    "-Xptxas -O0": (ident, OPTS + ["--ptxas-options=-O0"], "cubin"),
    "--Ofast-compile=min": (ident, OPTS + ["--Ofast-compile=min"], "cubin"),
    "--Ofast-compile=mid": (ident, OPTS + ["--Ofast-compile=mid"], "cubin"),
    "--Ofast-compile=max": (ident, OPTS + ["--Ofast-compile=max"], "cubin"),
    "--extra-device-vectorization": (ident, OPTS + ["--extra-device-vectorization"], "cubin"),
    "-default-device": (ident, OPTS + ["-default-device"], "cubin"),
    "-dopt=on": (ident, OPTS + ["-dopt=on"], "cubin"),
    "+ -lineinfo": (ident, OPTS + ["-lineinfo"], "cubin"),
    "--minimal": (ident, OPTS + ["--minimal"], "cubin"),
    "-no-cache": (ident, OPTS + ["-no-cache"], "cubin"),
    "--split-compile=2": (ident, OPTS + ["--split-compile=2"], "cubin"),
    "light include (stand-in for cuda_pipeline.h, no -I)": (v.light_include, OPTS[:-1], "cubin"),
    "light include + --minimal": (v.light_include, OPTS[:-1] + ["--minimal"], "cubin"),
    ".cuh as #include (-I templates/)": (v.split_headers, OPTS + ["-I/work/main/templates"], "cubin"),
}
SWEEP = ["implicit_gemm_wgmma_fp32_layer3_1_conv2.cu", "implicit_gemm_wgmma_fp32_rts_layer3_1_conv2.cu",
         "implicit_gemm_wgmma_tf32_layer1_0_conv1.cu", "implicit_gemm_wgmma_tma_bf16_layer3_1_conv2.cu"]
PHASE = re.compile(r"^[^,]+, ([^,]+), (\d+), ms", re.M)

def measure(source, options, want, reps=3):
    n.compile(source, options, want=want if want != "none" else "ptx")  # warm-up
    runs = [n.compile(source, options, want=want if want != "none" else "ptx") for _ in range(reps)]
    if not all(r["ok"] or want == "none" for r in runs):
        return {"ok": False, "log": runs[0]["log"][:400]}
    timed = n.compile(source, options + ["--time=-"], want=want if want != "none" else "ptx")
    phases = {k: int(ms) for k, ms in PHASE.findall(timed["log"])}
    return {"ok": True, "cpu": statistics.median(r["cpu"] for r in runs), "wall": statistics.median(r["wall"] for r in runs),
            "cpu_runs": [round(r["cpu"], 4) for r in runs], "phases_ms": phases, "size": runs[0]["size"],
            "sha": hashlib.sha1(runs[0]["out"]).hexdigest()[:12] if want != "none" else "", "out": runs[0]["out"]}

def main():
    names = sorted(p.name for p in (HERE / "sources").glob("*.cu")) if "--all-sources" in sys.argv else SWEEP
    variants = ["tuner (cubin)", "to PTX (compute_90a)"] if "--all-sources" in sys.argv else list(VARIANTS)
    (HERE / "cubins").mkdir(exist_ok=True)
    results = {}
    for name in names:
        source = (HERE / "sources" / name).read_text()
        base = None
        for var in variants:
            transform, options, want = VARIANTS[var]
            r = measure(transform(source), options, want)
            if r["ok"] and want == "cubin":
                safe = re.sub(r"[^A-Za-z0-9]+", "_", var).strip("_")
                (HERE / "cubins" / f"{name[:-3]}__{safe}.cubin").write_bytes(r["out"])
            r.pop("out", None)
            base = base or r
            r["same_cubin"] = (r.get("sha") == base.get("sha")) if want == "cubin" else None
            results.setdefault(name, {})[var] = r
            print(f"{name[:-3]:50s} {var:52s} " + (f"cpu {r['cpu']*1e3:6.0f} ms wall {r['wall']*1e3:6.0f} ms "
                  f"phases {r['phases_ms']} same={r['same_cubin']}" if r["ok"] else "FAILED " + r["log"][:200]), flush=True)
    out = HERE / ("results_all_sources.json" if "--all-sources" in sys.argv else "results_sweep.json")
    out.write_text(json.dumps(results, indent=1))

if __name__ == "__main__":
    main()
