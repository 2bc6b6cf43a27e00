"""implicit_gemm: convolution as a GEMM with im2col fused into the A-tile loads."""

from __future__ import annotations

from typing import Mapping

from autoconv.families.base import Family, Launch, dim3


class ImplicitGemm(Family):
    name = "implicit_gemm"
    summary = "implicit GEMM: gather fused into tile loads, warp tiling, double buffering, split-K"

    def launches(self, name: str, values: Mapping[str, object]) -> tuple[Launch, ...]:
        split_k = values["SPLIT_K"]
        gemm_args = ("x", "w", "bias", "y") if values["HAS_BIAS"] and split_k == 1 else ("x", "w", "y")
        if split_k == 1:
            return (Launch(name, dim3(values["GRID_M"], values["GRID_N"]), dim3(values["THREADS"]),
                           gemm_args, values["SMEM_BYTES"]),)
        y_size = values["N"] * values["K"] * values["P"] * values["Q"]
        reduce_threads = values["REDUCE_THREADS"]
        return (
            Launch(name, dim3(values["GRID_M"], values["GRID_N"], split_k), dim3(values["THREADS"]),
                   ("x", "w", "workspace"), values["SMEM_BYTES"]),
            Launch(f"{name}_reduce", dim3(-(-y_size // reduce_threads)), dim3(reduce_threads),
                   ("workspace", "bias", "y") if values["HAS_BIAS"] else ("workspace", "y")),
        )
