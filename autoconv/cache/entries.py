"""One entry of the winners' cache: its key and what it records.

An entry is keyed by everything that changes the answer (:class:`CacheKey`): the GPU's
name and compute capability, the CUDA runtime and driver versions, autoconv's version,
a hash of the kernel templates, search spaces and launch code
(:func:`~autoconv.kernels.fingerprint.templates_hash`), the problem and its dtype. A
lookup matches all of them, so an entry measured on another GPU or with other templates
is never used. Values are JSON and numbers, never pickles.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from autoconv._version import __version__
from autoconv.kernels.fingerprint import templates_hash


@dataclass(frozen=True)
class CacheKey:
    gpu_name: str
    compute_capability: str   # "9.0"
    cuda_runtime: int
    cuda_driver: int
    autoconv_version: str
    templates_hash: str
    problem_key: str          # ConvProblem.key(): parses back with parse_spec
    dtype: str

    @classmethod
    def for_problem(cls, identity, problem) -> CacheKey:
        """The key of ``problem`` on the device ``identity`` (a BackendIdentity) with this
        installation's autoconv and templates."""
        return cls(gpu_name=identity.gpu_name, compute_capability=identity.compute_capability_str,
                   cuda_runtime=int(identity.cuda_runtime), cuda_driver=int(identity.cuda_driver),
                   autoconv_version=__version__, templates_hash=templates_hash(),
                   problem_key=problem.key(), dtype=problem.dtype)

    @property
    def is_current(self) -> bool:
        """Made by this autoconv version with these templates (the GPU is not checked)."""
        return self.autoconv_version == __version__ and self.templates_hash == templates_hash()


@dataclass(frozen=True)
class CacheEntry:
    """A winner and how it was measured; the ``baseline_*`` fields hold cuDNN's time and
    plan for the same key, which the benchmark fills
    (:meth:`~autoconv.cache.winners.WinnerCache.set_baseline`)."""

    key: CacheKey
    family: str
    config: Mapping[str, Any]
    kernel_name: str
    source_hash: str
    time_ms: float
    tflops: float
    workspace_bytes: int
    measured_at: str = field(default_factory=lambda: now_iso())
    trials: int = 0              # candidates evaluated to find it
    study_name: str = ""
    baseline_name: str | None = None
    baseline_plan: str | None = None   # JSON, as the benchmark writes it
    baseline_time_ms: float | None = None
    baseline_tflops: float | None = None
    baseline_measured_at: str | None = None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["config"] = dict(self.config)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CacheEntry:
        values = dict(data)
        values["key"] = CacheKey(**values["key"])
        return cls(**values)


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
