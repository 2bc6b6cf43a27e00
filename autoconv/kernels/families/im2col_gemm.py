"""im2col_gemm: an explicit column buffer in the workspace, then a block-tiled SGEMM."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoconv.kernels.families.base import Family, Launch, dim3


class Im2colGemm(Family):
    name = "im2col_gemm"
    summary = "im2col into a workspace column buffer, then a block-tiled SGEMM with 2-D thread tiles"

    def launches(self, name: str, values: Mapping[str, Any]) -> tuple[Launch, ...]:
        # The GEMM reads the column buffer that the im2col launch writes: they run in order.
        # With COLUMNS = input (1x1, stride 1, no padding) x is the column buffer itself.
        columns = "workspace" if values["COLUMNS"] == "buffer" else "x"
        gemm_args = (columns, "w", "bias", "y") if values["HAS_BIAS"] else (columns, "w", "y")
        gemm = Launch(f"{name}_gemm", dim3(values["GRID_M"], values["GRID_N"]), dim3(values["THREADS"]),
                      gemm_args, values["SMEM_BYTES"])
        if values["COLUMNS"] == "input":
            return (gemm,)
        im2col = Launch(f"{name}_im2col", dim3(values["IM2COL_GRID"]), dim3(values["IM2COL_THREADS"]),
                        ("x", "workspace"))
        return (im2col, gemm)
