"""One tuning run's settings, resolved once: a config plus the command line's overrides.

Every command that tunes or reads what tuning wrote (``tune``, ``tune --gpus``'s workers,
``bench``, ``show CONFIG``) starts from a :class:`TuneSession`, so that they agree on

- the **storage** of the Optuna studies: ``--storage``, else the config's;
- the **winners' cache**: ``--cache``; else, when the studies are in a database (a URL
  storage) and the config names no cache, that same database (so that hosts sharing the
  studies share the winners); else the config's cache (:func:`cache_location`);
- the **families** and the **budget** per problem: the config's, with the command line's
  ``--families``, ``--trials``, ``--seconds`` and ``--patience`` on top;
- the **precision** of the problems: the config's, or ``--precision`` for all of them; likewise
  their **layout** (``--layout``);
- the **pipeline depth**: how many candidates the tuner keeps asked ahead of the GPU
  (``--pipeline-depth``, default :data:`~autoconv.search.tuner.DEFAULT_PIPELINE_DEPTH`);
- how many configurations ranked by the history's model a study tries first (``--rank``), and
  whether that model keeps the candidates it predicts slow from being compiled (``--prefilter``);
- whether a family with a build whose sizes come at run time is searched with it
  (``--run-time-sizes``);
- whether a problem is tuned by transfer from the history where its model knows enough
  problems (the default; ``--no-transfer``: full studies only; :mod:`~autoconv.search.transfer`);

and builds the :class:`~autoconv.search.tuner.Tuner` from them (:meth:`TuneSession.tuner`),
so that the tuner's settings are written in one place.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from autoconv.backends.base import Backend
from autoconv.cache.winners import WinnerCache
from autoconv.config.budget import Budget
from autoconv.config.load import load_config
from autoconv.config.tune_config import TuneConfig, with_layout, with_precision
from autoconv.search.outcome import Reporter
from autoconv.search.tuner import DEFAULT_PIPELINE_DEPTH, DEFAULT_RANKED, Tuner
from autoconv.urls import is_url


def cache_location(cache: str | os.PathLike | None, storage: str, config: TuneConfig) -> str:
    """Where winners go: ``cache`` (``--cache``); else, when the studies are in a database
    (a URL ``storage``) and the config names no cache, that same database; else the
    config's cache (its ``cache:``, or the default: ``$AUTOCONV_CACHE`` or the user's file)."""
    if cache is not None:
        return str(cache)
    if is_url(storage) and not config.cache_given:
        return str(storage)
    return str(config.cache)


@dataclass(frozen=True)
class TuneSession:
    """A config and the settings a run uses, each resolved (see the module docstring).

    Build one with :meth:`from_config` or :meth:`load`; the fields are the resolved
    values, so a session made in one process (the ``--gpus`` parent) can be rebuilt
    field by field in another (a worker) without resolving again.
    """

    config: TuneConfig
    families: tuple[str, ...]
    budget: Budget
    storage: str  # a journal-file path or a SQLAlchemy URL
    cache: str    # a file path or a SQLAlchemy URL
    retune: bool = False
    pipeline_depth: int = DEFAULT_PIPELINE_DEPTH
    ranked: int = DEFAULT_RANKED
    prefilter: bool = False
    run_time_sizes: bool = False
    transfer: bool = True

    @classmethod
    def from_config(cls, config: TuneConfig, *, families: Sequence[str] | None = None,
                    trials: int | None = None, seconds: float | None = None, patience: int | None = None,
                    storage: str | None = None, cache: str | os.PathLike | None = None,
                    retune: bool = False, precision: str | None = None, layout: str | None = None,
                    pipeline_depth: int | None = None, ranked: int | None = None,
                    prefilter: bool = False, run_time_sizes: bool = False, transfer: bool = True) -> TuneSession:
        """``config`` with the command line's overrides (None or empty: the config's;
        ``precision`` and ``layout`` set every problem's)."""
        if precision is not None:
            config = with_precision(config, precision)
        if layout is not None:
            config = with_layout(config, layout)
        overrides: dict[str, Any] = {name: value for name, value in (("trials", trials), ("seconds", seconds),
                                                     ("patience", patience)) if value is not None}
        storage = str(storage or config.storage)
        return cls(config=config, families=tuple(families) if families else tuple(config.families),
                   budget=dataclasses.replace(config.budget, **overrides), storage=storage,
                   cache=cache_location(cache, storage, config), retune=retune,
                   pipeline_depth=DEFAULT_PIPELINE_DEPTH if pipeline_depth is None else pipeline_depth,
                   ranked=DEFAULT_RANKED if ranked is None else ranked, prefilter=prefilter,
                   run_time_sizes=run_time_sizes, transfer=transfer)

    @classmethod
    def load(cls, config_path: str | os.PathLike, **overrides) -> TuneSession:
        """:meth:`from_config` of the config file at ``config_path``.

        Raises:
            ConfigError: the file is missing or invalid (every error listed).
        """
        return cls.from_config(load_config(config_path), **overrides)

    def on_device(self, device: int) -> TuneSession:
        """This session tuning on CUDA device ``device`` instead of the config's."""
        return dataclasses.replace(self, config=dataclasses.replace(self.config, device=device))

    def open_cache(self) -> WinnerCache:
        """The winners' cache of this session (close it, or use it in a ``with``)."""
        return WinnerCache(self.cache)

    def tuner(self, backend: Backend, *, cache: WinnerCache | None, reporter: Reporter | None = None,
              storage: Any = None) -> Tuner:
        """A :class:`~autoconv.search.tuner.Tuner` on ``backend`` with this session's storage,
        families, budget, seed, workspace limit, ``retune``, pipeline depth, ranked count, pre-filter,
        run-time sizes and transfer;
        winners go into ``cache``
        (:meth:`open_cache`). ``storage``:
        this session's storage already opened (:func:`~autoconv.search.storage.make_storage`)."""
        return Tuner(backend, storage=self.storage if storage is None else storage, families=self.families,
                     budget=self.budget,
                     seed=self.config.seed, workspace_limit=self.config.workspace_limit_bytes, cache=cache,
                     retune=self.retune, reporter=reporter,
                     pipeline_depth=self.pipeline_depth, ranked=self.ranked, prefilter=self.prefilter,
                     run_time_sizes=self.run_time_sizes, transfer=self.transfer)
