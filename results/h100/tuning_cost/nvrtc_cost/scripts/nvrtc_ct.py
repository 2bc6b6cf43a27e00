"""NVRTC 13.0 (the PyTorch wheel's libnvrtc.so.13) through ctypes, as the tuner's compile_source calls it."""
import ctypes, glob, os, time
LIB = glob.glob("/work/main/.venv/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13")[0]
ctypes.CDLL(os.path.join(os.path.dirname(LIB), "libnvrtc-builtins.so.13.0"), mode=ctypes.RTLD_GLOBAL)
nv = ctypes.CDLL(LIB)
nv.nvrtcGetErrorString.restype = ctypes.c_char_p
INCLUDE = None
def tuner_options(arch="sm_90a"):
    """autoconv.gpu.compiler.nvrtc_options(arch), computed by the project itself."""
    import sys; sys.path.insert(0, "/work/main")
    from autoconv.gpu.compiler import nvrtc_options
    return list(nvrtc_options(arch))
def version():
    a, b = ctypes.c_int(), ctypes.c_int(); nv.nvrtcVersion(ctypes.byref(a), ctypes.byref(b)); return a.value, b.value
def _check(r, what, prog=None):
    if r != 0:
        raise RuntimeError(f"{what}: {nv.nvrtcGetErrorString(r).decode()}\n{log(prog) if prog else ''}")
def log(prog):
    n = ctypes.c_size_t(); nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    b = ctypes.create_string_buffer(n.value); nv.nvrtcGetProgramLog(prog, b); return b.value.decode(errors="replace")
def compile(source, options, name="kernel.cu", want="cubin", headers=()):
    """-> dict(ok, cpu, wall, size, log, pch_status). want: cubin | ptx."""
    t0, c0 = time.perf_counter(), time.process_time()
    prog = ctypes.c_void_p()
    hs = [h.encode() for h, _ in headers]; hn = [n.encode() for _, n in headers]
    H = (ctypes.c_char_p * max(1, len(hs)))(*hs); N = (ctypes.c_char_p * max(1, len(hn)))(*hn)
    _check(nv.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), len(hs), H, N), "create")
    opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    try:
        r = nv.nvrtcCompileProgram(prog, len(options), opts)
        out = b""
        if r == 0:
            n = ctypes.c_size_t()
            if want == "cubin":
                nv.nvrtcGetCUBINSize(prog, ctypes.byref(n)); buf = ctypes.create_string_buffer(n.value); nv.nvrtcGetCUBIN(prog, buf)
            else:
                nv.nvrtcGetPTXSize(prog, ctypes.byref(n)); buf = ctypes.create_string_buffer(n.value); nv.nvrtcGetPTX(prog, buf)
            out = buf.raw
        lg = log(prog)
        pch = nv.nvrtcGetPCHCreateStatus(prog)
    finally:
        nv.nvrtcDestroyProgram(ctypes.byref(prog))
    return dict(ok=r == 0, err=nv.nvrtcGetErrorString(r).decode(), cpu=time.process_time() - c0,
                wall=time.perf_counter() - t0, size=len(out), out=out, log=lg, pch_status=pch)
