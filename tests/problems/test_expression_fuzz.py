"""Reliability (issue 7): search-space expressions: random syntax trees never run code
(an audit hook watches for code run, modules imported, files opened)."""

from __future__ import annotations

import ast
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoconv.errors import ExpressionError
from autoconv.problems.expressions import FUNCTIONS, compile_expression

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Audit events that would mean code ran, a module was imported or a file opened.
DANGEROUS_EVENTS = ("exec", "import", "open", "os.system", "os.exec", "os.posix_spawn", "os.fork",
                    "subprocess.Popen", "ctypes.dlopen", "object.__getattr__", "builtins.input")
_audit = {"on": False, "events": []}


def _audit_hook(event: str, args) -> None:
    if _audit["on"] and event in DANGEROUS_EVENTS:
        _audit["events"].append(event)


sys.addaudithook(_audit_hook)


class watching:
    """``with watching() as events:`` collects the dangerous audit events raised inside."""

    def __enter__(self) -> list:
        _audit["events"] = []
        _audit["on"] = True
        return _audit["events"]

    def __exit__(self, *exc) -> None:
        _audit["on"] = False


def test_the_audit_watch_sees_code_run():
    with watching() as events:
        eval("1 + 1")  # noqa: S307 (the point: the watch must see this)
    assert "exec" in events


NAMES = ["a", "b", "K", *FUNCTIONS, "__import__", "open", "eval", "exec", "getattr", "_x", "__builtins__",
         "os", "True", "None"]
BINARY = [ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.BitAnd,
          ast.BitOr, ast.BitXor, ast.MatMult]
COMPARE = [ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn, ast.Is, ast.IsNot]
NO_ARGUMENTS = dict(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _name(identifier: str) -> ast.Name:
    return ast.Name(identifier, ast.Load())


leaves = st.one_of(
    st.integers(-5, 70).map(ast.Constant),
    st.floats(-1e308, 1e308, allow_nan=False).map(ast.Constant),
    st.sampled_from(["rsc", "", "x" * 80, None, b"x", 1j, ...]).map(ast.Constant),
    st.sampled_from(NAMES).map(_name),
)


def _grow(inner):
    """Whitelisted constructions half of the time (so that accepted trees are not rare),
    anything else the other half."""
    return st.one_of(_grow_allowed(inner), _grow_anything(inner))


def _grow_allowed(inner):
    return st.one_of(
        st.builds(ast.BinOp, inner, st.sampled_from(BINARY[:7]).map(lambda op: op()), inner),
        st.builds(ast.UnaryOp, st.sampled_from([ast.USub, ast.Not]).map(lambda op: op()), inner),
        st.builds(ast.BoolOp, st.sampled_from([ast.And, ast.Or]).map(lambda op: op()),
                  st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda left, op, right: ast.Compare(left, [op()], [right]), inner,
                  st.sampled_from(COMPARE[:6]), inner),
        st.builds(ast.IfExp, inner, inner, inner),
        st.builds(lambda name, args: ast.Call(_name(name), args, []), st.sampled_from(list(FUNCTIONS)),
                  st.lists(inner, min_size=1, max_size=3)),
    )


def _grow_anything(inner):
    return st.one_of(
        st.builds(ast.BinOp, inner, st.sampled_from(BINARY).map(lambda op: op()), inner),
        st.builds(ast.UnaryOp, st.sampled_from([ast.USub, ast.UAdd, ast.Not, ast.Invert]).map(lambda op: op()),
                  inner),
        st.builds(ast.BoolOp, st.sampled_from([ast.And, ast.Or]).map(lambda op: op()),
                  st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda left, rest: ast.Compare(left, [op() for op, _ in rest], [c for _, c in rest]),
                  inner, st.lists(st.tuples(st.sampled_from(COMPARE), inner), min_size=1, max_size=2)),
        st.builds(ast.IfExp, inner, inner, inner),
        st.builds(lambda function, args, keywords: ast.Call(function, args, keywords),
                  st.one_of(st.sampled_from(NAMES).map(_name), inner),
                  st.lists(inner, max_size=3),
                  st.lists(st.builds(ast.keyword, st.sampled_from(["key", "x"]), inner), max_size=1)),
        st.builds(lambda value, attr: ast.Attribute(value, attr, ast.Load()), inner,
                  st.sampled_from(["__class__", "__globals__", "__subclasses__", "real", "system", "x"])),
        st.builds(lambda value, index: ast.Subscript(value, index, ast.Load()), inner, inner),
        st.builds(lambda body: ast.Lambda(ast.arguments(**NO_ARGUMENTS), body), inner),
        st.lists(inner, max_size=3).map(lambda items: ast.List(items, ast.Load())),
        st.lists(inner, max_size=3).map(lambda items: ast.Tuple(items, ast.Load())),
        st.lists(inner, min_size=1, max_size=2).map(lambda items: ast.Dict(items, items)),
        st.builds(lambda element, iterable: ast.ListComp(element, [ast.comprehension(
            ast.Name("i", ast.Store()), iterable, [], 0)]), inner, inner),
        st.builds(lambda value: ast.NamedExpr(ast.Name("y", ast.Store()), value), inner),
        st.builds(lambda value: ast.JoinedStr([ast.FormattedValue(value, -1, None)]), inner),
        st.builds(lambda value: ast.Starred(value, ast.Load()), inner),
    )


syntax_trees = st.recursive(leaves, _grow, max_leaves=10)

ALLOWED_NODES = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.BoolOp,
                 ast.Compare, ast.IfExp, ast.Call, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv,
                 ast.Mod, ast.Pow, ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or, ast.Eq, ast.NotEq,
                 ast.Lt, ast.LtE, ast.Gt, ast.GtE)


@FUZZ
@given(syntax_trees, st.lists(st.one_of(st.integers(-2**40, 2**40), st.floats(-1e6, 1e6)), min_size=1,
                              max_size=4))
def test_fuzz_random_syntax_trees_never_run_code(tree, numbers):
    try:
        text = ast.unparse(ast.fix_missing_locations(ast.Expression(tree)))
    except Exception:  # a tree with no text form (the strategy builds odd ones on purpose)
        return
    expression = result = None
    with watching() as events:
        try:
            expression = compile_expression(text)
            values = {name: numbers[i % len(numbers)] for i, name in enumerate(sorted(expression.names))}
            result = expression.evaluate(values)
        except ExpressionError:
            pass
    assert not events, f"{text!r} raised audit events {events}"
    if expression is None:
        return
    # Accepted: only whitelisted syntax, names without underscores, calls of the pure
    # functions by name, strings only as operands of == and !=.
    parsed = ast.parse(text, mode="eval")
    parents = {child: node for node in ast.walk(parsed) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(parsed):
        assert isinstance(node, ALLOWED_NODES), (text, type(node).__name__)
        if isinstance(node, ast.Name):
            assert not node.id.startswith("_"), text
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and not node.keywords, text
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            parent = parents.get(node)
            assert isinstance(parent, ast.Compare) and isinstance(node.value, str), text
            assert all(isinstance(op, (ast.Eq, ast.NotEq)) for op in parent.ops), text
    assert result is None or isinstance(result, (bool, int, float)), (text, result)
