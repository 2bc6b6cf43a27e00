"""The config file's schema and its checks: a YAML document in, a checked, frozen
:class:`~autoconv.config.tune_config.TuneConfig` out (:class:`ConfigReader`).

The format (every key optional unless marked; see docs/config.md)::

    problems:                       # named problems, full form or a spec string
      - name: odd_layer             # required; letters, digits, _ . -
        N: 2                        # N C H W K R S required, positive integers
        C: 13
        H: 31
        W: 29
        K: 17
        R: 3
        S: 3
        stride: [2, 1]              # int or [h, w]                       (default 1)
        padding: same               # int, [h, w], [top, bottom, left, right],
                                    # same or valid                       (default 0)
        dilation: 1                 # int or [h, w]                       (default 1)
        bias: false                 # (default false)
        precision: tf32             # fp32, tf32, bf16 or fp16 (default: the config's precision)
        layout: NHWC                # NCHW or NHWC (channels_last) (default: the config's layout)
        out_dtype: float32          # a bf16/fp16 problem's output: float32 (default: 16-bit)
        count: 1                    # times the layer occurs, weighs reports (default 1)
      - name: compact
        spec: "N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1"   # instead of the fields
    models:                         # presets expanding to a network's unique conv layers
      - preset: resnet50            # required; see autoconv.problems.models.MODEL_PRESETS
        batch: 32                   # (default 1)
        name: rn50                  # prefix of the layer names (default: the preset)
        precision: fp32             # (default: the config's precision)
        layout: NCHW                # (default: the config's layout)
    precision: fp32                 # of every problem that names none: fp32 (float32 accuracy),
                                    # tf32 (TF32 products, PyTorch's default), bf16 or fp16
                                    # (16-bit inputs, float32 sums: torch.autocast); default fp32
    layout: NCHW                    # of every problem that names none: NCHW or NHWC
    families: [implicit_gemm]       # (default: every registered family)
    budget:                         # per problem; trials and/or seconds
      trials: 60                    # valid trials that ran
      seconds: 30                   # wall time
      patience: 25                  # stop after this many trials without a > 2% improvement
    seed: 0
    cache: .autoconv/cache.sqlite   # default: $AUTOCONV_CACHE or ~/.cache/autoconv/winners.sqlite3
                                    # (where autoconv.conv2d looks); paths are relative to
                                    # the config file's folder; or a SQLAlchemy URL
    storage: .autoconv/studies.journal   # Optuna storage: a file (journal) or a URL
    results: results/
    device: 0                       # CUDA device index
    workspace_limit_mb: 1024        # scratch memory a kernel may use

At least one problem (or model) is required. Model layers are named
``<prefix>.<layer>``, e.g. ``resnet50.layer1.0.conv1``. Problems that are identical
(same sizes, strides, padding, ...) are tuned once: the first entry's name is kept,
counts add up, and :attr:`~autoconv.config.tune_config.TuneConfig.notes` says what was merged. Two different
problems with the same name are an error.

The file is read with :func:`yaml.compose`, which builds a node tree and constructs
nothing, so no tag in the file can run code; only plain YAML values are accepted
(strings, integers, floats, booleans, null, lists, mappings; anchors, aliases and
``<<`` merge keys work; :mod:`autoconv.config.yaml_nodes`). Every error carries the
file, the line and the key path, all errors are collected, and they are raised together
as one :class:`~autoconv.errors.ConfigError` (:func:`autoconv.config.load.load_config`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, cast

from yaml.nodes import Node, ScalarNode, SequenceNode

from autoconv.cache.location import default_location as default_cache_location
from autoconv.config.budget import BUDGET_RULES, Budget
from autoconv.config.tune_config import (
    DEFAULT_RESULTS,
    DEFAULT_STORAGE,
    DEFAULT_WORKSPACE_LIMIT_MB,
    MAX_DEVICE,
    MAX_WORKSPACE_LIMIT_MB,
    TuneConfig,
)
from autoconv.config.yaml_nodes import INVALID, Invalid, NodeReader, is_int, is_null, value_of
from autoconv.errors import ProblemError, quoted
from autoconv.kernels.families import FAMILY_NAMES, get_family
from autoconv.problems.models import COUNT_LIMIT_WHY, MAX_COUNT, MODEL_PRESETS, NamedProblem
from autoconv.problems.problem import (
    LAYOUTS,
    PRECISIONS,
    SIZE_FIELDS,
    ConvProblem,
    did_you_mean,
    make_problem,
    parse_spec,
)
from autoconv.urls import is_url

#: Problem names end up in study names and file names: keep them to safe characters.
NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}")

#: Longest path or URL a config may give (``cache``, ``storage``, ``results``): Linux's PATH_MAX.
LOCATION_MAX_LENGTH = 4096

TOP_KEYS = ("problems", "models", "precision", "layout", "families", "budget", "seed", "cache", "storage",
            "results", "device", "workspace_limit_mb")
PROBLEM_KEYS = ("name", "count", "spec") + SIZE_FIELDS + (
    "stride", "padding", "dilation", "bias", "dtype", "layout", "precision", "out_dtype")
MODEL_KEYS = ("preset", "batch", "name", "precision", "layout")
BUDGET_KEYS = ("trials", "seconds", "patience")



class ConfigReader(NodeReader):
    """Walks the composed node tree along the config's schema, collecting located errors."""

    top_keys = TOP_KEYS

    def __init__(self, origin: str, base_dir: Path):
        super().__init__(origin)
        self.base_dir = base_dir
        self.notes: list[str] = []

    # ---- the document --------------------------------------------------------------
    def read(self, text: str) -> TuneConfig | None:
        root = self.compose(text)
        if root is None:
            return None
        self.reject_tags(root)
        top = self.mapping(root, "", TOP_KEYS, what="the config")
        if top is INVALID:
            return None

        precision = self.precision(value_of(top, "precision"), "precision", "fp32")
        self.default_precision = "fp32" if precision is INVALID else precision
        layout = self.layout(value_of(top, "layout"), "layout", "NCHW")
        self.default_layout = "NCHW" if layout is INVALID else layout
        entries = []
        for key in top:  # in file order, so that a clash is reported at the later entry
            section = value_of(top, key)
            if key == "problems" and section is not None:
                entries += self.problems(section)
            elif key == "models" and section is not None:
                entries += self.models(section)
        families = self.families(value_of(top, "families"), FAMILY_NAMES)
        budget = self.budget(value_of(top, "budget"))
        seed = self.integer(value_of(top, "seed"), "seed", 0, default=0, maximum=2**32 - 1)
        device = self.integer(value_of(top, "device"), "device", 0, default=0, maximum=MAX_DEVICE,
                              why="a CUDA device index: 0 for the first GPU; `nvidia-smi -L` lists them")
        workspace = self.integer(value_of(top, "workspace_limit_mb"), "workspace_limit_mb", 0,
                                 default=DEFAULT_WORKSPACE_LIMIT_MB, maximum=MAX_WORKSPACE_LIMIT_MB,
                                 why="MiB of scratch memory a kernel may use: 1 TiB is more than any GPU has")
        # Without a `cache:` key, tune writes the user's cache, which autoconv.conv2d reads.
        cache_node = value_of(top, "cache")
        cache = default_cache_location() if cache_node is None else self.location(cache_node, "cache")
        results = self.path(value_of(top, "results"), "results", DEFAULT_RESULTS)
        storage = self.storage(value_of(top, "storage"))

        problems = self.merge(entries)
        listed = [value_of(top, key) for key in ("problems", "models")]
        if all(node is None or (isinstance(node, SequenceNode) and not node.value)
               for node in listed):
            self.error(root, "", "nothing to tune: add a 'problems' list or a 'models' list")
        if families is not INVALID:
            self.check_support(problems, families)
        if self.errors:
            return None
        assert cache is not INVALID and results is not INVALID  # (each recorded an error)
        return TuneConfig(
            origin=self.origin, problems=tuple(item for item, _, _ in problems),
            families=families, budget=budget, seed=seed, cache=cache, storage=storage,
            results=results, device=device, workspace_limit_mb=workspace,
            notes=tuple(self.notes), cache_given=value_of(top, "cache") is not None)

    def pair(self, node: Node, path: str):
        """An int or [h, w]."""
        if isinstance(node, SequenceNode) and id(node) not in self._bad_tag_nodes:
            if len(node.value) != 2:
                return self.error(node, path, f"expected an integer or [h, w], got a list of "
                                  f"{len(node.value)} items")
            items = [self.integer(item, f"{path}[{i}]", 1) for i, item in enumerate(node.value)]
            return INVALID if INVALID in items else tuple(items)
        value = self.typed(node, path, is_int, "an integer or [h, w]")
        if value is INVALID:
            return value
        return value if value >= 1 else self.error(node, path, f"must be >= 1, got {self.describe(node)}")

    def padding(self, node: Node, path: str):
        """An int, [h, w], [top, bottom, left, right], same or valid."""
        expected = "an integer, [h, w], [top, bottom, left, right], same or valid"
        if isinstance(node, SequenceNode) and id(node) not in self._bad_tag_nodes:
            if len(node.value) not in (2, 4):
                return self.error(node, path, f"expected {expected}, got a list of "
                                  f"{len(node.value)} items")
            items = [self.integer(item, f"{path}[{i}]", 0) for i, item in enumerate(node.value)]
            return INVALID if INVALID in items else tuple(items)
        value = self.typed(node, path, lambda v: is_int(v) or (
            isinstance(v, str) and v.lower() in ("same", "valid")), expected)
        if value is INVALID:
            return value
        if is_int(value) and value < 0:
            return self.error(node, path, f"must be >= 0, got {self.describe(node)}")
        return value.lower() if isinstance(value, str) else value

    def location_text(self, node: Node, key: str):
        """A path or URL as written: a non-empty string of at most :data:`LOCATION_MAX_LENGTH` characters."""
        text = self.string(node, key)
        if text is not INVALID and len(text) > LOCATION_MAX_LENGTH:
            return self.error(node, key, f"{quoted(text)} is not a path or URL: it has more than "
                              f"{LOCATION_MAX_LENGTH} characters, the longest path Linux opens (PATH_MAX)")
        return text

    def path(self, node: Node | None, key: str, default: str) -> Path | Invalid:
        text = default if node is None else self.location_text(node, key)
        if text is INVALID:
            return text
        return _under(self.base_dir, text)

    def storage(self, node: Node | None):
        text = DEFAULT_STORAGE if node is None else self.location_text(node, "storage")
        if text is INVALID:
            return text
        if "://" not in text:
            return str(_under(self.base_dir, text))
        return _url_under(self.base_dir, text)

    def location(self, node: Node, key: str) -> Path | str | Invalid:
        """A file path (relative to the config's folder) or a SQLAlchemy URL."""
        text = self.location_text(node, key)
        if text is INVALID:
            return text
        return _url_under(self.base_dir, text) if is_url(text) else _under(self.base_dir, text)

    # ---- sections ------------------------------------------------------------------
    def problems(self, node: Node) -> list[tuple[NamedProblem, str, Node]]:
        items = self.sequence(node, "problems", "problems")
        if items is INVALID:
            return []
        entries = []
        for index, item in enumerate(items):
            path = f"problems[{index}]"
            fields = self.mapping(item, path, PROBLEM_KEYS, what="a problem")
            if fields is INVALID:
                continue
            entry = self.problem(item, path, fields)
            if entry is not None:
                entries.append((entry, path, item))
        return entries

    def problem(self, node: Node, path: str, fields: dict[str, tuple[Node, Node]]
                ) -> NamedProblem | None:
        ok = True
        name = None
        if "name" not in fields:
            self.error(node, path, "missing 'name'")
            ok = False
        else:
            name = self.name(fields["name"][1], f"{path}.name")
            ok &= name is not INVALID
        count = self.integer(value_of(fields, "count"), f"{path}.count", 1, default=1, maximum=MAX_COUNT,
                             why=COUNT_LIMIT_WHY)
        ok &= count is not INVALID

        if "spec" in fields:
            others = [k for k in fields if k not in ("name", "count", "spec")]
            if others:
                self.error(fields[others[0]][0], f"{path}.{others[0]}",
                           "give either 'spec' or the problem's fields, not both")
                return None
            spec_node = fields["spec"][1]
            spec = self.string(spec_node, f"{path}.spec")
            if spec is INVALID or not ok:
                return None
            assert name is not None  # (ok)
            try:
                problem = parse_spec(spec)
                keys = {part.partition("=")[0].strip() for part in spec.split(",")}
                if not keys & {"precision", "dtype"}:
                    problem = problem.in_precision(self.default_precision)
                if "layout" not in keys:
                    problem = problem.with_(layout=self.default_layout)
            except ProblemError as err:
                self.error(spec_node, f"{path}.spec", str(err))
                return None
            return NamedProblem(name, problem, count)

        missing = [k for k in SIZE_FIELDS if k not in fields]
        if missing:
            self.error(node, path, f"missing {', '.join(missing)} (or give a 'spec' string)")
            ok = False
        values = {}
        for key in SIZE_FIELDS:
            if key in fields:
                values[key] = self.integer(fields[key][1], f"{path}.{key}", 1)
        for key, read in (("stride", self.pair), ("dilation", self.pair),
                          ("padding", self.padding)):
            if key in fields:
                values[key] = read(fields[key][1], f"{path}.{key}")
        if "bias" in fields:
            values["bias"] = self.typed(fields["bias"][1], f"{path}.bias",
                                        lambda v: isinstance(v, bool), "true or false")
        for key in ("dtype", "out_dtype"):
            if key in fields:
                values[key] = self.string(fields[key][1], f"{path}.{key}")
        values["layout"] = self.layout(value_of(fields, "layout"), f"{path}.layout", self.default_layout)
        # A dtype alone implies its precision (make_problem); else the config's precision applies.
        default_precision = None if "dtype" in fields else self.default_precision
        values["precision"] = self.precision(value_of(fields, "precision"), f"{path}.precision",
                                             default_precision)
        if not ok or INVALID in values.values():
            return None
        assert name is not None  # (ok)
        try:
            problem = make_problem(**values)
        except ProblemError as err:
            # Point at the field the problem names ("R", "stride (height)", "padding (top)").
            key = {"pad": "padding"}.get(err.field.split(" ")[0], err.field.split(" ")[0])
            where = fields[key][1] if key in fields else node
            self.error(where, f"{path}.{key}" if key in fields else path, str(err))
            return None
        return NamedProblem(name, problem, count)

    def name(self, node: Node, path: str):
        value = self.string(node, path)
        if value is INVALID:
            return value
        if not NAME_PATTERN.fullmatch(value):
            return self.error(node, path, f"{quoted(value)} is not a valid name: use letters, digits, "
                              "'_', '.' and '-' (at most 128, not starting with '.' or '-')")
        return value

    def models(self, node: Node) -> list[tuple[NamedProblem, str, Node]]:
        items = self.sequence(node, "models", "model presets")
        if items is INVALID:
            return []
        entries = []
        for index, item in enumerate(items):
            path = f"models[{index}]"
            fields = self.mapping(item, path, MODEL_KEYS, what="a model")
            if fields is INVALID:
                continue
            if "preset" not in fields:
                self.error(item, path, f"missing 'preset' (one of {', '.join(MODEL_PRESETS)})")
                continue
            preset_node = fields["preset"][1]
            preset = self.string(preset_node, f"{path}.preset")
            if preset is not INVALID and preset not in MODEL_PRESETS:
                preset = self.error(preset_node, f"{path}.preset",
                                    f"unknown preset {quoted(preset)}{did_you_mean(preset, MODEL_PRESETS)}; "
                                    f"presets: {', '.join(MODEL_PRESETS)}")
            batch = self.integer(value_of(fields, "batch"), f"{path}.batch", 1, default=1)
            prefix = self.name(fields["name"][1], f"{path}.name") if "name" in fields else preset
            precision = self.precision(value_of(fields, "precision"), f"{path}.precision", self.default_precision)
            layout = self.layout(value_of(fields, "layout"), f"{path}.layout", self.default_layout)
            if INVALID in (preset, batch, prefix, precision, layout):
                continue
            try:
                layers = MODEL_PRESETS[preset](batch)
            except ProblemError as err:  # e.g. a batch too large for 32-bit indexing
                where = fields["batch"][1] if "batch" in fields else item
                self.error(where, f"{path}.batch", str(err))
                continue
            for layer in layers:
                problem = layer.problem.in_precision(precision).with_(layout=layout)
                entries.append((NamedProblem(f"{prefix}.{layer.name}", problem,
                                             layer.count), path, item))
        return entries

    def layout(self, node: Node | None, path: str, default: str):
        """A layout (:data:`~autoconv.problems.problem.LAYOUTS`, any case), ``default`` when absent."""
        if node is None:
            return default
        value = self.string(node, path)
        if value is INVALID:
            return value
        if value.upper() not in LAYOUTS:
            return self.error(node, path, f"{quoted(value)} is not a layout{did_you_mean(value.upper(), LAYOUTS)}; "
                              "use NCHW (PyTorch's default) or NHWC (PyTorch's channels_last; weights KRSC)")
        return value.upper()

    def precision(self, node: Node | None, path: str, default: str | None):
        """A precision (:data:`~autoconv.problems.problem.PRECISIONS`), ``default`` when absent."""
        if node is None:
            return default
        value = self.string(node, path)
        if value is INVALID:
            return value
        if value not in PRECISIONS:
            return self.error(node, path, f"{quoted(value)} is not a precision{did_you_mean(value, PRECISIONS)}; "
                              f"use one of {', '.join(PRECISIONS)} (fp32: float32 accuracy; tf32: TF32 "
                              "products with float32 sums, PyTorch's default for convolutions; bf16, fp16: "
                              "16-bit inputs with float32 sums, as torch.autocast)")
        return value

    def families(self, node: Node | None, registered: tuple[str, ...]):
        if node is None:
            return tuple(registered)
        items: list[Node] | Invalid
        if isinstance(node, ScalarNode) and isinstance(self.scalar(node), str):
            items = [node]  # a single family may be written without the brackets
        else:
            items = self.sequence(node, "families", "kernel family names")
            if items is INVALID:
                return items
        if not items:
            return self.error(node, "families", "the list is empty; name at least one of "
                              + ", ".join(registered))
        names: list[str] = []
        for index, item in enumerate(items):
            path = f"families[{index}]" if isinstance(node, SequenceNode) else "families"
            name = self.string(item, path)
            if name is INVALID:
                continue
            if name not in registered:
                self.error(item, path, f"unknown kernel family {quoted(name)}"
                           f"{did_you_mean(name, registered)}; families: {', '.join(registered)}")
            elif name in names:
                self.error(item, path, f"{name!r} is listed twice")
            else:
                names.append(name)
        return tuple(names) if len(names) == len(items) else INVALID

    def budget(self, node: Node | None):
        if node is None:
            return Budget()
        fields = self.mapping(node, "budget", BUDGET_KEYS, what="budget")
        if fields is INVALID:
            return fields
        given = {k: v for k, (_, v) in fields.items() if not is_null(v)}
        values: dict[str, Any] = {}
        for key, rule in BUDGET_RULES.items():
            if key not in given:
                values[key] = None
                continue
            path = f"budget.{key}"
            value = self.typed(given[key], path, lambda v: not isinstance(v, str), "a number")
            reason = None if value is INVALID else rule(value)  # (the same rule as Budget's)
            values[key] = (self.error(given[key], path, f"{reason}, got {self.describe(given[key])}")
                           if reason else value)
        if INVALID in values.values():
            return INVALID
        trials, seconds, patience = values["trials"], values["seconds"], values["patience"]
        if trials is None and seconds is None:
            return self.error(node, "budget", "give 'trials' and/or 'seconds' per problem")
        return Budget(trials=trials, seconds=None if seconds is None else float(seconds),
                      patience=patience)

    # ---- across entries ------------------------------------------------------------
    def merge(self, entries: list[tuple[NamedProblem, str, Node]]
              ) -> list[tuple[NamedProblem, str, Node]]:
        """Tune identical problems once (first name kept, counts added); a name may
        not stand for two different problems."""
        by_problem: dict[ConvProblem, int] = {}
        by_name: dict[str, tuple[ConvProblem, str, Node]] = {}
        merged: list[tuple[NamedProblem, str, Node]] = []
        for entry, path, node in entries:
            if entry.name in by_name and by_name[entry.name][0] != entry.problem:
                _, first_path, first_node = by_name[entry.name]
                self.error(node, path, f"name {entry.name!r} is already used by {first_path} "
                           f"(line {self.line_of(first_node)}) for a different problem")
                continue
            by_name.setdefault(entry.name, (entry.problem, path, node))
            if entry.problem in by_problem:
                index = by_problem[entry.problem]
                first, first_path, first_node = merged[index]
                if first.count + entry.count > MAX_COUNT:
                    self.error(node, path, f"the same problem as {first_path} (line {self.line_of(first_node)}): "
                               f"their counts add up to {first.count + entry.count}, more than {MAX_COUNT} "
                               f"({COUNT_LIMIT_WHY})")
                    continue
                merged[index] = (NamedProblem(first.name, first.problem,
                                              first.count + entry.count), first_path, first_node)
                if entry.name != first.name:
                    self.notes.append(f"{self.origin}:{self.line_of(node)}: {path}: "
                                      f"{entry.name!r} is the same problem as {first.name!r}; "
                                      "tuned once as " + repr(first.name))
                continue
            by_problem[entry.problem] = len(merged)
            merged.append((entry, path, node))
        return merged

    def check_support(self, problems: list[tuple[NamedProblem, str, Node]],
                      families: tuple[str, ...]) -> None:
        """Every problem needs a selected family that implements its dtype and layout."""
        for item, path, node in problems:
            reasons = [get_family(f).unsupported_reason(item.problem) for f in families]
            if all(reasons):
                self.error(node, path, f"no selected family can run {item.name!r}: "
                           + "; ".join(cast("list[str]", reasons)))


def _under(base_dir: Path, text: str) -> Path:
    """``text`` as a path, relative ones taken from ``base_dir``, without ``..`` parts."""
    return Path(os.path.normpath(base_dir / Path(text).expanduser()))


def _url_under(base_dir: Path, url: str) -> str:
    """``url`` as is, but a relative SQLite file in it is relative to ``base_dir`` (the
    config's folder), not to the directory the tuner happens to run in."""
    prefix = "sqlite:///"
    rest = url[len(prefix):]
    if url.startswith(prefix) and rest and not rest.startswith("/") and rest != ":memory:":
        return prefix + str(_under(base_dir, rest))
    return url
