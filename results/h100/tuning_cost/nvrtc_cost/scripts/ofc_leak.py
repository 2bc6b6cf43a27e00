"""NVRTC 13.0: does --Ofast-compile=<level> change the code of LATER compiles (without the option) in the same process?"""
import sys, re, hashlib; sys.path.insert(0, "/work/main/.probe/compile_cost")
import nvrtc_ct as n
level = sys.argv[1]
src = open("/work/main/.probe/compile_cost/sources/implicit_gemm_wgmma_fp32_layer3_1_conv2.cu").read()
o = n.tuner_options() + ["--ptxas-options=-v"]
REGS = re.compile(r'Used (\d+) registers')
def c(extra, tag):
    r = n.compile(src, o + extra)
    regs = REGS.findall(r['log'])
    print(f"  {tag:22s} sha {hashlib.sha1(r['out']).hexdigest()[:10]} {r['size']:6d} B regs {regs} C7517 x{r['log'].count('C7517')}")
print("level", level)
c([], "tuner opts"); c([f"--Ofast-compile={level}"], f"--Ofast-compile={level}"); c([], "tuner opts, after"); c(["--Ofast-compile=0"], "after, -Ofc=0")
