"""implicit_gemm_wgmma_tma: the implicit GEMM of bf16, fp16 and tf32 problems in NHWC (weights
KRSC) on Hopper's warpgroup tensor cores, both operands copied by the tensor memory accelerator
(for tf32, maps of TF32 elements: the copies round the float32 operands to TF32, to nearest).

The GEMM takes two tensor maps instead of x and w (:meth:`ImplicitGemmWgmmaTma.tensor_maps`: an
im2col map of x, a tiled map of w as [K][R*S][C]); whoever launches it encodes them for the
buffers of each launch. A persistent grid of at most one block per SM: a producer warpgroup
issues the copies, CONSUMERS warpgroups issue the products. With SPLIT_K > 1 its slices write
float32 sums to the workspace and a second kernel adds them, the bias, and rounds. Where a
pixel's C channels are not whole 16 bytes (the maps' strides must be), a first kernel copies x
and w with zero channels up to X_CHANNELS into the workspace, and the maps describe those copies;
for filters wider than one tap that copy also folds the S taps along w into the channels
(FOLD_WIDTH: x' is N x H x Q pixels of S*C values, the GEMM's filter R x 1), and for strides over 8,
which the im2col map cannot walk, every tap of each output pixel (FOLD_FILTER: x' is the im2col of
x, N x P x Q pixels of R*S*C values, the filter 1 x 1). Each copied pixel
takes a multiple of PAD_PITCH bytes (16, 64 or 128: aligned box rows are copied faster).
tf32 problems in NCHW (weights KCRS) take the same GEMM on copies: a first kernel transposes x
into the workspace as NHWC (for a 1 x 1 filter only the pixels it reads), w is copied as KRSC
unless its KCRS rows already are (1 x 1), and the GEMM stores y in NCHW; the copies' time is the
plan's. sm_90a (Hopper) only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoconv.kernels.families.base import Family, Launch, dim3, grid_for
from autoconv.kernels.tensor_maps import Im2colMap, TensorMap, TiledMap
from autoconv.problems.problem import ConvProblem


class ImplicitGemmWgmmaTma(Family):
    name = "implicit_gemm_wgmma_tma"
    summary = ("implicit GEMM of bf16/fp16/tf32 NHWC problems on Hopper wgmma tensor cores (sm_90a), operands "
               "copied by TMA (im2col), warp-specialized and persistent, float32 sums")
    tensor_cores = True
    dtypes: tuple[str, ...] = ("bfloat16", "float16", "float32")
    layouts: tuple[str, ...] = ("NHWC", "NCHW")
    precisions: tuple[str, ...] = ("bf16", "fp16", "tf32")

    def unsupported_reason(self, problem: ConvProblem) -> str | None:
        """As every family's, and NCHW for float32 outputs only: its outputs are stored from the
        accumulators, which the search space allows for float32 (4-byte) values only."""
        reason = super().unsupported_reason(problem)
        if reason is None and problem.layout == "NCHW" and problem.output_dtype != "float32":
            return f"{self.name} implements NCHW for float32 outputs (tf32), not {problem.output_dtype}"
        return reason

    def launches(self, name: str, values: Mapping[str, Any]) -> tuple[Launch, ...]:
        """The copies into the workspace first: the padding of x and w (or, where NCHW x is
        transposed, of w alone), NCHW x's transpose; the GEMM (tensor maps of x and w, by value);
        with split-K the reduction of its slices."""
        has_bias, split_k, threads = values["HAS_BIAS"], values["SPLIT_K"], values["REDUCE_THREADS"]
        launches = []
        if values["PAD_COPY_BYTES"]:
            launches.append(Launch(f"{name}_pad_channels", grid_for(values["PAD_COPY_BYTES"] // 16, threads),
                                   dim3(threads), ("x", "w", "workspace")))
        if values["TRANSPOSE_X"]:
            tile = 32   # the template's TRANSPOSE_TILE: 32 pixels x 32 channels, 32 x 8 threads
            launches.append(Launch(f"{name}_transpose_x",
                                   dim3(-(-values["X_HEIGHT"] * values["X_WIDTH"] // tile),
                                        -(-values["X_CHANNELS"] // tile), values["N"]),
                                   dim3(tile, 8), ("x", "workspace"), tile * (tile + 1) * values["ELEMENT_BYTES"]))
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
        """x as im2col boxes of TILE_PIXELS output pixels x BOX_CHANNELS channels (128 bytes), w as
        [K][R*S][C] in boxes of TILE_FILTERS filters x BOX_CHANNELS channels (the template's x_map and
        w_map; BM and BN, or BN and BM where the filters take wgmma's M side). With A in registers, x
        as it lies in NCHW, [N][C][P*Q] in boxes of 32 pixels x BOX_CHANNELS channels."""
        # the maps' element type (autoconv.kernels.tensor_maps.ELEMENT_BYTES): tf32 maps round the copies
        element = "tf32" if values["PRECISION_TF32"] else "f16" if values["FORMAT_F16"] else "bf16"
        c, taps, channels = values["X_CHANNELS"], values["MAP_R"] * values["MAP_S"], values["BOX_CHANNELS"]
        copy_x, copy_w = bool(values["COPY_X"]), bool(values["COPY_W"])   # x' then w' in the workspace
        # Q (and P) where the copy folded the taps along w (FOLD_WIDTH; and along h, FOLD_FILTER)
        width, height = values["X_WIDTH"], values["X_HEIGHT"]
        x_bytes = values["N"] * height * width * c * values["ELEMENT_BYTES"]
        w_map = TiledMap(buffer="workspace" if copy_w else "w", element=element, sizes=(c, taps, values["K"]),
                         box=(channels, 1, values["TILE_FILTERS"]), offset=x_bytes if copy_w else 0)
        if values["A_IN_REGISTERS"]:   # NCHW x as it lies, [N][C][P*Q], in boxes of 32 pixels x BK channels
            return {"x_map": TiledMap(buffer="x", element=element, sizes=(values["P"] * values["Q"], c, values["N"]),
                                      box=(32, channels, 1)),
                    "w_map": w_map}
        return {
            "x_map": Im2colMap(
                buffer="workspace" if copy_x else "x", element=element,
                sizes=(c, width, height, values["N"]),
                lower=(values["LOWER_W"], values["LOWER_H"]), upper=(values["UPPER_W"], values["UPPER_H"]),
                channels=channels, pixels=values["TILE_PIXELS"],
                element_strides=(1, values["MAP_STRIDE_W"], values["MAP_STRIDE_H"], 1)),
            "w_map": w_map,
        }
