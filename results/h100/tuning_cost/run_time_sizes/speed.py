"""Run-time sizes against compiled-in sizes, implicit_gemm_wgmma, the ResNet-50 layers at batch 32:
each layer's committed winner (fp32 and tf32) and the family default, both builds of each compiled
by NVRTC, timed alternately (compiled-in, run-time, run-time, compiled-in) with autoconv's timer
(FULL effort: graph replays over buffer sets > 2x L2), outputs compared bit for bit."""
import json, statistics, sys, time
from concurrent.futures import ProcessPoolExecutor

import cupy, numpy

from autoconv.gpu.compiler import compile_source
from autoconv.gpu.device import read_device
from autoconv.gpu.kernels import LoadedPlan
from autoconv.gpu.memory import timing_set_bytes
from autoconv.gpu.timing import FULL, buffer_sets_for, time_calls
from autoconv.kernels.families import get_family
from autoconv.problems.problem import parse_spec

limits, _ = read_device(0)
family = get_family("implicit_gemm_wgmma")
cases = []
for path in ("results/h100/resnet50_n32/results.json", "results/h100/resnet50_n32_tf32/results.json"):
    for p in json.load(open(path))["problems"]:
        problem = parse_spec(p["spec"])
        configs = {"winner": p["params"]}
        try:
            configs["default"] = family.space.default_config(problem, limits)
        except Exception:
            pass
        for kind, config in configs.items():
            if kind == "default" and config == configs["winner"]:
                continue
            cases.append((p["name"], problem, kind, dict(config)))
plans = []
for name, problem, kind, config in cases:
    ct = family.plan(problem, config, limits)
    rt = family.plan(problem, config, limits, run_time_sizes=True)
    plans.append((name, problem, kind, ct, rt))
sources = {}
for *_, ct, rt in plans:
    sources[ct.source_hash] = ct
    sources[rt.source_hash] = rt
print(f"{len(plans)} cases, {len(sources)} sources", flush=True)
t0 = time.time()
with ProcessPoolExecutor(15) as pool:
    futures = {h: pool.submit(compile_source, p.source, limits.arch, p.name) for h, p in sources.items()}
    compiled = {h: f.result() for h, f in futures.items()}
print(f"compiled in {time.time() - t0:.1f} s", flush=True)
cpu = {"ct": [], "rt": []}
for *_, ct, rt in plans:
    cpu["ct"].append(compiled[ct.source_hash].cpu_seconds)
print("compile CPU-s: compiled-in sum %.1f over %d sources, run-time sum %.1f over %d sources" % (
    sum(compiled[p.source_hash].cpu_seconds for p in {ct.source_hash: ct for *_, ct, rt in plans}.values()),
    len({ct.source_hash for *_, ct, rt in plans}),
    sum(compiled[p.source_hash].cpu_seconds for p in {rt.source_hash: rt for *_, ct, rt in plans}.values()),
    len({rt.source_hash for *_, ct, rt in plans})), flush=True)
rows = []
for name, problem, kind, ct, rt in plans:
    if not (compiled[ct.source_hash].ok and compiled[rt.source_hash].ok):
        print("COMPILE FAIL", name, kind, compiled[ct.source_hash].reason()[:300], compiled[rt.source_hash].reason()[:300])
        continue
    loaded = {"ct": LoadedPlan(ct, compiled[ct.source_hash].cubin), "rt": LoadedPlan(rt, compiled[rt.source_hash].cubin)}
    regs = {k: v.resources_of(v.plan.name).registers for k, v in loaded.items()}
    per_set = timing_set_bytes(problem) + ct.workspace_bytes
    sets = buffer_sets_for(per_set, limits.l2_bytes)
    rng = numpy.random.default_rng(0)
    buffers = []
    for i in range(sets):
        b = {"x": cupy.asarray(rng.uniform(-1, 1, problem.input_shape).astype(numpy.float32)),
             "w": cupy.asarray(rng.uniform(-1, 1, problem.weight_shape).astype(numpy.float32)),
             "y": cupy.empty(problem.output_shape, numpy.float32)}
        if ct.workspace_bytes:
            b["workspace"] = cupy.empty(ct.workspace_elements, numpy.float32)
        buffers.append(b)
    outs = {}
    for k in ("ct", "rt"):
        loaded[k].launch(buffers[0]); cupy.cuda.runtime.deviceSynchronize()
        outs[k] = cupy.asnumpy(buffers[0]["y"])
    same = bool(numpy.array_equal(outs["ct"], outs["rt"]))
    times = {"ct": [], "rt": []}
    for k in ("ct", "rt", "rt", "ct"):
        t = time_calls(lambda i, L=loaded[k]: L.launch(buffers[i]), sets)
        times[k].append(t.median_ms)
    ct_ms, rt_ms = statistics.mean(times["ct"]), statistics.mean(times["rt"])
    row = dict(layer=name, precision=problem.precision, kind=kind, config=ct.config, ct_ms=times["ct"], rt_ms=times["rt"],
               ratio=rt_ms / ct_ms, same_output=same, regs=regs,
               ct_cpu_s=compiled[ct.source_hash].cpu_seconds, rt_cpu_s=compiled[rt.source_hash].cpu_seconds)
    rows.append(row)
    print(f"{name:32s} {problem.precision:4s} {kind:7s} ct {ct_ms:.4f} rt {rt_ms:.4f} ratio {rt_ms/ct_ms:.4f} same {same} regs {regs}", flush=True)
    del buffers, loaded
    cupy.get_default_memory_pool().free_all_blocks()
json.dump(rows, open(sys.argv[1], "w"), indent=1)
for prec in ("fp32", "tf32"):
    for kind in ("winner", "default"):
        r = [x["ratio"] for x in rows if x["precision"] == prec and x["kind"] == kind]
        if r:
            g = numpy.exp(numpy.mean(numpy.log(r)))
            print(f"{prec} {kind}: n={len(r)} geomean rt/ct {g:.4f} min {min(r):.4f} max {max(r):.4f}")
print("all outputs identical:", all(x["same_output"] for x in rows))
