"""--create-pch in one process, --use-pch in the next: does the file survive, is it usable?"""
import sys, os; sys.path.insert(0, "/work/main/.probe/compile_cost")
import nvrtc_ct as n
from pathlib import Path
src = Path(f"/work/main/.probe/compile_cost/sources_pch/implicit_gemm_wgmma_fp32_{sys.argv[2]}.cu").read_text()
flag = "--create-pch=/tmp/pchx/h.pch" if sys.argv[1] == "create" else "--use-pch=/tmp/pchx/h.pch"
r = n.compile(src, n.tuner_options() + [flag, "--pch-verbose=true", "--time=-"])
print(sys.argv[1], r["ok"], r["err"], [l for l in r["log"].splitlines() if "pch" in l.lower() or "precompiled" in l.lower() or " ms" in l][:6], os.listdir("/tmp/pchx"))
