"""implicit_gemm: convolution as a GEMM with im2col fused into the A-tile loads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoconv.kernels.families.base import Family, Launch, dim3, grid_for


class ImplicitGemm(Family):
    name = "implicit_gemm"
    summary = "implicit GEMM: gather fused into tile loads, warp tiling, double buffering, split-K"
    #: It serves tf32 problems too, at float32 accuracy (float32 FMAs are more accurate than TF32
    #: asks for): the fallback that runs anywhere, where no TF32 family does (before Hopper).
    precisions: tuple[str, ...] = ("fp32", "tf32")

    def weights_launch(self, name: str, values: Mapping[str, Any]) -> Launch | None:
        """The kernel that prepares the weights in the workspace before the GEMM (here: the
        reorder into rsc order when GATHER = rsc), or None when the GEMM reads ``w`` itself."""
        if values.get("GATHER") != "rsc":
            return None
        threads = values["TRANSPOSE_THREADS"]
        return Launch(f"{name}_weights_rsc", grid_for(values["K"] * values["GEMM_K"], threads),
                      dim3(threads), ("w", "workspace"))

    def launches(self, name: str, values: Mapping[str, Any]) -> tuple[Launch, ...]:
        """[prepare the weights] -> the GEMM -> [sum the split-K slices]."""
        has_bias, split_k = values["HAS_BIAS"], values["SPLIT_K"]
        prepare = self.weights_launch(name, values)
        launches = [prepare] if prepare is not None else []
        weights = "workspace" if prepare is not None else "w"
        if split_k == 1:
            gemm_args = ("x", weights, "bias", "y") if has_bias else ("x", weights, "y")
        else:
            gemm_args = ("x", weights, "workspace")
        launches.append(Launch(name, dim3(values["GRID_M"], values["GRID_N"], split_k), dim3(values["THREADS"]),
                               gemm_args, values["SMEM_BYTES"]))
        if split_k > 1:
            threads = values["REDUCE_THREADS"]
            y_size = values["N"] * values["K"] * values["P"] * values["Q"]
            launches.append(Launch(f"{name}_reduce", grid_for(y_size, threads), dim3(threads),
                                   ("workspace", "bias", "y") if has_bias else ("workspace", "y")))
        return tuple(launches)
