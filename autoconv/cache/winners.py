"""The store of tuned winners: which kernel to run for a problem on a GPU.

The cache lives in one of two places (:class:`WinnerCache` takes either):

- **an SQLite file** (stdlib :mod:`sqlite3`) in WAL mode with a busy timeout, so several
  ``autoconv tune`` processes and any number of readers can use it at once; every write
  is one ``BEGIN IMMEDIATE`` transaction, so a killed writer leaves the previous state;
- **a SQLAlchemy URL** (``postgresql+psycopg://user@host/db`` for a fleet of hosts, or
  ``sqlite:////abs/path.db``): tables ``autoconv_meta`` and ``autoconv_winners`` in a
  database that may hold other tables too (Optuna's studies, with ``--storage`` the same
  URL), so that every host tuning into it shares the winners and can load them.

Both run the same SQL (named ``:column`` parameters, an ``INSERT ... ON CONFLICT``
upsert) through a small connection object per kind (:mod:`autoconv.cache.sql`:
:class:`~autoconv.cache.sql.SqliteFile`, :class:`~autoconv.cache.sql.SqlDatabase`); only
opening, transactions and error wording differ.

Entries are looked up by their whole key (:class:`~autoconv.cache.entries.CacheKey`).
When two measurements of one key meet (two tuners, two hosts, an import), the faster one
stays, decided by the database in the upsert itself, so concurrent writers never lose
the faster entry.

The cache carries its format name and schema version in a ``meta`` table
(``autoconv_meta`` in a URL database; :mod:`autoconv.cache.schema`); a newer schema, or a
corrupt or truncated cache raises :class:`~autoconv.errors.CacheError` naming the file
(or the URL, password masked) and the way out (``autoconv cache clear``, or deleting the
file), never a wrong kernel. A file or tables that are not an autoconv cache raise one
that asks for another cache: autoconv never writes into them, and :meth:`WinnerCache.clear`
refuses to delete them (:func:`~autoconv.cache.ownership.cache_file_problem`,
``SqlDatabase.owner_problem``).

Columns ``baseline_*`` hold cuDNN's time and plan for the same key; the benchmark fills
them (:meth:`WinnerCache.set_baseline`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from autoconv.cache.entries import CacheEntry, CacheKey, now_iso
from autoconv.cache.exchange import (
    ImportResult,
    check_export_target,
    entry_problem,
    read_export,
    rejection,
    same_measurement,
    write_export,
)
from autoconv.cache.location import default_location
from autoconv.cache.ownership import cache_file_problem
from autoconv.cache.schema import ALL_COLUMNS, KEY_COLUMNS, SCHEMA_VERSION, VALUE_COLUMNS, create_statements, entry_row
from autoconv.cache.sql import FORMAT, NoCache, SqlDatabase, SqliteFile, not_ours_advice
from autoconv.errors import CacheError
from autoconv.urls import is_url


class WinnerCache:
    """The winners' cache at ``location`` (created on first use): the path of an SQLite
    file, or a SQLAlchemy URL (:func:`~autoconv.urls.is_url`; see the module docstring). None:
    :func:`~autoconv.cache.location.default_location`. With ``create=False`` (a reader) nothing is created or
    written: where there is no cache yet, :class:`~autoconv.cache.sql.NoCache` is raised.

    Attributes:
        location: the file path, or the URL with its password masked (for messages).
        path: the file's :class:`~pathlib.Path`; None for a URL.

    Raises:
        CacheError: the file or database is not an autoconv cache, has a newer schema, or
            is corrupt; a URL that cannot be opened (driver, server, user). The message
            names the file or URL (password masked) and how to recover.
    """

    def __init__(self, location: str | os.PathLike | None = None, *, create: bool = True):
        location = default_location() if location is None else location
        self.create = create
        if is_url(location):
            self.path: Path | None = None
            self._database: SqliteFile | SqlDatabase = SqlDatabase(str(location), create=create)
        else:
            self.path = Path(location)
            self._database = SqliteFile(self.path, create=create)
        self.location = self._database.location
        try:
            self._prepare()
        except BaseException:
            self._database.close()
            raise

    # ---- opening and checking ------------------------------------------------------
    def _error(self, what: str) -> CacheError:
        return self._database.error(what)

    def _prepare(self) -> None:
        """Check what the database holds, then create the schema where there is none."""
        database = self._database
        tables = database.tables()
        ours = tables & {database.meta, database.winners} if database.shared else tables
        if ours:
            if database.meta not in ours or not ours <= {database.meta, database.winners}:
                raise database.foreign(f"{database.kind} of something else (tables {', '.join(sorted(ours))}), "
                                       "not an autoconv cache")
            self._check_format()
        elif not self.create:
            raise NoCache(f"no cache at {self.location}")
        database.ready()
        if not ours:
            self._initialise()

    def _initialise(self) -> None:
        """Create the schema (several processes may race to: each statement is
        idempotent, and the database serialises them), then check it as any other."""
        database = self._database
        insert = (f"INSERT INTO {database.meta} (name, value) VALUES (:name, :value) "
                  "ON CONFLICT (name) DO NOTHING")
        database.schema([*((statement, {}) for statement in create_statements(database)),
                         (insert, {"name": "format", "value": FORMAT}),
                         (insert, {"name": "schema_version", "value": str(SCHEMA_VERSION)})])
        self._check_format()

    def _check_format(self) -> None:
        """CacheError unless the database is an autoconv cache of this schema (reads only)."""
        database = self._database
        try:
            meta = {name: value for name, value in database.query(f"SELECT name, value FROM {database.meta}")}
        except CacheError:
            if database.shared:  # a table autoconv_meta of another shape: someone else's
                raise database.foreign(f"a table {database.meta} that is not autoconv's (no name/value "
                                       "columns), not an autoconv cache") from None
            raise
        if meta.get("format") != FORMAT:
            raise database.foreign(f"{database.kind} with format {meta.get('format')!r}, not an autoconv cache")
        version = str(meta.get("schema_version", ""))
        if not version.isdigit():
            raise self._error(f"schema version {version!r} is not a number")
        if int(version) > SCHEMA_VERSION:
            raise CacheError(f"cache {self.location} has schema version {version}, newer than this autoconv "
                             f"understands ({SCHEMA_VERSION}); upgrade autoconv, or use another cache "
                             "(--cache PATH or URL, or AUTOCONV_CACHE)")
        if int(version) < SCHEMA_VERSION:
            raise self._error(f"schema version {version} is older than this autoconv's ({SCHEMA_VERSION})")

    def close(self) -> None:
        self._database.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- reading -------------------------------------------------------------------
    def get(self, key: CacheKey) -> CacheEntry | None:
        """The entry for exactly ``key``, or None."""
        where = " AND ".join(f"{column} = :{column}" for column in KEY_COLUMNS)
        rows = self._database.query(f"SELECT {', '.join(ALL_COLUMNS)} FROM {self._database.winners} WHERE {where}",
                                    {column: getattr(key, column) for column in KEY_COLUMNS})
        return self._entry(rows[0]) if rows else None

    def entries(self) -> list[CacheEntry]:
        """Every entry, of any GPU or version, sorted by GPU then problem."""
        rows = self._database.query(f"SELECT {', '.join(ALL_COLUMNS)} FROM {self._database.winners} "
                                    "ORDER BY gpu_name, problem_key, dtype, measured_at")
        return [self._entry(row) for row in rows]

    def __iter__(self) -> Iterator[CacheEntry]:
        return iter(self.entries())

    def __len__(self) -> int:
        return int(self._database.query(f"SELECT COUNT(*) FROM {self._database.winners}")[0][0])

    def _entry(self, row: tuple) -> CacheEntry:
        values = dict(zip(ALL_COLUMNS, row))
        key = CacheKey(**{column: values.pop(column) for column in KEY_COLUMNS})
        try:
            values["config"] = json.loads(values["config"])
        except json.JSONDecodeError:
            raise self._error(f"the entry for {key.problem_key} has a malformed config") from None
        if not isinstance(values["config"], dict):
            raise self._error(f"the entry for {key.problem_key} has a config that is not a mapping")
        return CacheEntry(key=key, **values)

    # ---- writing -------------------------------------------------------------------
    def put(self, entry: CacheEntry, *, only_if_faster: bool = True) -> bool:
        """Store ``entry``. With ``only_if_faster`` an existing entry of the same key stays
        when it is at least as fast. Baseline columns of an existing entry are kept.
        Returns whether ``entry`` was stored."""
        row = entry_row(entry)
        winners = self._database.winners
        columns = KEY_COLUMNS + VALUE_COLUMNS
        update = ", ".join(f"{column} = excluded.{column}" for column in VALUE_COLUMNS)
        # The comparison runs inside the upsert, under the database's row lock: of
        # concurrent writers of one key, the fastest entry stays.
        condition = f" WHERE excluded.time_ms < {winners}.time_ms" if only_if_faster else ""
        sql = (f"INSERT INTO {winners} ({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)}) "
               f"ON CONFLICT ({', '.join(KEY_COLUMNS)}) DO UPDATE SET {update}{condition}")
        return self._database.write(sql, {column: row[column] for column in columns}) > 0

    def set_baseline(self, key: CacheKey, *, name: str, plan: str | None, time_ms: float,
                     tflops: float, measured_at: str | None = None) -> bool:
        """Record cuDNN's time for an existing entry; False when there is no entry for ``key``."""
        where = " AND ".join(f"{column} = :{column}" for column in KEY_COLUMNS)
        sql = (f"UPDATE {self._database.winners} SET baseline_name = :baseline_name, "
               "baseline_plan = :baseline_plan, baseline_time_ms = :baseline_time_ms, "
               f"baseline_tflops = :baseline_tflops, baseline_measured_at = :baseline_measured_at WHERE {where}")
        parameters = {"baseline_name": name, "baseline_plan": plan, "baseline_time_ms": float(time_ms),
                      "baseline_tflops": float(tflops), "baseline_measured_at": measured_at or now_iso(),
                      **{column: getattr(key, column) for column in KEY_COLUMNS}}
        return self._database.write(sql, parameters) > 0

    # ---- moving entries between machines -------------------------------------------
    def export(self, path: str | os.PathLike) -> int:
        """Write every entry to the JSON file ``path`` (replaced atomically); returns the count.

        Raises:
            CacheError: ``path`` cannot be written (no such folder, a folder, a device, not
                writable), or a file is there that is not an autoconv export (never
                overwritten)."""
        target = Path(path)
        check_export_target(target)
        entries = self.entries()
        write_export(target, entries)
        return len(entries)

    def import_file(self, path: str | os.PathLike) -> ImportResult:
        """Merge the entries of an export; per key the faster entry stays.

        Each entry is checked as if it had been tuned here (:func:`~autoconv.cache.exchange.entry_problem`: a known
        family, a config valid in its search space for the problem, the kernel this
        autoconv renders for it, plausible times); entries that fail are not imported and
        are listed in the result with the reason.

        Raises:
            CacheError: the file is missing or unreadable, not an export, or has an entry
                of the wrong structure (nothing is imported then).
        """
        entries = read_export(Path(path))
        result = ImportResult()
        for index, entry in enumerate(entries):
            reason = entry_problem(entry)
            if reason:
                result.rejected.append(rejection(index, entry, reason))
                continue
            existing = self.get(entry.key)
            if existing is not None and same_measurement(existing, entry):
                result.identical += 1
                continue
            if self.put(entry):
                result.stored += 1
                if entry.baseline_time_ms is not None and entry.baseline_name is not None:
                    self.set_baseline(entry.key, name=entry.baseline_name, plan=entry.baseline_plan,
                                      time_ms=entry.baseline_time_ms, tflops=entry.baseline_tflops or 0.0,
                                      measured_at=entry.baseline_measured_at)
            else:
                result.kept += 1
        return result

    @staticmethod
    def clear(location: str | os.PathLike | None = None) -> bool:
        """Delete the cache, readable or not: a file with its WAL and shared-memory files;
        in a URL database, the tables ``autoconv_meta`` and ``autoconv_winners`` (never
        another table). Returns whether there was a cache.

        Only what autoconv created goes (:func:`~autoconv.cache.ownership.cache_file_problem`):
        a file or tables that are not an autoconv cache raise :class:`CacheError` with the
        reason, and stay."""
        target = default_location() if location is None else location
        if is_url(target):
            try:
                return SqlDatabase.drop(str(target))
            except NoCache:
                return False
        target = Path(target)
        if not (target.exists() or target.is_symlink()):
            return False
        problem = cache_file_problem(target)
        if problem:
            raise CacheError(f"cache {target}: {problem}, so `autoconv cache clear` does not delete it; "
                             f"{not_ours_advice(target)}")
        for candidate in (target, target.with_name(target.name + "-wal"),
                          target.with_name(target.name + "-shm")):
            try:
                candidate.unlink()
            except FileNotFoundError:
                pass
            except OSError as err:
                raise CacheError(f"cache {target}: cannot delete {candidate} ({err.strerror or err})") from None
        return True
