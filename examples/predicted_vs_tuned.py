"""How good is the kernel ``autoconv.conv2d`` predicts for a shape never tuned? Predict from
the cache as it is, tune, then time the prediction beside the tuned winner, in one run.

    python examples/predicted_vs_tuned.py predict examples/inception_v3_layers.yaml --out predicted.json
    autoconv tune examples/inception_v3_layers.yaml
    python examples/predicted_vs_tuned.py time examples/inception_v3_layers.yaml predicted.json --out compare.json

``predict`` (before tuning the config's problems) records, for each problem, the plan the
runtime would run on it untuned (``autoconv.runtime.selection.predicted_plan``, from the
cache the config names), or none. ``time`` (after tuning) compiles, verifies and times, for each
problem, the predicted plan, the tuned winner now in the cache and implicit_gemm's default
(what an untuned shape ran before predictions), with the tuner's GPU worker (CUDA graphs of
back-to-back launches over buffer sets larger than the L2 cache, median of 7), the three in an
order that rotates from problem to problem; prints a table and the geometric means of
tuned time / predicted time and tuned time / default time. Needs a GPU and CuPy.
"""

from __future__ import annotations

import argparse
import json
import sys

from autoconv.cache.entries import CacheKey
from autoconv.cache.winners import WinnerCache
from autoconv.config.load import load_config
from autoconv.gpu import CupyBackend
from autoconv.gpu.device import read_device
from autoconv.gpu.timing import geometric_mean
from autoconv.kernels.families import get_family
from autoconv.runtime.selection import FALLBACK_FAMILY, predicted_plan


def predict(config_file: str, out: str) -> int:
    config = load_config(config_file)
    limits, identity = read_device(config.device)
    with WinnerCache(config.cache) as cache:
        entries = cache.entries()
    rows = []
    for item in config.problems:
        predicted = predicted_plan(item.problem, entries, limits, identity.gpu_name)
        row = {"layer": item.name, "spec": item.problem.spec(), "family": None, "config": None}
        if predicted is not None:
            neighbour, plan = predicted
            row.update(family=plan.family, config=dict(plan.config), neighbour=neighbour.problem.spec(),
                       distance=round(neighbour.distance, 3))
        rows.append(row)
        print(f"{item.name:32s} " + (f"{row['family']} {row['config']} (from {row['neighbour']}, "
                                     f"distance {row['distance']})" if predicted else "no prediction"), flush=True)
    with open(out, "w") as file:
        json.dump({"config_file": config_file, "cache": str(config.cache), "gpu": identity.gpu_name,
                   "cache_entries": len(entries), "rows": rows}, file, indent=1)
    return 0


def time_them(config_file: str, predictions_file: str, out: str) -> int:
    config = load_config(config_file)
    with open(predictions_file) as file:
        predicted = {row["layer"]: row for row in json.load(file)["rows"]}
    rows, tuned_over_predicted, tuned_over_default = [], [], []
    with CupyBackend(config.device, seed=config.seed) as backend, WinnerCache(config.cache) as cache:
        for index, item in enumerate(config.problems):
            problem, guess = item.problem, predicted.get(item.name, {})
            entry = cache.get(CacheKey.for_problem(backend.identity, problem))
            candidates = {
                "predicted": (guess.get("family"), guess.get("config")),
                "tuned": (entry.family, entry.config) if entry is not None else (None, None),
                "default": (FALLBACK_FAMILY, None),
            }
            names = list(candidates)
            names = names[index % 3:] + names[:index % 3]   # rotate the order from problem to problem
            tickets = {}
            for name in names:
                family, params = candidates[name]
                if family is not None:
                    plan = get_family(family).plan(problem, None if params is None else dict(params),
                                                   backend.device, config.workspace_limit_bytes)
                    tickets[name] = (plan, backend.submit(plan))
            row = {"layer": item.name, "spec": problem.spec()}
            for name, (plan, ticket) in tickets.items():
                result = backend.result(ticket)
                row[name] = {"kernel": plan.name, "status": result.status.value, "time_ms": result.time_ms,
                             "error": result.error}
            rows.append(row)
            times = {name: row[name]["time_ms"] for name in tickets if row[name]["time_ms"] is not None}
            if "tuned" in times and "predicted" in times:
                tuned_over_predicted.append(times["tuned"] / times["predicted"])
            if "tuned" in times and "default" in times:
                tuned_over_default.append(times["tuned"] / times["default"])
            print(f"{item.name:32s} " + "  ".join(f"{name} {times[name]:.4f} ms" if name in times
                                                   else f"{name} -" for name in candidates), flush=True)
    summary = {
        "tuned_over_predicted_geomean": geometric_mean(tuned_over_predicted) if tuned_over_predicted else None,
        "tuned_over_predicted_worst": min(tuned_over_predicted, default=None),
        "predicted_layers": len(tuned_over_predicted),
        "tuned_over_default_geomean": geometric_mean(tuned_over_default) if tuned_over_default else None,
        "layers": len(rows),
    }
    print(json.dumps(summary, indent=1))
    with open(out, "w") as file:
        json.dump({"config_file": config_file, "device": backend.device.name, "summary": summary, "rows": rows},
                  file, indent=1)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    first = commands.add_parser("predict", help="record the runtime's predictions from the cache as it is")
    first.add_argument("config")
    first.add_argument("--out", required=True)
    second = commands.add_parser("time", help="time predictions, tuned winners and the default side by side")
    second.add_argument("config")
    second.add_argument("predictions")
    second.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.command == "predict":
        return predict(args.config, args.out)
    return time_them(args.config, args.predictions, args.out)


if __name__ == "__main__":
    sys.exit(main())
