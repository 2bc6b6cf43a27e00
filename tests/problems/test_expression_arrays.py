"""autoconv.problems.expression_arrays: an expression over many rows at once gives, at every row,
what Expression.evaluate gives there, or refuses (NotVectorizable) - never another value, and
never a value where evaluate raises at some row."""

from __future__ import annotations

import math

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoconv.errors import ExpressionError
from autoconv.problems.expression_arrays import NotVectorizable, Rows, evaluate_rows, truth
from autoconv.problems.expressions import compile_expression
from tests.kernels.test_expr_space import GRAMMAR

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _rows(columns: dict[str, list], scalars: dict[str, object] | None = None) -> Rows:
    count = len(next(iter(columns.values())))
    return Rows(dict(scalars or {}), {name: numpy.array(values) for name, values in columns.items()}, count)


def _row_by_row(text: str, columns: dict[str, list], scalars: dict[str, object]) -> list | None:
    """Expression.evaluate at each row; None where it raises at any row."""
    expression = compile_expression(text)
    count = len(next(iter(columns.values())))
    try:
        return [expression.evaluate({**scalars, **{name: values[row] for name, values in columns.items()}})
                for row in range(count)]
    except ExpressionError:
        return None


def _same(got, expected: list) -> bool:
    values = got.tolist() if isinstance(got, numpy.ndarray) else [got] * len(expected)
    for value, wanted in zip(values, expected, strict=True):
        if isinstance(wanted, float) and math.isnan(wanted):
            if not (isinstance(value, float) and math.isnan(value)):
                return False
        elif value != wanted or (isinstance(wanted, float) != isinstance(value, float)
                                 and not isinstance(wanted, bool) and not isinstance(value, bool)):
            return False  # (an int where Python has a float, or the reverse: is_pow2 tells them apart)
    return True


def _check(text: str, columns: dict[str, list], scalars: dict[str, object]) -> bool:
    """Whether the rows were evaluated at once (else refused); fails where they disagree."""
    expected = _row_by_row(text, columns, scalars)
    try:
        got = evaluate_rows(compile_expression(text), _rows(columns, scalars))
    except NotVectorizable:
        return False
    assert expected is not None, f"{text}: evaluate raises at some row, the rows at once gave {got!r}"
    assert _same(got, expected), (text, columns, got, expected)
    return True


@pytest.mark.parametrize("text", [
    "a * b + 3", "a // b", "a % b", "ceil_div(a, b)", "a / b", "-a + abs(b)", "2 ** b",
    "a < b <= 9", "a == b or not a != 7", "a > 3 and b < 3", "a if a > b else b",
    "min(a, b, 3)", "max(a, 2 * b)", "is_pow2(a)", "log2(b)", 's == "rsc"', 's != "rsc" and a > 2',
    "b == 0 or a // b > 1",             # the division only where b != 0, as Python's `or` does
    "a // b if b else 0",               # ... and as `if` does
    "b != 0 and 100 // b < a < 50",     # ... and a chained comparison
])
def test_common_expressions_evaluate_at_once_and_agree(text):
    columns = {"a": [7, 8, 1, 64, 3, 12], "b": [2, 4, 1, 8, 0, 0] if "b ==" in text or "if b" in text
               or "b != 0" in text else [2, 4, 1, 8, 16, 2], "s": ["rsc", "crs", "rsc", "crs", "rsc", "crs"]}
    assert _check(text, columns, {"K": 64})


@pytest.mark.parametrize("text, columns", [
    ("a // b", {"a": [1, 2], "b": [1, 0]}),                  # division by zero at one row
    ("a + 1", {"a": ["rsc", "crs"]}),                        # arithmetic on a string
    ("a < 1", {"a": ["rsc", "crs"]}),                        # a string ordered against a number
    ("a * b", {"a": [2**40, 1], "b": [2**40, 1]}),           # beyond int64
    ("a if a > 1 else 0.5", {"a": [1, 2]}),                  # an int at one row, a float at another
    ("log2(a)", {"a": [4, 6]}),                              # an int at one row, a float at another
    ("a == 1.5", {"a": [2**60, 1]}),                         # an integer a float cannot hold
])
def test_what_cannot_be_evaluated_exactly_at_once_is_refused(text, columns):
    assert not _check(text, columns, {})


def test_truth_is_pythons():
    rows = _rows({"a": [0, 3], "s": ["", "x"]})
    assert truth(evaluate_rows(compile_expression("a"), rows), 2).tolist() == [False, True]
    assert truth(evaluate_rows(compile_expression("not s"), rows), 2).tolist() == [True, False]
    assert truth(evaluate_rows(compile_expression("K > 1"), Rows({"K": 2}, {}, 3)), 3).tolist() == [True] * 3


@FUZZ
@given(GRAMMAR, st.lists(st.tuples(st.integers(-9, 70), st.integers(-3, 9)), min_size=1, max_size=6),
       st.sampled_from(["rsc", "crs", ""]), st.integers(1, 64))
def test_fuzz_rows_at_once_agree_with_each_row(text, pairs, s, k):
    try:
        compile_expression(text)
    except ExpressionError:
        return
    _check(text, {"a": [a for a, _ in pairs], "b": [b for _, b in pairs]}, {"s": s, "K": k})


@FUZZ
@given(GRAMMAR, st.lists(st.tuples(st.floats(-1e3, 1e3), st.sampled_from(["rsc", "crs", ""])), min_size=1,
                         max_size=5))
def test_fuzz_float_and_string_rows(text, rows):
    """(``s`` a column here, ``a`` a float one and ``b`` an integer scalar)"""
    try:
        compile_expression(text)
    except ExpressionError:
        return
    _check(text, {"a": [a for a, _ in rows], "s": [s for _, s in rows]}, {"b": 3, "K": 8})
