"""Do our kernels and cuDNN's run at the same SM clock when their calls run back-to-back?

Under ncu (one launch each, ../ncu_bf16_losers) our winner and cuDNN's plan (cuBLAS's nvjet
kernels) take the same cycles on bf16 layer4.0.conv1 (13.76 against 13.63 us, ~1.75 GHz both),
but back-to-back in the bench's CUDA graphs ours is 9% slower (13.84 against 12.61 us, ../pdl_probe);
ours also executes 2x the instructions. If the graphs' sustained load holds the GPU at its power
limit, the side that spends more energy per call runs at a lower clock. This probe replays each
side's graph of back-to-back calls (the bench's: rotating operand sets, ~4 ms a replay) for
~0.4 s while a thread samples NVML's SM clock and power every 5 ms; sides alternate, 3 rounds;
medians. Per side: us per call, MHz, W, and cycles per call (us x MHz).
    python3 probe.py CONFIG RESULTS_JSON OUT.json
"""
import json
import statistics
import sys
import threading
import time

import cupy
import numpy
import pynvml

from autoconv.bench.baseline import OperandSets
from autoconv.bench.cudnn import CudnnConv
from autoconv.gpu.compiler import compile_source
from autoconv.gpu.device import read_device
from autoconv.gpu.kernels import LoadedPlan
from autoconv.gpu.timing import _calls_per_replay, _capture, _elapsed_ms
from autoconv.kernels.families import get_family
from autoconv.problems.config import load_config
from autoconv.verify.reference import random_inputs

LAYERS = ("resnet50.layer4.0.conv1", "resnet50.layer3.1.conv1", "resnet50.layer4.0.conv3",
          "resnet50.layer3.0.conv3", "resnet50.layer2.1.conv2", "resnet50.layer2.0.downsample.0")


def sampled(run, seconds, handle):
    """Replays `run` for about `seconds`; NVML's SM clock (MHz) and power (W) every 5 ms meanwhile."""
    clocks, watts, stop = [], [], threading.Event()

    def sample():
        while not stop.is_set():
            clocks.append(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
            watts.append(pynvml.nvmlDeviceGetPowerUsage(handle) / 1000)
            time.sleep(0.005)

    thread = threading.Thread(target=sample)
    thread.start()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        run()
        cupy.cuda.get_current_stream().synchronize()
    stop.set()
    thread.join()
    return statistics.median(clocks[len(clocks) // 4:]), statistics.median(watts[len(watts) // 4:])


def main():
    config_file, results_file, out = sys.argv[1:4]
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    config = load_config(config_file)
    committed = {p["spec"]: p for p in json.load(open(results_file))["problems"]}
    device, _ = read_device(0)
    rows = []
    for item in config.problems:
        if item.name not in LAYERS:
            continue
        problem = item.problem
        entry = committed[problem.spec()]
        plan = get_family(entry["family"]).plan(problem, dict(entry["params"]), device, config.workspace_limit_bytes)
        compiled = compile_source(plan.source, device.arch, plan.name)
        assert compiled.ok, compiled.reason()
        loaded = LoadedPlan(plan, compiled.cubin)
        operands = OperandSets(problem, random_inputs(problem, numpy.random.default_rng(0)),
                               l2_bytes=device.l2_bytes, seed=1)
        conv = CudnnConv(problem, entry["cudnn_mode"], entry["cudnn_plan"])
        sides = {"ours": lambda i: loaded.launch(operands.arrays(i)),
                 "cudnn": lambda i: conv(**operands.pointers(i))}
        stream = cupy.cuda.Stream(non_blocking=True)
        graphs = {}
        with stream:
            for name, enqueue in sides.items():
                for i in range(operands.count):
                    enqueue(i)
                stream.synchronize()
                calls = _calls_per_replay(_elapsed_ms(stream, lambda: enqueue(0)), 4.0, operands.count)
                graph = _capture(stream, enqueue, calls, operands.count)
                graph.upload(stream)
                graphs[name] = (graph, calls)
            results = {name: {"us": [], "mhz": [], "w": []} for name in sides}
            for r in range(3):
                for name in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
                    graph, calls = graphs[name]
                    mhz, w = sampled(lambda: graph.launch(stream), 0.4, handle)
                    us = _elapsed_ms(stream, lambda: graph.launch(stream)) / calls * 1e3
                    results[name]["us"].append(us)
                    results[name]["mhz"].append(mhz)
                    results[name]["w"].append(w)
        med = {name: {k: statistics.median(v) for k, v in res.items()} for name, res in results.items()}
        for name in med:
            med[name]["kcycles"] = med[name]["us"] * med[name]["mhz"] / 1e3
        rows.append({"layer": item.name, "cudnn_plan": conv.plan_name, "median": med, "rounds": results})
        print(f"{item.name:30s} " + " | ".join(
            f"{name} {m['us']:6.2f} us {m['mhz']:5.0f} MHz {m['w']:4.0f} W {m['kcycles']:5.1f} kcycles"
            for name, m in med.items()), flush=True)
    json.dump({"rows": rows}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
