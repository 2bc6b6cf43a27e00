"""Plant realistic bugs in the templates, one at a time on a scratch copy, and see which CPU
check catches each: the evaluation of the CPU suite (issue 18). Not a test module (pytest
collects test_*.py only); run it by hand, it takes a while:

    python -m tests.emulator.plants [--seed S] [--only NAME ...] [--no-verify]

For each plant it copies the checkout's autoconv/, templates/, search_spaces/, tests/ and
pyproject.toml to a scratch directory, makes one textual change (which must match exactly
once), and runs there, stopping at the first failure:

1. the static checks: tests/emulator/test_inline_ptx.py and tests/kernels/test_render.py;
2. the family's emulated tests: test_family_matches_reference for the plant's family (all
   shapes; the configs are stratified over the family's switches), or for the families of
   FAMILY_MODULES every emulated test of their own module;
3. unless --no-verify, ``autoconv verify --emulate`` of the family on VERIFY_PROBLEM.

It prints a table: plant, class, family, the first test that failed (or "missed"), and
whether verify --emulate failed. The checkout itself is never changed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COPIED = ("autoconv", "templates", "search_spaces", "tests", "pyproject.toml")
#: The problem ``verify --emulate`` checks each planted family on: batch 2, bias, P*Q = 108 (the
#: float4 output path), GEMM_K = 144 (a tail K tile for BK = 32 and 64), asymmetric padding
#: (top != left), C = 16 (GATHER = rsc for BK <= 16). One problem cannot take every path: the
#: CPU suite's shapes do.
VERIFY_PROBLEM = "N=2,C=16,H=9,W=11,K=37,R=3,S=3,pad=2:0:1:2,bias=1"


#: Families of NHWC problems, whose emulated tests (their shapes, and checks of one code path
#: each, such as ping-pong's turns) are a module of their own.
FAMILY_MODULES = {"implicit_gemm_wgmma_f16": "tests/emulator/test_wgmma_f16_family.py",
                  "implicit_gemm_wgmma_tma": "tests/emulator/test_wgmma_tma_family.py"}


@dataclass(frozen=True)
class Plant:
    name: str
    kind: str      # the class of bug
    family: str    # the family whose tests should catch it
    path: str      # the file changed
    old: str       # text that occurs exactly once in it
    new: str


PLANTS = (
    Plant("gather-crs-w-bound", "gather off-by-one (bound)", "implicit_gemm", "templates/implicit_gather.cu.j2",
          "k < GEMM_K && h >= 0 && h < H && w >= 0 && w < W", "k < GEMM_K && h >= 0 && h < H && w >= 0 && w <= W"),
    Plant("gather-pad-left-for-top", "gather index", "implicit_gemm_3xtf32", "templates/implicit_gather.cu.j2",
          "h0[slot] = (pq / Q) * STRIDE_H - PAD_TOP;", "h0[slot] = (pq / Q) * STRIDE_H - PAD_LEFT;"),
    Plant("gather-rsc-plane", "only GATHER=rsc", "implicit_gemm", "templates/implicit_gather.cu.j2",
          "row[slot] = image_offset[slot] + (c0 * H + h) * W + w;",
          "row[slot] = image_offset[slot] + (c0 * W + h) * W + w;"),
    Plant("igemm-missing-barrier", "missing barrier", "implicit_gemm", "templates/implicit_gemm.cu.j2",
          "            store_tile(stage ^ 1);\n        __syncthreads();", "            store_tile(stage ^ 1);"),
    Plant("pipeline-missing-barrier", "missing barrier (cp.async)", "implicit_gemm_mma",
          "templates/cp_async_pipeline.cu.j2",
          "        // computing the tile whose stage the copies below overwrite.\n        __syncthreads();",
          "        // computing the tile whose stage the copies below overwrite."),
    Plant("3xtf32-missing-epilogue-barrier", "missing barrier (epilogue)", "implicit_gemm_3xtf32",
          "templates/implicit_gemm_3xtf32.cu.j2",
          "    __syncthreads();  // the pipeline's shared memory becomes the C tile\n",
          "    // (barrier removed)\n"),
    Plant("igemm-b-tail-guard", "tail guard (GEMM_K % BK)", "implicit_gemm", "templates/implicit_gemm.cu.j2",
          "b_stage[j] = (k < GEMM_K && n < GEMM_N)", "b_stage[j] = (n < GEMM_N)"),
    Plant("im2col-a-tail-guard", "tail guard (GEMM_K % BK)", "im2col_gemm", "templates/im2col_gemm.cu.j2",
          "const bool inside = k < GEMM_K && m < GEMM_M;", "const bool inside = m < GEMM_M;"),
    Plant("direct-channel-chunk-guard", "tail guard (C % C_CHUNK)", "direct", "templates/direct.cu.j2",
          "const bool inside = k < K && c0 + tap / FILTER_TAPS < C;", "const bool inside = k < K;"),
    Plant("direct-q-bound", "output bound off-by-one", "direct", "templates/direct.cu.j2",
          "if (q >= Q)", "if (q > Q)"),
    Plant("im2col-work-bound", "im2col bound off-by-one", "im2col_gemm", "templates/im2col_gemm.cu.j2",
          "if (t >= IM2COL_WORK)", "if (t > IM2COL_WORK)"),
    Plant("mma-ptx-swap", "swapped PTX operands (mma.sync)", "implicit_gemm_mma", "templates/mma_tf32.cuh",
          '"r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2]))',
          '"r"(__float_as_uint(a[2])), "r"(__float_as_uint(a[1]))'),
    # (in m64n128k8 with A in registers: its last outputs, then its first inputs, are unique)
    Plant("wgmma-ptx-swap", "swapped PTX operands (wgmma)", "implicit_gemm_wgmma", "templates/wgmma_tf32.cuh",
          '"+f"(d[62]), "+f"(d[63])\n        : "r"(__float_as_uint(a[0]))',
          '"+f"(d[63]), "+f"(d[62])\n        : "r"(__float_as_uint(a[0]))'),
    Plant("mma-fragment-order", "fragment order in the kernel", "implicit_gemm_mma",
          "templates/implicit_gemm_mma.cu.j2",
          "split_tf32(low.y, a_big[i][1], a_small[i][1]);\n"
          "                split_tf32(high.x, a_big[i][2], a_small[i][2]);",
          "split_tf32(high.x, a_big[i][1], a_small[i][1]);\n"
          "                split_tf32(low.y, a_big[i][2], a_small[i][2]);"),
    Plant("wgmma-pair-fold", "only MMA_OVERLAP=pair", "implicit_gemm_wgmma", "templates/implicit_gemm_wgmma.cu.j2",
          "            wgmma_tf32::wait<0>();\n            fold(chain[1]);",
          "            wgmma_tf32::wait<0>();\n            fold(chain[0]);"),
    Plant("wgmma-descriptor-k-offset", "descriptor offset", "implicit_gemm_wgmma",
          "templates/implicit_gemm_wgmma.cu.j2", "step % 4 * MMA_K * 4;", "step % 4 * MMA_K;"),
    Plant("split-k-reduce-count", "only SPLIT_K>1", "implicit_gemm", "templates/split_k_reduce.cu.j2",
          "split < SPLIT_K; ++split", "split + 1 < SPLIT_K; ++split"),
    Plant("split-k-partials-batch", "only SPLIT_K>1 (N>1)", "implicit_gemm", "templates/implicit_gemm.cu.j2",
          "blockIdx.z * (N * K * P * Q)", "blockIdx.z * (K * P * Q)"),
    Plant("split-k-reduce-bias", "only SPLIT_K>1 with bias", "implicit_gemm_3xtf32", "templates/split_k_reduce.cu.j2",
          "bias[(i / (P * Q)) % K]", "bias[i % K]"),
    Plant("float4-bias-w", "only bias + float4 output", "implicit_gemm_mma", "templates/staged_epilogue.cu.j2",
          "v.x += b, v.y += b, v.z += b, v.w += b;", "v.x += b, v.y += b, v.z += b;"),
    Plant("mma-split-block-buffer", "only SPLIT=block", "implicit_gemm_mma", "templates/implicit_gemm_mma.cu.j2",
          'landed="split_own_a(t % STAGES, t % 2);"', 'landed="split_own_a(t % STAGES, (t + 1) % 2);"'),
    Plant("mma-accumulate-step", "only ACCUMULATE=step", "implicit_gemm_mma", "templates/implicit_gemm_mma.cu.j2",
          "acc[i][j][e] += chain[e];", "acc[i][j][e] = chain[e];"),
    Plant("min-blocks-launch-bounds", "only MIN_BLOCKS>1", "implicit_gemm", "templates/gemm_signature.cu.j2",
          '__launch_bounds__(THREADS{{ ", MIN_BLOCKS" if min_blocks > 1 else "" }})',
          '__launch_bounds__({{ "THREADS / MIN_BLOCKS, MIN_BLOCKS" if min_blocks > 1 else "THREADS" }})'),
    Plant("im2col-input-image-stride", "only COLUMNS=input", "im2col_gemm", "templates/im2col_gemm.cu.j2",
          "(m / (P * Q)) * (C * P * Q) + k * (P * Q)", "(m / (P * Q)) * (K * P * Q) + k * (P * Q)"),
    Plant("direct-weight-vec", "only WEIGHT_VEC=4", "direct", "templates/direct.cu.j2",
          "wt[kk + 1] = v.y; wt[kk + 2] = v.z;", "wt[kk + 1] = v.z; wt[kk + 2] = v.y;"),
    Plant("3xtf32-bias-local-n", "bias index (block-local n)", "implicit_gemm_3xtf32",
          "templates/implicit_gemm_3xtf32.cu.j2", "shared.C[e / BM][e % BM] + __ldg(&bias[n])",
          "shared.C[e / BM][e % BM] + __ldg(&bias[e / BM])"),
    Plant("weights-tap-rsc-channel", "only GATHER=rsc (weights)", "implicit_gemm_wgmma", "templates/weights_tap.cu.j2",
          "const int c = GATHER_RSC ? k % C : k / (R * S);", "const int c = GATHER_RSC ? k % BK : k / (R * S);"),
    Plant("tma-fold-dilation", "only FOLD_WIDTH with dilation", "implicit_gemm_wgmma_tma",
          "templates/implicit_gemm_wgmma_tma.cu.j2", "const int w_in = first_w + s * DILATION_W;",
          "const int w_in = first_w + s;"),
    Plant("tma-pingpong-turn", "mbarrier order (ping-pong)", "implicit_gemm_wgmma_tma",
          "templates/implicit_gemm_wgmma_tma.cu.j2", "if (turn_phase >= 0)", "if (turn_phase >= 1)"),
    Plant("tma-filters-on-m-pixel", "only M_OPERAND=filters (epilogue)", "implicit_gemm_wgmma_tma",
          "templates/implicit_gemm_wgmma_tma.cu.j2", "const int m = t.m0 + 8 * j + 2 * quad + e;",
          "const int m = t.m0 + 8 * j + quad + e;"),
    Plant("tma-transpose-x", "only TRANSPOSE_X (NCHW x copied)", "implicit_gemm_wgmma_tma",
          "templates/implicit_gemm_wgmma_tma.cu.j2",
          "x_nhwc[static_cast<long long>(pixel) * X_CHANNELS + c] = tile[lane][i];",
          "x_nhwc[static_cast<long long>(pixel) * X_CHANNELS + c] = tile[i][lane];"),
    Plant("tma-a-registers-swizzle", "only A_SOURCE=registers (A loads)", "implicit_gemm_wgmma_tma",
          "templates/implicit_gemm_wgmma_tma.cu.j2",
          "fragments[step][i] = box[channel * A_BOX_PIXELS + wg::swizzled_k(channel, pixel0 + 4 * (i % 2))];",
          "fragments[step][i] = box[channel * A_BOX_PIXELS + pixel0 + 4 * (i % 2)];"),
)


def _scratch(plant: Plant, into: Path) -> None:
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, into / name)
    target = into / plant.path
    text = target.read_text()
    count = text.count(plant.old)
    if count != 1:
        raise SystemExit(f"plant {plant.name}: the text to replace occurs {count} times in {plant.path}")
    target.write_text(text.replace(plant.old, plant.new))


def _pytest(where: Path, seed: int, *args: str) -> str | None:
    """The first failing test's id, or None when all pass."""
    env = dict(os.environ, PYTHONPATH=str(where), AUTOCONV_TEST_SEED=str(seed))
    result = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not gpu",
                             *args], cwd=where, env=env, capture_output=True, text=True)
    if result.returncode == 0:
        return None
    if result.returncode == 5:  # nothing collected
        return "(no test selected)"
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", result.stdout, re.M)
    return failed[0].split("::", 1)[-1] if failed else f"(pytest exit {result.returncode})"


def _verify(where: Path, family: str, seed: int) -> bool:
    """Whether ``verify --emulate`` of the family fails (catches the plant)."""
    env = dict(os.environ, PYTHONPATH=str(where))
    result = subprocess.run([sys.executable, "-m", "autoconv", "verify", "--emulate", "--problem", VERIFY_PROBLEM,
                             "--family", family, "--samples", "3", "--seed", str(seed)],
                            cwd=where, env=env, capture_output=True, text=True)
    return result.returncode != 0


def run(plant: Plant, seed: int, verify: bool) -> tuple[str | None, bool | None, float]:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"plant-{plant.name}-") as scratch:
        where = Path(scratch)
        _scratch(plant, where)
        caught = _pytest(where, seed, "tests/emulator/test_inline_ptx.py", "tests/kernels/test_render.py")
        if caught is None:
            own_module = FAMILY_MODULES.get(plant.family)
            caught = (_pytest(where, seed, own_module) if own_module else
                      _pytest(where, seed, "tests/emulator/test_families_emulated.py", "-k",
                              f"test_family_matches_reference and {plant.family}-"))
        verified = _verify(where, plant.family, seed) if verify else None
    return caught, verified, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=None, metavar="NAME")
    parser.add_argument("--no-verify", action="store_true")
    args = parser.parse_args(argv)
    plants = [p for p in PLANTS if args.only is None or p.name in args.only]
    caught_count = verified_count = 0
    print(f"{'plant':34} {'class':32} {'family':22} {'CPU suite':58} verify  seconds", flush=True)
    for plant in plants:
        caught, verified, seconds = run(plant, args.seed, not args.no_verify)
        caught_count += caught is not None
        verified_count += bool(verified)
        verify_text = "-" if verified is None else ("caught" if verified else "missed")
        print(f"{plant.name:34} {plant.kind:32} {plant.family:22} {caught or 'MISSED':58} {verify_text:7} "
              f"{seconds:5.0f}", flush=True)
    print(f"CPU suite caught {caught_count} of {len(plants)}"
          + ("" if args.no_verify else f"; verify --emulate caught {verified_count} of {len(plants)}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
