"""Search-space expressions evaluated over many configurations at once, with numpy.

Enumerating a problem's valid configurations (:meth:`autoconv.kernels.space.SearchSpace.points`)
evaluates the derived values and constraints of a search space for up to ~30000 combinations of
its parameters. Point by point (:meth:`Expression.evaluate`) that took 0.3-1.3 s per problem and
family set on the development machine; an expression at a time over columns of values takes
milliseconds.

Exact, or nothing: :func:`evaluate_rows` gives at every row what :meth:`Expression.evaluate`
gives there, or raises :class:`NotVectorizable` and the caller evaluates point by point. So

- each operand is evaluated only on the rows where the point-by-point evaluation reaches it:
  the later operands of ``and``, ``or`` and chained comparisons, and the branches of
  ``x if c else y``, on the rows that select them;
- anything that raises :class:`~autoconv.errors.ExpressionError` at some row (a division by
  zero, arithmetic on a string, ordering a string against a number, a too large exponent or
  value) raises :class:`NotVectorizable`: the point-by-point evaluation then reports it as it does;
- so does anything numpy would compute otherwise than Python: an integer that could leave
  int64, an integer too large for a float where it meets one, values of one expression that
  would be integers at some rows and floats at others (``is_pow2`` tells them apart).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, cast

import numpy

from autoconv.problems.expressions import MAX_EXPONENT, MAX_MAGNITUDE, Expression

#: Integers stay below this in magnitude (operands are checked before each operation).
INTEGER_LIMIT = 2**62
#: Integers that meet a float (or a true division) stay below this: a float holds them exactly.
EXACT_IN_FLOAT = 2**53


class NotVectorizable(Exception):
    """This expression cannot be evaluated exactly over these rows at once (see the module
    docstring); evaluate it point by point."""


class Rows:
    """The variables of ``count`` rows: ``scalars``, the same at every row, and ``arrays``, one
    numpy array of ``count`` values each."""

    def __init__(self, scalars: Mapping[str, object], arrays: dict[str, numpy.ndarray], count: int):
        self.scalars, self.arrays, self.count = scalars, arrays, count

    def __getitem__(self, name: str):
        found = self.arrays.get(name)
        if found is not None:
            return found
        if name not in self.scalars:
            raise NotVectorizable(f"unknown name {name}")
        return self.scalars[name]

    def bind(self, name: str, value) -> None:
        """Set variable ``name`` to ``value`` (a scalar, or an array of :attr:`count` values)."""
        if isinstance(value, numpy.ndarray):
            self.arrays[name] = value
        else:
            self.arrays.pop(name, None)
            self.scalars = {**self.scalars, name: value}

    def subset(self, keep: numpy.ndarray) -> Rows:
        """The rows where ``keep`` (a boolean array of :attr:`count`) holds."""
        return Rows(self.scalars, {name: value[keep] for name, value in self.arrays.items()}, int(keep.sum()))

    def repeat(self, times: int) -> Rows:
        """Each row ``times`` times in a row."""
        return Rows(self.scalars, {name: numpy.repeat(value, times) for name, value in self.arrays.items()},
                    self.count * times)


def evaluate_rows(expression: Expression, rows: Rows) -> Any:
    """``expression`` at every row of ``rows``: a Python scalar where it is the same at every
    row because it uses no array, else a numpy array of ``rows.count`` values.

    Raises:
        NotVectorizable: see the module docstring.
    """
    return _closures(expression)(rows)


@lru_cache(maxsize=4096)
def _closures(expression: Expression) -> Callable[[Rows], Any]:
    """``expression``'s tree as closures over :class:`Rows` (built once per expression, as
    :class:`Expression` builds its own)."""
    return _build(expression.tree)


def truth(value: Any, count: int) -> numpy.ndarray:
    """Python's truth of ``value`` (a result of :func:`evaluate_rows`) at each of ``count`` rows."""
    return _full(_truth(value), count)


# ---- values ------------------------------------------------------------------------------
def _kind(value) -> str:
    """'b' (bool), 'i' (integer), 'f' (float) or 'U' (string), for a scalar or an array."""
    if isinstance(value, numpy.ndarray):
        if value.dtype.kind in "biufU":
            return "i" if value.dtype.kind == "u" else value.dtype.kind
    elif isinstance(value, bool):
        return "b"
    elif isinstance(value, int):
        return "i"
    elif isinstance(value, float):
        return "f"
    elif isinstance(value, str):
        return "U"
    raise NotVectorizable(f"a value of type {type(value).__name__}")


def _number(value):
    """``value`` for arithmetic: booleans as integers (as Python counts True as 1); a string
    is not a number."""
    kind = _kind(value)
    if kind == "U":
        raise NotVectorizable("arithmetic on a string")
    if kind == "b":
        return value.astype(numpy.int64) if isinstance(value, numpy.ndarray) else int(value)
    return value


def _largest(value) -> int | float:
    """The largest magnitude among ``value``'s rows (0 for none)."""
    if isinstance(value, numpy.ndarray):
        return numpy.abs(value).max().item() if value.size else 0
    return abs(value)


def _integral(*values) -> bool:
    return all(_kind(value) in "bi" for value in values)


def _exact_where_floats(*values) -> None:
    """Where integers meet floats, each integer must convert exactly (Python compares and mixes
    an int with a float exactly; numpy converts the int first)."""
    if not _integral(*values) and any(_kind(v) in "bi" and _largest(v) >= EXACT_IN_FLOAT for v in values):
        raise NotVectorizable("an integer too large for a float meets a float")


def _truth(value):
    kind = _kind(value)
    if isinstance(value, numpy.ndarray):
        return value != "" if kind == "U" else value != 0
    return bool(value)


def _full(value, count: int) -> numpy.ndarray:
    """``value`` at each of ``count`` rows, as an array."""
    if isinstance(value, numpy.ndarray):
        return value
    return numpy.full(count, value)


def _take(value, keep: numpy.ndarray):
    return value[keep] if isinstance(value, numpy.ndarray) else value


def _checked(result):
    """``result`` of a float or integer operation, refused beyond what Python allows."""
    if _kind(result) == "f":
        if isinstance(result, numpy.ndarray) and result.size and not numpy.isfinite(result).all():
            raise NotVectorizable("not a finite number")
    if _largest(result) > MAX_MAGNITUDE:
        raise NotVectorizable("value out of range")
    return result


# ---- operations --------------------------------------------------------------------------
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
               ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}


def _arithmetic(op_type: type[ast.operator], a, b):
    a, b = _number(a), _number(b)
    if op_type is ast.Pow and _largest(b) > MAX_EXPONENT:
        raise NotVectorizable("exponent too large")
    if not isinstance(a, numpy.ndarray) and not isinstance(b, numpy.ndarray):  # Python's own arithmetic
        try:
            result = _ARITHMETIC[op_type](a, b)
        except (ArithmeticError, TypeError, ValueError) as err:
            raise NotVectorizable(str(err)) from None
        if isinstance(result, complex):
            raise NotVectorizable("not a real number")
        return _checked(result)
    integers = _integral(a, b)
    _exact_where_floats(a, b)
    if op_type in (ast.Div, ast.FloorDiv, ast.Mod) and bool(numpy.any(numpy.asarray(b) == 0)):
        raise NotVectorizable("division by zero")
    if integers:
        largest_a, largest_b = _largest(a), _largest(b)
        if op_type is ast.Pow:
            beyond = bool(numpy.any(numpy.asarray(b) < 0)) or \
                (largest_a > 1 and largest_a ** largest_b >= INTEGER_LIMIT)
        elif op_type is ast.Mult:
            beyond = largest_a * largest_b >= INTEGER_LIMIT
        elif op_type is ast.Div:
            beyond = max(largest_a, largest_b) >= EXACT_IN_FLOAT  # (numpy divides their floats)
        else:
            beyond = largest_a + largest_b >= INTEGER_LIMIT
        if beyond:
            raise NotVectorizable("an integer beyond int64, or a float of it inexact")
    with numpy.errstate(all="raise"):
        try:
            return _checked(_ARITHMETIC[op_type](a, b))
        except (FloatingPointError, OverflowError, ValueError, TypeError) as err:
            raise NotVectorizable(str(err)) from None


def _negate(value):
    return _checked(-_number(value))  # (integers are below INTEGER_LIMIT: so is their negation)


def _ceil_div(a, b):
    """:func:`autoconv.problems.problem.ceil_div`: ``-(-a // b)``."""
    return _negate(_arithmetic(ast.FloorDiv, _negate(a), b))


def _not(value):
    truth_value = _truth(value)
    return numpy.logical_not(truth_value) if isinstance(truth_value, numpy.ndarray) else not truth_value


_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}


def _compare(op_type: type[ast.cmpop], a, b, count: int) -> numpy.ndarray:
    strings = (_kind(a) == "U", _kind(b) == "U")
    if strings[0] != strings[1]:  # a string and a number: never equal, and not ordered
        if op_type not in (ast.Eq, ast.NotEq):
            raise NotVectorizable("a string ordered against a number")
        return numpy.full(count, op_type is ast.NotEq)
    if not strings[0]:
        _exact_where_floats(a, b)
    result = _COMPARE[op_type](a, b)
    return result if isinstance(result, numpy.ndarray) else numpy.full(count, bool(result))


def _merge(choose: numpy.ndarray, chosen, other, count: int):
    """``chosen`` (evaluated on the rows where ``choose`` holds) and ``other`` (the rest) as
    one array of ``count`` rows."""
    kinds = {_kind(chosen).replace("b", "i"), _kind(other).replace("b", "i")}
    if len(kinds) > 1:
        raise NotVectorizable("an expression whose value is of another type at some rows")
    merged = numpy.empty(count, dtype=numpy.result_type(numpy.asarray(chosen), numpy.asarray(other)))
    merged[choose] = chosen
    merged[~choose] = other
    return merged


def _min_max(name: str, values: list):
    if not any(isinstance(value, numpy.ndarray) for value in values):  # Python's own
        try:
            return (min if name == "min" else max)(*values)
        except (TypeError, ValueError) as err:
            raise NotVectorizable(str(err)) from None
    if len(values) < 2 or any(_kind(v) == "U" for v in values):
        raise NotVectorizable(f"{name}() of fewer than two numbers")
    if len({_kind(v).replace("b", "i") for v in values}) > 1:
        raise NotVectorizable(f"{name}() of integers and floats")  # (Python keeps each row's minimum's type)
    pick = numpy.minimum if name == "min" else numpy.maximum
    result = values[0]
    for value in values[1:]:
        result = pick(result, value)
    return result


def _is_pow2(value):
    kind = _kind(value)
    if kind == "f" or kind == "U":  # (Python's is_pow2 asks for an int)
        return numpy.zeros(len(value), bool) if isinstance(value, numpy.ndarray) else False
    value = _number(value)
    if isinstance(value, numpy.ndarray):
        return (value > 0) & ((value & (value - 1)) == 0)
    return value > 0 and (value & (value - 1)) == 0


def _log2(value):
    if not _integral(value) or not numpy.all(numpy.asarray(_number(value)) > 0) \
            or not numpy.all(_is_pow2(value)):
        raise NotVectorizable("log2() of a value that is not a power of two")  # (a float there)
    value = _number(value)
    if isinstance(value, numpy.ndarray):
        return numpy.log2(value).astype(numpy.int64)  # (exact for powers of two)
    return value.bit_length() - 1


_FUNCTIONS: dict[str, Callable[[list], Any]] = {
    "min": lambda args: _min_max("min", args),
    "max": lambda args: _min_max("max", args),
    "abs": lambda args: abs(_number(args[0])) if len(args) == 1 else _refuse("abs() of one value"),
    "ceil_div": lambda args: _ceil_div(*args) if len(args) == 2 else _refuse("ceil_div() of two values"),
    "is_pow2": lambda args: _is_pow2(args[0]) if len(args) == 1 else _refuse("is_pow2() of one value"),
    "log2": lambda args: _log2(args[0]) if len(args) == 1 else _refuse("log2() of one value"),
}


def _refuse(why: str):
    raise NotVectorizable(why)


# ---- the tree ----------------------------------------------------------------------------
def _build(node) -> Callable[[Rows], Any]:
    """Closures over ``node`` (checked by :class:`Expression`), as :meth:`Expression._build`."""
    if isinstance(node, ast.Constant):
        value = node.value
        return lambda rows: value
    if isinstance(node, ast.Name):
        if node.id in ("True", "False"):
            constant = node.id == "True"
            return lambda rows: constant
        name = node.id
        return lambda rows: rows[name]
    if isinstance(node, ast.BinOp):
        left, right, op_type = _build(node.left), _build(node.right), type(node.op)
        return lambda rows: _arithmetic(op_type, left(rows), right(rows))
    if isinstance(node, ast.UnaryOp):
        operand = _build(node.operand)
        if isinstance(node.op, ast.Not):
            return lambda rows: _not(operand(rows))
        if isinstance(node.op, ast.USub):
            return lambda rows: _negate(operand(rows))
        return lambda rows: +_number(operand(rows))
    if isinstance(node, ast.BoolOp):
        return _in_turn([_build(value) for value in node.values], isinstance(node.op, ast.And))
    if isinstance(node, ast.Compare):
        return _chain(_build(node.left), [(type(op), _build(c)) for op, c in zip(node.ops, node.comparators)])
    if isinstance(node, ast.IfExp):
        test, body, orelse = _build(node.test), _build(node.body), _build(node.orelse)

        def choice(rows: Rows):
            chosen = _truth(test(rows))
            if not isinstance(chosen, numpy.ndarray):
                return body(rows) if chosen else orelse(rows)
            if chosen.all():
                return body(rows)
            if not chosen.any():
                return orelse(rows)
            return _merge(chosen, body(rows.subset(chosen)), orelse(rows.subset(~chosen)), rows.count)
        return choice
    if isinstance(node, ast.Call):
        called = cast(ast.Name, node.func)  # (Expression._check allows calls of its functions by name only)
        function, args = _FUNCTIONS[called.id], [_build(a) for a in node.args]
        return lambda rows: function([arg(rows) for arg in args])
    raise AssertionError("unreachable: Expression._check whitelists every node")


def _in_turn(parts: list[Callable[[Rows], Any]], conjunction: bool) -> Callable[[Rows], Any]:
    """``and`` (``conjunction``) or ``or`` of ``parts``, a bool per row as Python's ``all`` and
    ``any`` give, each part evaluated only on the rows still undecided."""
    def combined(rows: Rows):
        result = numpy.full(rows.count, conjunction)
        undecided, at = numpy.arange(rows.count), rows
        for part in parts:
            value = _truth(part(at))
            decided = ~_full(value, at.count) if conjunction else _full(value, at.count)
            result[undecided[decided]] = not conjunction
            undecided = undecided[~decided]
            if not len(undecided):
                break
            at = at.subset(~decided) if decided.any() else at
        return result
    return combined


def _chain(first: Callable[[Rows], Any],
           rest: list[tuple[type[ast.cmpop], Callable[[Rows], Any]]]) -> Callable[[Rows], Any]:
    """A chained comparison, each comparison evaluated only on the rows where those before held."""
    def compare(rows: Rows):
        result = numpy.ones(rows.count, bool)
        holding, at, left = numpy.arange(rows.count), rows, first(rows)
        for op_type, comparator in rest:
            right = comparator(at)
            held = _compare(op_type, left, right, at.count)
            result[holding[~held]] = False
            holding = holding[held]
            if not len(holding):
                break
            if not held.all():
                at, right = at.subset(held), _take(right, held)
            left = right
        return result
    return compare
