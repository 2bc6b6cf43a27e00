"""Source transforms for the probe: the .cuh parts as real #includes (for PCH), and a light stand-in for cuda_pipeline.h."""
from pathlib import Path
TEMPLATES = Path("/work/main/templates")
HERE = Path(__file__).parent
CUH = ("wgmma_tf32.cuh", "wgmma_f16.cuh", "mbarrier.cuh", "tma.cuh", "mma_tf32.cuh")

def split_headers(source: str) -> str:
    """Replace each static .cuh text the template pasted in by `#include "<name>"` (found with -I templates/),
    and move those includes up next to `#include <cuda_pipeline.h>` if they are contiguous: the header part
    is then identical for every candidate of the family."""
    for name in CUH:
        text = (TEMPLATES / name).read_text()
        for t in (text, text.rstrip("\n") + "\n", text.rstrip("\n")):
            if t in source:
                source = source.replace(t, f'#include "{name}"\n', 1)
                break
    return source

def pipeline_standin() -> str:
    """What the templates use of cuda_pipeline.h (__pipeline_memcpy_async/commit/wait_prior), same asm, same switches."""
    out = ["// light stand-in for <cuda_pipeline.h>: the same cp.async asm and switches, no other headers",
           "typedef unsigned long __sz_t;",
           "template <int S, int SRC> __device__ __forceinline__ void __ac_cp(void* __restrict__ d, const void* __restrict__ s) {",
           '    if constexpr (S == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], %2, %3;" :: "r"((unsigned)__cvta_generic_to_shared(d)), "l"(s), "n"(16), "n"(SRC) : "memory");',
           '    else asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" :: "r"((unsigned)__cvta_generic_to_shared(d)), "l"(s), "n"(S), "n"(SRC) : "memory");',
           "}",
           "static __device__ __forceinline__ void __pipeline_memcpy_async(void* __restrict__ d, const void* __restrict__ s, __sz_t size, __sz_t zfill = 0) {",
           "    switch (size) {"]
    for size in (16, 8, 4):
        out.append(f"    case {size}: switch (zfill) {{")
        out += [f"        case {z}: __ac_cp<{size}, {size - z}>(d, s); return;" for z in range(size + 1)]
        out.append("        default: __trap(); return; }")
    out += ["    default: __trap(); return;", "    }", "}",
            'static __device__ __forceinline__ void __pipeline_commit() { asm volatile("cp.async.commit_group;"); }',
            "template <unsigned N> __device__ __forceinline__ void __ac_wait() { asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(N < 8 ? N : 8)); }",
            "static __device__ __forceinline__ void __pipeline_wait_prior(__sz_t prior) {",
            "    switch (prior) {"]
    out += [f"    case {n}: __ac_wait<{n}>(); return;" for n in range(8)]
    out += ["    default: __ac_wait<8>(); return;", "    }", "}"]
    return "\n".join(out) + "\n"

def light_include(source: str) -> str:
    return source.replace("#include <cuda_pipeline.h>\n", pipeline_standin(), 1)
