"""Which backend ``autoconv tune`` evaluates candidates with: the CuPy GPU backend, or the
fake one (``$AUTOCONV_BACKEND=fake``). The one module that knows every backend."""

from __future__ import annotations

import math
import os
from typing import overload

from autoconv.backends.base import Backend
from autoconv.backends.fake import FakeBackend
from autoconv.errors import BackendUnavailable

#: Environment variable choosing the backend of ``autoconv tune``: ``cupy`` (default)
#: or ``fake`` (synthetic timings, no GPU: for testing the search and the CLI).
BACKEND_VARIABLE = "AUTOCONV_BACKEND"
#: With the fake backend: seconds each candidate takes (``delay_s``) and the device
#: memory in MiB it pretends to have (``memory_bytes``). For tests of the CLI.
FAKE_DELAY_VARIABLE = "AUTOCONV_FAKE_DELAY_S"
FAKE_MEMORY_VARIABLE = "AUTOCONV_FAKE_MEMORY_MB"


def backend_kind() -> str:
    """``$AUTOCONV_BACKEND`` as given (``cupy`` when unset), lower case: ``cupy``, ``fake``, or
    something :func:`make_backend` refuses."""
    return os.environ.get(BACKEND_VARIABLE, "cupy").strip().lower()


def make_backend(device_id: int = 0, *, seed: int = 0, **options) -> Backend:
    """The backend ``autoconv tune`` uses: the CuPy GPU backend, unless
    ``$AUTOCONV_BACKEND`` says ``fake``.

    Raises:
        BackendUnavailable: no CuPy or no usable GPU (for the CuPy backend).
    """
    kind = backend_kind()
    if kind == "fake":
        delay = _number_from_environment(FAKE_DELAY_VARIABLE, 0.0)
        memory_mb = _number_from_environment(FAKE_MEMORY_VARIABLE, None)
        return FakeBackend(delay_s=delay,
                           memory_bytes=None if memory_mb is None else int(memory_mb * (1 << 20)))
    if kind != "cupy":
        raise BackendUnavailable(f"{BACKEND_VARIABLE}={kind!r}: expected 'cupy' or 'fake'")
    from autoconv.gpu.backend import CupyBackend
    return CupyBackend(device_id, seed=seed, **options)


@overload
def _number_from_environment(name: str, default: float) -> float: ...


@overload
def _number_from_environment(name: str, default: None) -> float | None: ...


def _number_from_environment(name: str, default: float | None) -> float | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise BackendUnavailable(f"{name}={text!r}: expected a number >= 0")
    return value
