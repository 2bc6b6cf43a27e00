"""Launch one configuration of implicit_gemm_wgmma_f16 on one problem a few times, for ncu:

    ncu --launch-skip 2 --launch-count 2 python3 launch_one.py SPEC 'CONFIG-JSON' [LAUNCHES]

Compiles with NVRTC as the tuner does, fills the inputs (ProblemBuffers: random data, the
reference), launches the plan's kernels LAUNCHES times (default 4) and checks the last output
against the float64 reference at the format's tolerance.
"""

from __future__ import annotations

import json
import sys

import cupy

from autoconv.gpu.compiler import compile_source
from autoconv.gpu.device import read_device
from autoconv.gpu.kernels import LoadedPlan
from autoconv.gpu.worker import ProblemBuffers
from autoconv.kernels.families import get_family
from autoconv.problems.problem import parse_spec


def main(spec: str, config: str, launches: int = 4) -> int:
    limits, _ = read_device(0)
    family = get_family("implicit_gemm_wgmma_f16")
    plan = family.plan(parse_spec(spec), json.loads(config), limits)
    compiled = compile_source(plan.source, limits.arch, plan.name)
    if not compiled.ok:
        raise SystemExit(compiled.log)
    loaded = LoadedPlan(plan, compiled.cubin)
    buffers = ProblemBuffers(plan.problem, 0, limits.l2_bytes, 1)
    workspace = cupy.empty(plan.workspace_elements, dtype=cupy.float32) if plan.workspace_bytes else None
    for _ in range(launches):
        loaded.launch(buffers.verification(workspace))
    cupy.cuda.runtime.deviceSynchronize()
    values = buffers.output_values()
    error = float(cupy.linalg.norm(values - buffers.reference) / cupy.linalg.norm(buffers.reference))
    grids = [launch.grid for launch in plan.launches]
    print(f"{plan.name}: grids {grids}, error {error:.3g} (tolerance {buffers.tolerance:.3g})")
    return 0 if error <= buffers.tolerance else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], *(int(a) for a in sys.argv[3:])))
