"""What the parts of one tuner share (:class:`SearchContext`): the backend, the settings, the
opened storage, the winners' cache, the progress reporter, this process's name and liveness in the
studies, and what its studies decided along the way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import optuna

from autoconv.backends.base import Backend
from autoconv.cache.entries import CacheKey
from autoconv.cache.winners import WinnerCache
from autoconv.gpu.memory import check_fits
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import ConvProblem
from autoconv.search.liveness import Liveness
from autoconv.search.options import SearchSettings
from autoconv.search.outcome import Reporter
from autoconv.search.study import study_name


@dataclass(eq=False)
class SearchContext:
    """One tuner's shared state (:class:`~autoconv.search.tuner.Tuner` makes it; its parts read it)."""

    backend: Backend
    settings: SearchSettings
    storage: Any                  # an opened Optuna storage
    cache: WinnerCache | None     # where winners go (None: nowhere)
    reporter: Reporter
    owner: str                    # this process, as its trials name it (:func:`~autoconv.processes.process_owner`)
    liveness: Liveness
    #: The studies tuned by transfer (their end is not the patience's).
    transferred: set[str] = field(default_factory=set)
    #: Why studies were full, not transfers (each reason said once a run).
    full_study_reasons: set[str] = field(default_factory=set)

    def study_name(self, problem: ConvProblem) -> str:
        """``problem``'s study name on this GPU with these families."""
        return study_name(problem, self.backend.identity.gpu_name, self.settings.families)

    def load_study(self, problem: ConvProblem) -> optuna.Study:
        """``problem``'s study in this storage (KeyError: there is none)."""
        return optuna.load_study(study_name=self.study_name(problem), storage=self.storage)

    def cache_key(self, problem: ConvProblem) -> CacheKey:
        """``problem``'s key in the winners' cache, on this GPU."""
        return CacheKey.for_problem(self.backend.identity, problem)

    def workspace_limit(self, item: NamedProblem) -> int:
        """The workspace a candidate for ``item`` may use: the configured limit, less
        whatever the problem's own buffers leave of the device's memory
        (:mod:`autoconv.gpu.memory`).

        Raises:
            DeviceMemoryError: the problem's buffers alone do not fit (nothing allocated).
        """
        available = self.backend.available_memory_bytes()
        need = check_fits(item.problem, available, self.backend.device.name, self.backend.device.l2_bytes,
                          label=item.name)
        return max(0, min(self.settings.workspace_limit, available - need.fixed))
