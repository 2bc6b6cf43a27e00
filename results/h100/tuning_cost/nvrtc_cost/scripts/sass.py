"""SASS instruction count per kernel and diffs, with nvdisasm (pip nvidia-cuda-nvdisasm, in tools/)."""
import subprocess, sys, re, collections, hashlib
sys.path.insert(0, "/work/main/.probe/compile_cost")
import nvrtc_ct as n
ND = "/work/main/.probe/compile_cost/tools/nvidia/cu13/bin/nvdisasm"
def sass(cubin: bytes):
    p = "/tmp/_x.cubin"; open(p, "wb").write(cubin)
    out = subprocess.run([ND, "-c", p], capture_output=True, text=True, check=True).stdout
    ins = [re.sub(r"/\*[0-9a-f]+\*/", "", l).strip() for l in out.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", l)]
    return ins
src = open("/work/main/.probe/compile_cost/sources/implicit_gemm_wgmma_fp32_layer3_1_conv2.cu").read()
o = n.tuner_options()
base = sass(n.compile(src, o)["out"])
res = {}
for tag, extra in (("-Xptxas -O2", ["--ptxas-options=-O2"]), ("-Xptxas -O1", ["--ptxas-options=-O1"]), ("-lineinfo", ["-lineinfo"]),
                   ("--Ofast-compile=max", ["--Ofast-compile=max"]), ("--Ofast-compile=mid", ["--Ofast-compile=mid"]), ("tuner opts after an Ofc=mid compile", [])):
    s = sass(n.compile(src, o + extra)["out"])
    ops = lambda L: collections.Counter(i.split()[0] if not i.startswith("@") else i.split()[1] for i in L if i)
    d = ops(s); d.subtract(ops(base))
    print(f"{tag:38s} SASS {len(s)} vs {len(base)}  identical={s == base}  op deltas {dict((k, v) for k, v in d.most_common() if v)}"[:400])
