"""Tuning configs: a YAML file in, a checked, frozen :class:`TuneConfig` out.

The format (every key optional unless marked; see README "Config files")::

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
        count: 1                    # times the layer occurs, weighs reports (default 1)
      - name: compact
        spec: "N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1"   # instead of the fields
    models:                         # presets expanding to a network's unique conv layers
      - preset: resnet50            # required; see autoconv.problems.models.MODEL_PRESETS
        batch: 32                   # (default 1)
        name: rn50                  # prefix of the layer names (default: the preset)
    families: [implicit_gemm]       # (default: every registered family)
    budget:                         # per problem; trials and/or seconds
      trials: 60                    # valid trials that ran
      seconds: 30                   # wall time
      patience: 25                  # stop after this many trials without improvement
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
counts add up, and :attr:`TuneConfig.notes` says what was merged. Two different
problems with the same name are an error.

The file is read with :func:`yaml.compose`, which builds a node tree and constructs
nothing, so no tag in the file can run code; only plain YAML values are accepted
(strings, integers, floats, booleans, null, lists, mappings; anchors, aliases and
``<<`` merge keys work). Every error carries the file, the line and the key path,
all errors are collected, and they are raised together as one :class:`ConfigError`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from autoconv.cache.winners import default_location as default_cache_location, is_url
from autoconv.errors import ConfigError, ProblemError
from autoconv.kernels.families import FAMILY_NAMES, get_family
from autoconv.problems.models import MODEL_PRESETS, NamedProblem
from autoconv.problems.problem import SIZE_FIELDS, ConvProblem, did_you_mean, make_problem, parse_spec

__all__ = ["Budget", "NamedProblem", "TuneConfig", "load_config", "load_config_text"]

DEFAULT_STORAGE = ".autoconv/studies.journal"
DEFAULT_RESULTS = "results"
DEFAULT_WORKSPACE_LIMIT_MB = 1024
DEFAULT_TRIALS = 50

#: Problem names end up in study names and file names: keep them to safe characters.
NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}")

TOP_KEYS = ("problems", "models", "families", "budget", "seed", "cache", "storage",
            "results", "device", "workspace_limit_mb")
PROBLEM_KEYS = ("name", "count", "spec") + SIZE_FIELDS + (
    "stride", "padding", "dilation", "bias", "dtype", "layout")
MODEL_KEYS = ("preset", "batch", "name")
BUDGET_KEYS = ("trials", "seconds", "patience")

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {_TAG + t for t in ("str", "int", "float", "bool", "null")}
_MERGE_TAG = _TAG + "merge"


@dataclass(frozen=True)
class Budget:
    """How long to tune each problem: stop at whichever limit comes first."""

    trials: int | None = DEFAULT_TRIALS  # valid trials that ran
    seconds: float | None = None  # wall time
    patience: int | None = None  # trials without improvement before giving up

    def describe(self) -> str:
        parts = []
        if self.trials is not None:
            parts.append(f"{self.trials} trials")
        if self.seconds is not None:
            parts.append(f"{self.seconds:g} s")
        if self.patience is not None:
            parts.append(f"patience {self.patience}")
        return ", ".join(parts)


@dataclass(frozen=True)
class TuneConfig:
    """A checked tuning config. Paths are absolute (resolved against the config's folder)."""

    origin: str  # the file it came from, as given
    problems: tuple[NamedProblem, ...]
    families: tuple[str, ...]
    budget: Budget = Budget()
    seed: int = 0
    cache: Path | str = field(default_factory=default_cache_location)  # a file, or a SQLAlchemy URL
    storage: str = DEFAULT_STORAGE  # absolute journal-file path, or a SQLAlchemy URL
    results: Path = Path(DEFAULT_RESULTS)
    device: int = 0
    workspace_limit_mb: int = DEFAULT_WORKSPACE_LIMIT_MB
    notes: tuple[str, ...] = field(default=(), compare=False)  # e.g. merged duplicates
    cache_given: bool = False  # the config has a `cache:` key (else `cache` is the default)

    @property
    def workspace_limit_bytes(self) -> int:
        return self.workspace_limit_mb * 1024 * 1024

    @property
    def storage_is_url(self) -> bool:
        return "://" in self.storage

    @property
    def total_flops(self) -> int:
        """FLOPs of one pass over every layer instance (problems weighted by count)."""
        return sum(item.problem.flops * item.count for item in self.problems)


def load_config(path: str | Path) -> TuneConfig:
    """Read and check a config file.

    Raises:
        ConfigError: every problem found, each as ``file:line: key.path: message``
            (or ``file: message`` when the file cannot be read).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError([f"{path}: no such file"]) from None
    except IsADirectoryError:
        raise ConfigError([f"{path}: is a directory, expected a YAML file"]) from None
    except UnicodeDecodeError as err:
        raise ConfigError([f"{path}: not UTF-8 text ({err.reason} at byte {err.start})"]) from None
    except OSError as err:
        raise ConfigError([f"{path}: cannot read: {err.strerror or err}"]) from None
    return load_config_text(text, str(path), base_dir=path.resolve().parent)


def load_config_text(text: str, origin: str = "<config>",
                     base_dir: str | Path | None = None) -> TuneConfig:
    """Check config ``text``; ``origin`` names it in errors, relative paths are
    resolved against ``base_dir`` (default: the current directory).

    Raises:
        ConfigError: as :func:`load_config`.
    """
    reader = _ConfigReader(origin, Path(base_dir) if base_dir is not None else Path.cwd())
    config = reader.read(text)
    if reader.errors or config is None:
        raise ConfigError(reader.sorted_errors())
    return config


class _Invalid:
    """Marks a value whose error has already been recorded."""


INVALID = _Invalid()


class _ConfigReader:
    """Walks the composed node tree along the schema, collecting located errors."""

    def __init__(self, origin: str, base_dir: Path):
        self.origin = origin
        self.base_dir = base_dir
        self.errors: list[tuple[int, int, str]] = []
        self.notes: list[str] = []
        self._bad_tag_nodes: set[int] = set()
        self._mappings: dict[tuple[int, tuple[str, ...]], dict[str, tuple[Node, Node]]] = {}

    # ---- error reporting -----------------------------------------------------------
    def line_of(self, node: Node | None) -> int:
        return node.start_mark.line + 1 if node is not None and node.start_mark else 1

    def error(self, node: Node | None, path: str, message: str) -> _Invalid:
        line = self.line_of(node)
        where = f"{self.origin}:{line}: " + (f"{path}: " if path else "")
        self.errors.append((line, len(self.errors), where + message))
        return INVALID

    def sorted_errors(self) -> list[str]:
        """In file order; an error reached twice through an alias is reported once."""
        return list(dict.fromkeys(text for _, _, text in sorted(self.errors)))

    # ---- the document --------------------------------------------------------------
    def read(self, text: str) -> TuneConfig | None:
        root = self.compose(text)
        if root is None:
            return None
        self.reject_tags(root)
        top = self.mapping(root, "", TOP_KEYS, what="the config")
        if top is INVALID:
            return None

        entries = []
        for key in top:  # in file order, so that a clash is reported at the later entry
            if key == "problems" and _value(top, key) is not None:
                entries += self.problems(_value(top, key))
            elif key == "models" and _value(top, key) is not None:
                entries += self.models(_value(top, key))
        families = self.families(_value(top, "families"), FAMILY_NAMES)
        budget = self.budget(_value(top, "budget"))
        seed = self.integer(_value(top, "seed"), "seed", 0, default=0, maximum=2**32 - 1)
        device = self.integer(_value(top, "device"), "device", 0, default=0)
        workspace = self.integer(_value(top, "workspace_limit_mb"), "workspace_limit_mb", 0,
                                 default=DEFAULT_WORKSPACE_LIMIT_MB)
        # Without a `cache:` key, tune writes the user's cache, which autoconv.conv2d reads.
        cache = (default_cache_location() if _value(top, "cache") is None
                 else self.location(_value(top, "cache"), "cache"))
        results = self.path(_value(top, "results"), "results", DEFAULT_RESULTS)
        storage = self.storage(_value(top, "storage"))

        problems = self.merge(entries)
        listed = [_value(top, key) for key in ("problems", "models")]
        if all(node is None or (isinstance(node, SequenceNode) and not node.value)
               for node in listed):
            self.error(root, "", "nothing to tune: add a 'problems' list or a 'models' list")
        if families is not INVALID:
            self.check_support(problems, families)
        if self.errors:
            return None
        return TuneConfig(
            origin=self.origin, problems=tuple(item for item, _, _ in problems),
            families=families, budget=budget, seed=seed, cache=cache, storage=storage,
            results=results, device=device, workspace_limit_mb=workspace,
            notes=tuple(self.notes), cache_given=_value(top, "cache") is not None)

    def compose(self, text: str) -> Node | None:
        if not isinstance(text, str):
            self.error(None, "", f"expected YAML text, got {type(text).__name__}")
            return None
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.MarkedYAMLError as err:
            mark = err.problem_mark or err.context_mark
            line = mark.line + 1 if mark else 1
            detail = " ".join(part for part in (err.context, err.problem) if part)
            self.errors.append((line, 0, f"{self.origin}:{line}: invalid YAML: {detail}"))
            return None
        except yaml.YAMLError as err:  # e.g. a control character (ReaderError)
            line = text[:getattr(err, "position", 0)].count("\n") + 1
            self.errors.append((line, 0, f"{self.origin}:{line}: invalid YAML: {err}"))
            return None
        except RecursionError:
            self.error(None, "", "invalid YAML: nested too deeply")
            return None
        if root is None:
            self.error(None, "", "the file is empty; expected a mapping with keys "
                       + ", ".join(TOP_KEYS))
        return root

    def reject_tags(self, root: Node) -> None:
        """Report every node with a tag beyond plain YAML (``!!python/object``, ``!!set``,
        ``!custom``...), wherever it is: such a file was not written for autoconv."""
        stack: list[tuple[Node, str]] = [(root, "")]
        seen: set[int] = set()
        while stack:
            node, path = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, ScalarNode):
                allowed = node.tag in _SCALAR_TAGS or node.tag == _MERGE_TAG
            elif isinstance(node, SequenceNode):
                allowed = node.tag == _TAG + "seq"
                stack.extend((item, f"{path}[{i}]") for i, item in reversed(list(enumerate(node.value))))
            else:
                allowed = node.tag == _TAG + "map"
                for key, value in reversed(node.value):
                    name = key.value if isinstance(key, ScalarNode) else "?"
                    stack.extend(((value, _join(path, name)), (key, path)))
            if not allowed:
                self._bad_tag_nodes.add(id(node))
                tag = node.tag.replace(_TAG, "!!")
                self.error(node, path, f"YAML tag {tag} is not allowed: autoconv configs hold "
                           "plain values (quote the value if it is a string)")

    # ---- structure -----------------------------------------------------------------
    def mapping(self, node: Node, path: str, keys: tuple[str, ...], what: str = "",
                active: frozenset[int] = frozenset()) -> dict[str, tuple[Node, Node]] | _Invalid:
        """The entries of a mapping node by key name, with ``<<`` merges applied
        (explicit keys win over merged ones, earlier merge sources over later ones).

        Reports non-mappings, non-string and unknown keys, and duplicate keys (which
        plain YAML loading silently resolves to the last one). Results are memoized per
        node so that aliases merged many times cost nothing extra.
        """
        if id(node) in self._bad_tag_nodes:
            return INVALID
        if not isinstance(node, MappingNode):
            return self.error(node, path, f"expected a mapping with keys {', '.join(keys)}, "
                              f"got {self.describe(node)}")
        memo_key = (id(node), keys)
        if memo_key in self._mappings:
            return self._mappings[memo_key]
        active = active | {id(node)}
        entries: dict[str, tuple[Node, Node]] = {}
        merged: dict[str, tuple[Node, Node]] = {}
        for key_node, value_node in node.value:
            if id(key_node) in self._bad_tag_nodes:
                continue
            if not isinstance(key_node, ScalarNode):
                self.error(key_node, path, f"keys must be names, got {self.describe(key_node)}")
                continue
            if key_node.tag == _MERGE_TAG:
                for name, pair in self.merge_sources(value_node, path, keys, what, active).items():
                    merged.setdefault(name, pair)
                continue
            name = key_node.value
            key_path = _join(path, name)
            if name in entries:
                self.error(key_node, key_path, f"duplicate key (first given on line "
                           f"{self.line_of(entries[name][0])}); YAML would silently keep the last")
                continue
            if name not in keys:
                self.error(key_node, key_path, f"unknown key{did_you_mean(name, keys)}; "
                           f"{what + ' takes' if what else 'expected'} {', '.join(keys)}")
                continue
            entries[name] = (key_node, value_node)
        for name, pair in merged.items():
            entries.setdefault(name, pair)
        self._mappings[memo_key] = entries
        return entries

    def merge_sources(self, node: Node, path: str, keys: tuple[str, ...], what: str,
                      active: frozenset[int]) -> dict[str, tuple[Node, Node]]:
        """The entries a ``<<`` key brings in: a mapping, or a list of them."""
        sources = node.value if isinstance(node, SequenceNode) else [node]
        result: dict[str, tuple[Node, Node]] = {}
        for source in sources:
            if id(source) in self._bad_tag_nodes:
                continue
            if not isinstance(source, MappingNode):
                self.error(source, path, "'<<' merges a mapping or a list of mappings, got "
                           + self.describe(source))
                continue
            if id(source) in active:
                self.error(source, path, "'<<' merges a mapping into itself")
                continue
            entries = self.mapping(source, path, keys, what, active)
            if entries is not INVALID:
                for name, pair in entries.items():
                    result.setdefault(name, pair)
        return result

    def sequence(self, node: Node, path: str, what: str) -> list[Node] | _Invalid:
        if id(node) in self._bad_tag_nodes:
            return INVALID
        if not isinstance(node, SequenceNode):
            return self.error(node, path, f"expected a list of {what}, got {self.describe(node)}")
        return node.value

    def describe(self, node: Node) -> str:
        if isinstance(node, MappingNode):
            return "a mapping"
        if isinstance(node, SequenceNode):
            return "a list"
        value = self.scalar(node)
        if value is None:
            return "nothing (null)"
        text = repr(node.value if value is INVALID else value)
        return text if len(text) <= 60 else text[:57] + "..."

    # ---- scalars -------------------------------------------------------------------
    def scalar(self, node: Node):
        """The Python value of a plain scalar node, or INVALID (not a scalar, odd tag,
        or a malformed explicitly typed value such as ``!!int abc``)."""
        if not isinstance(node, ScalarNode) or id(node) in self._bad_tag_nodes:
            return INVALID
        constructor = _SCALAR_CONSTRUCTORS.get(node.tag)
        if constructor is None:
            return INVALID
        try:
            return constructor(node)
        except (ValueError, KeyError, TypeError, yaml.YAMLError):
            return INVALID

    def typed(self, node: Node, path: str, check: Callable[[object], bool], expected: str):
        """The scalar value of ``node`` if ``check`` accepts it, else a recorded error."""
        if id(node) in self._bad_tag_nodes:
            return INVALID
        value = self.scalar(node)
        if value is INVALID or not check(value):
            return self.error(node, path, f"expected {expected}, got {self.describe(node)}")
        return value

    def integer(self, node: Node | None, path: str, minimum: int, default=None,
                maximum: int | None = None):
        if node is None:
            return default
        value = self.typed(node, path, _is_int, "an integer")
        if value is INVALID:
            return value
        if value < minimum:
            return self.error(node, path, f"must be >= {minimum}, got {self.describe(node)}")
        if maximum is not None and value > maximum:
            return self.error(node, path, f"must be <= {maximum}, got {self.describe(node)}")
        return value

    def string(self, node: Node, path: str):
        return self.typed(node, path, lambda v: isinstance(v, str) and v != "", "a non-empty string")

    def pair(self, node: Node, path: str):
        """An int or [h, w]."""
        if isinstance(node, SequenceNode) and id(node) not in self._bad_tag_nodes:
            if len(node.value) != 2:
                return self.error(node, path, f"expected an integer or [h, w], got a list of "
                                  f"{len(node.value)} items")
            items = [self.integer(item, f"{path}[{i}]", 1) for i, item in enumerate(node.value)]
            return INVALID if INVALID in items else tuple(items)
        value = self.typed(node, path, _is_int, "an integer or [h, w]")
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
        value = self.typed(node, path, lambda v: _is_int(v) or (
            isinstance(v, str) and v.lower() in ("same", "valid")), expected)
        if value is INVALID:
            return value
        if _is_int(value) and value < 0:
            return self.error(node, path, f"must be >= 0, got {self.describe(node)}")
        return value.lower() if isinstance(value, str) else value

    def path(self, node: Node | None, key: str, default: str) -> Path:
        text = default if node is None else self.string(node, key)
        if text is INVALID:
            return text
        return _under(self.base_dir, text)

    def storage(self, node: Node | None):
        text = DEFAULT_STORAGE if node is None else self.string(node, "storage")
        if text is INVALID:
            return text
        if "://" not in text:
            return str(_under(self.base_dir, text))
        return _url_under(self.base_dir, text)

    def location(self, node: Node, key: str) -> Path | str:
        """A file path (relative to the config's folder) or a SQLAlchemy URL."""
        text = self.string(node, key)
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
        count = self.integer(_value(fields, "count"), f"{path}.count", 1, default=1)
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
            try:
                problem = parse_spec(spec)
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
        for key in ("dtype", "layout"):
            if key in fields:
                values[key] = self.string(fields[key][1], f"{path}.{key}")
        if not ok or INVALID in values.values():
            return None
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
            return self.error(node, path, f"{value!r} is not a valid name: use letters, digits, "
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
                                    f"unknown preset {preset!r}{did_you_mean(preset, MODEL_PRESETS)}; "
                                    f"presets: {', '.join(MODEL_PRESETS)}")
            batch = self.integer(_value(fields, "batch"), f"{path}.batch", 1, default=1)
            prefix = self.name(fields["name"][1], f"{path}.name") if "name" in fields else preset
            if INVALID in (preset, batch, prefix):
                continue
            try:
                layers = MODEL_PRESETS[preset](batch)
            except ProblemError as err:  # e.g. a batch too large for 32-bit indexing
                where = fields["batch"][1] if "batch" in fields else item
                self.error(where, f"{path}.batch", str(err))
                continue
            for layer in layers:
                entries.append((NamedProblem(f"{prefix}.{layer.name}", layer.problem, layer.count),
                                path, item))
        return entries

    def families(self, node: Node | None, registered: tuple[str, ...]):
        if node is None:
            return tuple(registered)
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
                self.error(item, path, f"unknown kernel family {name!r}"
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
        given = {k: v for k, (_, v) in fields.items() if not _is_null(v)}
        trials = self.integer(given.get("trials"), "budget.trials", 1)
        patience = self.integer(given.get("patience"), "budget.patience", 1)
        seconds = None
        if "seconds" in given:
            seconds = self.typed(given["seconds"], "budget.seconds",
                                 lambda v: _is_int(v) or (isinstance(v, float) and v == v
                                                          and v != float("inf")),
                                 "a number of seconds")
            if seconds is not INVALID and seconds <= 0:
                seconds = self.error(given["seconds"], "budget.seconds", f"must be > 0, got {seconds}")
        if INVALID in (trials, seconds, patience):
            return INVALID
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
                           + "; ".join(reasons))


def _value(fields: dict[str, tuple[Node, Node]], key: str) -> Node | None:
    """The value node of ``key``; None when the key is absent or its value is null."""
    pair = fields.get(key)
    if pair is None or _is_null(pair[1]):
        return None
    return pair[1]


def _is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == _TAG + "null"


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


_CONSTRUCTOR = yaml.SafeLoader("")  # constructs single scalar nodes; never fed a document
_SCALAR_CONSTRUCTORS: dict[str, Callable[[ScalarNode], object]] = {
    _TAG + "str": lambda node: node.value,
    _TAG + "int": _CONSTRUCTOR.construct_yaml_int,
    _TAG + "float": _CONSTRUCTOR.construct_yaml_float,
    _TAG + "bool": _CONSTRUCTOR.construct_yaml_bool,
    _TAG + "null": lambda node: None,
}
