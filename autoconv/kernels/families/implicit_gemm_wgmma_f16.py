"""implicit_gemm_wgmma_f16: the implicit GEMM of bf16 and fp16 problems in NHWC (weights KRSC)
on Hopper's warpgroup tensor cores, with float32 sums and the output rounded once.

One launch: the GEMM reads x and w as they lie in memory (both K-major in NHWC/KRSC), so no
kernel prepares the weights and no workspace is needed. sm_90a (Hopper) only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoconv.kernels.families.base import Family, Launch, dim3


class ImplicitGemmWgmmaF16(Family):
    name = "implicit_gemm_wgmma_f16"
    summary = "implicit GEMM of bf16/fp16 NHWC problems on Hopper wgmma tensor cores (sm_90a), cp.async, float32 sums"
    tensor_cores = True
    dtypes: tuple[str, ...] = ("bfloat16", "float16")
    layouts: tuple[str, ...] = ("NHWC",)
    precisions: tuple[str, ...] = ("bf16", "fp16")

    def launches(self, name: str, values: Mapping[str, Any]) -> tuple[Launch, ...]:
        args = ("x", "w", "bias", "y") if values["HAS_BIAS"] else ("x", "w", "y")
        return (Launch(name, dim3(values["GRID_M"], values["GRID_N"]), dim3(values["THREADS"]), args,
                       values["SMEM_BYTES"]),)
