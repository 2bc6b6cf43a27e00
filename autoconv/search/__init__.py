"""The search: Optuna studies per problem, on one GPU or several, and their storage.

- :mod:`~autoconv.search.tuner`: the per-problem study and its ask/tell loop.
- :mod:`~autoconv.search.fleet`: one worker process per GPU sharing the studies.
- :mod:`~autoconv.search.storage`: the Optuna storage, and keeping it usable after a crash.
- :mod:`~autoconv.search.session`: a config and the command line's overrides, resolved once.
"""
