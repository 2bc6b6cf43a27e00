"""Unit tests of autoconv.problems.expressions (the safe expression evaluator) and autoconv.kernels.space
(search-space files, enumeration, defaults), with Hypothesis fuzzing of both.

Enumeration is checked against a brute-force filter that evaluates each family's
expressions with Python itself (test code trusts the repository's files), so the
whitelisted evaluator and the enumeration are both compared with an independent
reference.
"""

from __future__ import annotations

import itertools
import time

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoconv.errors import AutoconvError, ExpressionError, SearchSpaceError
from autoconv.kernels.families import FAMILY_NAMES, get_family
from autoconv.kernels.limits import H100
from autoconv.kernels.space import PointTable, SearchSpace, parse_search_space
from autoconv.problems.expressions import FUNCTIONS, MAX_EXPONENT, compile_expression
from autoconv.problems.problem import parse_spec
from tests.helpers import family_spec

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- expressions: what they compute ----------------------------------------------------

@pytest.mark.parametrize("text", [
    "1 + 2 * 3", "(a + b) // 3", "a % b", "a / b", "2 ** a", "-a + +b", "a - b * 2",
    "a < b <= 9", "a == b or not a != 7", "a > 3 and b < 3", "a if a > b else b",
    "min(a, b, 3)", "max(a, 2 * b)", "abs(b - a)", "ceil_div(a, b)", "is_pow2(a)", "log2(8)",
    "log2(a)", "a == 7 and 1.5 * b > 2", "True and not False",
])
def test_expressions_agree_with_python(text):
    functions = dict(FUNCTIONS)
    for a, b in [(7, 2), (8, 5), (1, 1), (64, 3)]:
        expected = eval(text, {"__builtins__": {}}, {**functions, "a": a, "b": b})
        got = compile_expression(text).evaluate({"a": a, "b": b})
        assert got == expected and type(got) is type(expected), (text, a, b)


def test_function_values():
    ev = lambda t: compile_expression(t).evaluate({})  # noqa: E731
    assert ev("ceil_div(7, 2)") == 4 and ev("ceil_div(8, 2)") == 4 and ev("ceil_div(1, 8)") == 1
    assert ev("is_pow2(64)") and not ev("is_pow2(48)") and not ev("is_pow2(0)")
    assert ev("log2(64)") == 6 and isinstance(ev("log2(64)"), int)
    assert ev("log2(3)") == pytest.approx(1.5849625007)


def test_string_equality_only():
    expr = compile_expression('GATHER == "rsc"')
    assert expr.evaluate({"GATHER": "rsc"}) is True
    assert expr.evaluate({"GATHER": "crs"}) is False
    assert expr.names == {"GATHER"}


def test_names_are_collected():
    assert compile_expression("BM * BN + min(K, 4) if True else Q").names == {"BM", "BN", "K", "Q"}


# ---- expressions: what they refuse ------------------------------------------------------

@pytest.mark.parametrize("text", [
    "__import__('os').system('true')",
    "__import__",
    "x.__class__",
    "().__class__.__bases__",
    "x.real",
    "(lambda: 1)()",
    "lambda x: x",
    "x[0]",
    "[1, 2][0]",
    "{'a': 1}",
    "'a' + 'b'",
    "'abc'",
    "'a' < 'b'",
    "'a' * 3",
    "f'{x}'",
    "b'x'",
    "1j",
    "None",
    "open('/etc/passwd')",
    "eval('1')",
    "getattr(x, 'y')",
    "min(x for x in y)",
    "[x for x in y]",
    "(y := 1)",
    "min(*y)",
    "min(a, key=b)",
    "_private",
    "__builtins__",
    "~x",
    "x << 2",
    "x & 1",
    "x in y",
    "x is y",
    "1 +",
    "",
    "a; b",
    "import os",
    "1" * 501,
])
def test_unsafe_or_malformed_expressions_are_rejected_when_compiled(text):
    with pytest.raises(ExpressionError):
        compile_expression(text)


@pytest.mark.parametrize("value", [None, True, [1], {"a": 1}, ("x",), b"1"])
def test_non_text_is_rejected(value):
    # Lists and mappings come straight from YAML; they must not break the cache (fixed bug).
    with pytest.raises(ExpressionError, match="expected an expression string or a number"):
        compile_expression(value)


@pytest.mark.parametrize("text", ["9**9**9", "2 ** 65", "10 ** 30 * 10 ** 30", "(2 ** 64) ** 64",
                                  "1e300 ** 2", "1e308 * 10"])
def test_huge_values_are_refused_quickly(text):
    start = time.perf_counter()
    with pytest.raises(ExpressionError, match="exponent|out of range"):
        compile_expression(text).evaluate({})
    assert time.perf_counter() - start < 0.5
    assert compile_expression(f"2 ** {MAX_EXPONENT}").evaluate({}) == 2**MAX_EXPONENT


@pytest.mark.parametrize("text, variables, fragment", [
    ("a + b", {"a": 1}, "unknown name(s) b"),
    ("min", {}, "unknown name(s) min"),
    ("a // 0", {"a": 1}, "division by zero"),
    ("a % b", {"a": 1, "b": 0}, "division by zero"),
    ("ceil_div(a, 0)", {"a": 1}, "ceil_div()"),
    ("min()", {}, "min()"),
    ("log2(0)", {}, "log2()"),
    ("(-1) ** 0.5 < 2", {}, "not a real number"),          # complex result (fixed bug)
    ("a + 1", {"a": "rsc"}, "arithmetic needs numbers"),
    ("-a", {"a": "rsc"}, "arithmetic needs numbers"),      # (fixed bug)
    ("a < 1", {"a": "rsc"}, "cannot compare"),             # (fixed bug)
])
def test_evaluation_errors(text, variables, fragment):
    with pytest.raises(ExpressionError) as info:
        compile_expression(text).evaluate(variables)
    assert fragment in str(info.value)


EXPRESSION_ALPHABET = "0123456789abxyKBM_.+-*/%()<>=!, '\"[]:~&|^@" + "\n"
WORDS = ["and", "or", "not", "if", "else", "lambda", "min", "max", "ceil_div", "log2", "is_pow2",
         "__import__", "__class__", "True", "None", "**", "//", "9**9**9", "1e308", "rsc"]


def _grammar_extend(inner):
    operators = ["+", "-", "*", "/", "//", "%", "**", "<", "<=", "==", "!=", ">", "and", "or"]
    return st.one_of(
        st.tuples(inner, st.sampled_from(operators), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["-", "+", "not "]), inner).map("".join),
        st.tuples(st.sampled_from(list(FUNCTIONS)), st.lists(inner, max_size=3)).map(
            lambda t: f"{t[0]}({', '.join(t[1])})"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"))


#: Well-formed expressions over numbers, names and a string, so that evaluation (not
#: just parsing) is exercised: strings in arithmetic, complex powers, float overflow...
GRAMMAR = st.recursive(
    st.one_of(st.integers(-3, 70).map(str),
              st.sampled_from(["0", "0.5", "-1", "1e308", "a", "b", "s", "K", "True", '"rsc"'])),
    _grammar_extend, max_leaves=8)


@FUZZ
@given(st.one_of(st.lists(st.one_of(st.text(EXPRESSION_ALPHABET, min_size=1, max_size=6),
                                    st.sampled_from(WORDS)), max_size=12).map(" ".join),
                 GRAMMAR),
       st.fixed_dictionaries({"a": st.one_of(st.integers(-2**70, 2**70), st.floats()),
                              "b": st.one_of(st.integers(-9, 9), st.floats(-2, 2)),
                              "s": st.sampled_from(["rsc", ""]), "K": st.integers(1, 64)}))
def test_fuzz_expressions_raise_only_expression_errors(text, variables):
    try:
        expression = compile_expression(text)
    except ExpressionError:
        return
    try:
        expression.evaluate(variables)
    except ExpressionError:
        pass


# ---- search-space files -----------------------------------------------------------------

TOY = {
    "family": "toy",
    "params": {"A": [1, 2, 4, 8], "B": [1, 2, 4]},
    "derived": {"T": "A * B", "SMEM": "T * 1024"},
    "constraints": [{"expr": "A <= K", "why": "no more A than filters"},
                    {"expr": "T <= 8", "why": "small tiles"},
                    "SMEM <= max_shared_bytes"],
    "default": {"A": 8, "B": 1},
}


def toy_space(**changes) -> SearchSpace:
    doc = {**TOY, **changes}
    return parse_search_space(yaml.safe_dump(doc, sort_keys=False), "toy.yaml")


def small_problem(K: int = 3):
    return parse_spec(f"N=1,C=3,H=9,W=7,K={K},R=3,S=3,pad=1")


def test_toy_space_points_and_violations():
    space = toy_space()
    points = space.points(small_problem(K=3), H100)
    expected = [{"A": a, "B": b} for a, b in itertools.product([1, 2, 4, 8], [1, 2, 4])
                if a <= 3 and a * b <= 8]
    assert points == expected
    assert space.violations({"A": 8, "B": 4}, small_problem(K=3), H100) == [
        "A <= K (no more A than filters)", "T <= 8 (small tiles)"]
    assert space.violations({"A": 3, "B": 1}, small_problem(), H100) == ["A=3 is not one of [1, 2, 4, 8]"]
    context = space.context({"A": 2, "B": 4}, small_problem(), H100)
    assert context["T"] == 8 and context["SMEM"] == 8192 and context["K"] == 3 and context["P"] == 9


def test_context_names_bad_parameters():
    space = toy_space()
    with pytest.raises(SearchSpaceError, match=r"unknown parameter 'AA' \(did you mean 'A'\?\)"):
        space.context({"A": 1, "B": 1, "AA": 1}, small_problem(), H100)
    with pytest.raises(SearchSpaceError, match="missing parameter"):
        space.context({"A": 1}, small_problem(), H100)


def test_default_config_is_kept_when_valid():
    assert toy_space().default_config(small_problem(K=64), H100) == {"A": 8, "B": 1}


def test_default_config_falls_back_to_nearest_valid_point():
    space = toy_space()
    problem = small_problem(K=3)  # A=8 > K: the default is invalid
    chosen = space.default_config(problem, H100)
    assert chosen == {"A": 2, "B": 1}  # one parameter changed, two steps down its list
    # Brute force: no valid point is nearer (fewer changes, then fewer steps).
    order = {name: list(choices) for name, choices in TOY["params"].items()}

    def distance(config):
        default = TOY["default"]
        return (sum(config[n] != default[n] for n in order),
                sum(abs(order[n].index(config[n]) - order[n].index(default[n])) for n in order))
    assert distance(chosen) == min(distance(c) for c in space.points(problem, H100))


def test_default_config_takes_the_first_valid_fallback_before_the_nearest_point():
    space = toy_space(fallbacks=[{"A": 4, "B": 2}, {"A": 1, "B": 4}])
    assert space.default_config(small_problem(K=64), H100) == {"A": 8, "B": 1}  # the default fits
    assert space.default_config(small_problem(K=3), H100) == {"A": 1, "B": 4}   # A=4 > K: the second
    space = toy_space(fallbacks=[{"A": 4, "B": 4}])                            # never valid (T > 8)
    assert space.default_config(small_problem(K=3), H100) == {"A": 2, "B": 1}  # the nearest point
    with pytest.raises(SearchSpaceError, match=r"fallbacks\[0\]"):
        toy_space(fallbacks=[{"A": 4}])


def test_default_config_without_any_valid_point():
    space = toy_space(constraints=["A > 100"])
    with pytest.raises(SearchSpaceError, match=r"toy: no valid configuration for 1x3x9x7.*"
                                               r"\(its default and fallbacks all break: A > 100"):
        space.default_config(small_problem(), H100)


def test_constraint_failing_to_evaluate_is_an_error():
    space = toy_space(constraints=["K // (A - A) > 0"])
    with pytest.raises(SearchSpaceError, match="division by zero"):
        space.points(small_problem(), H100)
    # ...but not after an earlier constraint already rejected the point
    space = toy_space(constraints=["A > 100", "K // (A - A) > 0"])
    assert space.points(small_problem(), H100) == []


@pytest.mark.parametrize("changes, fragment", [
    ({"famly": "x"}, "unknown key 'famly' (did you mean 'family'?)"),
    ({"family": "no-dash"}, "'family' must be an identifier"),
    ({"family": 3}, "'family' must be an identifier"),
    ({"params": {}}, "'params' must map each parameter"),
    ({"params": [1, 2]}, "'params' must map each parameter"),
    ({"params": {"A": 4, "B": [1]}}, "params.A: expected a non-empty list"),
    ({"params": {"A": [], "B": [1]}}, "params.A: expected a non-empty list"),
    ({"params": {"A": [1, 1], "B": [1]}}, "params.A: choices repeat"),
    ({"params": {"A": [[1]], "B": [1]}}, "params.A: choice [1] must be a number or string"),
    ({"params": {"A": [True], "B": [1]}}, "must be a number or string"),
    ({"params": {"1A": [1], "B": [1]}}, "'1A' is not a valid name"),
    ({"params": {"_A": [1], "B": [1]}}, "'_A' is not a valid name"),
    ({"derived": {"A": "1"}}, "derived.A shadows a parameter"),
    ({"derived": ["T"]}, "'derived' must map names"),
    ({"derived": {"T": "A.__class__"}}, "derived.T: 'A.__class__': Attribute is not allowed"),
    ({"derived": {"T": [1, 2]}}, "derived.T: expected an expression string"),
    ({"derived": {"T": "__import__('os')"}}, "derived.T:"),
    ({"constraints": "A < 2"}, "'constraints' must be a list"),
    ({"constraints": [{"exp": "A < 2"}]}, "constraints[0]: expected keys 'expr' and 'why'"),
    ({"constraints": [{"expr": "A < 2", "why": "x", "extra": 1}]}, "expected keys 'expr' and 'why'"),
    ({"constraints": ["lambda: 1"]}, "constraints[0]: 'lambda: 1': Lambda is not allowed"),
    ({"constraints": [{"expr": {"a": 1}}]}, "constraints[0]: expected an expression string"),
    ({"default": {"A": 1}}, "'default' must give a value for every parameter (A, B)"),
    ({"default": {"A": 3, "B": 1}}, "default.A=3 is not one of [1, 2, 4, 8]"),
    ({"seeds": {"A": 1, "B": 1}}, "'seeds' must be a list of configs"),
    ({"seeds": [{"A": 1, "B": 1}, {"A": 2}]}, "'seeds[1]' must give a value for every parameter (A, B)"),
    ({"seeds": [{"A": 5, "B": 1}]}, "seeds[0].A=5 is not one of [1, 2, 4, 8]"),
])
def test_search_space_errors_name_the_file_and_the_key(changes, fragment):
    with pytest.raises(SearchSpaceError) as info:
        toy_space(**changes)
    assert str(info.value).startswith("toy.yaml: ")
    assert fragment in str(info.value)


@pytest.mark.parametrize("text, fragment", [
    ("family: [", "not valid YAML"),
    ("- 1\n- 2\n", "expected a mapping"),
    ("", "expected a mapping"),
    ("family: !!python/object/apply:os.system ['true']", "not valid YAML"),
    ("family: !!int abc", "not valid YAML"),        # ValueError inside PyYAML (fixed bug)
    ("family: !!bool maybe", "not valid YAML"),     # KeyError inside PyYAML (fixed bug)
    ("family: !!timestamp x", "not valid YAML"),    # AttributeError inside PyYAML (fixed bug)
    ("family: " + "9" * 5000, "not valid YAML"),    # int beyond Python's digit limit (fixed bug)
    ("[" * 1000, "not valid YAML"),                 # RecursionError inside PyYAML (fixed bug)
], ids=["syntax", "list", "empty", "python-tag", "bad-int", "bad-bool", "bad-timestamp",
        "long-int", "deep"])
def test_search_space_yaml_errors(text, fragment):
    with pytest.raises(SearchSpaceError, match=r"^x\.yaml: ") as info:
        parse_search_space(text, "x.yaml")
    assert fragment in str(info.value)


# ---- the real families: enumeration == brute force -------------------------------------

def brute_force_points(space_doc: dict, problem, device, workspace_limit: int) -> list[dict]:
    """Every combination of choices whose constraints all hold, evaluated by Python's
    own ``eval`` (the constraints are checked in order and stop at the first failure,
    which is the contract: later constraints may assume earlier ones)."""
    variables = {
        "N": problem.N, "C": problem.C, "H": problem.H, "W": problem.W, "K": problem.K,
        "R": problem.R, "S": problem.S, "P": problem.P, "Q": problem.Q,
        "STRIDE_H": problem.stride[0], "STRIDE_W": problem.stride[1],
        "DILATION_H": problem.dilation[0], "DILATION_W": problem.dilation[1],
        "PAD_TOP": problem.padding[0], "PAD_BOTTOM": problem.padding[1],
        "PAD_LEFT": problem.padding[2], "PAD_RIGHT": problem.padding[3],
        "GEMM_M": problem.N * problem.P * problem.Q, "GEMM_N": problem.K,
        "GEMM_K": problem.C * problem.R * problem.S, "HAS_BIAS": int(problem.bias),
        "ELEMENT_BYTES": 4 if problem.dtype == "float32" else 2, "PRECISION_TF32": int(problem.precision == "tf32"),
        "FORMAT_F16": int(problem.precision == "fp16"), "OUTPUT_FLOAT32": int(problem.output_dtype == "float32"),
        "OUTPUT_BYTES": 4 if problem.output_dtype == "float32" else 2, "LAYOUT_NCHW": int(problem.layout == "NCHW"),
        "workspace_limit_bytes": workspace_limit, **device.variables(),
    }
    derived = [(name, compile(str(text), name, "eval")) for name, text in (space_doc.get("derived") or {}).items()]
    constraints = [compile(str(c["expr"] if isinstance(c, dict) else c), "constraint", "eval")
                   for c in space_doc.get("constraints") or []]
    names = list(space_doc["params"])
    valid = []
    for combo in itertools.product(*(space_doc["params"][n] for n in names)):
        env = {**FUNCTIONS, **variables, **dict(zip(names, combo))}
        try:
            for name, code in derived:
                env[name] = eval(code, {"__builtins__": {}}, env)
        except ZeroDivisionError:
            continue  # a derived value that cannot be computed makes the point invalid
        if all(eval(code, {"__builtins__": {}}, env) for code in constraints):
            valid.append(dict(zip(names, combo)))
    return valid


ENUMERATION_PROBLEMS = [
    "N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1",
    "N=1,C=3,H=21,W=17,K=24,R=4,S=2,stride=2,pad=same",
    "N=32,C=256,H=14,W=14,K=1024,R=1,S=1",
    "N=4,C=64,H=14,W=14,K=128,R=3,S=3,pad=1,precision=tf32",   # (PRECISION_TF32 switches wgmma's space)
]


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_enumeration_equals_brute_force(family):
    space = get_family(family).space
    doc = yaml.safe_load(space.source_text)
    for index, spec in enumerate(ENUMERATION_PROBLEMS):
        problem = parse_spec(family_spec(family, spec))
        for limit in ((0, 1 << 30) if index == 0 else (1 << 30,)):  # without and with workspace
            points = space.points(problem, H100, limit)
            assert points == brute_force_points(doc, problem, H100, limit), (family, spec, limit)
        assert points, f"{family} has no valid configuration for {spec}"
        assert space.default_config(problem, H100) in points


#: Shapes the kernels are judged on: odd sizes, non-square filters and strides, asymmetric
#: padding, dilation, batch 1, and each precision's switch of the spaces.
AT_ONCE_PROBLEMS = [
    "N=1,C=7,H=13,W=11,K=5,R=3,S=2,stride=2x1,pad=1:0:2:1,dilation=2x1",
    "N=3,C=96,H=28,W=28,K=40,R=5,S=5,pad=2,bias=1",
    "N=32,C=64,H=56,W=56,K=256,R=1,S=1",
    "N=8,C=512,H=14,W=14,K=512,R=3,S=3,pad=1,precision=tf32",
]


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_enumeration_at_once_equals_the_walk_point_by_point(family):
    """SearchSpace.points evaluates each depth's combinations at once: the shipped spaces never need
    the point-by-point walk (a refusal would show here as NotVectorizable), and it finds the same
    points in the same order, with and without room for a workspace."""
    space = get_family(family).space
    for spec in AT_ONCE_PROBLEMS:
        problem = parse_spec(family_spec(family, spec))
        for limit in (0, 1 << 30):
            assert space._points_at_once(problem, H100, limit) == space._walk(problem, H100, limit), \
                (family, spec, limit)


def test_a_space_too_large_to_evaluate_at_once_is_walked_point_by_point(monkeypatch):
    import autoconv.kernels.space as space_module

    space = toy_space()
    expected = space.points(small_problem(K=3), H100)
    walked: list[int] = []
    original = SearchSpace._walk
    monkeypatch.setattr(SearchSpace, "_walk", lambda self, *args: walked.append(1) or original(self, *args))
    monkeypatch.setattr(space_module, "MAX_ROWS_AT_ONCE", 3)  # (the toy space binds 4 choices of A first)
    assert space.points(small_problem(K=3), H100) == expected and walked == [1]


def test_a_space_that_cannot_be_evaluated_at_once_is_walked_point_by_point():
    """A derived value that divides by a parameter its constraint keeps non-zero only later (the
    walk decides such a subtree point by point), and a parameter of mixed types: the same points
    as the brute-force filter."""
    doc = {**TOY, "params": {"A": [0, 1, 2, 4], "B": [1, 2.5, 4]}, "derived": {"T": "8 // A if A else 0"},
           "constraints": ["A > 0", "T * B <= 16"], "default": {"A": 1, "B": 1}}
    space = parse_search_space(yaml.safe_dump(doc, sort_keys=False), "toy.yaml")
    expected = [{"A": a, "B": b} for a, b in itertools.product([1, 2, 4], [1, 2.5, 4]) if (8 // a) * b <= 16]
    assert space.points(small_problem(), H100) == expected
    doc["derived"] = {"T": "8 // A"}  # (divides by zero at A = 0, before "A > 0" is checked)
    space = parse_search_space(yaml.safe_dump({**doc, "params": {"A": [0, 1, 2, 4], "B": [1, 2, 4]}},
                                              sort_keys=False), "toy.yaml")
    assert space.points(small_problem(), H100) == [{"A": a, "B": b} for a, b in itertools.product([1, 2, 4], [1, 2, 4])
                                                   if (8 // a) * b <= 16]


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_values_of_many_configurations_at_once_are_each_ones_context(family):
    space = get_family(family).space
    problem = parse_spec(family_spec(family, "N=2,C=24,H=15,W=13,K=40,R=3,S=3,pad=1"))
    configs = space.points(problem, H100, 1 << 30)[::7]
    indices = PointTable(space.params, configs).indices
    first = space.context(configs[0], problem, H100, 1 << 30)
    names = [name for name in [*space.params, *space.derived] if isinstance(first[name], (int, float))]
    values = space.values_of(names, indices, problem, H100, 1 << 30)
    assert values.shape == (len(configs), len(names))
    for row, config in zip(values.tolist(), configs):
        context = space.context(config, problem, H100, 1 << 30)
        assert row == [float(context[name]) for name in names]


def test_values_of_a_space_that_cannot_be_evaluated_at_once_are_taken_point_by_point():
    doc = {**TOY, "params": {"A": [1, 2, 4], "B": [1, 2.5, 4]}, "derived": {"T": "A * B", "U": "T + K"},
           "constraints": [], "default": {"A": 1, "B": 1}}  # (B mixes types: no column of one type)
    space = parse_search_space(yaml.safe_dump(doc, sort_keys=False), "toy.yaml")
    configs = [{"A": a, "B": b} for a, b in itertools.product([1, 2, 4], [1, 2.5, 4])]
    values = space.values_of(["U", "A"], PointTable(space.params, configs).indices, small_problem(K=3), H100)
    assert values.tolist() == [[a * b + 3, a] for a, b in itertools.product([1, 2, 4], [1, 2.5, 4])]


# ---- fuzzing the search-space parser -----------------------------------------------------

SPACE_KEYS = ["family", "description", "params", "derived", "constraints", "default", "famly", "extra"]
PARAM_NAMES = ["A", "B", "BM", "_x", "1a", "K", "T", "family"]
EXPRESSIONS = ["A * B", "A <= K", "T <= 8", "ceil_div(K, A)", "A // (B - B)", "9**9**9",
               "__import__('os')", "x.y", "A if B else 0", "(-1) ** 0.5 < A", "B == 'rsc'",
               "max_shared_bytes >= A", "T", "Q * P * A > 0", "log2(A)", "min()", "[1]"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(),
                    st.text(max_size=12), st.sampled_from(EXPRESSIONS), st.sampled_from(PARAM_NAMES))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(PARAM_NAMES + ["expr", "why"]), inner,
                                                 max_size=4)), max_leaves=16)


expressions = st.one_of(st.sampled_from(EXPRESSIONS), GRAMMAR.map(lambda t: t.replace("s", "A")),
                        values)


@st.composite
def near_valid_spaces(draw):
    """Documents shaped like a search space with random defects, so the fuzz reaches past
    the first checks and into evaluation."""
    names = draw(st.lists(st.sampled_from(["A", "B", "C2"]), min_size=1, max_size=3, unique=True))
    params = {n: draw(st.lists(st.one_of(st.integers(-2, 16), st.sampled_from(["rsc", "crs"])),
                               min_size=1, max_size=3, unique=True)) for n in names}
    doc = {"family": draw(st.sampled_from(["toy", "toy2", "bad-name"])), "params": params,
           "derived": draw(st.dictionaries(st.sampled_from(["T", "U", "A"]), expressions, max_size=2)),
           "constraints": draw(st.lists(st.one_of(
               expressions, st.fixed_dictionaries({"expr": expressions, "why": st.text(max_size=5)})),
               max_size=3)),
           "default": {n: draw(st.sampled_from(params[n])) for n in names}}
    if draw(st.booleans()):
        doc[draw(st.sampled_from(SPACE_KEYS))] = draw(values)
    return doc


@FUZZ
@given(st.one_of(st.dictionaries(st.sampled_from(SPACE_KEYS), values, max_size=6), near_valid_spaces(),
                 values))
def test_fuzz_search_space_structures(doc):
    try:
        space = parse_search_space(yaml.safe_dump(doc, sort_keys=False), "fuzz.yaml")
    except SearchSpaceError:
        return
    try:
        space.points(small_problem(), H100)
        space.default_config(small_problem(), H100)
    except SearchSpaceError:
        pass


SPACE_LINES = [
    "family: toy", "family: !!float abc", "params:", "  A: [1, 2]", "  A: !!int abc",
    "  B: [!!bool maybe]", "  A: [1, 2, &x 3]", "  B: *x", "default: {A: 1}", "default:",
    "  A: !!timestamp x", "derived:", "  T: A * 2", "  T: [A]", "constraints:", "  - A < 2",
    "  - {expr: A, why: x}", "  - !!python/object/apply:os.getcwd []", "  - [", "  - " + "9" * 5000,
    "  ? [1]", "  : 2", "\t- x", "...", "---", "%YAML 1.1", "!!set {a}", "'unclosed",
]


@FUZZ
@given(st.one_of(st.text(max_size=200), st.lists(st.sampled_from(SPACE_LINES), max_size=12).map("\n".join)))
def test_fuzz_search_space_text(text):
    try:
        parse_search_space(text, "fuzz.yaml")
    except SearchSpaceError:
        pass


def test_search_space_never_executes_tags(tmp_path):
    marker = tmp_path / "executed"
    text = (f"family: !!python/object/apply:os.mkdir ['{marker}']\n"
            "params: {A: [1]}\ndefault: {A: 1}\n")
    with pytest.raises(AutoconvError):
        parse_search_space(text, "evil.yaml")
    assert not marker.exists()
