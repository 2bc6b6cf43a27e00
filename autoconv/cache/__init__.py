"""The winners' cache: which kernel runs for a problem on a GPU (SQLite file or database).

It sits above the kernels (an entry's key holds their fingerprint, an imported entry is
checked against them) and the problems, and below the search and the runtime, which
write and read it.

- :mod:`~autoconv.cache.winners`: :class:`~autoconv.cache.winners.WinnerCache`, the store.
- :mod:`~autoconv.cache.entries`: an entry and its key (everything that changes the answer).
- :mod:`~autoconv.cache.schema`: the tables' columns, ``CREATE TABLE`` text and version.
- :mod:`~autoconv.cache.sql`: the SQLite file and the SQLAlchemy database it lives in.
- :mod:`~autoconv.cache.ownership`: whether a file is an autoconv cache (else left alone).
- :mod:`~autoconv.cache.exchange`: export and import between machines, with the import's checks.
- :mod:`~autoconv.cache.location`: where the cache is when none is given.
- :mod:`~autoconv.cache.neighbours`: the winners of the tuned problems nearest to another.
"""
