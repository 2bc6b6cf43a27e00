"""Share of the compile spent on the GEMM kernel vs the auxiliary _weights kernel (wgmma family):
the same source with one kernel made a static, unused __device__ function (parsed, never code-generated).
Median of 5 (after a warm-up) of CPU and NVRTC's phase times."""
import re, statistics as st, sys
from pathlib import Path
HERE = Path(__file__).parent; sys.path.insert(0, str(HERE))
import nvrtc_ct as n
PH = re.compile(r"^[^,\n]+, ([^,\n]+), (\d+), ms", re.M)
opts = n.tuner_options() + ["--time=-"]
def drop(src, weights):
    pat = r'extern "C" __global__ void __launch_bounds__\(WEIGHTS_THREADS\)\n' if weights else \
          r'extern "C" __global__ void __launch_bounds__\(THREADS, MIN_BLOCKS\)\n'
    out, k = re.subn(pat, "static __device__ __noinline__ void ", src); assert k == 1; return out
for f in ("implicit_gemm_wgmma_fp32_layer3_1_conv2.cu", "implicit_gemm_wgmma_fp32_rts_layer3_1_conv2.cu", "implicit_gemm_wgmma_tf32_layer1_0_conv1.cu"):
    src = (HERE / "sources" / f).read_text()
    for tag, s in (("both", src), ("GEMM only", drop(src, True)), ("_weights only", drop(src, False))):
        n.compile(s, opts); rs = [n.compile(s, opts) for _ in range(5)]
        assert all(r["ok"] for r in rs), rs[0]["log"][:500]
        ph = [{k: int(v) for k, v in PH.findall(r["log"])} for r in rs]
        print(f"{f[20:-3]:28s} {tag:14s} cpu {st.median(r['cpu'] for r in rs)*1e3:5.0f} ms  FE/NVVM/ptxas "
              + "/".join(f"{st.median(p.get(k, 0) for p in ph):.0f}" for k in ("CUDA C++ Frontend", "NVVM Optimizer", "PTX Translation")), flush=True)
