"""The shared-memory bound of each tf32 winner against its measured share of the tensor peak (CPU only).

A consumer's wgmma m64nNk8 (SS) reads its 64 rows of A and all BN rows of B from shared memory per
k step, and the copies write the stage's BM + BN rows: per k step of 8 float32 values (32 bytes a
row) CONSUMERS x (64 + BN) x 32 bytes read and (BM + BN) x 32 written, for CONSUMERS x BN / 2 clocks
of tensor work at 1024 TF32 multiply-adds per clock per SM. Against 128 bytes per clock of shared
memory, the tensor pipe is at most 128 / (bytes per clock) busy. (Ping-pong: one consumer per tile,
so per clock of one consumer's work.)

    python results/h100/twentyfourth/smem_model.py [results.json]
"""
import json
import sys

from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.problems.problem import parse_spec

SHARED_BYTES_PER_CLOCK = 128


def bytes_per_clock(bm: int, bn: int, consumers: int, pingpong: bool) -> float:
    if pingpong:   # one consumer's 64 x BN tile at a time
        consumers, bm = 1, 64
    read = consumers * (64 + bn) * 32
    written = (bm + bn) * 32
    return (read + written) / (consumers * bn / 2)


def main(path: str) -> None:
    family = get_family("implicit_gemm_wgmma_tma")
    problems = json.load(open(path))["problems"]
    print(f"{'layer':32s} {'tile':>10s} {'B/clk':>6s} {'bound':>6s} {'measured':>8s} {'share of bound':>14s}")
    for entry in problems:
        if entry["family"] != family.name:
            continue
        problem = parse_spec(entry["spec"])
        values = family.space.context(entry["params"], problem, H100)
        pingpong = values["SCHEDULE"] == "pingpong"
        per_clock = bytes_per_clock(values["BM"], values["BN"], values["CONSUMERS"], pingpong)
        bound = min(1.0, SHARED_BYTES_PER_CLOCK / per_clock)
        measured = entry["pct_of_tensor_peak"]["autoconv"] / 100
        tile = f"{values['BM']}x{values['BN']}" + (" pp" if pingpong else "")
        print(f"{entry['name']:32s} {tile:>10s} {per_clock:6.0f} {bound:6.0%} {measured:8.1%} {measured / bound:14.0%}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/h100/resnet50_n32_tf32_nhwc/twentyfourth_session/results.json")
