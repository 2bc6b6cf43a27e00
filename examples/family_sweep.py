"""Verify and time chosen configurations of one kernel family beside cuDNN, in one run.

    python examples/family_sweep.py examples/resnet50.yaml --family implicit_gemm_wgmma \\
        --layers layer2.1.conv2,layer3.1.conv2 --configs '[{}, {"BN": 64, "WGN": 64}]' \\
        --out sweep.json

With --base results.json (a bench run's), each layer's tuned configuration there is the base
that --configs changes, instead of the family's default.

For kernel work, where a tuning run would hide which change did what: each entry of
--configs overrides the family's default configuration for the layer (the default, or the
valid point nearest to it); a configuration invalid for a layer is reported and skipped.
Every configuration is compiled (NVRTC), verified against the float64 reference and timed
by the tuner's GPU worker (a separate process, so a faulting kernel costs one result, not
the run): a CUDA graph of back-to-back launches over rotating buffer sets larger than the
L2 cache, median of 7. Then cuDNN's fastest plan in the problem's precision (strict FP32 for
fp32, TF32 for tf32; all engine plans built, verified and timed the same way) is timed in this
process, per layer. Prints a table and
writes every result to --out (JSON). Needs a GPU, CuPy and the cuDNN frontend.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from autoconv.bench.baseline import find_best_plan
from autoconv.bench.results import CUDNN_MODES
from autoconv.config.load import load_config
from autoconv.errors import SearchSpaceError
from autoconv.gpu import CupyBackend
from autoconv.gpu.timing import geometric_mean
from autoconv.kernels.families import get_family


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", help="a tune config (its problems are the layers)")
    parser.add_argument("--family", required=True)
    parser.add_argument("--configs", default="[{}]",
                        help="JSON list of overrides of the family's default configuration")
    parser.add_argument("--layers", default="",
                        help="comma-separated layer names or name suffixes (default: every problem)")
    parser.add_argument("--base", help="a results.json (autoconv bench): each layer's configuration there, "
                        "where it is of --family, replaces the family's default as the base of --configs")
    parser.add_argument("--out", help="write the results here (JSON)")
    return parser.parse_args(argv)


def chosen_layers(problems, names: str):
    if not names:
        return list(problems)
    wanted = [name.strip() for name in names.split(",") if name.strip()]

    def called(problem, name: str) -> bool:
        return problem.name == name or problem.name.endswith("." + name)

    chosen = [p for p in problems if any(called(p, w) for w in wanted)]
    missing = [w for w in wanted if not any(called(p, w) for p in problems)]
    if missing:
        raise SystemExit(f"--layers: no problem called {', '.join(missing)} in the config")
    return chosen


def main(argv=None) -> int:
    args = parse_args(argv)
    config = load_config(args.config)
    family = get_family(args.family)
    overrides = json.loads(args.configs)
    layers = chosen_layers(config.problems, args.layers)
    bases = base_configs(args.base, args.family) if args.base else {}
    rows, ratios = [], {}
    started = time.perf_counter()
    with CupyBackend(config.device, seed=config.seed) as backend:
        for item in layers:
            problem = item.problem
            default = family.space.default_config(problem, backend.device, config.workspace_limit_bytes)
            # a base from results of older code lacks the parameters added since: the default's
            default = {**default, **bases.get(item.name, {})}
            tickets = []
            for override in overrides:
                candidate = {**default, **override}
                try:
                    plan = family.plan(problem, candidate, backend.device, config.workspace_limit_bytes)
                except SearchSpaceError as err:
                    rows.append({"layer": item.name, "config": candidate, "status": "invalid",
                                 "reason": str(err).splitlines()[-1].strip()})
                    continue
                tickets.append((candidate, backend.submit(plan)))
            results = [(candidate, backend.result(ticket)) for candidate, ticket in tickets]
            mode = CUDNN_MODES[problem.precision]   # strict against fp32, TF32 against tf32
            cudnn = find_best_plan(problem, mode, seed=config.seed)
            for candidate, result in results:
                ok = result.time_ms is not None
                row = {"layer": item.name, "config": candidate, "status": result.status.value,
                       "time_ms": result.time_ms, "tflops": result.tflops, "error": result.error,
                       "registers": result.registers, "cudnn_ms": cudnn.time_ms, "cudnn_plan": cudnn.plan_name,
                       "speedup": cudnn.time_ms / result.time_ms if ok else None,
                       "reason": "" if ok else result.reason.splitlines()[0][:200]}
                rows.append(row)
                if ok:
                    key = json.dumps(override_of(candidate, default), sort_keys=True)
                    ratios.setdefault(key, []).append(row["speedup"])
            print(f"{item.name}: cuDNN {mode} {cudnn.time_ms:.4f} ms ({cudnn.plan_name})", flush=True)
            for row in rows:
                if row["layer"] == item.name:
                    print("   " + format_row(row, default), flush=True)
    print("\nspeedup over cuDNN in the problems' precision by configuration (geometric mean over the layers it "
          f"ran on), {time.perf_counter() - started:.0f} s:")
    for key, values in sorted(ratios.items(), key=lambda kv: -geometric_mean(kv[1])):
        print(f"  {geometric_mean(values):.3f}x over {len(values)} layers  {key}")
    if args.out:
        with open(args.out, "w") as out:
            json.dump({"family": args.family, "config_file": args.config, "overrides": overrides,
                       "device": backend.device.name, "rows": rows}, out, indent=1)
    return 0


def base_configs(path: str, family: str) -> dict[str, dict]:
    """Each problem's tuned configuration in a bench results file, where ``family`` won."""
    with open(path) as file:
        problems = json.load(file)["problems"]
    return {entry["name"]: entry["params"] for entry in problems if entry.get("family") == family}


def override_of(candidate, default):
    return {k: v for k, v in candidate.items() if default.get(k) != v}


def format_row(row, default) -> str:
    changed = json.dumps(override_of(row["config"], default)) or "{}"
    if row.get("time_ms") is None:
        return f"{row['status']:>10s}  {changed}  {row.get('reason', '')}"
    return (f"{row['time_ms']:.4f} ms {row['tflops']:6.2f} TF/s  x{row['speedup']:.3f}  err {row['error']:.1e}  "
            f"regs {row['registers']}  {changed}")


if __name__ == "__main__":
    sys.exit(main())
