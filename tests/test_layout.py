"""The package's layout: the import graph of ``autoconv/`` has no cycle, domain code never
imports the command line, and ``import autoconv`` stays light.

The graph is read with :mod:`ast`, not by importing: every ``import`` and ``from ...
import`` of every module counts, at the top and inside functions alike (an import inside a
function still runs, only later). ``from package import name`` is an edge to the module
``package.name`` where that is a module, else to ``package`` itself.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import REPO, repo_env

PACKAGE = REPO / "autoconv"

#: Cycles known when this test was written, each the set of its modules. A cycle listed
#: here that no longer exists fails the test too: then remove it from the list. (None: the
#: last, runtime.api -> torch.functional -> torch.ops -> runtime.api, ended when
#: check_shapes moved to runtime.arguments.)
KNOWN_CYCLES: set[frozenset[str]] = set()

#: Modules that may import the command line: the command line itself and ``python -m autoconv``.
COMMAND_LINE = ("autoconv.commands", "autoconv.__main__")


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} (line {self.line})"


def module_files() -> dict[str, Path]:
    """Module name -> its file, for every module of the package."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported_names(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules (or, for ``from X import name``, the candidate modules) ``node`` names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:  # relative: from the module's package, up level - 1 packages
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    return [f"{base}.{alias.name}" for alias in node.names] + [base]


def import_graph() -> dict[str, list[Edge]]:
    """Module -> its edges to other modules of the package."""
    modules = module_files()
    graph: dict[str, list[Edge]] = {}
    for module, path in modules.items():
        edges = {}
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = imported_names(module, path, node)
            if isinstance(node, ast.ImportFrom):  # X.name where it is a module, else X
                submodules = [name for name in names[:-1] if name in modules]
                names = submodules if len(submodules) == len(names) - 1 else submodules + names[-1:]
            for name in names:
                while name and name not in modules:  # import a.b.c where a.b.c is no module of ours
                    name = name.rpartition(".")[0]
                if name and name != module and name not in edges:
                    edges[name] = Edge(module, name, node.lineno)
        graph[module] = sorted(edges.values(), key=lambda edge: edge.target)
    return graph


def strongly_connected(graph: dict[str, list[Edge]]) -> list[set[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for edge in graph[module]:
            if edge.target not in index:
                visit(edge.target)
                low[module] = min(low[module], low[edge.target])
            elif edge.target in on_stack:
                low[module] = min(low[module], index[edge.target])
        if low[module] == index[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(component)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def a_cycle(graph: dict[str, list[Edge]], component: set[str]) -> list[Edge]:
    """One cycle through the component's first module, as its edges (shortest, by BFS)."""
    start = min(component)
    came_by: dict[str, Edge] = {}
    queue = deque([start])
    while queue:
        module = queue.popleft()
        for edge in graph[module]:
            if edge.target == start:
                path = [edge]
                while path[0].source != start:
                    path.insert(0, came_by[path[0].source])
                return path
            if edge.target in component and edge.target not in came_by:
                came_by[edge.target] = edge
                queue.append(edge.target)
    raise AssertionError(f"no cycle through {start}")  # a strongly connected component has one


def describe(graph: dict[str, list[Edge]], components: list[set[str]]) -> str:
    return "\n".join("cycle:\n  " + "\n  ".join(map(str, a_cycle(graph, component))) for component in components)


def test_the_graph_is_read():
    graph = import_graph()
    assert {"autoconv", "autoconv.commands.main", "autoconv.search.tuner", "autoconv.torch.ops"} <= set(graph)
    targets = {edge.target for edge in graph["autoconv.runtime.api"]}
    assert {"autoconv.errors", "autoconv.runtime.selection"} <= targets  # at the top
    assert "autoconv.gpu.device" in targets  # inside conv2d
    assert any(edge.target == "autoconv.commands.tune" for edge in graph["autoconv.commands.main"])  # from X import m
    assert not any(edge.target.startswith(("cupy", "torch", "optuna")) for edges in graph.values() for edge in edges)


def test_no_import_cycles():
    graph = import_graph()
    components = strongly_connected(graph)
    new = [component for component in components if frozenset(component) not in KNOWN_CYCLES]
    assert not new, "import cycles among autoconv's modules:\n" + describe(graph, new)
    gone = KNOWN_CYCLES - {frozenset(component) for component in components}
    assert not gone, f"known cycles that no longer exist (remove them from KNOWN_CYCLES): {sorted(map(sorted, gone))}"


def test_domain_code_never_imports_the_command_line():
    offending = [str(edge) for module, edges in import_graph().items()
                 if not module.startswith(COMMAND_LINE) for edge in edges
                 if edge.target.startswith("autoconv.commands")]
    assert not offending, "domain modules importing autoconv.commands:\n  " + "\n  ".join(offending)


@pytest.mark.parametrize("module, heavy", [
    ("autoconv", ("cupy", "torch", "optuna")),
    ("autoconv.runtime", ("cupy",)),  # conv2d needs CuPy (or PyTorch) only when called
    ("autoconv.gpu", ("cupy",)),
    # A fleet worker starts its GPU worker from here before it imports the tuner (its warm-up then
    # overlaps those imports): nothing heavy may come first.
    ("autoconv.search.fleet_entry", ("cupy", "torch", "optuna", "numpy", "jinja2", "yaml")),
    # The console script's module: each process a tuning run spawns imports the script again.
    ("autoconv.commands.main", ("cupy", "torch", "optuna", "numpy", "jinja2", "yaml")),
])
def test_importing_leaves_heavy_packages_alone(module, heavy):
    script = (f"import sys, {module}\n"
              f"print(' '.join(sorted(name for name in sys.modules if name.split('.')[0] in {heavy!r})))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=repo_env(), timeout=60,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [], f"import {module} imported {done.stdout.strip()}"
