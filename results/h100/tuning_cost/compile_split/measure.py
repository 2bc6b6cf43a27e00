"""Where a candidate's NVRTC compile time goes, and which options cut it without changing the cubin.

Drives libnvrtc (CUDA 13, from the ``nvidia-cuda-nvrtc`` wheel) through ctypes in this one
process, on candidates rendered by autoconv's own code (ResNet-50 layers, each family's default
config and a few sampled valid ones). For each candidate: the tuner's exact options to a cubin
(baseline), the front end + NVVM alone (PTX for compute_90a), a trivial kernel with the same
``#include`` lines, and the baseline plus each candidate option; every variant's cubin is compared
with the baseline's (bytes, and SASS from ``cuobjdump -sass``).

    NVRTC_LIB=/tmp/nvrtc-venv/lib/python3.11/site-packages/nvidia/cu13/lib/libnvrtc.so.13 \
    CUOBJDUMP=/tmp/nvrtc-venv/lib/python3.11/site-packages/nvidia/cu13/bin/cuobjdump \
    .venv/bin/python results/h100/tuning_cost/compile_split/measure.py \
        --out results/h100/tuning_cost/compile_split/measure.json

Timings: median of ``--repeats`` (3) after one warm-up, wall and CPU seconds. Every compile passes
``--no-cache`` (NVRTC 13's disk cache would otherwise return the warm-up's result).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autoconv.gpu.compiler import cuda_include_dirs, nvrtc_options
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.problems.config import load_config
from autoconv.search.points import sample_valid

LIB = ctypes.CDLL(os.environ.get("NVRTC_LIB", "libnvrtc.so.13"))
LIB.nvrtcGetErrorString.restype = ctypes.c_char_p


def check(result: int, what: str) -> None:
    if result != 0:
        raise RuntimeError(f"{what}: {LIB.nvrtcGetErrorString(result).decode()}")


def version() -> str:
    major, minor = ctypes.c_int(), ctypes.c_int()
    check(LIB.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return f"{major.value}.{minor.value}"


def compile_once(source: str, options: list[str], want: str = "cubin") -> dict:
    """One compile; the output (cubin or PTX), log, wall and CPU seconds, PCH create status."""
    program = ctypes.c_void_p()
    check(LIB.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"kernel.cu", 0, None, None),
          "nvrtcCreateProgram")
    try:
        argv = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        started, started_cpu = time.perf_counter(), time.process_time()
        result = LIB.nvrtcCompileProgram(program, len(options), argv)
        wall, cpu = time.perf_counter() - started, time.process_time() - started_cpu
        size = ctypes.c_size_t()
        LIB.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        LIB.nvrtcGetProgramLog(program, log)
        if result != 0:
            raise RuntimeError(f"compile failed ({options}): {LIB.nvrtcGetErrorString(result).decode()}\n"
                               f"{log.value.decode(errors='replace')[:3000]}")
        get_size, get = ((LIB.nvrtcGetCUBINSize, LIB.nvrtcGetCUBIN) if want == "cubin"
                         else (LIB.nvrtcGetPTXSize, LIB.nvrtcGetPTX))
        get_size(program, ctypes.byref(size))
        out = ctypes.create_string_buffer(size.value)
        check(get(program, out), "get output")
        pch = LIB.nvrtcGetPCHCreateStatus(program) if hasattr(LIB, "nvrtcGetPCHCreateStatus") else None
        return {"out": out.raw, "log": log.value.decode(errors="replace"), "wall": wall, "cpu": cpu,
                "pch_status": pch}
    finally:
        LIB.nvrtcDestroyProgram(ctypes.byref(program))


def timed(source: str, options: list[str], repeats: int, want: str = "cubin") -> dict:
    first = compile_once(source, options, want)  # warm-up (for -pch: creates the PCH)
    runs = [compile_once(source, options, want) for _ in range(repeats)]
    return {"first_wall_ms": first["wall"] * 1e3, "first_cpu_ms": first["cpu"] * 1e3,
            "wall_ms": statistics.median(r["wall"] for r in runs) * 1e3,
            "cpu_ms": statistics.median(r["cpu"] for r in runs) * 1e3,
            "out": runs[-1]["out"], "log": runs[-1]["log"], "pch_status": [first["pch_status"]] +
            [r["pch_status"] for r in runs]}


def sass(cubin: bytes) -> str:
    """cuobjdump -sass of a cubin, without the lines that only name the file."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        text = subprocess.run([os.environ.get("CUOBJDUMP", "cuobjdump"), "-sass", f.name],
                              capture_output=True, text=True, check=True).stdout
    return "\n".join(line for line in text.splitlines() if not line.startswith("\t\tcode for") and
                     "Fatbin" not in line and f.name not in line)


def include_lines(source: str) -> list[str]:
    return [line for line in source.splitlines() if line.startswith("#include")]


def candidates(per_family: int) -> list[tuple[str, str, dict, str]]:
    """(family, layer, config, source) for each family on the layers it supports."""
    config = load_config("examples/resnet50.yaml")
    wanted = ("resnet50.layer1.0.conv2", "resnet50.layer3.1.conv1", "resnet50.conv1")
    layers = {p.name: p.problem for p in config.problems if p.name in wanted}
    out = []
    for index, name in enumerate(("implicit_gemm_wgmma", "implicit_gemm_mma", "implicit_gemm_3xtf32",
                                  "implicit_gemm", "direct", "im2col_gemm")):
        family = get_family(name)
        for layer_index, layer in enumerate(wanted):
            problem = layers[layer]
            if family.unsupported_reason(problem):
                continue
            for config_ in sample_valid(name, problem, H100, config.workspace_limit_bytes,
                                        per_family if layer_index == 0 else 1, seed=index):
                plan = family.plan(problem, config_, H100, config.workspace_limit_bytes)
                out.append((name, layer, config_, plan.source))
    return out


def interleaved(args, base: list[str], variants: dict[str, list[str]]) -> None:
    """Rounds of (baseline, each variant) in a rotating order, so that the machine's drift (a
    shared 2-core VM: the same compile varies by 10-20% over minutes) hits all alike; per
    variant, the median over rounds of its time / the same round's baseline time."""
    families = set(args.only.split(",")) if args.only else None
    names = ["baseline", *variants]
    options = {"baseline": base, **variants}
    rows = []
    for family, layer, config_, source in candidates(args.per_family):
        if families and family not in families:
            continue
        reference = compile_once(source, base)["out"]
        for name in variants:  # warm-up (creates the PCH), and the output check
            out = compile_once(source, options[name])["out"]
            assert out == reference, f"{name} changed the cubin of {family} {config_}"
        times: dict[str, list[float]] = {name: [] for name in names}
        for round_ in range(args.rounds):
            order = names[round_ % len(names):] + names[:round_ % len(names)]
            for name in order:
                times[name].append(compile_once(source, options[name])["cpu"] * 1e3)
        row = {"family": family, "layer": layer, "config": config_,
               "baseline_cpu_ms": statistics.median(times["baseline"]), "bytes_identical": True,
               "times_cpu_ms": times}
        for name in variants:
            row[name] = statistics.median(v / b for v, b in zip(times[name], times["baseline"]))
        print(json.dumps({k: v for k, v in row.items() if k != "times_cpu_ms"}), flush=True)
        rows.append(row)
    Path(args.out).write_text(json.dumps({"rows": rows}, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--per-family", type=int, default=2, help="configs on the first layer (default + random)")
    parser.add_argument("--only", default="", help="comma-separated families")
    parser.add_argument("--variants", default="", help="comma-separated variant names (default all)")
    parser.add_argument("--out", default="measure.json")
    parser.add_argument("--interleaved", action="store_true",
                        help="only the byte-identical variants, in interleaved rounds (ratios to the baseline)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    base = list(nvrtc_options(H100.arch)) + ["--no-cache"]
    pch_dir = tempfile.mkdtemp(prefix="autoconv-pch-")
    os.makedirs(pch_dir + "-minimal")
    variants = {
        "pch": base + ["-pch", f"--pch-dir={pch_dir}"],
        "minimal": base + ["-minimal"],
        "no_source_include": base + ["--no-source-include"],
        "split_compile_0": base + ["--split-compile=0"],
        "minimal_pch": base + ["-minimal", "-pch", f"--pch-dir={pch_dir}-minimal"],
        "dopt_on": base + ["--dopt=on"],  # the default, spelled out (a control)
        "Ofast_compile_min": base + ["--Ofast-compile=min"],  # expected to change the code
    }
    if args.variants:
        variants = {k: v for k, v in variants.items() if k in args.variants.split(",")}
    if args.interleaved:
        interleaved(args, base, variants)
        return
    families = set(args.only.split(",")) if args.only else None
    rows = []
    meta = {"nvrtc": version(), "options": base, "include_dirs": list(cuda_include_dirs()),
            "cpu": next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                        if line.startswith("model name")),
            "cores": os.cpu_count(), "repeats": args.repeats, "argv": sys.argv}
    print(json.dumps(meta), flush=True)
    for family, layer, config_, source in candidates(args.per_family):
        if families and family not in families:
            continue
        row = {"family": family, "layer": layer, "config": config_, "lines": source.count("\n"),
               "includes": include_lines(source)}
        baseline = timed(source, base, args.repeats)
        base_sass = sass(baseline["out"])
        row["cubin_ms"] = baseline["wall_ms"]
        row["cubin_cpu_ms"] = baseline["cpu_ms"]
        row["cubin_bytes"] = len(baseline["out"])
        # Per-phase split from NVRTC's own --time table (one extra compile).
        with tempfile.NamedTemporaryFile(suffix=".csv") as f:
            compile_once(source, base + [f"--time={f.name}"])
            row["phases"] = Path(f.name).read_text()
        ptx_options = [o if not o.startswith("-arch=") else "-arch=compute_90a" for o in base]
        row["ptx_ms"] = timed(source, ptx_options, args.repeats, "ptx")["wall_ms"]
        header = "\n".join(row["includes"]) + "\nextern \"C\" __global__ void k(float* p) { p[0] = 1.0f; }\n"
        row["header_only_ms"] = timed(header, base, args.repeats)["wall_ms"]
        row["empty_ms"] = timed("extern \"C\" __global__ void k(float* p) { p[0] = 1.0f; }\n", base,
                                args.repeats)["wall_ms"]
        for name, options in variants.items():
            try:
                result = timed(source, options, args.repeats)
            except RuntimeError as err:
                row[name] = {"error": str(err)[:500]}
                continue
            same_bytes = result["out"] == baseline["out"]
            row[name] = {"ms": result["wall_ms"], "cpu_ms": result["cpu_ms"],
                         "first_ms": result["first_wall_ms"], "bytes_identical": same_bytes,
                         "sass_identical": same_bytes or sass(result["out"]) == base_sass,
                         "pch_status": result["pch_status"]}
        print(json.dumps({k: v for k, v in row.items() if k not in ("phases",)}), flush=True)
        rows.append(row)
    Path(args.out).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
