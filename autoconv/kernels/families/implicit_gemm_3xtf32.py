"""implicit_gemm_3xtf32: the implicit GEMM on TF32 tensor cores at float32 accuracy.

Launches exactly like :mod:`implicit_gemm` (a GEMM kernel, plus a reduction kernel when
split-K is on); only the template and the search space differ.
"""

from __future__ import annotations

from autoconv.kernels.families.implicit_gemm import ImplicitGemm


class ImplicitGemm3xTF32(ImplicitGemm):
    name = "implicit_gemm_3xtf32"
    summary = "implicit GEMM on tensor cores, 3xTF32 split for float32 accuracy, cp.async pipeline, split-K"
    tensor_cores = True
    precisions: tuple[str, ...] = ("fp32",)
