"""The winners' cache: which kernel runs for a problem on a GPU (SQLite file or database).

- :mod:`~autoconv.cache.winners`: :class:`WinnerCache`, its keys, entries and locations.
- :mod:`~autoconv.cache.sql`: the SQLite file and the SQLAlchemy database it lives in.
- :mod:`~autoconv.cache.neighbours`: the winners of the tuned problems nearest to another.
"""
