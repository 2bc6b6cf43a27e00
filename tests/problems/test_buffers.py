"""autoconv.problems.buffers: a problem's tensors moved between logical values and the kernels'
buffers (layout and element type)."""

from __future__ import annotations

import numpy as np
import pytest

from autoconv.dtypes import POISON_BITS, decode, holds_exactly, rounded
from autoconv.problems.buffers import buffer_values, kernel_buffer, output_buffer, tensor_values
from autoconv.problems.problem import parse_spec


def test_buffers_follow_the_layout_and_come_back_as_values():
    problem = parse_spec("N=2,C=3,H=4,W=5,K=6,R=3,S=3,pad=1,precision=bf16,layout=NHWC")
    x = rounded(np.random.default_rng(1).uniform(-1, 1, problem.input_shape).astype(np.float32), "bfloat16")
    buffer = kernel_buffer(problem, "x", x)
    assert buffer.dtype == np.uint16 and buffer.shape == (2, 4, 5, 3) and buffer.flags.c_contiguous
    assert np.array_equal(decode(buffer, "bfloat16"), x.transpose(0, 2, 3, 1))
    assert kernel_buffer(problem, "w", np.zeros(problem.weight_shape, np.float32)).shape == (6, 3, 3, 3)
    y = output_buffer(problem)
    assert y.shape == (2, 4, 5, 6) and np.all(y == POISON_BITS["bfloat16"])
    assert np.isnan(buffer_values(problem, y)).all() and buffer_values(problem, y).shape == problem.output_shape
    y[1, 2, 3, 4] = 0x3F80
    assert buffer_values(problem, y)[1, 4, 2, 3] == 1.0
    wide = problem.with_(out_dtype="float32")
    assert output_buffer(wide).dtype == np.float32
    nchw = parse_spec("N=2,C=3,H=4,W=5,K=6,R=3,S=3")
    assert np.array_equal(kernel_buffer(nchw, "x", x), x)


def test_every_tensor_comes_back_as_logical_values():
    problem = parse_spec("N=2,C=3,H=4,W=5,K=6,R=3,S=2,pad=1,bias=1,precision=fp16,layout=NHWC")
    rng = np.random.default_rng(2)
    for name, shape in (("x", problem.input_shape), ("w", problem.weight_shape), ("bias", (problem.K,))):
        values = rounded(rng.uniform(-1, 1, shape).astype(np.float32), "float16")
        assert holds_exactly(values, "float16") and not holds_exactly(values + np.float32(2**-13), "float16")
        buffer = kernel_buffer(problem, name, values)
        assert buffer.dtype == np.uint16 and buffer.shape == {"x": (2, 4, 5, 3), "w": (6, 3, 2, 3), "bias": (6,)}[name]
        assert np.array_equal(tensor_values(problem, name, buffer), values)
    with pytest.raises(ValueError, match=r"x has shape \(2, 3, 4, 5\); a NHWC x buffer .* is \(2, 4, 5, 3\)"):
        tensor_values(problem, "x", np.zeros(problem.input_shape, np.uint16))
    assert not holds_exactly(np.float64([1 + 2**-30]), "float32")
