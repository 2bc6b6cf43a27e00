"""direct: sliding-window convolution, the input window and weights staged in shared memory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoconv.kernels.families.base import Family, Launch, dim3


class Direct(Family):
    name = "direct"
    summary = "direct sliding window: input window and weights in shared memory, output tile per thread"

    def launches(self, name: str, values: Mapping[str, Any]) -> tuple[Launch, ...]:
        # One launch; grid (output column tiles, output row tiles, image * filter group).
        args = ("x", "w", "bias", "y") if values["HAS_BIAS"] else ("x", "w", "y")
        return (Launch(name, dim3(values["GRID_Q"], values["GRID_P"], values["GRID_Z"]),
                       dim3(values["THREADS"]), args, values["SMEM_BYTES"]),)
