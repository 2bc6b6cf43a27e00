"""implicit_gemm_wgmma_tma: the implicit GEMM of bf16 and fp16 problems in NHWC (weights KRSC)
on Hopper's warpgroup tensor cores, both operands copied by the tensor memory accelerator.

The GEMM takes two tensor maps instead of x and w (:meth:`ImplicitGemmWgmmaTma.tensor_maps`: an
im2col map of x, a tiled map of w as [K][R*S][C]); whoever launches it encodes them for the
buffers of each launch. A persistent grid of at most one block per SM: a producer warpgroup
issues the copies, CONSUMERS warpgroups issue the products. With SPLIT_K > 1 its slices write
float32 sums to the workspace and a second kernel adds them, the bias, and rounds. Where C is
not a multiple of 8 (the maps' strides must be whole 16 bytes), a first kernel copies x and w
with zero channels up to a multiple of 8 into the workspace, and the maps describe those copies.
sm_90a (Hopper) only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoconv.kernels.families.base import Family, Launch, dim3, grid_for
from autoconv.kernels.tensor_maps import Im2colMap, TensorMap, TiledMap

#: Channels (16-bit values) of one box row: 128 bytes, one row of the 128-byte swizzle.
BOX_CHANNELS = 64


class ImplicitGemmWgmmaTma(Family):
    name = "implicit_gemm_wgmma_tma"
    summary = ("implicit GEMM of bf16/fp16 NHWC problems on Hopper wgmma tensor cores (sm_90a), operands copied by "
               "TMA (im2col), warp-specialized and persistent, float32 sums")
    tensor_cores = True
    dtypes: tuple[str, ...] = ("bfloat16", "float16")
    layouts: tuple[str, ...] = ("NHWC",)
    precisions: tuple[str, ...] = ("bf16", "fp16")

    def launches(self, name: str, values: Mapping[str, Any]) -> tuple[Launch, ...]:
        """With PAD_CHANNELS the padding of x and w into the workspace first; the GEMM (tensor maps
        of x and w, by value); with split-K the reduction of its slices."""
        has_bias, split_k, threads = values["HAS_BIAS"], values["SPLIT_K"], values["REDUCE_THREADS"]
        launches = []
        if values["PAD_CHANNELS"]:
            launches.append(Launch(f"{name}_pad_channels", grid_for(values["PADDED_BYTES"] // 16, threads),
                                   dim3(threads), ("x", "w", "workspace")))
        maps = ("x_map", "w_map")
        outputs = ("bias", "y") if has_bias else ("y",)
        gemm = Launch(name, dim3(values["GRID"]), dim3(values["THREADS"]),
                      maps + (outputs if split_k == 1 else ("workspace",)), values["SMEM_BYTES"])
        launches.append(gemm)
        if split_k > 1:
            launches.append(Launch(f"{name}_reduce", grid_for(values["GEMM_M"] * values["GEMM_N"] // values["OUT_VEC"],
                                                               threads), dim3(threads), ("workspace",) + outputs))
        return tuple(launches)

    def tensor_maps(self, values: Mapping[str, Any]) -> dict[str, TensorMap]:
        """x as im2col boxes of BM output pixels x 64 channels, w as [K][R*S][C] in boxes of BN
        filters x 64 channels (the template's x_map and w_map)."""
        element = "f16" if values["FORMAT_F16"] else "bf16"
        c, taps = values["X_CHANNELS"], values["R"] * values["S"]
        padded = bool(values["PAD_CHANNELS"])   # then both are in the workspace, x first
        x_bytes = values["N"] * values["H"] * values["W"] * c * 2
        return {
            "x_map": Im2colMap(
                buffer="workspace" if padded else "x", element=element,
                sizes=(c, values["W"], values["H"], values["N"]),
                lower=(values["LOWER_W"], values["LOWER_H"]), upper=(values["UPPER_W"], values["UPPER_H"]),
                channels=BOX_CHANNELS, pixels=values["BM"],
                element_strides=(1, values["STRIDE_W"], values["STRIDE_H"], 1)),
            "w_map": TiledMap(buffer="workspace" if padded else "w", element=element, sizes=(c, taps, values["K"]),
                              box=(BOX_CHANNELS, 1, values["BN"]), offset=x_bytes if padded else 0),
        }
