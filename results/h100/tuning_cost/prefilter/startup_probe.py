"""Where a tuning worker's first seconds go (issue 16's start-up): the GPU worker's start, the
first candidates through a cold compile pool against a warm one, a history journal's load.
    python3 startup_probe.py JOURNAL"""
import sys, time
if __name__ == "__main__":
    t = time.perf_counter()
    from autoconv.gpu.backend import CupyBackend
    from autoconv.kernels.families import get_family
    from autoconv.problems.problem import parse_spec
    from autoconv.search.points import sample_valid
    from autoconv.search.storage import make_storage
    print(f"imports {time.perf_counter() - t:.2f} s", flush=True)
    t = time.perf_counter(); make_storage(sys.argv[1]); print(f"history journal load {time.perf_counter() - t:.2f} s", flush=True)
    problem = parse_spec("N=8,C=128,H=56,W=56,K=256,R=3,S=3,stride=1,pad=1,dilation=1,bias=1")
    t = time.perf_counter()
    with CupyBackend(0, seed=0, compile_workers=15) as backend:
        print(f"GPU worker started {time.perf_counter() - t:.2f} s", flush=True)
        configs = sample_valid("implicit_gemm_wgmma", problem, backend.device, 1 << 30, 30, seed=1)
        plans = [get_family("implicit_gemm_wgmma").plan(problem, c, backend.device, 1 << 30) for c in configs]
        for label, batch in (("cold pool", plans[:15]), ("warm pool", plans[15:30])):
            t = time.perf_counter()
            tickets = [backend.submit(p, screening=True) for p in batch]
            results = [backend.result(x) for x in tickets]
            print(f"{label}: {len(batch)} candidates in {time.perf_counter() - t:.2f} s, compile_s median "
                  f"{sorted(r.compile_s for r in results)[len(results) // 2]:.2f}, statuses "
                  f"{sorted({r.status.value for r in results})}", flush=True)
