"""Paired, interleaved timing of NVRTC option sets (the numbers in REPORT.md).

    .venv/bin/python .probe/compile_cost/bench2.py [--rounds 5]

Per round and candidate, fresh processes (spawned: NVRTC 13.0 keeps state across programs, see REPORT):
  A: one warm-up compile, then every variant below once, in an order rotated per round
     (`--Ofast-compile=mid` is kept out of A: it changes the code of later compiles in the process)
  B: warm-up, tuner build, `--Ofast-compile=mid`;   C: warm-up, tuner build, PTX with `--Ofast-compile=mid`
Each timed compile carries `--time=-` (NVRTC's phase times in the log; absent when ptxas prints info lines).
CPU = time.process_time() around nvrtcCreateProgram..nvrtcDestroyProgram (as compile_source measures),
wall = time.perf_counter(). Round 0 also records `-Xptxas -v` (registers, spills) and ptxas warnings
(C7511/C7517: wgmma serialized / waits injected) per variant, in a process of its own per variant.
"""
import hashlib, json, os, re, statistics, subprocess, sys
from pathlib import Path
HERE = Path(__file__).parent; sys.path.insert(0, str(HERE))
PHASE = re.compile(r"^[^,\n]+, ([^,\n]+), (\d+), ms", re.M)
CANDIDATES = ["implicit_gemm_wgmma_fp32_layer3_1_conv2.cu", "implicit_gemm_wgmma_fp32_rts_layer3_1_conv2.cu",
              "implicit_gemm_wgmma_tf32_layer1_0_conv1.cu", "implicit_gemm_wgmma_tma_bf16_layer3_1_conv2.cu"]

def variants(opts):
    import variants as v
    ident = lambda s: s
    ptx = ["-arch=compute_90a"] + opts[1:]
    return {
        "tuner (cubin)": (ident, opts, "cubin"),
        "to PTX (compute_90a)": (ident, ptx, "ptx"),
        "-fdevice-syntax-only": (ident, opts + ["-fdevice-syntax-only"], "ptx"),
        "-Xptxas -O2": (ident, opts + ["--ptxas-options=-O2"], "cubin"),
        "-Xptxas -O1": (ident, opts + ["--ptxas-options=-O1"], "cubin"),
        "-Xptxas -O0": (ident, opts + ["--ptxas-options=-O0"], "cubin"),
        "--Ofast-compile=min": (ident, opts + ["--Ofast-compile=min"], "cubin"),
        "--Ofast-compile=max": (ident, opts + ["--Ofast-compile=max"], "cubin"),
        "to PTX, --Ofast-compile=max": (ident, ptx + ["--Ofast-compile=max"], "ptx"),
        "--Ofast-compile=mid": (ident, opts + ["--Ofast-compile=mid"], "cubin"),
        "to PTX, --Ofast-compile=mid": (ident, ptx + ["--Ofast-compile=mid"], "ptx"),
        "--extra-device-vectorization": (ident, opts + ["--extra-device-vectorization"], "cubin"),
        "-default-device": (ident, opts + ["-default-device"], "cubin"),
        "-dopt=on": (ident, opts + ["-dopt=on"], "cubin"),
        "+ -lineinfo (not in tuner opts)": (ident, opts + ["-lineinfo"], "cubin"),
        "--minimal": (ident, opts + ["--minimal"], "cubin"),
        "--split-compile=2": (ident, opts + ["--split-compile=2"], "cubin"),
        "light include (cuda_pipeline.h stand-in, no -I)": (v.light_include, opts[:-1], "cubin"),
        "light include + --minimal": (v.light_include, opts[:-1] + ["--minimal"], "cubin"),
        ".cuh files as #include (-I templates/)": (v.split_headers, opts + ["-I/work/main/templates"], "cubin"),
    }
LEAKY = ("--Ofast-compile=mid", "to PTX, --Ofast-compile=mid")

def worker(cand, names, opts, verbose_info):
    import nvrtc_ct as n
    V = variants(opts)
    source = (HERE / "sources" / cand).read_text()
    n.compile(source, opts)                        # warm-up (first compile in a process costs more)
    out = {}
    for name in names:
        transform, options, want = V[name]
        src = transform(source)
        if verbose_info:
            r = n.compile(src, options + ["--ptxas-options=-v"], want=want)
            regs = [int(x) for x in re.findall(r"Used (\d+) registers", r["log"])]
            spills = [int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r["log"])]
            out[name] = {"ok": r["ok"], "registers": regs, "spill_bytes": spills,
                         "C7511": r["log"].count("C7511"), "C7517": r["log"].count("C7517"),
                         "sha": hashlib.sha1(r["out"]).hexdigest()[:12], "size": r["size"]}
            continue
        r = n.compile(src, options + ["--time=-"], want=want)
        out[name] = {"ok": r["ok"] or "syntax" in name, "cpu": r["cpu"], "wall": r["wall"], "size": r["size"],
                     "sha": hashlib.sha1(r["out"]).hexdigest()[:12],
                     "phases": {k: int(ms) for k, ms in PHASE.findall(r["log"])}}
    print(json.dumps(out))

def spawn(cand, names, opts, info=False):
    cmd = [sys.executable, __file__, "--worker", cand, json.dumps(names), json.dumps(opts)] + (["--info"] if info else [])
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])

def main():
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 5
    import nvrtc_ct as n
    opts = n.tuner_options("sm_90a")
    names = list(variants(opts))
    plain = [x for x in names if x not in LEAKY]
    results = {c: {"rounds": [], "info": {}} for c in CANDIDATES}
    for c in CANDIDATES:   # round 0 info: one process per variant (no state shared)
        for name in names:
            results[c]["info"].update(spawn(c, [name], opts, info=True))
    for rnd in range(rounds):
        for c in CANDIDATES:
            k = rnd * 7 % len(plain)
            order = plain[k:] + plain[:k]
            got = {"A": spawn(c, order, opts), "B": spawn(c, ["tuner (cubin)", LEAKY[0]], opts),
                   "C": spawn(c, ["tuner (cubin)", LEAKY[1]], opts)}
            results[c]["rounds"].append(got)
            print(f"round {rnd} {c}: tuner {got['A']['tuner (cubin)']['cpu']*1e3:.0f} ms", flush=True)
    (HERE / "results_bench2.json").write_text(json.dumps({"options": opts, "results": results}, indent=1))

if __name__ == "__main__":
    if "--worker" in sys.argv:
        i = sys.argv.index("--worker")
        worker(sys.argv[i + 1], json.loads(sys.argv[i + 2]), json.loads(sys.argv[i + 3]), "--info" in sys.argv)
    else:
        main()
