"""The search: Optuna studies per problem, on one GPU or several, and their storage.

- :mod:`~autoconv.search.tuner`: the per-problem study and its ask/tell loop, the
  winner's re-verification and caching.
- :mod:`~autoconv.search.points`: the valid configurations of a problem, and the nearest
  valid one to a proposal.
- :mod:`~autoconv.search.ranker`: the tuning history's model of a configuration's time;
  :mod:`~autoconv.search.prefilter` puts it in front of the compiler (``--prefilter``), and
  :mod:`~autoconv.search.transfer` searches by it where the history knows enough (by default).
- :mod:`~autoconv.search.runners_up`: after a best's variations, the other splits of the
  reduction of the next tiles' (output grids') fastest configurations (full and transfer studies).
- :mod:`~autoconv.search.study`: study names, and how a trial holds a candidate and its
  evaluation (written by the tuner, read back by it and by ``autoconv bench``).
- :mod:`~autoconv.search.liveness`: heartbeats, and retrying the trials of dead workers.
- :mod:`~autoconv.search.optuna_adapter`: the Optuna storage calls below the Study/Trial API.
- :mod:`~autoconv.search.outcome`: what tuning a problem gives, merging, progress reports.
- :mod:`~autoconv.search.dry_run`: ``tune --dry-run``, compiling candidates with nvcc.
- :mod:`~autoconv.search.fleet`: worker processes on one or more GPUs (several per GPU take
  turns on it) sharing the studies.
- :mod:`~autoconv.search.storage`: the Optuna storage, and keeping it usable after a crash.
- :mod:`~autoconv.search.options`: the options of ``autoconv tune`` and the tuner's settings,
  each defaulted once.
- :mod:`~autoconv.search.session`: a config under those options, resolved once (it travels
  whole to the fleet's workers).
"""
