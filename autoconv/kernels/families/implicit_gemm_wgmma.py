"""implicit_gemm_wgmma: the implicit GEMM on Hopper's warpgroup tensor cores, at float32
accuracy (3xTF32) for fp32 problems and with one TF32 product per multiply for tf32 problems.

Launches like :mod:`implicit_gemm_mma`: a weights kernel that always runs (w into the
workspace as split, swizzled B tiles), the GEMM, and the split-K reduction when SPLIT_K > 1.
Its kernels use wgmma.mma_async, so they compile for sm_90a (Hopper) only.
"""

from __future__ import annotations

from autoconv.kernels.families.implicit_gemm_mma import ImplicitGemmMma


class ImplicitGemmWgmma(ImplicitGemmMma):
    name = "implicit_gemm_wgmma"
    summary = ("implicit GEMM on Hopper wgmma tensor cores (sm_90a), 3xTF32 (fp32) or TF32 (tf32), A in registers, "
               "cp.async, split-K")
    precisions: tuple[str, ...] = ("fp32", "tf32")
    takes_run_time_sizes = True
