"""implicit_gemm_mma: the implicit GEMM on raw mma.sync tensor cores at float32 accuracy.

Three launches: the weights kernel (w into the workspace, in MMA order, split into big and
small TF32 parts when SPLIT = block), the GEMM, and the split-K reduction when SPLIT_K > 1.
"""

from __future__ import annotations

from typing import Mapping

from autoconv.families.base import Family, Launch, dim3, grid_for


class ImplicitGemmMma(Family):
    name = "implicit_gemm_mma"
    summary = "implicit GEMM on mma.sync m16n8k8 tensor cores, 3xTF32 (split per block or per warp), cp.async, split-K"

    def launches(self, name: str, values: Mapping[str, object]) -> tuple[Launch, ...]:
        """weights -> the GEMM -> [sum the split-K slices]."""
        has_bias, split_k = values["HAS_BIAS"], values["SPLIT_K"]
        threads = values["WEIGHTS_THREADS"]
        launches = [Launch(f"{name}_weights", grid_for(values["K"] * values["GEMM_K_PAD"], threads),
                           dim3(threads), ("w", "workspace"))]
        if split_k == 1:
            gemm_args = ("x", "workspace", "bias", "y") if has_bias else ("x", "workspace", "y")
        else:
            gemm_args = ("x", "workspace", "workspace")
        launches.append(Launch(name, dim3(values["GRID_M"], values["GRID_N"], split_k), dim3(values["THREADS"]),
                               gemm_args, values["SMEM_BYTES"]))
        if split_k > 1:
            threads = values["REDUCE_THREADS"]
            y_size = values["N"] * values["K"] * values["P"] * values["Q"]
            launches.append(Launch(f"{name}_reduce", grid_for(y_size, threads), dim3(threads),
                                   ("workspace", "bias", "y") if has_bias else ("workspace", "y")))
        return tuple(launches)
