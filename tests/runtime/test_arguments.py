"""The one resolver of stride, padding and dilation behind autoconv.conv2d, for CuPy arrays and
PyTorch tensors alike (no GPU, no PyTorch: tests/torch/test_torch_cpu.py checks the tensors' side)."""

from __future__ import annotations

import itertools

import pytest

from autoconv.errors import ProblemError
from autoconv.problems.problem import ceil_div, make_problem
from autoconv.runtime.api import problem_of_call
from autoconv.runtime.arguments import check_geometry, output_size, resolve_geometry


@pytest.mark.parametrize("stride, dilation", list(itertools.product([1, 2, 3], [1, 2])))
def test_same_is_tensorflows_rule_as_in_problem_specs(stride, dilation):
    for size, kernel in itertools.product(range(5, 12), range(1, 5)):
        _, padding, _ = resolve_geometry(stride, "same", dilation, size, size + 1, kernel, kernel)
        spec = make_problem(N=1, C=1, H=size, W=size + 1, K=1, R=kernel, S=kernel, stride=stride,
                            dilation=dilation, padding="same")
        assert padding == spec.padding
        assert (spec.P, spec.Q) == (ceil_div(size, stride), ceil_div(size + 1, stride))


def test_same_with_stride_one_is_pytorchs_and_reads_no_size():
    for kernel, dilation in itertools.product(range(1, 6), range(1, 4)):
        total = dilation * (kernel - 1)
        want = (total // 2, total - total // 2)
        _, padding, _ = resolve_geometry(1, "same", dilation, None, None, kernel, kernel)
        assert padding == want + want


def test_the_forms_of_each_argument():
    assert resolve_geometry(2, 1, 1, 9, 9, 3, 3) == ((2, 2), (1, 1, 1, 1), (1, 1))
    assert resolve_geometry([2, 1], [1, 2], (1, 3), 9, 9, 3, 3) == ((2, 1), (1, 1, 2, 2), (1, 3))
    assert resolve_geometry(1, [0, 1, 2, 3], 1, 9, 9, 3, 3)[1] == (0, 1, 2, 3)
    assert resolve_geometry(1, "VALID", 1, 9, 9, 3, 3)[1] == (0, 0, 0, 0)


@pytest.mark.parametrize("arguments, field, fragment", [
    ((1, "full", 1), "padding", "'same' or 'valid'"),
    ((1, (1, 2, 3), 1), "padding", "(top, bottom, left, right)"),
    ((1, 1.5, 1), "padding", "expected an int"),
    ((1, True, 1), "padding", "expected an int"),
    ((0.5, 0, 1), "stride", "(height, width) pair of ints"),
    ((1, 0, (1, 2, 3)), "dilation", "(height, width) pair of ints"),
    ((0, "same", 1), "stride (height)", "must be >= 1"),
    ((1, "same", (1, 0)), "dilation (width)", "must be >= 1"),
    # Out of range in every form, not only with 'same' (a stride of 0 divided by zero later).
    ((0, 1, 1), "stride (height)", "must be >= 1"),
    (((1, 0), "valid", 1), "stride (width)", "must be >= 1"),
    ((1, 0, (0, 1)), "dilation (height)", "must be >= 1"),
    ((1, -1, 1), "padding (top)", "must be >= 0"),
    ((1, (0, -2), 1), "padding (left)", "must be >= 0"),
    ((1, (0, 0, 0, -1), 1), "padding (right)", "must be >= 0"),
])
def test_refusals_name_the_argument_and_what_it_takes(arguments, field, fragment):
    with pytest.raises(ProblemError) as info:
        resolve_geometry(*arguments, 9, 9, 3, 3)
    assert info.value.field == field and fragment in str(info.value)


def test_a_cupy_call_with_strided_same_padding_computes_ceil_of_size_over_stride():
    problem = problem_of_call((2, 3, 21, 17), (8, 3, 4, 2), (2, 3), "same", 1, True, "tf32")
    assert problem.output_shape == (2, 8, 11, 6) and problem.padding == (1, 2, 0, 0)
    assert problem.bias and problem.precision == "tf32"


def test_geometry_and_output_size_checks_name_the_argument():
    check_geometry((1, 2), (0, 1, 2, 3), (1, 1))
    for stride, padding, dilation, field in [((0, 1), (0,) * 4, (1, 1), "stride (height)"),
                                             ((1, 1), (0, 0, -1, 0), (1, 1), "padding (left)"),
                                             ((1, 1), (0,) * 4, (1, 0), "dilation (width)"),
                                             ((1,), (0,) * 4, (1, 1), "stride")]:
        with pytest.raises(ProblemError) as info:
            check_geometry(stride, padding, dilation)
        assert info.value.field == field
    assert output_size((2, 3, 17, 23), (5, 3, 3, 2), (2, 1), (1, 0, 2, 1), (1, 1)) == (8, 25)
    with pytest.raises(ProblemError, match=r"^S=6: filter width with dilation \(11\) exceeds the padded input width"):
        output_size((1, 1, 9, 9), (1, 1, 3, 6), (1, 1), (0, 0, 0, 0), (1, 2))
