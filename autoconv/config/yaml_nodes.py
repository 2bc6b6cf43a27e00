"""Reading a YAML document as a node tree, with every error located: the half of the
config reader (:mod:`autoconv.config.schema`) that knows YAML but not the schema.

The document is composed with :func:`yaml.compose`, which builds nodes and constructs
nothing, so no tag in the file can run code; only plain YAML values are accepted
(strings, integers, floats, booleans, null, lists, mappings; anchors, aliases and
``<<`` merge keys work). A :class:`NodeReader` records each error with its line and key
path and goes on, so that all of them are reported together; a value whose error is
recorded is :data:`INVALID`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Final

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from autoconv.errors import quoted
from autoconv.problems.problem import did_you_mean

#: Keys longer than this are unknown keys, quoted cut short.
KEY_MAX_LENGTH = 64

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {_TAG + t for t in ("str", "int", "float", "bool", "null")}
_MERGE_TAG = _TAG + "merge"


class Invalid(enum.Enum):
    """Marks a value whose error has already been recorded (an enum of one member, so that
    type checkers narrow ``value is INVALID``)."""

    INVALID = "invalid"


INVALID: Final = Invalid.INVALID


class NodeReader:
    """Walks a composed node tree, collecting located errors (subclass it with the schema)."""

    #: The keys a document's top-level mapping takes (named when the document is empty).
    top_keys: tuple[str, ...] = ()

    def __init__(self, origin: str):
        self.origin = origin
        self.errors: list[tuple[int, int, str]] = []
        self._bad_tag_nodes: set[int] = set()
        self._mappings: dict[tuple[int, tuple[str, ...]], dict[str, tuple[Node, Node]]] = {}

    # ---- error reporting -----------------------------------------------------------
    def line_of(self, node: Node | None) -> int:
        return node.start_mark.line + 1 if node is not None and node.start_mark else 1

    def error(self, node: Node | None, path: str, message: str) -> Invalid:
        line = self.line_of(node)
        where = f"{self.origin}:{line}: " + (f"{path}: " if path else "")
        self.errors.append((line, len(self.errors), where + message))
        return INVALID

    def sorted_errors(self) -> list[str]:
        """In file order; an error reached twice through an alias is reported once."""
        return list(dict.fromkeys(text for _, _, text in sorted(self.errors)))

    # ---- the document --------------------------------------------------------------
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
                       + ", ".join(self.top_keys))
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
                    stack.extend(((value, join_path(path, name)), (key, path)))
            if not allowed:
                self._bad_tag_nodes.add(id(node))
                tag = node.tag.replace(_TAG, "!!")
                self.error(node, path, f"YAML tag {tag} is not allowed: autoconv configs hold "
                           "plain values (quote the value if it is a string)")

    # ---- structure -----------------------------------------------------------------
    def mapping(self, node: Node, path: str, keys: tuple[str, ...], what: str = "",
                active: frozenset[int] = frozenset()) -> dict[str, tuple[Node, Node]] | Invalid:
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
            if len(name) > KEY_MAX_LENGTH:  # not echoed whole, nor compared with difflib
                self.error(key_node, path, f"unknown key {quoted(name)}; "
                           f"{what + ' takes' if what else 'expected'} {', '.join(keys)}")
                continue
            key_path = join_path(path, name)
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

    def sequence(self, node: Node, path: str, what: str) -> list[Node] | Invalid:
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
                maximum: int | None = None, why: str = ""):
        """An integer from ``minimum`` to ``maximum``; ``why`` says what the maximum stands
        for (the message of a value above it gives the limit and the reason)."""
        if node is None:
            return default
        value = self.typed(node, path, is_int, "an integer")
        if value is INVALID:
            return value
        if value < minimum:
            return self.error(node, path, f"must be >= {minimum}, got {self.describe(node)}")
        if maximum is not None and value > maximum:
            because = f" ({why})" if why else ""
            return self.error(node, path, f"must be <= {maximum}{because}, got {self.describe(node)}")
        return value

    def string(self, node: Node, path: str):
        return self.typed(node, path, lambda v: isinstance(v, str) and v != "", "a non-empty string")


def value_of(fields: dict[str, tuple[Node, Node]], key: str) -> Node | None:
    """The value node of ``key``; None when the key is absent or its value is null."""
    pair = fields.get(key)
    if pair is None or is_null(pair[1]):
        return None
    return pair[1]


def is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == _TAG + "null"


def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


_CONSTRUCTOR = yaml.SafeLoader("")  # constructs single scalar nodes; never fed a document
_SCALAR_CONSTRUCTORS: dict[str, Callable[[ScalarNode], object]] = {
    _TAG + "str": lambda node: node.value,
    _TAG + "int": _CONSTRUCTOR.construct_yaml_int,
    _TAG + "float": _CONSTRUCTOR.construct_yaml_float,
    _TAG + "bool": _CONSTRUCTOR.construct_yaml_bool,
    _TAG + "null": lambda node: None,
}
