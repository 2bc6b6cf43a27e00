"""What a compiler process pays before its first compilation: the imports (all of CuPy, or only
its NVRTC binding), the CUDA headers' folder with and without CuPy's CUDA path, and one NVRTC
compilation of a small kernel after the lighter import.
    python3 results/h100/thirtyfirst/compile_imports.py"""
import subprocess
import sys

SNIPPETS = {
    "import cupy": "import cupy",
    "import the NVRTC binding": "from cupy_backends.cuda.libs import nvrtc",
    "NVRTC binding + one compile": """
from cupy_backends.cuda.libs import nvrtc
program = nvrtc.createProgram('extern "C" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }', 'k.cu', [], [])
nvrtc.compileProgram(program, ['-arch=sm_90'])
assert len(bytes(nvrtc.getCUBIN(program))) > 0""",
    "include dirs (autoconv)": "from autoconv.gpu.compiler import cuda_include_dirs; print(cuda_include_dirs())",
    "CuPy's CUDA path": "import cupy; print(cupy.cuda.get_cuda_path())",
}
for label, code in SNIPPETS.items():
    for _ in range(3):
        out = subprocess.run(["/usr/bin/time", "-f", "%e s %U user", sys.executable, "-c", code],
                             capture_output=True, text=True)
        print(f"{label:28s} {out.stderr.strip().splitlines()[-1]}  {out.stdout.strip()[:100]}")
