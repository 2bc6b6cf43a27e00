"""How many clusters of two blocks of the TMA family can be resident, and how a layer's time
depends on the persistent grid (thirteenth session; a diagnostic, run on the GPU):

    python3 results/h100/tma_cluster/grid_probe.py > grid_probe.log

For each (layer, configuration): the driver's cuOccupancyMaxActiveClusters for the kernel, then
the kernel's time (CUDA events around 200 back-to-back launches on the same buffers, median of 5
repeats: relative timings only, the operands stay in the L2) at several grid sizes (the kernel
is persistent: any grid that is a whole number of clusters computes the same output).
"""

from __future__ import annotations

import ctypes
import dataclasses
import statistics

import cupy

from autoconv.gpu.compiler import compile_source
from autoconv.gpu.device import read_device
from autoconv.gpu.kernels import LoadedPlan
from autoconv.kernels.families import get_family
from autoconv.problems.problem import parse_spec


class LaunchConfig(ctypes.Structure):   # CUlaunchConfig (cuda.h)
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.c_void_p), ("numAttrs", ctypes.c_uint)]


LAYERS = {
    "tf32 layer3.1.conv2": "N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1,layout=NHWC,precision=tf32",
    "tf32 layer4.0.conv1": "N=32,C=1024,H=14,W=14,K=512,R=1,S=1,layout=NHWC,precision=tf32",
    "bf16 layer3.1.conv2": "N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1,layout=NHWC,precision=bf16",
    "bf16 layer4.0.conv1": "N=32,C=1024,H=14,W=14,K=512,R=1,S=1,layout=NHWC,precision=bf16",
}
#: Variants of a CLUSTER_M 2 kernel's source, to tell what costs the time: "local B" copies
#: both halves of B itself (no multicast) and releases its stages to its own producer only (the
#: cluster launch alone); "local B, shared release" copies B itself but still releases each stage
#: to both blocks' producers (the coupling without the multicast).
MULTICAST = ("tma::copy_tiled_multicast(shared.B[stage] + rank * B_COPY_ROWS * ROW_BYTES, &w_map, &shared.full[stage],\n"
             "                                          c0, tap, t.n0 + rank * B_COPY_ROWS, (1u << CLUSTER_M) - 1);")
LOCAL_COPIES = ("for (int half = 0; half < CLUSTER_M; ++half) tma::copy_tiled(shared.B[stage] + half * B_COPY_ROWS * ROW_BYTES, "
                "&w_map, &shared.full[stage], c0, tap, t.n0 + half * B_COPY_ROWS);")
SHARED_RELEASE = ("    for (int block = 0; block < CLUSTER_M; ++block)\n        mbarrier::arrive_in_block(empty, block);",
                  "    mbarrier::arrive(empty);")
SHARED_COUNT = ("WARPGROUP_SIZE / WARP_SIZE * CLUSTER_M;", "WARPGROUP_SIZE / WARP_SIZE;")
VARIANTS = {"local B": [(MULTICAST, LOCAL_COPIES), SHARED_RELEASE, SHARED_COUNT]}

CONFIGS = [
    {"BN": 128, "CONSUMERS": 2, "STAGES": 4, "SPLIT_K": 1, "SCHEDULE": "cooperative", "EPILOGUE": "staged", "CLUSTER_M": 1},
    {"BN": 128, "CONSUMERS": 2, "STAGES": 4, "SPLIT_K": 1, "SCHEDULE": "cooperative", "EPILOGUE": "staged", "CLUSTER_M": 2},
    {"BN": 128, "CONSUMERS": 1, "STAGES": 6, "SPLIT_K": 1, "SCHEDULE": "cooperative", "EPILOGUE": "staged", "CLUSTER_M": 1},
    {"BN": 128, "CONSUMERS": 1, "STAGES": 6, "SPLIT_K": 1, "SCHEDULE": "cooperative", "EPILOGUE": "staged", "CLUSTER_M": 2},
]


def main() -> None:
    libcuda = ctypes.CDLL("libcuda.so.1")
    limits, _ = read_device(0)
    family = get_family("implicit_gemm_wgmma_tma")
    for layer, spec in LAYERS.items():
        problem = parse_spec(spec)
        dtype = cupy.float32 if problem.precision == "tf32" else cupy.uint16
        rng = cupy.random.default_rng(0)
        x = rng.standard_normal((problem.N, problem.H, problem.W, problem.C), dtype=cupy.float32)
        w = rng.standard_normal((problem.K, problem.R, problem.S, problem.C), dtype=cupy.float32)
        if dtype == cupy.uint16:   # bf16 bits: the high half of float32
            x, w = ((a.view(cupy.uint32) >> 16).astype(cupy.uint16) for a in (x, w))
        for config, variant in [(c, None) for c in CONFIGS] + [(CONFIGS[1], v) for v in VARIANTS]:
            plan = family.plan(problem, config, limits)
            if variant:
                source = plan.source
                for old, new in VARIANTS[variant]:
                    assert source.count(old) == 1, (variant, old)
                    source = source.replace(old, new)
                plan = dataclasses.replace(plan, source=source)
            outcome = compile_source(plan.source, limits.arch, plan.name)
            if not outcome.ok:
                print(layer, config, "compile failed", outcome.log[-500:], flush=True)
                continue
            loaded = LoadedPlan(plan, outcome.cubin)
            loaded.configure()
            gemm = next(launch for launch in plan.launches if "x_map" in launch.args)
            clusters = ctypes.c_int(-1)
            launch_config = LaunchConfig(gemm.grid[0], 1, 1, *gemm.block, gemm.shared_bytes, None, None, 0)
            status = libcuda.cuOccupancyMaxActiveClusters(ctypes.byref(clusters),
                                                          ctypes.c_void_p(loaded.function_handles()[gemm.kernel]),
                                                          ctypes.byref(launch_config))
            p, q = plan.values["P"], plan.values["Q"]
            out_dtype = cupy.float32 if plan.values["OUTPUT_FLOAT32"] else cupy.uint16
            buffers = {"x": x, "w": w, "y": cupy.zeros((problem.N, p, q, problem.K), out_dtype),
                       "workspace": cupy.zeros(max(plan.workspace_bytes, 16), cupy.uint8)}
            c = config["CLUSTER_M"]
            grids = sorted({gemm.grid[0]} | {c * g for g in (66, 64, 62, 60, 56, 48) if c * g <= 132})
            row = []
            for grid in grids:
                trial = dataclasses.replace(plan, launches=tuple(dataclasses.replace(launch, grid=(grid, 1, 1))
                                                            if launch is gemm else launch
                                                            for launch in plan.launches))
                runner = LoadedPlan(trial, outcome.cubin)
                for _ in range(20):
                    runner.launch(buffers)
                times = []
                for _ in range(5):
                    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
                    start.record()
                    for _ in range(200):
                        runner.launch(buffers)
                    stop.record()
                    stop.synchronize()
                    times.append(cupy.cuda.get_elapsed_time(start, stop) / 200 * 1000)
                row.append(f"grid {grid}: {statistics.median(times):.1f} us")
            print(f"{layer} {config} {variant or ''} regs {loaded.resources_of(gemm.kernel).registers} "
                  f"max active clusters {clusters.value} (status {status}); " + ", ".join(row), flush=True)


if __name__ == "__main__":
    main()
