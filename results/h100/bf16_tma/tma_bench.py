"""Verify and time the TMA prototype (tma_conv.cu) on ResNet-50's bf16 NHWC layers, beside cuDNN.

    python3 results/h100/bf16_tma/tma_bench.py OUT_DIR [--layers a,b] [--quick]

Per layer and configuration: nvcc compiles a cubin (problem sizes and tiling as -D constants; a
process pool), the driver API (ctypes on libcuda) loads it and launches it with two tensor maps
as by-value parameters, the output is checked against PyTorch's float32 convolution of the same
bf16 inputs, and the kernel is timed as autoconv times candidates: a CUDA graph of back-to-back
launches over rotating buffer sets larger than twice the L2 cache, 3 warm-up replays, median of
7. cuDNN: PyTorch's bf16 channels_last convolution (cudnn.benchmark) timed the same way in the
same process, and cuDNN's best plan through autoconv's own baseline (cuDNN frontend, every plan).
Writes OUT_DIR/tma_bench.json and prints a table.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import ctypes
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
TEMPLATES = os.path.join(ROOT, "templates")
RESULTS = os.path.join(ROOT, "results", "h100", "resnet50_n32_bf16", "results.json")

L2_BYTES = 50 * 2**20
BF16 = 9                   # CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
SWIZZLE_128B = 3
L2_PROMOTION_128B = 2
MAX_DYNAMIC_SHARED = 8     # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
# cuDNN's best plan through autoconv's baseline in this process: off, it hung beside PyTorch in
# device call 1; examples/family_sweep.py times it in its own process instead.
WITH_BEST_PLAN = False
LAYER_SECONDS = 30         # a layer's process is killed past this (a kernel that hangs)

# (BN, CONSUMERS, STAGES, SPLIT_K, MIN_BLOCKS)
CONFIGS = [
    (128, 2, 4, 1, 1), (128, 2, 5, 1, 1), (256, 2, 3, 1, 1), (64, 2, 6, 1, 1), (128, 1, 6, 1, 1),
    (256, 1, 4, 1, 1), (64, 1, 8, 1, 1), (128, 2, 4, 2, 1), (128, 1, 6, 2, 1),
]
QUICK = [(128, 2, 4, 1, 1), (128, 2, 4, 2, 1)]


def parse_spec(spec: str) -> dict:
    fields = dict(part.split("=") for part in spec.split(","))
    n, c, h, w, k, r, s = (int(fields[key]) for key in ("N", "C", "H", "W", "K", "R", "S"))
    stride, pad, dilation = (int(fields[key]) for key in ("stride", "pad", "dilation"))
    return {"N": n, "C": c, "H": h, "W": w, "K": k, "R": r, "S": s, "stride": (stride, stride),
            "pad": (pad, pad), "dilation": (dilation, dilation)}


def output_size(p: dict) -> tuple[int, int]:
    (sh, sw), (ph, pw), (dh, dw) = p["stride"], p["pad"], p["dilation"]
    return ((p["H"] + 2 * ph - dh * (p["R"] - 1) - 1) // sh + 1,
            (p["W"] + 2 * pw - dw * (p["S"] - 1) - 1) // sw + 1)


def defines(p: dict, config) -> list[str]:
    bn, consumers, stages, split_k, min_blocks = config
    P, Q = output_size(p)
    values = {"N_": p["N"], "C_": p["C"], "H_": p["H"], "W_": p["W"], "K_": p["K"], "R_": p["R"], "S_": p["S"],
              "P_": P, "Q_": Q, "STRIDE_H": p["stride"][0], "STRIDE_W": p["stride"][1],
              "PAD_TOP": p["pad"][0], "PAD_LEFT": p["pad"][1], "DIL_H": p["dilation"][0], "DIL_W": p["dilation"][1],
              "BN": bn, "CONSUMERS": consumers, "STAGES": stages, "SPLIT_K": split_k, "MIN_BLOCKS": min_blocks}
    return [f"-D{key}={value}" for key, value in values.items()]


def compile_cubin(args) -> tuple[str, str, str]:
    """nvcc -cubin for one (problem, config); (path, ptxas report, error)."""
    path, flags = args
    command = ["nvcc", "-cubin", "-arch=sm_90a", "-std=c++17", "-O3", "-Xptxas", "-v", f"-I{TEMPLATES}", *flags,
               os.path.join(HERE, "tma_conv.cu"), "-o", path]
    done = subprocess.run(command, capture_output=True, text=True)
    with open(path + ".log", "w") as log:
        log.write(done.stderr)
    return path, done.stderr, "" if done.returncode == 0 else done.stderr[-2000:]


class Driver:
    """The few driver calls the prototype needs (ctypes on libcuda), in PyTorch's context."""

    def __init__(self):
        self.cuda = ctypes.CDLL("libcuda.so.1")

    def check(self, result: int, what: str) -> None:
        if result != 0:
            name = ctypes.c_char_p()
            self.cuda.cuGetErrorName(result, ctypes.byref(name))
            raise RuntimeError(f"{what}: CUresult {result} ({name.value.decode() if name.value else '?'})")

    def load(self, path: str, name: str, smem: int):
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.cuda.cuModuleLoad(ctypes.byref(module), path.encode()), f"cuModuleLoad {path}")
        self.check(self.cuda.cuModuleGetFunction(ctypes.byref(function), module, name.encode()), f"get {name}")
        if smem:
            self.check(self.cuda.cuFuncSetAttribute(function, MAX_DYNAMIC_SHARED, smem), "max dynamic smem")
        return function

    def launch(self, function, grid, block, smem, stream: int, params: list) -> None:
        pointers = (ctypes.c_void_p * len(params))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in params])
        self.check(self.cuda.cuLaunchKernel(function, *grid, *block, smem, ctypes.c_void_p(stream), pointers, None),
                   "cuLaunchKernel")

    def im2col_map(self, x: torch.Tensor, p: dict, pixels: int, corner_order: str):
        """x: N x H x W x C bf16 (channels_last storage)."""
        n, c, h, w = p["N"], p["C"], p["H"], p["W"]
        P, Q = output_size(p)
        (sh, sw), (pt, pl), (dh, dw) = p["stride"], p["pad"], p["dilation"]
        pb = (P - 1) * sh + dh * (p["R"] - 1) + 1 - h - pt
        pr = (Q - 1) * sw + dw * (p["S"] - 1) + 1 - w - pl
        lower_w, lower_h = -pl, -pt
        upper_w, upper_h = pr - dw * (p["S"] - 1), pb - dh * (p["R"] - 1)
        if corner_order == "wh":
            lower, upper = (lower_w, lower_h), (upper_w, upper_h)
        else:
            lower, upper = (lower_h, lower_w), (upper_h, upper_w)
        tensor_map = (ctypes.c_uint64 * 16)()
        aligned = ctypes.create_string_buffer(128 + 64)
        address = (ctypes.addressof(aligned) + 63) // 64 * 64
        dims = (ctypes.c_uint64 * 4)(c, w, h, n)
        strides = (ctypes.c_uint64 * 3)(c * 2, w * c * 2, h * w * c * 2)
        element_strides = (ctypes.c_uint32 * 4)(1, sw, sh, 1)
        self.check(self.cuda.cuTensorMapEncodeIm2col(
            ctypes.c_void_p(address), BF16, 4, ctypes.c_void_p(x.data_ptr()), dims, strides,
            (ctypes.c_int * 2)(*lower), (ctypes.c_int * 2)(*upper), 64, pixels, element_strides,
            0, SWIZZLE_128B, L2_PROMOTION_128B, 0), "cuTensorMapEncodeIm2col")
        ctypes.memmove(tensor_map, address, 128)
        return tensor_map, aligned

    def tiled_map(self, w: torch.Tensor, p: dict, rows: int):
        """w: K x R x S x C bf16, as [K][R*S][C]; box 64 channels x 1 tap x `rows` filters."""
        tensor_map = (ctypes.c_uint64 * 16)()
        aligned = ctypes.create_string_buffer(128 + 64)
        address = (ctypes.addressof(aligned) + 63) // 64 * 64
        c, taps, k = p["C"], p["R"] * p["S"], p["K"]
        self.check(self.cuda.cuTensorMapEncodeTiled(
            ctypes.c_void_p(address), BF16, 3, ctypes.c_void_p(w.data_ptr()),
            (ctypes.c_uint64 * 3)(c, taps, k), (ctypes.c_uint64 * 2)(c * 2, taps * c * 2),
            (ctypes.c_uint32 * 3)(64, 1, rows), (ctypes.c_uint32 * 3)(1, 1, 1),
            0, SWIZZLE_128B, L2_PROMOTION_128B, 0), "cuTensorMapEncodeTiled")
        ctypes.memmove(tensor_map, address, 128)
        return tensor_map, aligned


def graph_time(launch_set, sets: int, launches_per_graph: int) -> float:
    """ms per launch: a graph of launches cycling over `sets` buffer sets, median of 7 replays."""
    stream = torch.cuda.Stream()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        for i in range(3):   # (warm-up outside the capture: cuDNN's workspace and autotuning)
            launch_set(i % sets)
        torch.cuda.synchronize()
        with torch.cuda.graph(graph, stream=stream):
            for i in range(launches_per_graph):
                launch_set(i % sets)
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(7):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / launches_per_graph)
    return statistics.median(times)


def best_plan(spec: str):
    """cuDNN's fastest bf16 NHWC plan through autoconv's baseline (what `autoconv bench` compares with)."""
    try:
        from autoconv.bench.baseline import find_best_plan
        from autoconv.bench.results import CUDNN_MODES
        from autoconv.problems.problem import parse_spec as problem_of
        problem = problem_of(spec)
        found = find_best_plan(problem, CUDNN_MODES[problem.precision], seed=0)
        return found.time_ms, found.plan_name
    except Exception as exc:   # the prototype's numbers stand without it
        return None, repr(exc)[:300]


def run_layer(driver: Driver, name: str, p: dict, cubins: dict, corner_order: str, spec: str = "") -> dict:
    P, Q = output_size(p)
    gemm_m, gemm_n = p["N"] * P * Q, p["K"]
    set_bytes = 2 * (p["N"] * p["H"] * p["W"] * p["C"] + p["K"] * p["R"] * p["S"] * p["C"] + gemm_m * gemm_n)
    sets = max(2, math.ceil(2 * L2_BYTES / set_bytes) + 1)
    generator = torch.Generator(device="cuda").manual_seed(0)
    xs = [torch.randn(p["N"], p["C"], p["H"], p["W"], device="cuda", generator=generator)
          .to(torch.bfloat16).contiguous(memory_format=torch.channels_last) for _ in range(sets)]
    ws = [(torch.randn(p["K"], p["C"], p["R"], p["S"], device="cuda", generator=generator) / math.sqrt(p["C"] * p["R"] * p["S"]))
          .to(torch.bfloat16).contiguous(memory_format=torch.channels_last) for _ in range(sets)]
    ys = [torch.empty(p["N"], p["K"], P, Q, device="cuda", dtype=torch.bfloat16, memory_format=torch.channels_last)
          for _ in range(sets)]
    conv = dict(stride=p["stride"], padding=p["pad"], dilation=p["dilation"])
    with torch.no_grad():
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        reference = torch.nn.functional.conv2d(xs[0].float(), ws[0].float(), **conv)
        torch.backends.cudnn.benchmark = True

        def torch_launch(i):
            torch.nn.functional.conv2d(xs[i], ws[i], **conv)
        torch_ms = graph_time(torch_launch, sets, 20 * sets if set_bytes < 8e6 else 4 * sets)
    cudnn_ms, cudnn_plan = best_plan(spec) if spec and WITH_BEST_PLAN else (None, None)
    row = {"layer": name, "problem": p, "cudnn_best_plan_ms": cudnn_ms, "cudnn_best_plan": cudnn_plan, "gemm": [gemm_m, gemm_n, p["K"] and p["R"] * p["S"] * p["C"]],
           "gflop": 2 * gemm_m * gemm_n * p["R"] * p["S"] * p["C"] / 1e9, "torch_ms": torch_ms, "configs": []}
    for config, (path, report, error) in cubins.items():
        bn, consumers, stages, split_k, min_blocks = config
        entry = {"config": dict(zip(("BN", "CONSUMERS", "STAGES", "SPLIT_K", "MIN_BLOCKS"), config))}
        row["configs"].append(entry)
        registers = [line.split("Used ")[1].split(" registers")[0] for line in report.splitlines() if "Used " in line]
        entry["registers"] = registers
        entry["spills"] = [line.strip() for line in report.splitlines() if "spill" in line and not line.strip().startswith("0 bytes")]
        if error:
            entry["status"] = "compile error"
            entry["error"] = error[-600:]
            continue
        bm = 64 * consumers
        staging = bm * (bn + 8) * 2 if split_k == 1 else 0   # the epilogue's tile (tma_conv.cu)
        smem = stages * (bm + bn) * 128 + 16 * stages + staging + 1024
        try:
            function = driver.load(path, "conv_tma", smem)
            reduce = driver.load(path, "reduce_slices", 0) if split_k > 1 else None
            workspace = torch.empty(split_k * gemm_m * gemm_n if split_k > 1 else 1, device="cuda", dtype=torch.float32)
            maps = [(driver.im2col_map(xs[i], p, bm, corner_order), driver.tiled_map(ws[i], p, bn)) for i in range(sets)]
            tiles = math.ceil(gemm_m / bm) * math.ceil(gemm_n / bn) * split_k
            grid = (min(tiles, torch.cuda.get_device_properties(0).multi_processor_count), 1, 1)   # persistent
            block = (128 * (consumers + 1), 1, 1)

            def launch(i):
                stream = torch.cuda.current_stream().cuda_stream
                (x_map, _), (w_map, _) = maps[i]
                target = workspace if split_k > 1 else ys[i]
                driver.launch(function, grid, block, smem, stream, [x_map, w_map, ctypes.c_uint64(target.data_ptr())])
                if reduce is not None:
                    driver.launch(reduce, (math.ceil(gemm_m * gemm_n / 1024), 1, 1), (256, 1, 1), 0, stream,
                                  [ctypes.c_uint64(workspace.data_ptr()), ctypes.c_uint64(ys[i].data_ptr())])

            ys[0].zero_()
            launch(0)
            torch.cuda.synchronize()
            error_max = float((ys[0].float() - reference).abs().max() / reference.abs().max())
            entry["error"] = error_max
            entry["status"] = "ok" if error_max < 1e-2 else "wrong"
            if entry["status"] == "ok":
                entry["time_ms"] = graph_time(launch, sets, 20 * sets if set_bytes < 8e6 else 4 * sets)
                entry["tflops"] = row["gflop"] / entry["time_ms"]
            print(f"  {name} {config}: {entry['status']} error {error_max:.2e} "
                  f"{entry.get('time_ms', float('nan')) * 1e3:.1f} us", flush=True)
        except Exception as exc:   # a fault poisons the context: record it and stop this layer
            entry["status"] = "failed"
            entry["error"] = repr(exc)[:600]
            if "ILLEGAL" in repr(exc) or "LAUNCH_FAILED" in repr(exc):
                raise
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--layers", default="")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--corner-order", default="auto", choices=["auto", "wh", "hw"])
    parser.add_argument("--one-layer", default="", help="(internal) run one layer's cubins in this process")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    committed = json.load(open(RESULTS))["problems"]
    layers = [(p["name"], parse_spec(p["spec"]), p) for p in committed if "C=3," not in p["spec"]]
    if args.layers:
        wanted = args.layers.split(",")
        layers = [layer for layer in layers if any(layer[0].endswith(w) for w in wanted)]
    # An awkward problem first: H != W, pads differ per dimension, stride and dilation per
    # dimension, a last M tile cut short, C not a multiple of 64: it tells the corner order.
    awkward = {"N": 3, "C": 72, "H": 11, "W": 17, "K": 136, "R": 3, "S": 5, "stride": (2, 1), "pad": (1, 2),
               "dilation": (1, 2)}
    configs = QUICK if args.quick else CONFIGS
    cubin_dir = os.path.join(args.out, "cubins")
    os.makedirs(cubin_dir, exist_ok=True)
    if args.one_layer:
        name, p, committed_row = next(layer for layer in layers if layer[0] == args.one_layer)
        cubins = {}
        for config in configs:
            path = os.path.join(cubin_dir, f"{name}_{'_'.join(map(str, config))}.cubin")
            cubins[config] = (path, open(path + ".log").read(), "" if os.path.exists(path) else "no cubin")
        driver = Driver()
        torch.zeros(1, device="cuda")
        row = run_layer(driver, name, p, cubins, args.corner_order, committed_row["spec"])
        json.dump(row, open(os.path.join(args.out, f"row_{name}.json"), "w"), indent=1)
        return 0
    jobs = {}
    for name, p, _ in [("awkward", awkward, None)] + layers:
        for config in (configs if name != "awkward" else QUICK + [(64, 1, 4, 1, 1), (256, 2, 3, 1, 1)]):
            path = os.path.join(cubin_dir, f"{name}_{'_'.join(map(str, config))}.cubin")
            jobs[(name, config)] = (path, defines(p, config))
    started = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(max_workers=os.cpu_count()) as pool:
        compiled = dict(zip(jobs, pool.map(compile_cubin, jobs.values())))
    print(f"compiled {len(jobs)} cubins in {time.perf_counter() - started:.1f} s", flush=True)

    driver = Driver()
    torch.zeros(1, device="cuda")
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cudnn": torch.backends.cudnn.version(), "rows": []}
    orders = ["wh", "hw"] if args.corner_order == "auto" else [args.corner_order]
    chosen = None
    for order in orders:
        row = run_layer(driver, "awkward", awkward, {c: compiled[("awkward", c)] for c in compiled_keys(compiled, "awkward")}, order)
        row["corner_order"] = order
        report["rows"].append(row)
        print(f"awkward, corners {order}: " + ", ".join(f"{e['status']} {e.get('error')}" if e["status"] != "ok" else
                                                          f"ok {e['error']:.2e}" for e in row["configs"]), flush=True)
        if all(e["status"] == "ok" for e in row["configs"]):
            chosen = order
            break
    if chosen is None:
        print("no corner order verifies on the awkward problem: stopping")
        json.dump(report, open(os.path.join(args.out, "tma_bench.json"), "w"), indent=1)
        return 1
    for name, p, committed_row in layers:
        try:
            subprocess.run([sys.executable, os.path.abspath(__file__), args.out, "--one-layer", name,
                            "--corner-order", chosen], timeout=LAYER_SECONDS, check=False)
            row = json.load(open(os.path.join(args.out, f"row_{name}.json")))
        except (subprocess.TimeoutExpired, FileNotFoundError) as exc:
            print(f"{name}: no result ({type(exc).__name__})", flush=True)
            report["rows"].append({"layer": name, "status": type(exc).__name__})
            continue
        row["committed_autoconv_ms"] = committed_row["autoconv_ms"]
        row["committed_cudnn_ms"] = committed_row["cudnn_ms"]
        report["rows"].append(row)
        ok = [e for e in row["configs"] if e["status"] == "ok"]
        bad = [e for e in row["configs"] if e["status"] != "ok"]
        best = min(ok, key=lambda e: e["time_ms"]) if ok else None
        anchor = row["cudnn_best_plan_ms"]
        print(f"{name}: torch/cuDNN {row['torch_ms'] * 1e3:.1f} us, cuDNN best plan "
              f"{anchor * 1e3 if anchor else float('nan'):.1f} us; TMA best "
              f"{best['time_ms'] * 1e3 if best else float('nan'):.1f} us {best['config'] if best else ''} "
              f"({row['torch_ms'] / best['time_ms'] if best else float('nan'):.3f}x torch); committed: ours "
              f"{committed_row['autoconv_ms'] * 1e3:.1f} us, cuDNN best plan {committed_row['cudnn_ms'] * 1e3:.1f} us; "
              f"{len(bad)} not ok {[ (e['config'], e['status']) for e in bad][:3]}", flush=True)
        json.dump(report, open(os.path.join(args.out, "tma_bench.json"), "w"), indent=1)
    return 0


def compiled_keys(compiled: dict, name: str) -> list:
    return [config for (layer, config) in compiled if layer == name]


if __name__ == "__main__":
    sys.exit(main())
