"""Which backend ``autoconv tune`` evaluates candidates with: the CuPy GPU backend, or the
fake one (``$AUTOCONV_BACKEND=fake``). The one module that knows every backend."""

from __future__ import annotations

from autoconv import settings
from autoconv.backends.base import Backend
from autoconv.backends.fake import FakeBackend


def backend_kind() -> str:
    """``cupy`` (the default) or ``fake``: :data:`autoconv.settings.BACKEND`.

    Raises:
        BackendUnavailable: the variable names another backend."""
    return settings.BACKEND.value() or "cupy"


def make_backend(device_id: int = 0, *, seed: int = 0, **options) -> Backend:
    """The backend ``autoconv tune`` uses: the CuPy GPU backend, unless
    ``$AUTOCONV_BACKEND`` says ``fake``.

    Raises:
        BackendUnavailable: no CuPy or no usable GPU (for the CuPy backend).
    """
    if backend_kind() == "fake":
        memory_mb = settings.FAKE_MEMORY_MB.value()
        return FakeBackend(delay_s=settings.FAKE_DELAY_S.value() or 0.0,
                           memory_bytes=None if memory_mb is None else int(memory_mb * (1 << 20)))
    from autoconv.gpu.backend import CupyBackend
    return CupyBackend(device_id, seed=seed, **options)
