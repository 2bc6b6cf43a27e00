"""A small, safe evaluator for the arithmetic in search-space files.

Search spaces are data that users edit, so their expressions must never run code.
Instead of Python's ``eval`` this parses an expression with :mod:`ast` and walks a
whitelist: integer and float literals, variable names, ``+ - * / // % **``,
comparisons, ``and``/``or``/``not``, ``x if c else y``, string literals only as
operands of ``==``/``!=``, and calls of a few pure functions (:data:`FUNCTIONS`).
Anything else (attribute access, subscripts, lambdas, comprehensions, string
arithmetic, unknown functions) is rejected when the expression is compiled, before it
is ever evaluated; exponents and results are bounded so that a hostile ``9**9**9``
cannot hang the process.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, cast

from autoconv.errors import ExpressionError
from autoconv.problems.problem import ceil_div


def _is_string(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) <= 64


def _is_number(value) -> bool:
    return isinstance(value, (int, float))


def _is_pow2(a):
    return isinstance(a, int) and a > 0 and (a & (a - 1)) == 0


#: Functions an expression may call; all pure and cheap.
FUNCTIONS: dict[str, Callable] = {
    "min": min,
    "max": max,
    "abs": abs,
    "ceil_div": ceil_div,
    "is_pow2": _is_pow2,
    "log2": lambda a: int(math.log2(a)) if _is_pow2(a) else math.log2(a),
}

MAX_EXPONENT = 64
MAX_MAGNITUDE = 2**80
MAX_LENGTH = 500

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}


class Expression:
    """A compiled, whitelisted expression. Call :meth:`evaluate` with the variables."""

    def __init__(self, text: object):
        if not isinstance(text, (str, int, float)) or isinstance(text, bool):
            raise ExpressionError(f"expected an expression string or a number, got {text!r}")
        self.text = str(text)
        if len(self.text) > MAX_LENGTH:
            raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
        try:
            tree = ast.parse(self.text, mode="eval")
        except SyntaxError as err:
            raise ExpressionError(f"cannot parse {self.text!r}: {err.msg}") from None
        self.names = frozenset(self._check(tree.body))
        #: The checked syntax tree (:mod:`autoconv.problems.expression_arrays` evaluates it too).
        self.tree = tree.body
        self._evaluate = self._build(tree.body)

    def _check(self, node) -> set[str]:
        """Reject every node outside the whitelist; return the variable names used."""
        if isinstance(node, ast.Constant):
            # True and False parse as constants (bool is an int); strings and None do not pass.
            if not isinstance(node.value, (int, float)):
                raise ExpressionError(f"{self.text!r}: only numbers are allowed as literals")
            return set()
        if isinstance(node, ast.Name):
            if node.id.startswith("_"):
                raise ExpressionError(f"{self.text!r}: names may not start with '_'")
            return set() if node.id in ("True", "False") else {node.id}
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return self._check(node.left) | self._check(node.right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return self._check(node.operand)
        if isinstance(node, ast.BoolOp):
            return set().union(*(self._check(v) for v in node.values))
        if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
            # String literals may be compared for equality (GATHER == "rsc") and nothing else.
            equality = all(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops)
            return set().union(*(set() if equality and _is_string(operand) else self._check(operand)
                                 for operand in (node.left, *node.comparators)))
        if isinstance(node, ast.IfExp):
            return self._check(node.test) | self._check(node.body) | self._check(node.orelse)
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise ExpressionError(
                    f"{self.text!r}: only these functions may be called: {', '.join(FUNCTIONS)}")
            if node.keywords:
                raise ExpressionError(f"{self.text!r}: keyword arguments are not allowed")
            return set().union(*(self._check(a) for a in node.args))
        raise ExpressionError(f"{self.text!r}: {type(node).__name__} is not allowed in an expression")

    def evaluate(self, variables: Mapping[str, object]):
        missing = self.names - variables.keys()
        if missing:
            raise ExpressionError(f"{self.text!r}: unknown name(s) {', '.join(sorted(missing))}")
        return self._evaluate(variables)

    # The checked tree is turned into nested closures once, so that evaluating it (which
    # search-space enumeration does for thousands of points) is a few Python calls.
    def _build(self, node) -> Callable[[Mapping], Any]:  # (values: numbers, strings, booleans)
        if isinstance(node, ast.Constant):
            value = node.value
            return lambda env: value
        if isinstance(node, ast.Name):
            if node.id in ("True", "False"):
                value = node.id == "True"
                return lambda env: value
            name = node.id
            return lambda env: env[name]
        if isinstance(node, ast.BinOp):
            left, right, op = self._build(node.left), self._build(node.right), _BINARY[type(node.op)]
            is_pow = isinstance(node.op, ast.Pow)

            def binary(env):
                a, b = left(env), right(env)
                if not (_is_number(a) and _is_number(b)):
                    raise ExpressionError(f"{self.text!r}: arithmetic needs numbers, got {a!r} and {b!r}")
                if is_pow and abs(b) > MAX_EXPONENT:
                    raise ExpressionError(f"{self.text!r}: exponent {b} is larger than {MAX_EXPONENT}")
                try:
                    result = op(a, b)
                except ZeroDivisionError:
                    raise ExpressionError(f"{self.text!r}: division by zero") from None
                except OverflowError:  # float ** float beyond the float range
                    raise ExpressionError(f"{self.text!r}: value out of range") from None
                if isinstance(result, complex):  # (-8) ** 0.5
                    raise ExpressionError(f"{self.text!r}: {a!r} ** {b!r} is not a real number")
                if abs(result) > MAX_MAGNITUDE:
                    raise ExpressionError(f"{self.text!r}: value out of range")
                return result
            return binary
        if isinstance(node, ast.UnaryOp):
            operand, unary_op = self._build(node.operand), _UNARY[type(node.op)]
            is_not = isinstance(node.op, ast.Not)

            def unary(env):
                value = operand(env)
                if not (is_not or _is_number(value)):
                    raise ExpressionError(f"{self.text!r}: arithmetic needs numbers, got {value!r}")
                return unary_op(value)
            return unary
        if isinstance(node, ast.BoolOp):
            parts = [self._build(v) for v in node.values]
            if isinstance(node.op, ast.And):
                return lambda env: all(part(env) for part in parts)
            return lambda env: any(part(env) for part in parts)
        if isinstance(node, ast.Compare):
            first = self._build(node.left)
            rest = [(_COMPARE[type(op)], self._build(c)) for op, c in zip(node.ops, node.comparators)]

            def compare(env):
                left = first(env)
                for op, comparator in rest:
                    right = comparator(env)
                    try:
                        if not op(left, right):
                            return False
                    except TypeError:  # a string parameter ordered against a number
                        raise ExpressionError(
                            f"{self.text!r}: cannot compare {left!r} with {right!r}") from None
                    left = right
                return True
            return compare
        if isinstance(node, ast.IfExp):
            test, body, orelse = self._build(node.test), self._build(node.body), self._build(node.orelse)
            return lambda env: body(env) if test(env) else orelse(env)
        if isinstance(node, ast.Call):
            called = cast(ast.Name, node.func)  # _check allows calls of FUNCTIONS by name only
            function, name = FUNCTIONS[called.id], called.id
            args = [self._build(a) for a in node.args]

            def call(env):
                try:
                    return function(*(arg(env) for arg in args))
                except (TypeError, ValueError, ArithmeticError) as err:
                    raise ExpressionError(f"{self.text!r}: {name}(): {err}") from None
            return call
        raise AssertionError("unreachable: _check whitelists every node")

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"


def compile_expression(text) -> Expression:
    """Compile (and cache) an expression; raises :class:`ExpressionError` if unsafe."""
    if not isinstance(text, (str, int, float)) or isinstance(text, bool):
        return Expression(text)  # raises the error that says what is allowed (and a list
        # or a mapping from a YAML file could not be a cache key anyway)
    return _compile_cached(text)


@lru_cache(maxsize=4096)
def _compile_cached(text) -> Expression:
    return Expression(text)
