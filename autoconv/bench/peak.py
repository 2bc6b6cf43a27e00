"""The device's FP32 FMA peak, measured, for "% of peak" in reports.

A datasheet number assumes the boost clock; under a full FMA load the clock settles
lower, so the ceiling a kernel can reach is measured: every thread runs :data:`CHAINS`
independent ``fmaf`` chains (enough independent work to hide the FMA latency of ~4
cycles with a few warps per scheduler), and enough blocks run to fill every SM several
times over. Each FMA counts as two floating-point operations, as in
:attr:`autoconv.problems.problem.ConvProblem.flops`.

Only CuPy is needed; it is imported when :func:`measure_fp32_peak` is called.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy

#: Independent accumulators per thread.
CHAINS = 8
THREADS_PER_BLOCK = 256
#: Resident blocks per SM the grid provides (2048 threads per SM on sm_80/sm_90).
BLOCKS_PER_SM = 8

_SOURCE = r"""
extern "C" __global__ void __launch_bounds__(THREADS) fp32_fma_peak(float* out, float a, float b,
                                                                     int iterations) {
    float acc[CHAINS];
    #pragma unroll
    for (int i = 0; i < CHAINS; ++i) acc[i] = threadIdx.x * 1e-3f + i;
    // Unrolled so the loop's counter and branch cost a few issue slots per 64 FMAs, not
    // per 8 (an SM sub-partition issues one instruction per cycle: overhead is lost FMAs).
    #pragma unroll 8
    for (int it = 0; it < iterations; ++it) {
        #pragma unroll
        for (int i = 0; i < CHAINS; ++i) acc[i] = fmaf(acc[i], a, b);
    }
    float sum = 0.0f;
    #pragma unroll
    for (int i = 0; i < CHAINS; ++i) sum += acc[i];
    // Never true for the a, b the host passes, but the compiler cannot know that: the
    // chains must be computed.
    if (sum == -12345.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
"""


@dataclass(frozen=True)
class PeakResult:
    tflops: float  # median of the samples
    samples_tflops: tuple[float, ...]
    kernel_ms: float
    blocks: int
    threads_per_block: int
    chains: int
    iterations: int


def measure_fp32_peak(*, samples: int = 5, target_ms: float = 20.0) -> PeakResult:
    """Measure the FP32 FMA rate of the current device in TFLOP/s.

    One launch is sized to run about ``target_ms``; after a warm-up launch, ``samples``
    launches are timed with CUDA events and the median is the peak.
    """
    import cupy

    device = cupy.cuda.Device()
    sm_count = device.attributes["MultiProcessorCount"]
    kernel = cupy.RawKernel(_SOURCE, "fp32_fma_peak",
                            options=(f"-DCHAINS={CHAINS}", f"-DTHREADS={THREADS_PER_BLOCK}"))
    blocks = sm_count * BLOCKS_PER_SM
    out = cupy.zeros(blocks * THREADS_PER_BLOCK, dtype=cupy.float32)
    # a < 1 and b small keep every chain finite and far from the sentinel.
    a, b = numpy.float32(0.9999), numpy.float32(1e-4)

    def launch(iterations: int) -> float:
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        kernel((blocks,), (THREADS_PER_BLOCK,), (out, a, b, numpy.int32(iterations)))
        end.record()
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end)

    kernel.compile()  # NVRTC runs here, not inside the first timed launch
    iterations = 4096
    launch(iterations)  # warm-up: module load, clocks ramping
    probe_ms = launch(iterations)
    iterations = max(1024, int(iterations * target_ms / max(probe_ms, 1e-3)))
    launch(iterations)
    flops = 2.0 * CHAINS * iterations * blocks * THREADS_PER_BLOCK
    times = [launch(iterations) for _ in range(samples)]
    rates = tuple(flops / (ms * 1e-3) / 1e12 for ms in times)
    return PeakResult(tflops=statistics.median(rates), samples_tflops=rates,
                      kernel_ms=statistics.median(times), blocks=blocks,
                      threads_per_block=THREADS_PER_BLOCK, chains=CHAINS, iterations=iterations)



# ---- tensor-core peaks, from the datasheets ------------------------------------------------------

#: Dense (no sparsity) tensor-core peaks in TFLOP/s by GPU and precision, from NVIDIA's H100 and
#: H200 datasheets (boost clock; a multiply-add counts as 2): the ceiling the 16-bit and TF32
#: families are measured against. Not measured here: a tensor-core load lowers the clock too, so
#: real kernels top out below these. Keys are substrings of the CUDA device name.
DENSE_TENSOR_PEAKS_TFLOPS: dict[str, dict[str, float]] = {
    "H100 80GB HBM3": {"bf16": 989.4, "fp16": 989.4, "tf32": 494.7},  # H100 SXM5
    "H100 SXM": {"bf16": 989.4, "fp16": 989.4, "tf32": 494.7},
    "H100 PCIe": {"bf16": 756.5, "fp16": 756.5, "tf32": 378.0},
    "H200": {"bf16": 989.4, "fp16": 989.4, "tf32": 494.7},
}


def dense_tensor_peak_tflops(gpu_name: str, precision: str) -> float | None:
    """The datasheet's dense tensor-core peak of ``gpu_name`` in ``precision`` (bf16, fp16,
    tf32), or None for another GPU or precision (fp32 counts against the measured FMA peak)."""
    for key, peaks in DENSE_TENSOR_PEAKS_TFLOPS.items():
        if key in gpu_name:
            return peaks.get(precision)
    return None
