"""The kernel families autoconv searches, by CLI name."""

from __future__ import annotations

from autoconv.errors import SearchSpaceError
from autoconv.kernels.families.base import BUFFER_NAMES, Family, KernelPlan, Launch
from autoconv.kernels.families.direct import Direct
from autoconv.kernels.families.im2col_gemm import Im2colGemm
from autoconv.kernels.families.implicit_gemm import ImplicitGemm
from autoconv.kernels.families.implicit_gemm_3xtf32 import ImplicitGemm3xTF32
from autoconv.kernels.families.implicit_gemm_mma import ImplicitGemmMma
from autoconv.kernels.families.implicit_gemm_wgmma import ImplicitGemmWgmma
from autoconv.kernels.families.implicit_gemm_wgmma_f16 import ImplicitGemmWgmmaF16
from autoconv.kernels.families.implicit_gemm_wgmma_tma import ImplicitGemmWgmmaTma
from autoconv.problems.problem import did_you_mean

_FAMILIES: dict[str, Family] = {
    family.name: family for family in (Direct(), Im2colGemm(), ImplicitGemm(), ImplicitGemm3xTF32(),
                                       ImplicitGemmMma(), ImplicitGemmWgmma(), ImplicitGemmWgmmaF16(),
                                       ImplicitGemmWgmmaTma())}

FAMILY_NAMES = tuple(_FAMILIES)


def get_family(name: str) -> Family:
    """The family called ``name``; a clear error listing the known ones otherwise."""
    try:
        return _FAMILIES[name]
    except KeyError:
        raise SearchSpaceError(f"unknown kernel family {name!r}{did_you_mean(name, _FAMILIES)}; "
                               f"known families: {', '.join(_FAMILIES)}") from None


def all_families() -> list[Family]:
    return list(_FAMILIES.values())


__all__ = ["BUFFER_NAMES", "FAMILY_NAMES", "Family", "KernelPlan", "Launch", "all_families", "get_family"]
