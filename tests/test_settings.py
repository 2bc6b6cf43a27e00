"""The environment variables autoconv reads: all of them in :mod:`autoconv.settings` (no other
module reads one), each documented, each bad value refused with its name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from autoconv import settings
from autoconv.backends.factory import backend_kind
from autoconv.errors import AutoconvError, BackendUnavailable, StorageError
from autoconv.search.storage import DEFAULT_HEARTBEAT_S, heartbeat_interval_s

PACKAGE = Path(settings.__file__).parent
DOCS = PACKAGE.parent / "docs"


def _environment_reads(tree: ast.AST) -> list[str]:
    """The string constants a module passes to os.environ.get, os.getenv or os.environ[...]."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("os.environ.get", "os.getenv", "environ.get"):
            names += [a.value for a in node.args[:1] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) in ("os.environ", "environ"):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                names.append(node.slice.value)
    return names


def test_no_module_but_settings_reads_an_autoconv_variable():
    readers = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name == "settings.py" and path.parent == PACKAGE:
            continue
        names = [n for n in _environment_reads(ast.parse(path.read_text())) if n.startswith("AUTOCONV_")]
        if names:
            readers[str(path.relative_to(PACKAGE))] = names
    assert readers == {}, "read these through autoconv.settings"


def test_every_variable_is_documented():
    text = "".join(path.read_text() for path in DOCS.glob("*.md"))
    assert [v.name for v in settings.VARIABLES if v.name not in text] == []
    assert len({v.name for v in settings.VARIABLES}) == len(settings.VARIABLES)


@pytest.mark.parametrize("variable", settings.VARIABLES, ids=lambda v: v.name)
def test_unset_or_empty_is_none(variable, monkeypatch):
    monkeypatch.delenv(variable.name, raising=False)
    assert variable.value() is None
    monkeypatch.setenv(variable.name, "   ")
    assert variable.value() is None


@pytest.mark.parametrize("variable, bad, error", [
    (settings.BACKEND, "cuda", BackendUnavailable), (settings.FAKE_DELAY_S, "-1", BackendUnavailable),
    (settings.FAKE_DELAY_S, "nan", BackendUnavailable), (settings.FAKE_MEMORY_MB, "inf", BackendUnavailable),
    (settings.FAKE_DEVICES, "0", BackendUnavailable), (settings.HEARTBEAT_S, "1.5", StorageError),
    (settings.EMU_WORKERS, "many", AutoconvError)])
def test_a_bad_value_is_refused_naming_the_variable(variable, bad, error, monkeypatch):
    monkeypatch.setenv(variable.name, bad)
    with pytest.raises(error, match=f"{variable.name}='{bad}': expected {variable.form}"):
        variable.value()


def test_the_features_read_their_variables(monkeypatch):
    monkeypatch.setenv("AUTOCONV_BACKEND", " Fake ")
    assert backend_kind() == "fake"
    monkeypatch.delenv("AUTOCONV_BACKEND")
    assert backend_kind() == "cupy"
    monkeypatch.setenv("AUTOCONV_HEARTBEAT_S", "3")
    assert heartbeat_interval_s() == 3
    monkeypatch.delenv("AUTOCONV_HEARTBEAT_S")
    assert heartbeat_interval_s() == DEFAULT_HEARTBEAT_S
    monkeypatch.setenv("AUTOCONV_EMU_WORKERS", "5")
    from autoconv.emulator.program import default_workers
    assert default_workers() == 5
