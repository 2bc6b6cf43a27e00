"""Unit tests of autoconv.problems.problem: output sizes, SAME/VALID padding, FLOPs, bytes,
the spec string, and every error path (each must name the field and the value).

Output sizes are checked against an independent reference: counting the window
positions that fit in the padded input, one by one, rather than the closed formula.
"""

from __future__ import annotations

import math
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoconv.errors import AutoconvError, ProblemError
from autoconv.problems.problem import (
    INDEX_LIMIT,
    ConvProblem,
    did_you_mean,
    make_problem,
    parse_spec,
    same_padding,
    tensor_elements,
)


def count_windows(size: int, padded_extra: int, extent: int, stride: int) -> int:
    """Window positions o = 0, 1, ... whose window [o*stride, o*stride + extent) lies in
    the padded input of length size + padded_extra."""
    positions = 0
    while positions * stride + extent <= size + padded_extra:
        positions += 1
    return positions


def random_problem(rng: random.Random) -> ConvProblem:
    """A random valid problem with odd sizes, non-square strides, asymmetric padding."""
    while True:
        kw = dict(N=rng.randint(1, 4), C=rng.randint(1, 9), H=rng.randint(1, 40),
                  W=rng.randint(1, 40), K=rng.randint(1, 9), R=rng.randint(1, 7),
                  S=rng.randint(1, 7), stride=(rng.randint(1, 4), rng.randint(1, 4)),
                  dilation=(rng.randint(1, 3), rng.randint(1, 3)),
                  padding=tuple(rng.randint(0, 4) for _ in range(4)), bias=rng.random() < 0.5)
        try:
            return make_problem(**kw)
        except ProblemError:
            continue


# ---- output sizes ----------------------------------------------------------------------

def test_output_size_counts_window_positions(seed):
    rng = random.Random(seed)
    for _ in range(300):
        p = random_problem(rng)
        top, bottom, left, right = p.padding
        assert p.P == count_windows(p.H, top + bottom, (p.R - 1) * p.dilation[0] + 1, p.stride[0])
        assert p.Q == count_windows(p.W, left + right, (p.S - 1) * p.dilation[1] + 1, p.stride[1])
        assert p.output_shape == (p.N, p.K, p.P, p.Q)
        assert p.gemm_m == p.N * p.P * p.Q and p.gemm_n == p.K and p.gemm_k == p.C * p.R * p.S


@pytest.mark.parametrize("spec, P, Q", [
    ("N=1,C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3", 112, 112),  # ResNet stem
    ("N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1", 16, 29),
    ("N=1,C=1,H=10,W=9,K=1,R=3,S=3,pad=0:2:1:0", 10, 8),  # asymmetric: (10+2-3)+1, (9+1-3)+1
    ("N=1,C=1,H=10,W=10,K=1,R=3,S=3,dilation=2", 6, 6),  # extent 5: 10-5+1
    ("N=1,C=1,H=10,W=10,K=1,R=3,S=2,dilation=3x4", 4, 6),  # extents 7 and 5
    ("N=1,C=1,H=5,W=5,K=1,R=5,S=5", 1, 1),  # kernel as large as the input
    ("N=1,C=1,H=1,W=1,K=1,R=3,S=3,pad=1", 1, 1),
])
def test_output_size_examples(spec, P, Q):
    p = parse_spec(spec)
    assert (p.P, p.Q) == (P, Q)


def tensorflow_same_padding(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """TensorFlow's documented SAME rule, written the way its docs write it (a different
    formulation from autoconv's): pad_along = max(k - s, 0) if size % s == 0 else
    max(k - size % s, 0), with k the dilated kernel extent; the odd pixel goes last."""
    k = (kernel - 1) * dilation + 1
    total = max(k - stride, 0) if size % stride == 0 else max(k - size % stride, 0)
    return total // 2, total - total // 2


def test_same_padding_follows_tensorflow(seed):
    rng = random.Random(seed)
    for _ in range(500):
        H, W = rng.randint(1, 50), rng.randint(1, 50)
        R, S = rng.randint(1, 6), rng.randint(1, 6)
        stride, dilation = (rng.randint(1, 4), rng.randint(1, 4)), (rng.randint(1, 3), rng.randint(1, 3))
        try:
            p = make_problem(N=1, C=1, H=H, W=W, K=1, R=R, S=S, stride=stride,
                             dilation=dilation, padding="same")
        except ProblemError:
            continue  # not reachable for SAME (padding always fits), but keep the test honest
        assert p.padding == (tensorflow_same_padding(H, R, stride[0], dilation[0])
                             + tensorflow_same_padding(W, S, stride[1], dilation[1]))
        assert p.P == math.ceil(H / stride[0]) and p.Q == math.ceil(W / stride[1])


def test_same_padding_examples():
    # H=5, k=3, s=2: output 3, total padding 2 -> (1, 1); H=6: total 1 -> (0, 1), extra at the end.
    assert same_padding(5, 3, 2, 1) == (1, 1)
    assert same_padding(6, 3, 2, 1) == (0, 1)
    assert same_padding(7, 1, 1, 1) == (0, 0)
    assert same_padding(7, 3, 1, 2) == (2, 2)  # extent 5
    p = make_problem(N=1, C=3, H=21, W=17, K=24, R=4, S=2, stride=2, padding="SAME")
    assert p.padding == (1, 2, 0, 1) and (p.P, p.Q) == (11, 9)


def test_valid_padding_is_zero():
    p = make_problem(N=1, C=1, H=11, W=8, K=1, R=3, S=2, stride=(2, 3), padding="valid")
    assert p.padding == (0, 0, 0, 0)
    # TensorFlow's VALID: ceil((size - extent + 1) / stride)
    assert (p.P, p.Q) == (math.ceil((11 - 3 + 1) / 2), math.ceil((8 - 2 + 1) / 3)) == (5, 3)


@pytest.mark.parametrize("padding, expected", [
    (2, (2, 2, 2, 2)), ((1, 3), (1, 1, 3, 3)), ([0, 1, 2, 3], (0, 1, 2, 3)), ("valid", (0,) * 4),
])
def test_padding_forms(padding, expected):
    assert make_problem(N=1, C=1, H=8, W=8, K=1, R=3, S=3, padding=padding).padding == expected


# ---- FLOPs and bytes -------------------------------------------------------------------

def test_flops_resnet_stem():
    # ResNet-50's 7x7 stem at batch 1 is the well-known 118.0 M multiply-adds.
    p = parse_spec("N=1,C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3")
    assert p.flops == 2 * 118_013_952 == 236_027_904
    assert p.gflop == pytest.approx(0.236027904)


def test_flops_count_every_tap(seed):
    # Independent count: one multiply-add per (n, k, p, q) and per filter tap (c, r, s),
    # padded taps included (that is the convention cuDNN and every FLOP counter use).
    rng = random.Random(seed)
    for _ in range(20):
        p = random_problem(rng)
        taps = sum(1 for _ in range(p.C) for _ in range(p.R) for _ in range(p.S))
        outputs = sum(1 for _ in range(p.N) for _ in range(p.K) for _ in range(p.P) for _ in range(p.Q))
        assert p.flops == 2 * taps * outputs


def test_min_bytes():
    p = make_problem(N=1, C=2, H=3, W=3, K=4, R=1, S=1, bias=True)
    # x 1*2*3*3 = 18, w 4*2 = 8, y 1*4*3*3 = 36, bias 4: 66 floats
    assert p.min_bytes == 66 * 4
    assert p.in_precision("fp16").min_bytes == 66 * 2
    # a float32 output of a 16-bit problem: 30 halves in, 36 floats out
    assert p.in_precision("bf16").with_(out_dtype="float32").min_bytes == 30 * 2 + 36 * 4
    assert p.with_(bias=False).min_bytes == 62 * 4
    assert tensor_elements(p) == {"x": 18, "w": 8, "y": 36, "bias": 4}
    assert "bias" not in tensor_elements(p.with_(bias=False))


# ---- the spec string -------------------------------------------------------------------

@st.composite
def problems(draw):
    kw = dict(N=draw(st.integers(1, 8)), C=draw(st.integers(1, 64)), H=draw(st.integers(1, 64)),
              W=draw(st.integers(1, 64)), K=draw(st.integers(1, 64)), R=draw(st.integers(1, 7)),
              S=draw(st.integers(1, 7)),
              stride=(draw(st.integers(1, 4)), draw(st.integers(1, 4))),
              dilation=(draw(st.integers(1, 3)), draw(st.integers(1, 3))),
              padding=draw(st.one_of(st.sampled_from(["same", "valid"]), st.integers(0, 3),
                                     st.tuples(*[st.integers(0, 3)] * 4))),
              bias=draw(st.booleans()), dtype=draw(st.sampled_from(["float32", "float16", "bfloat16"])),
              layout=draw(st.sampled_from(["NCHW", "NHWC"])))
    try:
        return make_problem(**kw)
    except ProblemError:
        from hypothesis import assume
        assume(False)


@settings(max_examples=200, deadline=None)
@given(problems())
def test_spec_round_trip(problem):
    assert parse_spec(problem.spec()) == problem
    assert problem.key() == parse_spec(problem.key()).key()
    assert f"{problem.N}x{problem.C}x{problem.H}x{problem.W}" in problem.shape_str()


def test_spec_forms():
    p = parse_spec(" N=2, C=13 ,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1:2:0:3,dilation=1x2,bias=true,")
    assert p.stride == (2, 1) and p.padding == (1, 2, 0, 3) and p.dilation == (1, 2) and p.bias
    assert parse_spec("N=1,C=1,H=8,W=8,K=1,R=3,S=3,pad=1x2").padding == (1, 1, 2, 2)
    assert parse_spec("N=1,C=1,H=8,W=8,K=1,R=3,S=3,pad=SAME").padding == (1, 1, 1, 1)
    assert parse_spec("N=1,C=1,H=8,W=8,K=1,R=3,S=3,bias=0").bias is False
    p = parse_spec("N=1,C=1,H=8,W=8,K=1,R=3,S=3,dtype=float16,layout=NHWC")
    assert (p.dtype, p.layout) == ("float16", "NHWC")
    assert p.precision == "fp16"  # the dtype's own
    assert p.spec() == "N=1,C=1,H=8,W=8,K=1,R=3,S=3,stride=1,pad=0,dilation=1,layout=NHWC,precision=fp16"
    assert parse_spec("N=1,C=1,H=8,W=8,K=1,R=3,S=3,precision=bf16,layout=nhwc,out_dtype=float32").spec() == (
        "N=1,C=1,H=8,W=8,K=1,R=3,S=3,stride=1,pad=0,dilation=1,layout=NHWC,precision=bf16,out_dtype=float32")
    # the default out_dtype said out loud is the same problem
    assert parse_spec("N=1,C=1,H=8,W=8,K=1,R=3,S=3,precision=bf16,out_dtype=bfloat16") == parse_spec(
        "N=1,C=1,H=8,W=8,K=1,R=3,S=3,dtype=bfloat16")
    for spec, fragment in (("dtype=float16,precision=bf16", "bf16 computes bfloat16 inputs, not float16"),
                           ("precision=tf32,dtype=bfloat16", "tf32 computes float32 inputs"),
                           ("out_dtype=float16", "a float32 problem writes float32 or float32, not float16"),
                           ("precision=bf16,out_dtype=float16", "writes bfloat16 or float32, not float16")):
        with pytest.raises(ProblemError, match=re.escape(fragment)):
            parse_spec("N=1,C=1,H=8,W=8,K=1,R=3,S=3," + spec)


# ---- errors ----------------------------------------------------------------------------

BASE = dict(N=1, C=1, H=8, W=8, K=1, R=3, S=3)


@pytest.mark.parametrize("changes, field, value", [
    ({"N": 0}, "N", 0), ({"C": -3}, "C", -3), ({"H": 2.5}, "H", 2.5), ({"K": True}, "K", True),
    ({"W": "8"}, "W", "8"), ({"R": 0}, "R", 0), ({"S": None}, "S", None),
    ({"stride": 0}, "stride (height)", 0), ({"stride": (1, -1)}, "stride (width)", -1),
    ({"stride": (1, 2, 3)}, "stride", (1, 2, 3)), ({"stride": 1.5}, "stride", 1.5),
    ({"dilation": (0, 1)}, "dilation (height)", 0),
    ({"padding": -1}, "padding (top)", -1), ({"padding": (0, 0, 0, -2)}, "padding (right)", -2),
    ({"padding": (1, 2, 3)}, "padding", (1, 2, 3)), ({"padding": "full"}, "padding", "full"),
    ({"padding": 1.0}, "padding", 1.0), ({"bias": 1}, "bias", 1),
    ({"dtype": "float64"}, "dtype", "float64"), ({"layout": "CHWN"}, "layout", "CHWN"),
    ({"R": 9}, "R", 9), ({"S": 11, "padding": 1}, "S", 11),
    ({"R": 3, "dilation": (4, 1)}, "R", 3),  # extent 9 > 8
    # SAME with a zero stride or dilation: named, not a ZeroDivisionError (fixed bug)
    ({"stride": 0, "padding": "same"}, "stride (height)", 0),
    ({"stride": (1, 0), "padding": "same"}, "stride (width)", 0),
    ({"dilation": (1, "2"), "padding": "same"}, "dilation (width)", "2"),
    ({"H": 0, "padding": "same"}, "H", 0),
])
def test_invalid_problem_names_field_and_value(changes, field, value):
    with pytest.raises(ProblemError) as info:
        make_problem(**{**BASE, **changes})
    assert info.value.field == field
    assert info.value.value == value and type(info.value.value) is type(value)
    assert str(info.value).startswith(f"{field}={value!r}: ")
    assert isinstance(info.value, AutoconvError)


def test_kernel_larger_than_padded_input_says_how_to_fix():
    with pytest.raises(ProblemError, match=r"R=9: filter height with dilation \(9\) exceeds the "
                                           r"padded input height \(8 \+ 0 padding\)"):
        make_problem(**{**BASE, "R": 9})
    make_problem(**{**BASE, "R": 9, "padding": (1, 0, 0, 0)})  # 8 + 1 fits exactly


def test_index_limit():
    # The output N*K*P*Q crosses 2^31 - 1 by one batch: 2^31 elements.
    assert INDEX_LIMIT == 2**31 - 1
    make_problem(N=1, C=1, H=2**15, W=2**15, K=1, R=1, S=1)
    with pytest.raises(ProblemError, match=r"size=2147483648: input N\*C\*H\*W has 2147483648 elements"):
        make_problem(N=2, C=1, H=2**15, W=2**15, K=1, R=1, S=1)
    with pytest.raises(ProblemError, match=r"weights K\*C\*R\*S has 2147483648 .*split the filters"):
        make_problem(N=1, C=2**16, H=1, W=1, K=2**15, R=1, S=1)
    with pytest.raises(ProblemError, match=r"output N\*K\*P\*Q has 2147483648 .*split the batch"):
        make_problem(N=2, C=1, H=2**14, W=2**14, K=4, R=1, S=1)


def test_direct_construction_checks_pairs():
    with pytest.raises(ProblemError, match="stride"):
        ConvProblem(**BASE, stride=[1, 1])
    with pytest.raises(ProblemError, match="padding"):
        ConvProblem(**BASE, padding=(1, 1))


@pytest.mark.parametrize("spec, field, fragment", [
    ("N=1,C=1,H=8,W=8,K=1,R=3", "spec", "missing S"),
    ("N=1,C=1,H=8,W=8,K=1,R=3,S=3,strid=2", "spec", "(did you mean 'stride'?)"),
    ("N=1,C=1,H=8,W=8,K=1,R=3,S=3,N=2", "N", "given twice"),
    ("N=1,C=1,H=8,W=8,K=1,R=3,S", "spec", "expected KEY=VALUE"),
    ("N=one,C=1,H=8,W=8,K=1,R=3,S=3", "N", "expected an integer"),
    ("N=1,C=1,H=8,W=8,K=1,R=3,S=3,stride=2x1x1", "stride", "expected a number or HxW"),
    ("N=1,C=1,H=8,W=8,K=1,R=3,S=3,stride=2xa", "stride", "expected an integer"),
    ("N=1,C=1,H=8,W=8,K=1,R=3,S=3,pad=1:2:3", "pad", "four numbers"),
    ("N=1,C=1,H=8,W=8,K=1,R=3,S=3,pad=full", "pad", "expected an integer"),
    ("N=1,C=1,H=8,W=8,K=1,R=3,S=3,bias=maybe", "bias", "expected 0/1"),
    ("N=1,C=1,H=8,W=8,K=1,R=3,S=3,dtype=int8", "dtype", "must be one of"),
    ("N=1,C=1,H=8,W=8,K=1,R=3,S=3,stride=0,pad=same", "stride (height)", "must be >= 1"),
    ("N=0,C=1,H=8,W=8,K=1,R=3,S=3", "N", "must be >= 1"),
])
def test_spec_errors(spec, field, fragment):
    with pytest.raises(ProblemError) as info:
        parse_spec(spec)
    assert info.value.field == field
    assert fragment in str(info.value)


def test_spec_must_be_text():
    with pytest.raises(ProblemError, match="expected a string"):
        parse_spec(None)


def test_did_you_mean():
    assert did_you_mean("strid", ["stride", "pad"]) == " (did you mean 'stride'?)"
    assert did_you_mean("PAD", ["stride", "pad"]) == " (did you mean 'pad'?)"
    assert did_you_mean("zzz", ["stride", "pad"]) == ""
