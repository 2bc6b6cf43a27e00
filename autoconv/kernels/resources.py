"""Where autoconv's data files live: ``templates/`` and ``search_spaces/``.

In a source checkout (and an editable install) they are the top-level folders beside
the package; a regular install ships them inside the package as ``autoconv._templates``
and ``autoconv._search_spaces`` (see ``pyproject.toml``). Both layouts work.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

_CHECKOUT_ROOT = Path(__file__).resolve().parents[2]  # autoconv/kernels/resources.py -> the checkout


@cache
def _data_dir(folder: str, installed_package: str) -> Path:
    beside = _CHECKOUT_ROOT / folder
    if beside.is_dir():
        return beside
    try:
        # The data folders ship without __init__.py, as namespace packages, whose
        # resources.files() is a MultiplexedPath (str() of it is not a path): ask for the
        # package's folder instead.
        spec = importlib.util.find_spec(installed_package)
    except ModuleNotFoundError:
        spec = None
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    installed = Path(locations[0]) if locations else None
    if installed is not None and installed.is_dir():
        return installed
    raise FileNotFoundError(
        f"autoconv's {folder}/ folder is missing: looked beside the package ({beside}) and in "
        f"{installed_package}; reinstall autoconv")


def templates_dir() -> Path:
    return _data_dir("templates", "autoconv._templates")


def search_spaces_dir() -> Path:
    return _data_dir("search_spaces", "autoconv._search_spaces")


def search_space_path(family: str) -> Path:
    return search_spaces_dir() / f"{family}.yaml"
