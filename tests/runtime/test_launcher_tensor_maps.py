"""The runtime launcher's tensor-map arguments (TMA families), without a GPU: each map is encoded
for the buffer it describes (plus its offset) into 64-byte aligned host memory that the launch's
parameter array points at, again only when that buffer moves; pointer arguments keep their
places. The driver's encoder and cuLaunchKernel are replaced by recorders."""

from __future__ import annotations

import ctypes

import pytest

import autoconv.gpu.tensor_maps as gpu_tensor_maps
import autoconv.runtime.launcher as launcher
from autoconv.kernels.families import get_family
from autoconv.kernels.tensor_maps import TENSOR_MAP_ALIGNMENT
from autoconv.problems.problem import parse_spec

FAMILY = get_family("implicit_gemm_wgmma_tma")
X, W, BIAS, Y, WORKSPACE = 0x10000, 0x20000, 0x30000, 0x40000, 0x50000


@pytest.fixture
def recorded(monkeypatch):
    """(encodings, launches): encode_into's (map, device address, host target) and each launch's
    kernel parameters as (kind, value): ("map", the target's first 8 bytes) or ("pointer", value)."""
    encodings, launches = [], []

    def encode_into(tensor_map, address, target):
        encodings.append((tensor_map, address, target))
        ctypes.memmove(target, ctypes.byref(ctypes.c_uint64(address)), 8)   # a stand-in encoding

    def launch_kernel(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        raw = next(r for r in _RAW_LAUNCHES if r.params == params)
        pointers = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        args = []
        for i, index in enumerate(raw.buffers):
            address = pointers[i]
            value = ctypes.c_uint64.from_address(address).value
            args.append(("map", value, address) if index < 0 else ("pointer", value, address))
        launches.append(args)

    monkeypatch.setattr(gpu_tensor_maps, "encode_into", encode_into)
    monkeypatch.setattr(launcher, "_launch_kernel", launch_kernel)
    return encodings, launches


#: The raw launches of the Launcher under test (the recorder reads which arguments are maps).
_RAW_LAUNCHES: list = []


def _launcher(spec: str, config: dict):
    plan = FAMILY.plan(parse_spec(spec), config)
    run = launcher.Launcher(plan, {launch.kernel: 1 + i for i, launch in enumerate(plan.launches)})
    _RAW_LAUNCHES[:] = run.weights_launches + run.main_launches
    return plan, run


def test_maps_are_encoded_for_their_buffers_and_passed_by_address(recorded):
    encodings, launches = recorded
    plan, run = _launcher("N=2,C=16,H=9,W=11,K=24,R=3,S=3,stride=2,pad=1,bias=1,layout=NHWC,precision=bf16",
                          {"BN": 64, "CONSUMERS": 2, "STAGES": 4, "SPLIT_K": 1,
                           "SCHEDULE": "cooperative", "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16,
                           "A_SOURCE": "shared"})
    assert [launch.args for launch in plan.launches] == [("x_map", "w_map", "bias", "y")]
    run((X, W, BIAS, Y, 0), stream=0)
    assert [(m.buffer, address) for m, address, _ in encodings] == [("x", X), ("w", W)]
    (x_map, w_map, bias, y), = launches
    assert x_map[:2] == ("map", X) and w_map[:2] == ("map", W)   # the maps' bytes, by address
    assert x_map[2] % TENSOR_MAP_ALIGNMENT == 0 and w_map[2] % TENSOR_MAP_ALIGNMENT == 0
    assert bias[:2] == ("pointer", BIAS) and y[:2] == ("pointer", Y)

    run((X, W, BIAS, Y + 256, 0), stream=0)       # same x and w: no new encoding
    assert len(encodings) == 2 and launches[-1][3][:2] == ("pointer", Y + 256)
    run((X + 512, W, BIAS, Y, 0), stream=0)       # x moved: its map only is encoded again
    assert [(m.buffer, address) for m, address, _ in encodings[2:]] == [("x", X + 512)]
    assert launches[-1][0][:2] == ("map", X + 512)


def test_padded_channels_maps_describe_the_workspace_at_their_offsets(recorded):
    encodings, launches = recorded
    plan, run = _launcher("N=2,C=3,H=12,W=16,K=33,R=7,S=1,stride=2x1,pad=2:6:1:0,bias=1,layout=NHWC,precision=fp16",
                          {"BN": 64, "CONSUMERS": 1, "STAGES": 3, "SPLIT_K": 2,
                           "SCHEDULE": "cooperative", "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16,
                           "A_SOURCE": "shared"})
    assert [launch.args for launch in plan.launches] == [
        ("x", "w", "workspace"), ("x_map", "w_map", "workspace"), ("workspace", "bias", "y")]
    run((X, W, BIAS, Y, WORKSPACE), stream=0)
    w_offset = plan.tensor_maps["w_map"].offset
    assert w_offset == 2 * 12 * 16 * 8 * 2   # after the padded x (8 channels, 2 bytes each)
    assert [(m.buffer, address) for m, address, _ in encodings] == [("workspace", WORKSPACE),
                                                                    ("workspace", WORKSPACE + w_offset)]
    pad, gemm, reduce = launches
    assert [kind for kind, *_ in pad] == ["pointer"] * 3
    assert gemm[0][:2] == ("map", WORKSPACE) and gemm[1][:2] == ("map", WORKSPACE + w_offset)
    assert gemm[2][:2] == ("pointer", WORKSPACE) and reduce[2][:2] == ("pointer", Y)


def test_maps_of_recent_buffers_are_copied_not_encoded_again(recorded):
    """One problem's layers take a different x each call, from addresses the caching allocator
    hands out again: the map of each of the last MapSlot.REMEMBERED addresses is kept and copied
    back, and only an address not among them is encoded (the oldest then forgotten)."""
    encodings, launches = recorded
    _, run = _launcher("N=2,C=16,H=9,W=11,K=24,R=3,S=3,stride=2,pad=1,bias=1,layout=NHWC,precision=bf16",
                       {"BN": 64, "CONSUMERS": 2, "STAGES": 4, "SPLIT_K": 1,
                        "SCHEDULE": "cooperative", "EPILOGUE": "staged", "M_OPERAND": "pixels", "PAD_PITCH": 16,
                        "A_SOURCE": "shared"})
    remembered = gpu_tensor_maps.MapSlot.REMEMBERED
    inputs = [X + 4096 * i for i in range(remembered)]
    for _ in range(3):   # three "forwards" over the same inputs
        for x in inputs:
            run((x, W, BIAS, Y, 0), stream=0)
            assert launches[-1][0][:2] == ("map", x)   # the map in the parameters is x's
    assert [address for _, address, _ in encodings] == [inputs[0], W] + inputs[1:]   # each encoded once
    run((X + 4096 * remembered, W, BIAS, Y, 0), stream=0)   # a new address: encoded, inputs[0] forgotten
    run((inputs[0], W, BIAS, Y, 0), stream=0)
    assert [address for _, address, _ in encodings[-2:]] == [X + 4096 * remembered, inputs[0]]
    assert launches[-1][0][:2] == ("map", inputs[0])
