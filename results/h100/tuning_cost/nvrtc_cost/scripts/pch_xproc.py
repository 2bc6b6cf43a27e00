"""Is an auto PCH written by one process usable by another? Full NVRTC log of the second process's compile."""
import sys; sys.path.insert(0, "/work/main/.probe/compile_cost")
import nvrtc_ct as n
from pathlib import Path
src = Path(f"/work/main/.probe/compile_cost/sources_pch/implicit_gemm_wgmma_fp32_{sys.argv[1]}.cu").read_text()
o = n.tuner_options() + ["-pch", "--pch-dir=/tmp/pchx", "--pch-verbose=true", "--time=-"]
r = n.compile(src, o)
print([l for l in r["log"].splitlines() if "warning #" not in l and "^" not in l and l.strip() and "constexpr" not in l and "Remark" not in l][:12])
