"""torchvision ResNet-50 forward (eval) with every conv on autoconv, against PyTorch, end to end.

    python results/h100/resnet50_e2e/e2e.py --batches 32,1 --modes eager,cuda_graph,compile \
        --out results/h100/resnet50_e2e/results.json

Three variants of one model (random weights, BatchNorm statistics from three training-mode
passes on random data, so that eval mode normalises realistically):

- ``autoconv``: ``autoconv.torch.convert(model, precision="fp32")``; convs at float32 accuracy (the cached
  winners, 3xTF32 or FP32 SIMT), everything else PyTorch with TF32 off;
- ``torch_strict``: PyTorch eager with cuDNN strict FP32 (``allow_tf32 = False``);
- ``torch_tf32``: PyTorch's default (cuDNN convolutions in TF32).

Modes: ``eager`` (``torch.no_grad()``), ``cuda_graph`` (each variant's forward captured
with ``torch.cuda.graph`` after a warm-up on a side stream, then replayed), ``compile``
(``torch.compile(fullgraph=True, dynamic=False)`` of each variant, Inductor, warmed up).
Timing: ``--iters`` forwards back to back, one synchronisation, wall time per forward;
the variants alternate within a round, the starting variant rotates every round, and the
median over ``--rounds`` rounds is reported. Errors: relative L2 norm of the logits
against a float64 forward of the same model and input.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
import warnings
from pathlib import Path

import torch
import torchvision

import autoconv
import autoconv.torch as ac

VARIANTS = ("autoconv", "torch_strict", "torch_tf32")


def set_precision(variant: str) -> None:
    """TF32 for cuDNN convolutions in torch_tf32 only; matrix products stay strict (PyTorch's default)."""
    torch.backends.cudnn.allow_tf32 = variant == "torch_tf32"
    torch.backends.cuda.matmul.allow_tf32 = False


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    if not torch.isfinite(got).all():
        return float("nan")
    return float((got.double() - want).norm() / want.norm())


def build_models(seed: int):
    torch.manual_seed(seed)
    model = torchvision.models.resnet50(weights=None).cuda()
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(16, 3, 224, 224, device="cuda"))
    model.eval()
    converted, report = ac.convert(model, precision="fp32")  # (not PyTorch's flag: float32 accuracy)
    reference = copy.deepcopy(model).double()
    return {"autoconv": converted, "torch_strict": model, "torch_tf32": copy.deepcopy(model)}, reference, report


def runner(mode: str, variant: str, model, x: torch.Tensor):
    """A zero-argument callable running one forward of ``variant`` in ``mode``, warmed up."""
    set_precision(variant)
    if mode == "eager":
        def forward():
            with torch.no_grad():
                return model(x)
    elif mode == "compile":
        compiled = torch.compile(model, fullgraph=True, dynamic=False)

        def forward():
            with torch.no_grad():
                return compiled(x)
    elif mode == "cuda_graph":
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream), torch.no_grad():
            for _ in range(3):
                model(x)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph), torch.no_grad():
            static_output = model(x)

        def forward():
            graph.replay()
            return static_output
    else:
        raise ValueError(mode)
    for _ in range(3):
        forward()
    torch.cuda.synchronize()
    return forward


def errors_over_inputs(models, reference, batch: int, count: int) -> dict[str, list[float]]:
    """Each variant's error on ``count`` more random inputs (eager, no gradient)."""
    errors: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    for index in range(count):
        x = torch.randn(batch, 3, 224, 224, device="cuda", generator=torch.Generator("cuda").manual_seed(1000 + index))
        with torch.no_grad():
            want = reference(x.double())
            for variant in VARIANTS:
                set_precision(variant)
                errors[variant].append(relative_error(models[variant](x), want))
    return errors


def time_forward(forward, iters: int) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        forward()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="32,1")
    parser.add_argument("--modes", default="eager,cuda_graph,compile")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--error-inputs", type=int, default=4, help="more inputs the eager errors are measured on")
    parser.add_argument("--out", required=True, help="results.json to write (existing records are kept)")
    args = parser.parse_args()
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.exists() else {}

    models, reference, report = build_models(args.seed)
    print(report)
    for batch in (int(b) for b in args.batches.split(",")):
        torch.manual_seed(args.seed + batch)
        x = torch.randn(batch, 3, 224, 224, device="cuda")
        with torch.no_grad():
            want = reference(x.double())
        for mode in args.modes.split(","):
            started = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("error", autoconv.runtime.UntunedWarning)  # every conv must be tuned
                forwards = {variant: runner(mode, variant, models[variant], x) for variant in VARIANTS}
            setup_s = time.perf_counter() - started
            record = {}
            for variant, forward in forwards.items():
                set_precision(variant)
                record[f"{variant}_err"] = relative_error(forward(), want)
            if mode == "eager":  # the errors' spread over more inputs
                record["errors_over_inputs"] = errors_over_inputs(models, reference, batch, args.error_inputs)
            samples = {variant: [] for variant in VARIANTS}
            for round_index in range(args.rounds):
                order = VARIANTS[round_index % 3:] + VARIANTS[:round_index % 3]
                for variant in order:
                    set_precision(variant)
                    samples[variant].append(time_forward(forwards[variant], args.iters))
            for variant in VARIANTS:
                record[f"{variant}_ms"] = statistics.median(samples[variant])
                record[f"{variant}_ms_spread"] = [min(samples[variant]), max(samples[variant])]
            record["speedup_vs_strict"] = record["torch_strict_ms"] / record["autoconv_ms"]
            record["speedup_vs_tf32"] = record["torch_tf32_ms"] / record["autoconv_ms"]
            record["setup_s"] = round(setup_s, 1)
            results.setdefault(f"batch{batch}", {})[mode] = record
            print(f"batch {batch:3d} {mode:10s} autoconv {record['autoconv_ms']:7.3f} ms  "
                  f"strict {record['torch_strict_ms']:7.3f} ms  tf32 {record['torch_tf32_ms']:7.3f} ms  "
                  f"-> {record['speedup_vs_strict']:.3f}x strict, {record['speedup_vs_tf32']:.3f}x tf32;  "
                  f"err autoconv {record['autoconv_err']:.2e} strict {record['torch_strict_err']:.2e} "
                  f"tf32 {record['torch_tf32_err']:.2e}  (setup {setup_s:.0f} s)", flush=True)
            del forwards
            torch.cuda.empty_cache()
    kernels = autoconv.runtime.loaded_kernels()
    results["environment"] = {
        "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "torchvision": torchvision.__version__,
        "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
        "driver": _driver_version(), "rounds": args.rounds, "iters": args.iters, "seed": args.seed,
        "converted_convs": len(report.converted), "skipped_convs": report.skipped,
        "kernel_origins": {origin: sum(k["origin"] == origin for k in kernels)
                           for origin in sorted({k["origin"] for k in kernels})},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")


def _driver_version() -> str:
    try:
        import subprocess
        return subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


if __name__ == "__main__":
    main()
