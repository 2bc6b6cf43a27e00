"""implicit_gemm_wgmma_f16: the implicit GEMM of bf16 and fp16 problems in NHWC (weights KRSC)
on Hopper's warpgroup tensor cores, with float32 sums and the output rounded once.

The GEMM reads x and w as they lie in memory (both K-major in NHWC/KRSC), so no kernel
prepares the weights; with SPLIT_K > 1 its slices write float32 sums to the workspace and a
second kernel adds them, the bias, and rounds. With SCHEDULE stream_k a persistent grid of
STREAM_K_CTAS blocks shares the (tile, K tile) iterations evenly; a small kernel first zeroes the
tiles' arrival counters in the workspace (which comes uninitialised: the tuner fills it with NaN).
With PAD_CHANNELS a first kernel copies x and w with their channels padded by zeros to a multiple
of 8 into the workspace, and the GEMM (and split-K's slices, after them) reads from there.
sm_90a (Hopper) only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoconv.kernels.families.base import Family, Launch, dim3, grid_for


class ImplicitGemmWgmmaF16(Family):
    name = "implicit_gemm_wgmma_f16"
    summary = "implicit GEMM of bf16/fp16 NHWC problems on Hopper wgmma tensor cores (sm_90a), cp.async, float32 sums"
    tensor_cores = True
    dtypes: tuple[str, ...] = ("bfloat16", "float16")
    layouts: tuple[str, ...] = ("NHWC",)
    precisions: tuple[str, ...] = ("bf16", "fp16")

    def launches(self, name: str, values: Mapping[str, Any]) -> tuple[Launch, ...]:
        """The GEMM, then with split-K the reduction of its slices; with stream-K the zeroing of
        the arrival counters, then the GEMM; with PAD_CHANNELS the padding of x and w first."""
        has_bias, split_k, padded = values["HAS_BIAS"], values["SPLIT_K"], values["PAD_CHANNELS"]
        inputs: tuple[str, ...] = ("workspace",) if padded else ("x", "w")  # (padded: x and w there)
        whole = inputs + (("bias", "y") if has_bias else ("y",))  # the GEMM writes y
        if values["STREAM_K"]:
            threads = values["REDUCE_THREADS"]
            return (Launch(f"{name}_clear", grid_for(values["TILES"], threads), dim3(threads), ("workspace",)),
                    Launch(name, dim3(values["STREAM_K_CTAS"]), dim3(values["THREADS"]), whole + ("workspace",),
                           values["SMEM_BYTES"]))
        launches = []
        if padded:
            threads, chunks = values["REDUCE_THREADS"], values["PADDED_BYTES"] // 16
            launches.append(Launch(f"{name}_pad_channels", grid_for(chunks, threads), dim3(threads),
                                   ("x", "w", "workspace")))
        args = whole if split_k == 1 else (("workspace",) if padded else ("x", "w", "workspace"))
        launches.append(Launch(name, dim3(values["GRID_M"], values["GRID_N"], split_k), dim3(values["THREADS"]), args,
                               values["SMEM_BYTES"]))
        if split_k > 1:
            threads, outputs = values["REDUCE_THREADS"], values["GEMM_M"] * values["GEMM_N"]
            launches.append(Launch(f"{name}_reduce", grid_for(outputs // values["OUT_VEC"], threads), dim3(threads),
                                   ("workspace", "bias", "y") if has_bias else ("workspace", "y")))
        return tuple(launches)
