"""Issue 6's budget check: does a 4x larger budget find better winners? Tunes a set of
ResNet-50 layers with the config's budget and with 4x it (fresh storage and cache each),
then re-times both winners of each layer side by side, alternating, in one process."""
import json, math, os, statistics, subprocess, sys, time
from pathlib import Path

def main():
    LAYERS = sys.argv[1].split(";")
    out = Path(os.environ.get("OUT", "/tmp/out"))
    budgets = {"1x": (40, 20, 15), "4x": (160, 80, 60)}
    for label, (trials, seconds, patience) in budgets.items():
        folder = Path(f"/tmp/b{label}"); folder.mkdir(parents=True, exist_ok=True)
        problems = "\n".join(f"  - name: {n}\n    spec: \"{s}\"" for n, s in (l.split("=", 1) for l in LAYERS))
        (folder / "c.yaml").write_text(f"problems:\n{problems}\nbudget: {{trials: {trials}, seconds: {seconds}, patience: {patience}}}\n"
                                       "seed: 0\nstorage: studies.journal\ncache: cache.sqlite\nresults: results\n")
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "autoconv", "tune", "c.yaml"], cwd=folder, capture_output=True, text=True)
        print(f"{label}: tune rc={done.returncode} in {time.monotonic() - started:.1f} s", flush=True)
        (out / f"tune_{label}.stderr").write_text(done.stderr)

    from autoconv.cache.winners import WinnerCache
    from autoconv.kernels.families import get_family
    from autoconv.gpu.backend import CupyBackend
    from autoconv.problems.problem import parse_spec

    rows = []
    with CupyBackend(0, seed=0) as backend, WinnerCache("/tmp/b1x/cache.sqlite") as c1, WinnerCache("/tmp/b4x/cache.sqlite") as c4:
        e1 = {e.key.problem_key: e for e in c1.entries()}; e4 = {e.key.problem_key: e for e in c4.entries()}
        for layer in LAYERS:
            name, spec = layer.split("=", 1)
            problem = parse_spec(spec)
            plans = {}
            for label, entries in (("1x", e1), ("4x", e4)):
                entry = entries[problem.key()]
                plans[label] = get_family(entry.family).plan(problem, dict(entry.config), backend.device, 1 << 30)
            times = {"1x": [], "4x": []}
            for _ in range(5):  # alternate, so drift hits both
                for label in ("1x", "4x"):
                    result = backend.evaluate(plans[label])
                    assert result.ok, result.reason
                    times[label].append(result.time_ms)
            m1, m4 = statistics.median(times["1x"]), statistics.median(times["4x"])
            rows.append({"layer": name, "spec": spec, "1x_ms": m1, "4x_ms": m4, "1x_kernel": plans["1x"].name,
                         "4x_kernel": plans["4x"].name, "1x_trials": e1[problem.key()].trials, "4x_trials": e4[problem.key()].trials})
            print(f"{name:24s} 1x {m1:.4f} ms ({plans['1x'].family}, {e1[problem.key()].trials} trials)  "
                  f"4x {m4:.4f} ms ({plans['4x'].family}, {e4[problem.key()].trials} trials)  1x/4x {m1/m4:.3f}", flush=True)
    print(f"geomean 1x/4x: {math.exp(statistics.mean(math.log(r['1x_ms']/r['4x_ms']) for r in rows)):.3f}; "
          f"worst {max(r['1x_ms']/r['4x_ms'] for r in rows):.3f}")
    (out / "budget4x.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
