"""The search: Optuna studies per problem, on one GPU or several, and their storage.

- :mod:`~autoconv.search.tuner`: the search over a config's problems, and its parts:
  :mod:`~autoconv.search.resume` (a cached winner, or a study to resume),
  :mod:`~autoconv.search.study_loop` (one study's ask/tell loop),
  :mod:`~autoconv.search.proposals` (a proposal judged and repaired before it compiles),
  :mod:`~autoconv.search.strategy` (the protocol of the search strategies:
  :mod:`~autoconv.search.full_study` and :mod:`~autoconv.search.transfer_study`),
  :mod:`~autoconv.search.warm_start` (a study's first candidates),
  :mod:`~autoconv.search.stopping` (the budget and the patience),
  :mod:`~autoconv.search.scheduler` (which study runs when),
  :mod:`~autoconv.search.finish` (the winner re-verified and cached), and
  :mod:`~autoconv.search.context` (what they share).
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
