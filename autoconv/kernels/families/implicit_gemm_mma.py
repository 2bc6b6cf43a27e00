"""implicit_gemm_mma: the implicit GEMM on raw mma.sync tensor cores at float32 accuracy.

Launches like :mod:`implicit_gemm`: a weights kernel that always runs (w into the
workspace, in MMA order, split into big and small TF32 parts when SPLIT = block), the
GEMM, and the split-K reduction when SPLIT_K > 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoconv.kernels.families.base import Launch, dim3, grid_for
from autoconv.kernels.families.implicit_gemm import ImplicitGemm


class ImplicitGemmMma(ImplicitGemm):
    name = "implicit_gemm_mma"
    summary = "implicit GEMM on mma.sync m16n8k8 tensor cores, 3xTF32 (split per block or per warp), cp.async, split-K"
    tensor_cores = True
    precisions: tuple[str, ...] = ("fp32",)

    def weights_launch(self, name: str, values: Mapping[str, Any]) -> Launch:
        """One thread per element of the weights' first plane (WEIGHTS_ELEMENTS, derived by the
        search space); it writes the second plane's element too, when there is one."""
        threads = values["WEIGHTS_THREADS"]
        return Launch(f"{name}_weights", grid_for(values["WEIGHTS_ELEMENTS"], threads),
                      dim3(threads), ("w", "workspace"))
