"""One tuning run's settings, resolved once: a config under the command line's options.

Every command that tunes or reads what tuning wrote (``tune``, ``tune --gpus``'s workers,
``bench``, ``show CONFIG``) starts from a :class:`TuneSession`, so that they agree on

- the **problems**: the config's, each in ``--precision`` and ``--layout`` where given;
- the **storage** of the Optuna studies: ``--storage``, else the config's;
- the **winners' cache**: ``--cache``; else, when the studies are in a database (a URL
  storage) and the config names no cache, that same database (so that hosts sharing the
  studies share the winners); else the config's cache (:func:`cache_location`);
- the **search settings** (:class:`~autoconv.search.options.SearchSettings`): the config's
  families, budget, seed and workspace limit, with ``--families``, ``--trials``, ``--seconds``
  and ``--patience`` on top, and the search options (:class:`~autoconv.search.options.SearchOptions`);

and builds the :class:`~autoconv.search.tuner.Tuner` from them (:meth:`TuneSession.tuner`). A session
is made once, in the process the command runs in, and travels whole (pickled) to the fleet's
workers (:mod:`autoconv.search.fleet`): they neither re-read the config nor resolve anything again.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autoconv.backends.base import Backend
from autoconv.cache.winners import WinnerCache
from autoconv.config.budget import Budget
from autoconv.config.load import load_config
from autoconv.config.tune_config import TuneConfig, with_layout, with_precision
from autoconv.errors import UsageError
from autoconv.search.options import SearchSettings, TuneOptions
from autoconv.search.outcome import Reporter
from autoconv.search.tuner import Tuner
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
    """A config and the options a run uses, resolved (see the module docstring).

    Build one with :meth:`from_config` or :meth:`load`. ``config`` holds the problems as tuned (in
    the options' precision and layout), ``options`` the options as given, ``settings`` what the
    tuner searches with, ``storage`` and ``cache`` where the studies and the winners go.
    """

    config: TuneConfig
    options: TuneOptions
    settings: SearchSettings
    storage: str  # a journal-file path or a SQLAlchemy URL
    cache: str    # a file path or a SQLAlchemy URL

    @classmethod
    def from_config(cls, config: TuneConfig, options: TuneOptions | None = None, /, **fields: Any) -> TuneSession:
        """``config`` under ``options`` (or ``TuneOptions(**fields)``): their precision and layout
        set every problem's; their families, budget, storage and cache replace the config's where
        given.

        Raises:
            UsageError: both ``options`` and ``fields`` given, or an option is invalid.
        """
        if options is None:
            options = TuneOptions(**fields)
        elif fields:
            raise UsageError("options", None, f"give a TuneOptions or its fields ({', '.join(fields)}), not both")
        if options.precision is not None:
            config = with_precision(config, options.precision)
        if options.layout is not None:
            config = with_layout(config, options.layout)
        if options.results is not None:
            config = dataclasses.replace(config, results=Path(options.results).expanduser().absolute())
        budget = dataclasses.replace(config.budget, **{
            name: value for name in ("trials", "seconds", "patience")
            if (value := getattr(options, name)) is not None})
        storage = str(options.storage or config.storage)
        settings = SearchSettings(families=options.families or config.families, budget=budget, seed=config.seed,
                                  workspace_limit=config.workspace_limit_bytes, search=options.search)
        return cls(config=config, options=options, settings=settings, storage=storage,
                   cache=cache_location(options.cache, storage, config))

    @classmethod
    def load(cls, config_path: str | os.PathLike, options: TuneOptions | None = None, /,
             **fields: Any) -> TuneSession:
        """:meth:`from_config` of the config file at ``config_path``.

        Raises:
            ConfigError: the file is missing or invalid (every error listed).
        """
        return cls.from_config(load_config(config_path), options, **fields)

    @property
    def families(self) -> tuple[str, ...]:
        return self.settings.families

    @property
    def budget(self) -> Budget:
        return self.settings.budget

    def on_device(self, device: int) -> TuneSession:
        """This session tuning on CUDA device ``device`` instead of the config's."""
        return dataclasses.replace(self, config=dataclasses.replace(self.config, device=device))

    def open_cache(self) -> WinnerCache:
        """The winners' cache of this session (close it, or use it in a ``with``)."""
        return WinnerCache(self.cache)

    def tuner(self, backend: Backend, *, cache: WinnerCache | None, reporter: Reporter | None = None,
              storage: Any = None) -> Tuner:
        """A :class:`~autoconv.search.tuner.Tuner` on ``backend`` with this session's settings;
        winners go into ``cache`` (:meth:`open_cache`). ``storage``: this session's storage already
        opened (:func:`~autoconv.search.storage.make_storage`; None: opened by the tuner)."""
        return Tuner(backend, self.settings, storage=self.storage if storage is None else storage, cache=cache,
                     reporter=reporter)
