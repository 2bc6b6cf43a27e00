"""Is cuDNN's lead on small layers a fixed cost per kernel that its calls hide from each other?

The twenty-second session's bf16 layers below 1.0x are 1x1 layers of 9-18 us, each 1.0-1.3 us
behind cuDNN's plan (results/h100/twentysecond), and the tensor-map prefetch changed nothing
(../tma_prefetch). The bench times each side as back-to-back calls in one CUDA graph; a library
whose kernels launch with programmatic dependent launch (PDL: `griddepcontrol`) starts call i+1's
blocks while call i drains, which back-to-back replays credit and a network (a conv after a
batch-norm kernel) would not. This probe times, per layer, each side's calls back-to-back (the
bench's method) and with a one-thread kernel between consecutive calls (a separator that never
triggers its dependents early), and the separators alone, alternating, 5 rounds, medians:
    gap(side) = time(side + separator) - time(side) - time(separator)
A side whose calls overlap each other loses that overlap with separators: its gap is larger.
It also captures two calls of each side and prints the graph's edges' types (programmatic or
not) where cuda.bindings can read them.
    python3 probe.py CONFIG RESULTS_JSON OUT.json
"""
import json
import math
import statistics
import sys

import cupy
import numpy

from autoconv.bench.baseline import OperandSets
from autoconv.bench.cudnn import CudnnConv
from autoconv.gpu.compiler import compile_source
from autoconv.gpu.device import read_device
from autoconv.gpu.kernels import LoadedPlan
from autoconv.gpu.timing import time_calls
from autoconv.kernels.families import get_family
from autoconv.problems.config import load_config
from autoconv.verify.reference import random_inputs

SEPARATOR = cupy.RawKernel(r'''
extern "C" __global__ void separator(int* flag) { flag[0] += 1; }
''', "separator")


def graph_edges(enqueue):
    """The edge types of a graph of two captured calls, as text (or why they cannot be read)."""
    try:
        from cuda.bindings import runtime as rt
    except ImportError as err:
        return f"no cuda.bindings ({err})"
    stream = cupy.cuda.Stream(non_blocking=True)
    try:
        with stream:
            stream.begin_capture()
            enqueue(0)
            enqueue(1)
            graph = stream.end_capture()
        handle = graph._graph if hasattr(graph, "_graph") else None
        if handle is None:
            return "cupy's Graph exposes no handle"
        err, nodes, count = rt.cudaGraphGetNodes(handle, 0)
        err, nodes, count = rt.cudaGraphGetNodes(handle, count)
        kinds = []
        for node in nodes[:count]:
            err, kind = rt.cudaGraphNodeGetType(node)
            kinds.append(str(kind).split(".")[-1])
        result = rt.cudaGraphGetEdges(handle, 0)
        n = result[-1]
        result = rt.cudaGraphGetEdges(handle, n)
        data = result[3] if len(result) > 4 else None
        types = [str(getattr(d, "type", d)) for d in (data or [])]
        return f"nodes {kinds}; {n} edges; edge data {types}"
    except Exception as err:  # a probe: report, do not stop
        return f"could not read the graph: {type(err).__name__}: {err}"


def main():
    config_file, results_file, out = sys.argv[1:4]
    config = load_config(config_file)
    committed = {p["spec"]: p for p in json.load(open(results_file))["problems"]}
    device, _ = read_device(0)
    flag = cupy.zeros(1, dtype=cupy.int32)
    separate = lambda: SEPARATOR((1,), (1,), (flag,))  # noqa: E731
    rows = []
    for item in config.problems:
        problem = item.problem
        entry = committed[problem.spec()]
        if entry["family"] != "implicit_gemm_wgmma_tma":
            print(f"{item.name:30s} skipped: {entry['family']}", flush=True)
            continue
        plan = get_family(entry["family"]).plan(problem, dict(entry["params"]), device, config.workspace_limit_bytes)
        compiled = compile_source(plan.source, device.arch, plan.name)
        assert compiled.ok, compiled.reason()
        loaded = LoadedPlan(plan, compiled.cubin)
        workspace = cupy.empty(plan.workspace_elements, dtype=cupy.float32) if plan.workspace_bytes else None
        operands = OperandSets(problem, random_inputs(problem, numpy.random.default_rng(0)),
                               l2_bytes=device.l2_bytes, seed=1)
        conv = CudnnConv(problem, entry["cudnn_mode"], entry["cudnn_plan"])

        def ours(i):
            buffers = operands.arrays(i)
            if workspace is not None:
                buffers = {**buffers, "workspace": workspace}
            loaded.launch(buffers)

        def cudnn(i):
            conv(**operands.pointers(i))

        sides = {"ours": ours, "cudnn": cudnn}
        timers = {"separator": lambda i: separate()}
        for name, enqueue in sides.items():
            timers[name] = enqueue
            timers[name + "+sep"] = lambda i, enqueue=enqueue: (separate(), enqueue(i))
        times = {name: [] for name in timers}
        for r in range(5):
            order = list(timers)
            order = order[r % len(order):] + order[:r % len(order)]
            for name in order:
                times[name].append(time_calls(timers[name], operands.count).median_ms * 1e3)
        us = {name: statistics.median(v) for name, v in times.items()}
        gaps = {side: us[side + "+sep"] - us[side] - us["separator"] for side in sides}
        row = {"layer": item.name, "count": item.count, "us": us, "gap_us": gaps,
               "cudnn_plan": conv.plan_name, "exact_plan": conv.exact,
               "edges": {side: graph_edges(enqueue) for side, enqueue in sides.items()}}
        rows.append(row)
        print(f"{item.name:30s} ours {us['ours']:6.2f} cudnn {us['cudnn']:6.2f} sep {us['separator']:5.2f} | "
              f"+sep ours {us['ours+sep']:6.2f} cudnn {us['cudnn+sep']:6.2f} | gap ours {gaps['ours']:5.2f} "
              f"cudnn {gaps['cudnn']:5.2f} | ratio b2b {us['cudnn'] / us['ours']:.3f} "
              f"separated {(us['cudnn+sep'] - us['separator']) / (us['ours+sep'] - us['separator']):.3f}",
              flush=True)
        if len(rows) == 1:
            print("  edges:", row["edges"], flush=True)
    def geo(values):
        return math.exp(sum(map(math.log, values)) / len(values))
    b2b = geo([r["us"]["cudnn"] / r["us"]["ours"] for r in rows])
    sep = geo([(r["us"]["cudnn+sep"] - r["us"]["separator"]) / (r["us"]["ours+sep"] - r["us"]["separator"])
               for r in rows])
    print(f"geomean cudnn/ours back-to-back {b2b:.4f}; with separators (their own time taken out) {sep:.4f}",
          flush=True)
    json.dump({"rows": rows, "geomean_back_to_back": b2b, "geomean_separated": sep}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
