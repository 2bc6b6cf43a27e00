"""implicit_gemm_wgmma: the implicit GEMM on Hopper's warpgroup tensor cores at float32 accuracy.

Launches like :mod:`implicit_gemm_mma`: a weights kernel that always runs (w into the
workspace as split, swizzled B tiles), the GEMM, and the split-K reduction when SPLIT_K > 1.
Its kernels use wgmma.mma_async, so they compile for sm_90a (Hopper) only.
"""

from __future__ import annotations

from typing import Mapping

from autoconv.families.base import Launch, dim3, grid_for
from autoconv.families.implicit_gemm import ImplicitGemm


class ImplicitGemmWgmma(ImplicitGemm):
    name = "implicit_gemm_wgmma"
    summary = "implicit GEMM on Hopper wgmma tensor cores (sm_90a), 3xTF32, A split in registers, cp.async, split-K"
    tensor_cores = True

    def weights_launch(self, name: str, values: Mapping[str, object]) -> Launch:
        """One thread per element of the big plane (it writes the small one too)."""
        threads = values["WEIGHTS_THREADS"]
        plane = values["GRID_N"] * values["BN"] * values["K_TILES"] * values["BK"]
        return Launch(f"{name}_weights", grid_for(plane, threads), dim3(threads), ("w", "workspace"))
