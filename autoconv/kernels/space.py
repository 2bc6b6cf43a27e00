"""Search spaces: the tunable parameters of one kernel family and their constraints.

A search space is a YAML file in ``search_spaces/`` (one per family)::

    family: implicit_gemm
    params:              # each tunable and its choices, in search order
      BM: [32, 64, 128]
      TM: [4, 8]
    derived:             # values computed from params, the problem and the device, in order
      THREADS: (BM // TM) * (BN // TN)
    constraints:         # every one must hold for a valid point
      - expr: THREADS <= max_threads_per_block
        why: a block has at most max_threads_per_block threads
    default: {BM: 64, TM: 4}
    seeds:               # optional: more configs every tuning study tries first, after the default
      - {BM: 128, TM: 8}

Expressions are evaluated by :mod:`autoconv.problems.expressions` (never Python's ``eval``); they may
use the problem's variables (:func:`problem_variables`), the device's
(:meth:`DeviceLimits.variables`), ``workspace_limit_bytes``, the params and the derived
values defined above them. Derived values are part of every rendered kernel, so the
template, the launch geometry and the constraints read the same numbers.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy
import yaml

from autoconv.errors import ExpressionError, SearchSpaceError
from autoconv.kernels.limits import DeviceLimits
from autoconv.kernels.resources import search_space_path
from autoconv.problems.expression_arrays import INTEGER_LIMIT, NotVectorizable, Rows, evaluate_rows, truth
from autoconv.problems.expressions import Expression, compile_expression
from autoconv.problems.problem import DTYPE_SIZES, ConvProblem, did_you_mean

#: Workspace a configuration may use unless the caller says otherwise (1 GiB).
DEFAULT_WORKSPACE_LIMIT = 1 << 30
#: Combinations :meth:`SearchSpace.points` evaluates at once at one depth, at most; a space whose
#: constraints leave more is walked point by point instead (each of its ~50 arrays of derived
#: values would take 8 MB a million rows). The shipped spaces have at most 110592 in all.
MAX_ROWS_AT_ONCE = 1 << 20

_TOP_KEYS = ("family", "description", "params", "derived", "constraints", "default", "fallbacks", "seeds")


def problem_variables(problem: ConvProblem) -> dict[str, int]:
    """The names search-space expressions and templates use for a problem."""
    return {
        "N": problem.N, "C": problem.C, "H": problem.H, "W": problem.W,
        "K": problem.K, "R": problem.R, "S": problem.S, "P": problem.P, "Q": problem.Q,
        "STRIDE_H": problem.stride[0], "STRIDE_W": problem.stride[1],
        "DILATION_H": problem.dilation[0], "DILATION_W": problem.dilation[1],
        "PAD_TOP": problem.padding[0], "PAD_BOTTOM": problem.padding[1],
        "PAD_LEFT": problem.padding[2], "PAD_RIGHT": problem.padding[3],
        "GEMM_M": problem.gemm_m, "GEMM_N": problem.gemm_n, "GEMM_K": problem.gemm_k,
        "HAS_BIAS": int(problem.bias), "ELEMENT_BYTES": problem.element_bytes,
        "PRECISION_TF32": int(problem.precision == "tf32"),   # one TF32 product per multiply-add
        "FORMAT_F16": int(problem.precision == "fp16"),       # 16-bit inputs are IEEE half (else bf16)
        "OUTPUT_FLOAT32": int(problem.output_dtype == "float32"),
        "OUTPUT_BYTES": DTYPE_SIZES[problem.output_dtype],
        "LAYOUT_NCHW": int(problem.layout == "NCHW"),         # activations NCHW, weights KCRS (else NHWC, KRSC)
    }


def space_variables(problem: ConvProblem, device: DeviceLimits, workspace_limit: int) -> dict[str, object]:
    """The names a search space's expressions may use before its parameters are bound: the
    problem's (:func:`problem_variables`), the device's and ``workspace_limit_bytes``."""
    return {**problem_variables(problem), **device.variables(), "workspace_limit_bytes": workspace_limit}


def choice_places(choices: Sequence[object]) -> dict[object, int]:
    """Each of a parameter's ``choices`` -> its index (of equal ones the first, as ``tuple.index``)."""
    return {choice: index for index, choice in reversed(list(enumerate(choices)))}


def _choice_column(choices: Sequence[object]) -> numpy.ndarray:
    """A parameter's choices as an array of one type (integers, floats or strings), as
    :mod:`~autoconv.problems.expression_arrays` evaluates them.

    Raises:
        NotVectorizable: the choices mix types (one array cannot keep an integer choice an int
            beside a float one), or an integer is beyond int64.
    """
    kinds = {type(choice) for choice in choices}
    if kinds == {int} and max(abs(cast(int, choice)) for choice in choices) < INTEGER_LIMIT:
        return numpy.array(choices, dtype=numpy.int64)
    if kinds == {float}:
        return numpy.array(choices, dtype=numpy.float64)
    if kinds == {str}:
        return numpy.array(choices, dtype=str)
    raise NotVectorizable("choices of several types, or integers beyond int64")


@dataclass(frozen=True)
class Constraint:
    expression: Expression
    why: str


@dataclass(frozen=True)
class SearchSpace:
    """The parameters, derived values and constraints of one kernel family."""

    family: str
    params: Mapping[str, tuple]
    derived: Mapping[str, Expression]
    constraints: tuple[Constraint, ...]
    default: Mapping[str, object]
    source_text: str  # the YAML as read, part of the cache key
    #: Configs a tuning study tries right after the default (the best ones measured on other
    #: shapes); each a value for every parameter, not necessarily valid for every problem.
    seeds: tuple[Mapping[str, object], ...] = ()
    #: Configs :meth:`default_config` takes, the first valid one, where the default is not
    #: valid for a problem, before the nearest valid point (which may be one ptxas handles
    #: badly: a fallback is a config checked to compile well where the default does not fit).
    fallbacks: tuple[Mapping[str, object], ...] = ()

    # ---- evaluation ----------------------------------------------------------------
    def context(self, config: Mapping[str, object], problem: ConvProblem, device: DeviceLimits,
                workspace_limit: int = DEFAULT_WORKSPACE_LIMIT) -> dict[str, object]:
        """All values a template and a launch need: problem, device, params, derived.

        Raises:
            SearchSpaceError: a parameter is missing or unknown, or a derived value fails.
        """
        unknown = set(config) - set(self.params)
        if unknown:
            name = sorted(unknown)[0]
            raise SearchSpaceError(
                f"{self.family}: unknown parameter {name!r}{did_you_mean(name, self.params)}; "
                f"parameters are {', '.join(self.params)}")
        missing = [p for p in self.params if p not in config]
        if missing:
            raise SearchSpaceError(f"{self.family}: missing parameter(s) {', '.join(missing)}")
        values = space_variables(problem, device, workspace_limit)
        values.update({name: config[name] for name in self.params})
        for name, expression in self.derived.items():
            try:
                values[name] = expression.evaluate(values)
            except ExpressionError as err:
                raise SearchSpaceError(f"{self.family}: derived value {name} cannot be computed "
                                       f"for {dict(config)}: {err}") from None
        return values

    def values_of(self, names: Sequence[str], indices: numpy.ndarray, problem: ConvProblem, device: DeviceLimits,
                  workspace_limit: int = DEFAULT_WORKSPACE_LIMIT) -> numpy.ndarray:
        """The numeric values ``names`` (parameters or derived values) of the configurations whose
        choice indices are the rows of ``indices`` (:class:`PointTable`'s), as floats: a row per
        configuration, a column per name. A derived value at a time over all of them
        (:mod:`~autoconv.problems.expression_arrays`: the tuning history's model reads them for up
        to ~30000 valid points), else configuration by configuration (:meth:`context`).

        Raises:
            SearchSpaceError: a derived value cannot be computed for some configuration.
        """
        needed = set(names)
        for name, expression in reversed(list(self.derived.items())):  # (a derived value uses those before it)
            if name in needed:
                needed |= expression.names
        rows = Rows(space_variables(problem, device, workspace_limit), {}, len(indices))
        try:
            for column, (name, choices) in enumerate(self.params.items()):
                rows.bind(name, _choice_column(choices)[indices[:, column]])
            for name, expression in self.derived.items():
                if name in needed:
                    rows.bind(name, evaluate_rows(expression, rows))
            columns = [numpy.broadcast_to(numpy.asarray(rows[name], dtype=float), (len(indices),)) for name in names]
        except NotVectorizable:
            configs = [{name: choices[index] for (name, choices), index in zip(self.params.items(), row)}
                       for row in indices.tolist()]
            values = [self.context(config, problem, device, workspace_limit) for config in configs]
            columns = [numpy.array([float(cast(float, found[name])) for found in values]) for name in names]
        return numpy.stack(columns, axis=1) if columns else numpy.zeros((len(indices), 0))

    def violations(self, config: Mapping[str, object], problem: ConvProblem, device: DeviceLimits,
                   workspace_limit: int = DEFAULT_WORKSPACE_LIMIT) -> list[str]:
        """The constraints a configuration breaks, as readable reasons (empty: valid)."""
        bad_choice = [f"{name}={config[name]!r} is not one of {list(choices)}"
                      for name, choices in self.params.items()
                      if name in config and config[name] not in choices]
        if bad_choice:
            return bad_choice
        try:
            values = self.context(config, problem, device, workspace_limit)
        except SearchSpaceError as err:
            return [str(err)]
        reasons: list[str] = []
        for constraint in self.constraints:
            try:
                ok = constraint.expression.evaluate(values)
            except ExpressionError as err:
                if reasons:
                    # An earlier constraint already failed; later ones may assume it held
                    # (e.g. divide by a count it guarantees is non-zero).
                    continue
                raise SearchSpaceError(f"{self.family}: constraint: {err}") from None
            if not ok:
                reasons.append(f"{constraint.expression.text} ({constraint.why})")
        return reasons

    def is_valid(self, config, problem, device, workspace_limit=DEFAULT_WORKSPACE_LIMIT) -> bool:
        return not self.violations(config, problem, device, workspace_limit)

    def all_configs(self) -> Iterator[dict[str, object]]:
        """Every combination of choices, valid or not, in a fixed order."""
        names = list(self.params)
        for combo in itertools.product(*(self.params[n] for n in names)):
            yield dict(zip(names, combo))

    def points(self, problem: ConvProblem, device: DeviceLimits,
               workspace_limit: int = DEFAULT_WORKSPACE_LIMIT) -> list[dict[str, object]]:
        """Exactly the valid configurations for this problem and device, in the order of
        :meth:`all_configs`: the same as filtering :meth:`all_configs` with :meth:`is_valid`.

        The parameters are bound in file order, and each derived value is computed, and each
        constraint checked, as soon as the parameters it depends on are bound, so a constraint
        that fails early prunes every combination below it. All combinations of one depth at
        once (:mod:`autoconv.problems.expression_arrays`), where every expression can be
        evaluated exactly so; else point by point (:meth:`_walk`).
        """
        try:
            return self._points_at_once(problem, device, workspace_limit)
        except NotVectorizable:
            return self._walk(problem, device, workspace_limit)

    def _points_at_once(self, problem: ConvProblem, device: DeviceLimits,
                        workspace_limit: int) -> list[dict[str, object]]:
        """:meth:`points`, each depth's combinations evaluated together.

        Raises:
            NotVectorizable: an expression cannot be evaluated exactly over arrays here.
        """
        names = list(self.params)
        chosen: list[numpy.ndarray] = []  # per bound parameter, each row's index into its choices
        rows = Rows(space_variables(problem, device, workspace_limit), {}, 1)
        for depth, (derived, constraints) in enumerate(self._stages()):
            name, choices = names[depth], self.params[names[depth]]
            if rows.count * len(choices) > MAX_ROWS_AT_ONCE:
                raise NotVectorizable(f"{rows.count * len(choices)} combinations at once")
            # Each row so far once per choice, the choice varying fastest: all_configs' order.
            chosen = [numpy.repeat(indices, len(choices)) for indices in chosen]
            chosen.append(numpy.tile(numpy.arange(len(choices)), rows.count))
            rows = rows.repeat(len(choices))
            rows.bind(name, _choice_column(choices)[chosen[-1]])
            for variable, expression in derived:
                rows.bind(variable, evaluate_rows(expression, rows))
            for constraint in constraints:  # (each on the rows the ones before it kept, as all() does)
                keep = truth(evaluate_rows(constraint.expression, rows), rows.count)
                if not keep.all():
                    rows = rows.subset(keep)
                    chosen = [indices[keep] for indices in chosen]
                if not rows.count:
                    return []
        columns = [[choices[index] for index in indices.tolist()]
                   for choices, indices in zip(self.params.values(), chosen)]
        return [dict(zip(names, values)) for values in zip(*columns)]

    def _walk(self, problem: ConvProblem, device: DeviceLimits, workspace_limit: int) -> list[dict[str, object]]:
        """:meth:`points`, point by point: a depth-first walk over the parameters."""
        names = list(self.params)
        stages = self._stages()
        found: list[dict[str, object]] = []

        def walk(depth: int, values: dict[str, object]) -> None:
            if depth == len(names):
                found.append({name: values[name] for name in names})
                return
            derived, constraints = stages[depth]
            for choice in self.params[names[depth]]:
                bound = dict(values)
                bound[names[depth]] = choice
                try:
                    for name, expression in derived:
                        bound[name] = expression.evaluate(bound)
                    if not all(constraint.expression.evaluate(bound) for constraint in constraints):
                        continue
                except ExpressionError:
                    # Something here relies on a constraint not yet checked (a divisor it
                    # keeps non-zero, say): decide this subtree point by point, as is_valid does.
                    below = names[depth + 1:]
                    for rest in itertools.product(*(self.params[n] for n in below)):
                        config = {n: bound[n] for n in names[:depth + 1]} | dict(zip(below, rest))
                        if self.is_valid(config, problem, device, workspace_limit):
                            found.append(config)
                    continue
                walk(depth + 1, bound)

        walk(0, space_variables(problem, device, workspace_limit))
        return found

    def _stages(self) -> list[tuple[list[tuple[str, Expression]], list[Constraint]]]:
        """For each parameter depth, the derived values and constraints that become
        computable once the parameters up to that depth are bound (file order kept)."""
        names = list(self.params)
        params_of: dict[str, set[str]] = {name: {name} for name in names}
        for name, expression in self.derived.items():
            params_of[name] = set().union(set(), *(params_of.get(n, set()) for n in expression.names))

        def depth_of(expression: Expression) -> int:
            params = set().union(set(), *(params_of.get(n, set()) for n in expression.names))
            return max((names.index(p) for p in params), default=0)

        stages: list[tuple[list, list]] = [([], []) for _ in names]
        for name, expression in self.derived.items():
            stages[depth_of(expression)][0].append((name, expression))
        for constraint in self.constraints:
            stages[depth_of(constraint.expression)][1].append(constraint)
        return stages

    def default_config(self, problem: ConvProblem, device: DeviceLimits,
                       workspace_limit: int = DEFAULT_WORKSPACE_LIMIT) -> dict[str, object]:
        """The family's default; where it does not fit this problem, its first valid
        fallback (``fallbacks`` in the YAML); else the valid point nearest to the default
        (:meth:`nearest_config`).

        Raises:
            SearchSpaceError: no configuration of this family is valid for the problem.
        """
        for config in (self.default, *self.fallbacks):
            if self.is_valid(config, problem, device, workspace_limit):
                return dict(config)
        return self.nearest_config(self.default, problem, device, workspace_limit)

    def _what_rules_out(self, problem: ConvProblem, device: DeviceLimits, workspace_limit: int) -> str:
        """The constraints the default and every fallback break, where a problem has no valid
        configuration: what about the problem rules the family out (the tile constraints each
        breaks alone are left out); the default's, where they share none."""
        broken = [self.violations(config, problem, device, workspace_limit)
                  for config in (self.default, *self.fallbacks)]
        shared = [reason for reason in broken[0] if all(reason in others for others in broken[1:])]
        if shared:
            return "its default and fallbacks all break: " + "; ".join(shared)
        return "its default breaks: " + "; ".join(broken[0])

    def nearest_config(self, config: Mapping[str, object], problem: ConvProblem, device: DeviceLimits,
                       workspace_limit: int = DEFAULT_WORKSPACE_LIMIT) -> dict[str, object]:
        """``config`` where it is valid for the problem, else the valid point nearest to it
        (:meth:`PointTable.nearest`).

        Raises:
            SearchSpaceError: no configuration of this family is valid for the problem.
        """
        wanted = {name: config.get(name) for name in self.params}
        if self.is_valid(wanted, problem, device, workspace_limit):
            return wanted
        points = self.points(problem, device, workspace_limit)
        if not points:
            raise SearchSpaceError(f"{self.family}: no valid configuration for {problem.shape_str()} "
                                   f"({self._what_rules_out(problem, device, workspace_limit)})")
        row = PointTable(self.params, points).nearest(wanted)
        assert row is not None  # (there are points, none excluded)
        return points[row]


class PointTable:
    """Configurations of one search space as a table of choice indices (one row per
    configuration, one column per parameter), to find the one nearest to any configuration
    quickly: the tuner asks that for every proposal it repairs, among up to ~30000 points.

    Nearest: fewest parameters changed, then the fewest steps along each parameter's choice
    list (a value not in the list counts as the list's length); of equals, the first.
    """

    #: Weight of one changed parameter against the steps (more than any sum of steps).
    _CHANGED = 1 << 20

    def __init__(self, params: Mapping[str, Sequence[object]], configs: Sequence[Mapping[str, object]]):
        self.params = {name: tuple(choices) for name, choices in params.items()}
        columns = []
        for name, choices in self.params.items():  # (a column at a time: up to ~30000 configs)
            place = choice_places(choices)
            try:
                columns.append([place[config[name]] for config in configs])
            except KeyError as err:
                raise ValueError(f"{name}={err.args[0]!r} is not one of {list(choices)}") from None
        self.indices = numpy.array(columns, dtype=numpy.int32).T.reshape(len(configs), len(self.params))

    def distances(self, config: Mapping[str, object]) -> numpy.ndarray:
        """One number per row, ordered as (parameters changed, steps) from ``config``."""
        wanted = numpy.array([choices.index(config.get(name)) if config.get(name) in choices else -1
                              for name, choices in self.params.items()], dtype=numpy.int64)
        lengths = numpy.array([len(choices) for choices in self.params.values()], dtype=numpy.int64)
        changed = (self.indices != wanted).sum(axis=1)
        steps = numpy.where(wanted >= 0, numpy.abs(self.indices - wanted), lengths).sum(axis=1)
        return changed * self._CHANGED + steps

    def nearest(self, config: Mapping[str, object], excluded: numpy.ndarray | None = None) -> int | None:
        """The row nearest to ``config``, among those not ``excluded`` (a boolean mask);
        None when every row is."""
        distances = self.distances(config)
        if excluded is not None:
            if excluded.all():
                return None
            distances = numpy.where(excluded, numpy.iinfo(numpy.int64).max, distances)
        return int(numpy.argmin(distances)) if len(distances) else None


def load_search_space(family: str) -> SearchSpace:
    """Load ``search_spaces/<family>.yaml``."""
    path = search_space_path(family)
    if not path.is_file():
        raise SearchSpaceError(f"no search space file for family {family!r} at {path}")
    return parse_search_space(path.read_text(), str(path))


def parse_search_space(text: str, origin: str = "<string>") -> SearchSpace:
    """Parse and check a search-space document; every expression is compiled (and so
    checked for safety) here, before anything is evaluated.

    Raises:
        SearchSpaceError: naming the file and what is wrong in it.
    """
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise SearchSpaceError(f"{origin}: not valid YAML: {err}") from None
    except (ValueError, KeyError, AttributeError, TypeError) as err:
        # PyYAML's safe constructors raise these for malformed typed scalars
        # (``!!int abc``, ``!!bool maybe``, ``!!timestamp x``, an int of 5000 digits).
        raise SearchSpaceError(f"{origin}: not valid YAML: a malformed value ({err})") from None
    except RecursionError:
        raise SearchSpaceError(f"{origin}: not valid YAML: nested too deeply") from None
    if not isinstance(doc, dict):
        raise SearchSpaceError(f"{origin}: expected a mapping with keys {', '.join(_TOP_KEYS)}")
    for key in doc:
        if key not in _TOP_KEYS:
            raise SearchSpaceError(f"{origin}: unknown key {key!r}{did_you_mean(str(key), _TOP_KEYS)}")
    family = doc.get("family")
    if not isinstance(family, str) or not family.isidentifier():
        raise SearchSpaceError(f"{origin}: 'family' must be an identifier, got {family!r}")

    raw_params = doc.get("params")
    if not isinstance(raw_params, dict) or not raw_params:
        raise SearchSpaceError(f"{origin}: 'params' must map each parameter to a list of choices")
    params: dict[str, tuple] = {}
    for name, choices in raw_params.items():
        _check_name(origin, "params", name)
        if not isinstance(choices, list) or not choices:
            raise SearchSpaceError(f"{origin}: params.{name}: expected a non-empty list of choices")
        for choice in choices:
            if isinstance(choice, bool) or not isinstance(choice, (int, float, str)):
                raise SearchSpaceError(f"{origin}: params.{name}: choice {choice!r} must be a number or string")
        if len(set(choices)) != len(choices):
            raise SearchSpaceError(f"{origin}: params.{name}: choices repeat")
        params[name] = tuple(choices)

    derived: dict[str, Expression] = {}
    raw_derived = doc.get("derived") or {}
    if not isinstance(raw_derived, dict):
        raise SearchSpaceError(f"{origin}: 'derived' must map names to expressions")
    for name, text_expr in raw_derived.items():
        _check_name(origin, "derived", name)
        if name in params:
            raise SearchSpaceError(f"{origin}: derived.{name} shadows a parameter")
        derived[name] = _compile(origin, f"derived.{name}", text_expr)

    constraints = []
    raw_constraints = doc.get("constraints") or []
    if not isinstance(raw_constraints, list):
        raise SearchSpaceError(f"{origin}: 'constraints' must be a list")
    for index, item in enumerate(raw_constraints):
        where = f"constraints[{index}]"
        if isinstance(item, dict):
            extra = set(item) - {"expr", "why"}
            if extra or "expr" not in item:
                raise SearchSpaceError(f"{origin}: {where}: expected keys 'expr' and 'why'")
            constraints.append(Constraint(_compile(origin, where, item["expr"]), str(item.get("why", ""))))
        else:
            constraints.append(Constraint(_compile(origin, where, item), ""))

    default = _complete_config(origin, "default", doc.get("default"), params)
    raw_seeds = doc.get("seeds") or []
    if not isinstance(raw_seeds, list):
        raise SearchSpaceError(f"{origin}: 'seeds' must be a list of configs")
    seeds = tuple(_complete_config(origin, f"seeds[{i}]", seed, params) for i, seed in enumerate(raw_seeds))
    raw_fallbacks = doc.get("fallbacks") or []
    if not isinstance(raw_fallbacks, list):
        raise SearchSpaceError(f"{origin}: 'fallbacks' must be a list of configs")
    fallbacks = tuple(_complete_config(origin, f"fallbacks[{i}]", config, params)
                      for i, config in enumerate(raw_fallbacks))
    return SearchSpace(family=family, params=params, derived=derived, constraints=tuple(constraints),
                       default=default, source_text=text, seeds=seeds, fallbacks=fallbacks)


def _complete_config(origin: str, where: str, config, params: Mapping[str, tuple]) -> dict:
    """``config`` checked to give one of its choices for every parameter."""
    if not isinstance(config, dict) or set(config) != set(params):
        raise SearchSpaceError(f"{origin}: '{where}' must give a value for every parameter "
                               f"({', '.join(params)})")
    for name, value in config.items():
        if value not in params[name]:
            raise SearchSpaceError(f"{origin}: {where}.{name}={value!r} is not one of {list(params[name])}")
    return dict(config)


def _check_name(origin: str, section: str, name) -> None:
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
        raise SearchSpaceError(f"{origin}: {section}: {name!r} is not a valid name")


def _compile(origin: str, where: str, text) -> Expression:
    try:
        return compile_expression(text)
    except ExpressionError as err:
        raise SearchSpaceError(f"{origin}: {where}: {err}") from None

