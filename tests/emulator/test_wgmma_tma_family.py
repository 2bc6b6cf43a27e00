"""implicit_gemm_wgmma_tma computes the right convolution for bf16, fp16 and tf32 NHWC problems: its
kernels, run in the CPU emulator (whose tma.cuh model walks the im2col and tiled boxes and whose
mbarrier model hands the stages over) on the awkward shapes of test_families_emulated.py, against
the float64 reference of the same 16-bit inputs, at the formats' tolerance; and on the GPU through
the tuner's worker, where the driver encodes the tensor maps.

The shapes are those of tests/emulator/test_wgmma_f16_family.py (problem_16bit): both formats,
both output types, with and without bias, channel counts that are and are not multiples of 8
(PAD_CHANNELS: x and w padded into the workspace, which the maps then describe) and filter counts
that are and are not (STORE_VEC: 16-byte or one-value stores of y). tf32 shapes (float32 NHWC,
maps of TF32 elements whose copies round the operands) take the same branches with 4-byte values.
sample_configs covers every value of BN, CONSUMERS, SPLIT_K, SCHEDULE (cooperative and ping-pong
consumers), EPILOGUE (staged or direct stores; direct for float32 outputs) and M_OPERAND (pixels or
filters on wgmma's M side) that the shape allows.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from autoconv.emulator.check import sample_configs, verify_plan
from autoconv.errors import SearchSpaceError
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.kernels.tensor_maps import Im2colMap, TiledMap, check_map
from autoconv.problems.problem import parse_spec
from tests.emulator.family_checks import emulated_failures, gpu_failures
from tests.emulator.test_families_emulated import CONFIGS_PER_PROBLEM, PROBLEMS, _describe
from tests.emulator.test_wgmma_f16_family import problem_16bit

FAMILY = get_family("implicit_gemm_wgmma_tma")

#: Beside PROBLEMS (whose filter counts are all odd or 11): filter counts that are multiples of 8,
#: so that y is stored 16 bytes at a time, in both formats and both output types.
VECTOR_STORE_PROBLEMS = (
    "N=2,C=16,H=9,W=11,K=24,R=3,S=3,stride=2,pad=1,bias=1,layout=NHWC,precision=bf16",
    "N=1,C=8,H=6,W=7,K=16,R=2,S=3,stride=1,pad=1:0:1:1,dilation=2x1,layout=NHWC,precision=fp16,out_dtype=float32",
)
#: tf32 (float32 NHWC): 16-byte stores and bias; C = 3 padded to 4 with split-K and one-value
#: stores; C = 40, a second channel block of 8, with dilation, asymmetric padding and ping-pong;
#: C = 3 with 5 taps along w folded into the channels (FOLD_WIDTH), stride 3, dilation 2 and
#: padding 3 and 1 along w: x' reads x's padding as zeros; and ResNet-50's first layer's shape.
TF32_PROBLEMS = (
    "N=2,C=16,H=9,W=11,K=24,R=3,S=3,stride=2,pad=1,bias=1,layout=NHWC,precision=tf32",
    "N=2,C=3,H=12,W=16,K=33,R=7,S=1,stride=2x1,pad=2:6:1:0,bias=1,layout=NHWC,precision=tf32",
    "N=2,C=40,H=7,W=9,K=13,R=3,S=2,stride=1,pad=1:0:1:1,dilation=1x2,layout=NHWC,precision=tf32",
    "N=2,C=3,H=13,W=17,K=24,R=3,S=5,stride=2x3,pad=2:1:3:1,dilation=1x2,bias=1,layout=NHWC,precision=tf32",
    "N=1,C=3,H=20,W=22,K=16,R=7,S=7,stride=2,pad=3,layout=NHWC,precision=tf32",
)
#: Filter counts wide enough for every tile width (BN up to 256 needs GEMM_N >= 128), each with a
#: tail of columns past the last whole tile: 16-bit with 16-byte stores and bias, tf32 with
#: one-value stores.
WIDE_PROBLEMS = (
    "N=1,C=16,H=5,W=6,K=200,R=3,S=3,pad=1,bias=1,layout=NHWC,precision=bf16",
    "N=1,C=8,H=5,W=5,K=197,R=1,S=3,pad=0:0:1:1,layout=NHWC,precision=tf32",
)
#: Strides over 8, which the im2col map cannot walk (FOLD_FILTER: the copy gathers every tap of each
#: output pixel): a ViT's patches (16 x 16, stride 16) of 3 channels in tf32, and 8 channels
#: (whole 16 bytes, copied only for the stride) with padding and dilation in bf16.
FOLDED_FILTER_PROBLEMS = (
    "N=2,C=3,H=35,W=33,K=24,R=16,S=16,stride=16,bias=1,layout=NHWC,precision=tf32",
    "N=2,C=8,H=21,W=30,K=16,R=3,S=2,stride=9x10,pad=1:2:1:0,dilation=2x1,layout=NHWC,precision=bf16",
)
#: tf32 in NCHW (x transposed into the workspace as NHWC, y stored in NCHW): a 3 x 3 filter with
#: stride, padding and bias (x' a transpose, w' copied as KRSC); 1 x 1 filters with stride 2 (x'
#: holds the pixels the filter reads, w read as it is) and with padding 1 (x' holds zero pixels),
#: one with C = 36 (a pitch of 64 bytes pads it: w' copied) and split-K over P*Q = 35 (one value
#: per thread of the reduction) or 16 (float4s); C = 3 with 5 taps along w folded (the padding
#: kernel gathers x' and w' from NCHW and KCRS), C = 3 with a 7 x 1 filter (x' a transpose with a
#: padded channel), and a ViT's patches (every tap folded, stride 16). 1 x 1 filters of unit stride
#: and no padding may also read x as it lies, A in registers (A_SOURCE): C = 40 (a second channel
#: block, partly past C) with bias, and P*Q = 36 (a tile of 64 or more pixels runs past the image's
#: last one).
NCHW_PROBLEMS = (
    "N=2,C=16,H=9,W=11,K=24,R=3,S=3,stride=2,pad=1,bias=1,precision=tf32",
    "N=2,C=40,H=7,W=9,K=13,R=1,S=1,stride=2,bias=1,precision=tf32",
    "N=2,C=36,H=9,W=10,K=40,R=1,S=1,pad=1,bias=1,precision=tf32",
    "N=3,C=36,H=5,W=7,K=21,R=1,S=1,bias=1,precision=tf32",
    "N=2,C=64,H=4,W=4,K=72,R=3,S=3,pad=1,bias=1,precision=tf32",
    "N=2,C=3,H=13,W=17,K=24,R=3,S=5,stride=2x3,pad=2:1:3:1,dilation=1x2,bias=1,precision=tf32",
    "N=2,C=3,H=12,W=16,K=33,R=7,S=1,stride=2x1,pad=2:6:1:0,bias=1,precision=tf32",
    "N=2,C=3,H=35,W=33,K=24,R=16,S=16,stride=16,bias=1,precision=tf32",
    "N=2,C=40,H=8,W=10,K=24,R=1,S=1,bias=1,precision=tf32",
    "N=3,C=72,H=6,W=6,K=40,R=1,S=1,precision=tf32",
)
SHAPES = (list(PROBLEMS) + list(VECTOR_STORE_PROBLEMS) + list(TF32_PROBLEMS) + list(WIDE_PROBLEMS)
          + list(FOLDED_FILTER_PROBLEMS) + list(NCHW_PROBLEMS))


def problem_of(shape: str, seed: int):
    if shape in VECTOR_STORE_PROBLEMS + TF32_PROBLEMS + WIDE_PROBLEMS + FOLDED_FILTER_PROBLEMS + NCHW_PROBLEMS:
        return parse_spec(shape)
    return problem_16bit(shape, seed)


def test_the_shapes_take_every_branch_the_problem_decides(seed):
    taken: dict[str, set] = {}
    for shape in SHAPES:
        problem = problem_of(shape, seed)
        values = FAMILY.space.context(FAMILY.space.default_config(problem, H100), problem, H100)
        for name in ("PAD_CHANNELS", "FOLD_WIDTH", "FOLD_FILTER", "FORMAT_F16", "PRECISION_TF32", "OUTPUT_FLOAT32",
                     "HAS_BIAS", "LAYOUT_NCHW", "COPY_X", "COPY_W", "TRANSPOSE_X"):
            taken.setdefault(name, set()).add(values[name])
        taken.setdefault("STORE_VEC > 1", set()).add(int(values["STORE_VEC"] > 1))
    assert all(values == {0, 1} for values in taken.values()), taken
    sampled = [(problem, config) for problem in (problem_of(shape, seed) for shape in SHAPES)
               for config in sample_configs(FAMILY, problem, CONFIGS_PER_PROBLEM, np.random.default_rng(seed))]
    # every tile width (each its own wgmma asm statement) in some shape's sampled configurations
    widths = {config["BN"] for _, config in sampled}
    assert widths == set(FAMILY.space.params["BN"]), widths
    # pixels and filters on wgmma's M side (the descriptors swapped, the accumulators stored transposed)
    sides = {config["M_OPERAND"] for _, config in sampled}
    assert sides == set(FAMILY.space.params["M_OPERAND"]), sides
    # the derived switches of the producer (w copied once per stage) and of the staged stores (one run)
    derived = [FAMILY.space.context(config, problem, H100) for problem, config in sampled]
    for name in ("REUSE_W", "FLAT_STORES"):
        assert {values[name] for values in derived} == {0, 1}, name
    # NCHW's stores from the accumulators, on either side of wgmma, with and without split-K (whose
    # reduction adds float4s where P*Q allows); the padding kernel's rows of x' and w', or of w' only
    nchw = [values for values in derived if values["LAYOUT_NCHW"]]
    assert {(values["FILTERS_ON_M"], values["SPLIT_K"] > 1) for values in nchw} >= {(0, False), (1, False), (0, True)}
    assert {values["OUT_VEC"] for values in nchw if values["SPLIT_K"] > 1} == {1, 4}
    # (A in registers copies nothing)
    assert {(values["PAD_FIRST_ROW"] > 0, values["PAD_COPY_BYTES"] > 0) for values in nchw
            if not values["A_IN_REGISTERS"]} == {(False, True), (True, True), (True, False)}
    # A in registers (NCHW x read as it lies; its schedules: test_a_in_registers_matches_reference)
    assert {values["A_IN_REGISTERS"] for values in nchw} == {0, 1}


def test_w_is_copied_once_per_stage_only_where_a_stage_always_holds_the_same_box():
    """REUSE_W: where every tile spans all the filters (one column of tiles), there is no split-K,
    and the stages hold whole rounds of the K tiles, stage s always holds K tile s % K_TILES of
    the same filters, so the producer copies w into each stage once (MobileNetV2's 1x1 expansion:
    docs/lab-notes/2026-11-28-mobilenetv2-expansion-reuse-w.md)."""
    expansion = parse_spec("N=64,C=24,H=56,W=56,K=144,R=1,S=1,layout=NHWC,precision=bf16")   # one K tile
    two_k_tiles = expansion.with_(C=72)
    base = {"BN": 192, "CONSUMERS": 2, "STAGES": 3, "SPLIT_K": 1, "SCHEDULE": "cooperative", "EPILOGUE": "staged",
            "M_OPERAND": "pixels", "PAD_PITCH": 16, "A_SOURCE": "shared"}
    for problem, change, reused in ((expansion, {}, 1),
                                    (expansion, {"SCHEDULE": "pingpong"}, 1),
                                    (expansion, {"BN": 128, "STAGES": 4}, 0),   # two columns of tiles
                                    (two_k_tiles, {"STAGES": 3}, 0),            # stage 0 holds K tiles 0, 1, 0...
                                    (two_k_tiles, {"STAGES": 4}, 1)):
        values = FAMILY.space.context({**base, **change}, problem, H100)
        assert values["REUSE_W"] == reused, (problem.C, change)


def test_tiles_of_32_filters_are_offered_only_below_64_filters():
    """BN 32 serves layers of fewer than 64 filters (a tile of 64 would compute zeros past the
    last filter); wider layers keep the space they had without it."""
    for filters, offered in ((32, True), (63, True), (64, False), (96, False)):
        problem = parse_spec(f"N=2,C=16,H=9,W=11,K={filters},R=3,S=3,pad=1,layout=NHWC,precision=tf32")
        widths = {config["BN"] for config in FAMILY.space.points(problem, H100)}
        assert (32 in widths) == offered, (filters, sorted(widths))


def test_the_maps_describe_the_convolution():
    """x's im2col map: NHWC sizes innermost first, the bounding box from the padding and the
    dilated filter, the strides as traversal strides, BM pixels x 64 channels; w's tiled map:
    [K][R*S][C] in boxes of BN filters x 64 channels. With padded channels both describe the
    workspace (w after x)."""
    problem = parse_spec("N=3,C=72,H=11,W=17,K=136,R=3,S=5,stride=2x1,pad=1x2,dilation=1x2,bias=1,"
                         "precision=bf16,layout=NHWC")
    plan = FAMILY.plan(problem, {"BN": 64, "CONSUMERS": 2, "STAGES": 4, "SPLIT_K": 1, "SCHEDULE": "cooperative",
                                 "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16, "A_SOURCE": "shared"})
    x_map, w_map = plan.tensor_maps["x_map"], plan.tensor_maps["w_map"]
    assert x_map == Im2colMap(buffer="x", element="bf16", sizes=(72, 17, 11, 3), lower=(-2, -1),
                              upper=(2 - 2 * 4, 1 - 1 * 2), channels=64, pixels=128, element_strides=(1, 1, 2, 1))
    assert w_map == TiledMap(buffer="w", element="bf16", sizes=(72, 15, 136), box=(64, 1, 64))
    assert x_map.strides == (144, 144 * 17, 144 * 17 * 11) and check_map(x_map) is None and check_map(w_map) is None
    assert plan.launches[0].args == ("x_map", "w_map", "bias", "y")

    config = {"BN": 64, "CONSUMERS": 1, "STAGES": 3, "SPLIT_K": 2,
              "SCHEDULE": "cooperative", "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16,
              "A_SOURCE": "shared"}
    padded = FAMILY.plan(problem.with_(C=3, S=1, dilation=(1, 1)), config)   # one tap along w: padded, not folded
    x_map, w_map = padded.tensor_maps["x_map"], padded.tensor_maps["w_map"]
    assert x_map.buffer == w_map.buffer == "workspace" and x_map.sizes[0] == w_map.sizes[0] == 8
    assert x_map.offset == 0 and w_map.offset == 3 * 11 * 17 * 8 * 2
    assert [launch.args for launch in padded.launches] == [
        ("x", "w", "workspace"), ("x_map", "w_map", "workspace"), ("workspace", "bias", "y")]
    assert padded.workspace_bytes == (3 * 11 * 17 + 136 * 3) * 8 * 2 + 2 * padded.values["GEMM_M"] * 136 * 4

    # S = 5 taps along w folded into the channels: x' is 3 x 11 x Q pixels of 5 * 3 = 15 values
    # (16 with the padding), walked by a 3 x 1 filter with no padding, stride or dilation along w
    folded = FAMILY.plan(problem.with_(C=3), config)
    q = folded.values["Q"]
    x_map, w_map = folded.tensor_maps["x_map"], folded.tensor_maps["w_map"]
    assert folded.values["FOLD_WIDTH"] == 1 and folded.values["K_TILES"] == 3
    assert x_map == Im2colMap(buffer="workspace", element="bf16", sizes=(16, q, 11, 3), lower=(0, -1), upper=(0, -1),
                              channels=64, pixels=64, element_strides=(1, 1, 2, 1))
    assert w_map == TiledMap(buffer="workspace", element="bf16", sizes=(16, 3, 136), box=(64, 1, 64),
                             offset=3 * 11 * q * 16 * 2)

    # stride 9 along h, more than the map walks: every tap folded, x' is the im2col of x (3 x P x Q
    # pixels of 3 * 5 * 72 = 1080 values), walked by a 1 x 1 filter; w' is w, one row per filter
    strided = FAMILY.plan(problem.with_(stride=(9, 1)), config)
    p, q = strided.values["P"], strided.values["Q"]
    x_map, w_map = strided.tensor_maps["x_map"], strided.tensor_maps["w_map"]
    assert strided.values["FOLD_FILTER"] == 1 and strided.values["FOLD_WIDTH"] == 0 and p == 2
    assert strided.values["K_TILES"] == 1080 // 64 + 1
    assert x_map == Im2colMap(buffer="workspace", element="bf16", sizes=(1080, q, p, 3), lower=(0, 0), upper=(0, 0),
                              channels=64, pixels=64, element_strides=(1, 1, 1, 1))
    assert w_map == TiledMap(buffer="workspace", element="bf16", sizes=(1080, 1, 136), box=(64, 1, 64),
                             offset=3 * p * q * 1080 * 2)
    assert strided.workspace_bytes == (3 * p * q + 136) * 1080 * 2 + 2 * strided.values["GEMM_M"] * 136 * 4

    # PAD_PITCH 64 and 128: x' pixels (w' rows) of 15 values padded to 32 and 64 channels, whole
    # 64- and 128-byte rows
    for pitch, channels in ((64, 32), (128, 64)):
        wide = FAMILY.plan(problem.with_(C=3), {**config, "PAD_PITCH": pitch})
        x_map, w_map = wide.tensor_maps["x_map"], wide.tensor_maps["w_map"]
        assert wide.values["X_CHANNELS"] == channels and x_map.sizes == (channels, q, 11, 3)
        assert x_map.strides[0] == pitch and w_map.offset == 3 * 11 * q * pitch

    # ping-pong: each consumer takes whole tiles of 64 rows, so the im2col box is 64 pixels
    pingpong = FAMILY.plan(problem, {"BN": 64, "CONSUMERS": 2, "STAGES": 4, "SPLIT_K": 1, "SCHEDULE": "pingpong",
                                     "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16,
                                     "A_SOURCE": "shared"})
    assert pingpong.tensor_maps["x_map"].pixels == 64 and pingpong.values["BM"] == 64


def test_nchw_maps_describe_the_copies_in_the_workspace():
    """NCHW: x's map describes x' (NHWC) in the workspace; for a 1 x 1 filter x' holds the output
    pixels only (stride and padding already walked: P x Q pixels, a filter with no stride) and w's
    map describes w itself (its KCRS rows are KRSC's); for a 3 x 3 filter w' follows x' there. The
    transpose comes first, one block per 32 pixels x 32 channels of an image."""
    config = {"BN": 64, "CONSUMERS": 2, "STAGES": 4, "SPLIT_K": 1, "SCHEDULE": "cooperative", "EPILOGUE": "direct",
              "M_OPERAND": "pixels", "PAD_PITCH": 16, "A_SOURCE": "shared"}
    pointwise = FAMILY.plan(parse_spec("N=3,C=72,H=11,W=17,K=136,R=1,S=1,stride=2,precision=tf32"), config)
    p, q = pointwise.values["P"], pointwise.values["Q"]
    x_map, w_map = pointwise.tensor_maps["x_map"], pointwise.tensor_maps["w_map"]
    assert x_map == Im2colMap(buffer="workspace", element="tf32", sizes=(72, q, p, 3), lower=(0, 0), upper=(0, 0),
                              channels=32, pixels=128, element_strides=(1, 1, 1, 1))
    assert w_map == TiledMap(buffer="w", element="tf32", sizes=(72, 1, 136), box=(32, 1, 64))
    assert [(launch.kernel.endswith("_transpose_x"), launch.grid, launch.block, launch.args)
            for launch in pointwise.launches][0] == (True, (-(-p * q // 32), 3, 3), (32, 8, 1), ("x", "workspace"))
    assert len(pointwise.launches) == 2 and pointwise.workspace_bytes == 3 * p * q * 72 * 4

    tap = FAMILY.plan(parse_spec("N=3,C=72,H=11,W=17,K=136,R=3,S=3,pad=1,precision=tf32"), config)
    x_map, w_map = tap.tensor_maps["x_map"], tap.tensor_maps["w_map"]
    assert x_map.buffer == "workspace" and x_map.sizes == (72, 17, 11, 3) and x_map.lower == (-1, -1)
    assert w_map == TiledMap(buffer="workspace", element="tf32", sizes=(72, 9, 136), box=(32, 1, 64),
                             offset=3 * 11 * 17 * 72 * 4)
    # w' alone first (not a weights transform that callers skip: they would keep x' with it), then
    # x's transpose
    assert [(launch.kernel.rsplit("_", 2)[-2:], launch.args) for launch in tap.launches[:2]] == [
        (["pad", "channels"], ("x", "w", "workspace")), (["transpose", "x"], ("x", "workspace"))]
    assert tap.launches[0].grid == (-(-136 * 9 * 72 * 4 // 16 // 256), 1, 1)
    assert FAMILY.unsupported_reason(parse_spec("N=1,C=8,H=4,W=4,K=8,R=1,S=1,precision=bf16")) is not None

    # A in registers: no copy at all; x as it lies, [N][C][P*Q], in boxes of 32 pixels x 32
    # channels; a tile's pixels in one image (11 * 16 = 176 pixels: 2 tiles of 128 per image)
    pointwise = parse_spec("N=3,C=72,H=11,W=16,K=136,R=1,S=1,precision=tf32")
    direct = FAMILY.plan(pointwise, {**config, "A_SOURCE": "registers"})
    assert direct.tensor_maps["x_map"] == TiledMap(buffer="x", element="tf32", sizes=(176, 72, 3), box=(32, 32, 1))
    assert direct.tensor_maps["w_map"] == TiledMap(buffer="w", element="tf32", sizes=(72, 1, 136), box=(32, 1, 64))
    assert len(direct.launches) == 1 and direct.workspace_bytes == 0
    assert direct.values["GRID_M"] == 3 * 2 and check_map(direct.tensor_maps["x_map"]) is None
    for refused in ("stride=2", "pad=1", "H=11,W=13", "C=70"):   # (P*Q = 143 and C = 70: not whole 16 bytes)
        spec = "N=3,C=72,H=11,W=16,K=136,R=1,S=1,precision=tf32"
        for change in refused.split(","):
            key = change.split("=")[0] + "="
            spec = ",".join(part for part in spec.split(",") if not part.startswith(key)) + "," + change
        with pytest.raises(SearchSpaceError):
            FAMILY.plan(parse_spec(spec), {**config, "A_SOURCE": "registers"})


def test_tf32_maps_are_32_channels_of_tf32_elements():
    """A tf32 problem's maps: TF32 elements (the copies round x and w), 32 float32 channels per
    128-byte box row; C = 6 (a 3 x 1 filter) is padded to 8 (whole 16 bytes), w after x's 4-byte
    values."""
    problem = parse_spec("N=3,C=72,H=11,W=17,K=136,R=3,S=5,stride=2x1,pad=1x2,dilation=1x2,bias=1,"
                         "precision=tf32,layout=NHWC")
    config = {"BN": 64, "CONSUMERS": 2, "STAGES": 4, "SPLIT_K": 1,
              "SCHEDULE": "cooperative", "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16,
              "A_SOURCE": "shared"}
    plan = FAMILY.plan(problem, config)
    x_map, w_map = plan.tensor_maps["x_map"], plan.tensor_maps["w_map"]
    assert (x_map.element, x_map.channels, x_map.strides[0]) == ("tf32", 32, 72 * 4)
    assert w_map == TiledMap(buffer="w", element="tf32", sizes=(72, 15, 136), box=(32, 1, 64))
    assert plan.values["C_BLOCKS"] == 3 and plan.values["K_TILES"] == 45
    padded = FAMILY.plan(problem.with_(C=6, S=1, dilation=(1, 1)), config)
    x_map, w_map = padded.tensor_maps["x_map"], padded.tensor_maps["w_map"]
    assert x_map.sizes[0] == w_map.sizes[0] == 8 and w_map.offset == 3 * 11 * 17 * 8 * 4


@pytest.mark.slow
def test_tf32_copies_round_the_operands(seed):
    """The tf32 kernel's output is the convolution of the TF32-rounded operands to float32
    accuracy. With maps that copy the float32 bits instead (element f32), the tensor cores drop
    the 13 low bits (they truncate), and the output leaves that model: the check catches a kernel
    whose copies do not round."""
    from autoconv.emulator import emulate_plan
    from autoconv.verify.compare import relative_l2_error
    from autoconv.verify.reference import conv2d_reference, random_inputs
    from tests.helpers import round_mantissa

    problem = parse_spec(TF32_PROBLEMS[2])
    plan = FAMILY.plan(problem, {"BN": 64, "CONSUMERS": 1, "STAGES": 3, "SPLIT_K": 1, "SCHEDULE": "cooperative",
                                 "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16, "A_SOURCE": "shared"})
    x, w, bias = random_inputs(problem, np.random.default_rng(seed))
    # (the copies round ties to even)
    tf32_model = conv2d_reference(problem, round_mantissa(x, 10, "even"), round_mantissa(w, 10, "even"), bias)
    assert relative_l2_error(emulate_plan(plan, x, w, bias), tf32_model) <= 1e-5
    bits_copied = dataclasses.replace(plan, tensor_maps={
        name: dataclasses.replace(tensor_map, element="f32") for name, tensor_map in plan.tensor_maps.items()})
    assert relative_l2_error(emulate_plan(bits_copied, x, w, bias), tf32_model) > 1e-4


def test_a_box_corner_past_the_tensor_maps_range_is_refused():
    """The im2col corners of a 4-d map lie in [-128, 127]: a padding of 130 has no configuration."""
    problem = parse_spec("N=1,C=8,H=4,W=4,K=8,R=1,S=1,pad=130,precision=bf16,layout=NHWC")
    with pytest.raises(SearchSpaceError, match="no valid configuration"):
        FAMILY.space.default_config(problem, H100)


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES)
def test_family_matches_reference(shape, seed):
    failures = emulated_failures(FAMILY, problem_of(shape, seed), seed)
    assert not failures, "\n\n".join(failures)


#: A device of one SM: the persistent grid is one block, which takes every tile in turn. On the
#: H100 the shapes above make fewer tiles than SMs, so each block takes one tile and the paths
#: that only run from a block's second tile on (the producer running into the next tile, the
#: stages' phases going round, ping-pong's turns, REUSE_W's kept boxes) would go unemulated.
ONE_SM = dataclasses.replace(H100, sm_count=1)


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES)
def test_family_matches_reference_when_one_block_takes_every_tile(shape, seed):
    """The sampled configurations of each shape (every switch value it allows first), planned for
    a device of one SM where the space allows them there (the widths fitted to one wave of 132
    SMs do not), in the emulator against the float64 reference. Which of them give the block
    several tiles depends on the draw; the later tiles' paths are covered by design by the
    ping-pong turn test and REUSE_W's test below, and by this one as the draws fall (a w box
    copied into the first stage only failed it on 5 of the 19 shapes)."""
    problem = problem_of(shape, seed)
    plans = []
    for config in sample_configs(FAMILY, problem, CONFIGS_PER_PROBLEM, np.random.default_rng(seed)):
        try:
            plans.append(FAMILY.plan(problem, config, ONE_SM))
        except SearchSpaceError:
            continue
    failures = []
    for index, plan in enumerate(plans):
        check = verify_plan(plan, np.random.default_rng([seed, index]))
        if not check.ok:
            failures.append(_describe(problem, check))
    assert not failures, "\n\n".join(failures)


@pytest.mark.gpu
def test_family_matches_reference_on_the_gpu(seed):
    """The same shapes on the GPU through the tuner's worker (verified against the float64
    reference at the format's tolerance, then timed): every switch value each shape allows."""
    failures, checked = gpu_failures(FAMILY, [problem_of(shape, seed) for shape in SHAPES], seed)
    assert not failures, "\n".join(failures)
    assert checked >= 2 * len(SHAPES)


@pytest.mark.gpu
def test_tma_plans_run_through_the_runtime_launcher(seed):
    """autoconv.conv2d's launch path (runtime.launcher: tensor maps encoded per call into the
    parameter array) gives the right output, with and without padded channels and split-K, and
    again after the buffers move (the maps are encoded anew for new addresses)."""
    from autoconv.gpu.device import read_device
    from autoconv.runtime.selection import _loaded_runner, verify_runner

    limits, _ = read_device(0)
    cases = [("N=2,C=16,H=9,W=11,K=24,R=3,S=3,stride=2,pad=1,bias=1,layout=NHWC,precision=bf16",
              {"BN": 64, "CONSUMERS": 2, "STAGES": 4, "SPLIT_K": 1,
               "SCHEDULE": "pingpong", "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16,
               "A_SOURCE": "shared"}),
             ("N=2,C=3,H=12,W=16,K=33,R=7,S=1,stride=2x1,pad=2:6:1:0,bias=1,layout=NHWC,precision=fp16",
              {"BN": 64, "CONSUMERS": 1, "STAGES": 3, "SPLIT_K": 2,
               "SCHEDULE": "cooperative", "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16,
               "A_SOURCE": "shared"})]
    for spec, config in cases:
        problem = parse_spec(spec)
        runner = _loaded_runner(problem, 0, FAMILY.plan(problem, config, limits), "test", limits)
        for attempt in range(2):   # new buffers, new addresses, maps encoded again
            assert verify_runner(runner, seed + attempt) is None, (spec, config)


@pytest.mark.gpu
def test_runtime_verification_orders_its_fills_before_the_kernels(seed):
    """verify_runner's uploads and NaN fills run on the kernels' stream: ResNet-50's fp16 stem
    (its first kernel folds x's taps into a 38.5 MB workspace) verified with every output NaN
    while the workspace's fill ran on the default stream, which a non-blocking stream is not
    ordered after (docs/lab-notes/2026-11-27-failures-found-by-gpu-tests.md)."""
    from autoconv.gpu.device import read_device
    from autoconv.runtime.selection import _loaded_runner, verify_runner

    limits, _ = read_device(0)
    problem = parse_spec("N=32,C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3,layout=NHWC,precision=fp16")
    plan = FAMILY.plan(problem, {"BN": 64, "CONSUMERS": 3, "STAGES": 4, "SPLIT_K": 1, "SCHEDULE": "cooperative",
                                 "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16,
                                 "A_SOURCE": "shared"}, limits)
    assert plan.values["FOLD_WIDTH"] == 1 and plan.workspace_bytes > 32 * 2 ** 20
    runner = _loaded_runner(problem, 0, plan, "test", limits)
    for attempt in range(3):
        assert verify_runner(runner, seed + attempt) is None


def test_pingpong_consumers_wait_for_their_turn(seed):
    """Ping-pong with tiles of many K tiles: the second consumer's first stage comes rounds after
    the first consumer's, further than an mbarrier's parity tells apart; without the turn order
    (a consumer's main loop starts once the other's has waited for its last stage) it would take
    the other consumer's data for its own. One block (a device of one SM) takes all 3 tiles."""
    problem = parse_spec("N=3,C=256,H=6,W=8,K=64,R=3,S=3,pad=1,layout=NHWC,precision=bf16")
    config = {"BN": 64, "CONSUMERS": 2, "STAGES": 3, "SPLIT_K": 1,
              "SCHEDULE": "pingpong", "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16,
              "A_SOURCE": "shared"}
    plan = FAMILY.plan(problem, config, ONE_SM)
    assert plan.values["K_TILES"] == 36 and plan.values["TILES"] == 3 and plan.values["GRID"] == 1
    check = verify_plan(plan, np.random.default_rng(seed))
    assert check.ok, _describe(problem, check)


@pytest.mark.parametrize("spec, changes", [
    # one and two consumers sharing tiles of 64 and 128 pixels (P*Q = 80: the second tile of each
    # image is mostly past its last pixel), a second channel block partly past C, bias
    ("N=2,C=40,H=8,W=10,K=24,R=1,S=1,bias=1,precision=tf32", {"BN": 64, "CONSUMERS": 1}),
    ("N=3,C=72,H=6,W=6,K=40,R=1,S=1,precision=tf32", {"BN": 64, "CONSUMERS": 2, "STAGES": 4}),
    # ping-pong consumers, and split-K (slices stored NCHW, float4 sums where P*Q allows)
    ("N=2,C=64,H=10,W=14,K=70,R=1,S=1,bias=1,precision=tf32", {"CONSUMERS": 2, "SCHEDULE": "pingpong"}),
    ("N=2,C=100,H=12,W=12,K=130,R=1,S=1,bias=1,precision=tf32",
     {"BN": 128, "SPLIT_K": 2, "EPILOGUE": "staged"}),
    # three K tiles per tile, many tiles per block: the stages go round several times
    ("N=4,C=96,H=8,W=8,K=64,R=1,S=1,precision=tf32", {"BN": 64, "CONSUMERS": 1, "STAGES": 4}),
])
def test_a_in_registers_matches_reference(spec, changes, seed):
    """A_SOURCE registers: NCHW x copied as it lies, loaded into wgmma's A registers K tile by K
    tile, rows mapped to pixels as a_row_pixel says, on a device of one SM (one block takes every
    tile, so the stages go round; split-K, which one SM's space does not offer, on the H100's)."""
    problem = parse_spec(spec)
    config = {"BN": 64, "CONSUMERS": 1, "STAGES": 3, "SPLIT_K": 1, "SCHEDULE": "cooperative", "EPILOGUE": "direct",
              "M_OPERAND": "pixels", "PAD_PITCH": 16, "A_SOURCE": "registers", **changes}
    plan = FAMILY.plan(problem, config, H100 if config["SPLIT_K"] > 1 else ONE_SM)
    assert plan.values["A_IN_REGISTERS"] == 1 and len(plan.launches) == 1 + (config["SPLIT_K"] > 1)
    check = verify_plan(plan, np.random.default_rng(seed))
    assert check.ok, _describe(problem, check)


@pytest.mark.parametrize("spec, changes", [
    # one K tile: every stage keeps K tile 0's box of w; cooperative, ping-pong, one consumer
    ("N=2,C=24,H=10,W=40,K=40,R=1,S=1,bias=1,layout=NHWC,precision=bf16", {"CONSUMERS": 2}),
    ("N=2,C=24,H=10,W=40,K=40,R=1,S=1,bias=1,layout=NHWC,precision=bf16", {"CONSUMERS": 2, "SCHEDULE": "pingpong"}),
    ("N=2,C=24,H=10,W=20,K=40,R=1,S=1,layout=NHWC,precision=tf32", {"CONSUMERS": 1, "EPILOGUE": "direct"}),
    # two K tiles in four stages: stages 0 and 2 keep K tile 0's box, 1 and 3 K tile 1's
    ("N=2,C=72,H=10,W=20,K=40,R=1,S=1,layout=NHWC,precision=fp16", {"STAGES": 4}),
])
def test_w_copied_once_per_stage_serves_every_tile_of_a_block(spec, changes, seed):
    """REUSE_W on one SM (a device of one, so that one block takes every tile and the stages go
    round several times; the sampled shapes' grids give each block one tile): tiles after the
    first round read w's box that the stage kept, and must match the reference."""
    problem = parse_spec(spec)
    config = {"BN": 64, "CONSUMERS": 1, "STAGES": 3, "SPLIT_K": 1, "SCHEDULE": "cooperative", "EPILOGUE": "staged",
              "M_OPERAND": "pixels", "PAD_PITCH": 16, "A_SOURCE": "shared", **changes}
    plan = FAMILY.plan(problem, config, ONE_SM)
    values = plan.values
    assert values["REUSE_W"] == 1 and values["GRID"] == 1
    assert values["TILES"] * values["K_TILES"] > 2 * values["STAGES"], "the stages go round at least twice"
    check = verify_plan(plan, np.random.default_rng(seed))
    assert check.ok, _describe(problem, check)
