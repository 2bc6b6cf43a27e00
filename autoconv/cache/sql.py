"""The two places the winners' cache lives, behind one small interface: an SQLite file
(:class:`SqliteFile`, stdlib :mod:`sqlite3`) and a database given by a SQLAlchemy URL
(:class:`SqlDatabase`). :class:`~autoconv.cache.winners.WinnerCache` runs the same SQL
through either (named ``:column`` parameters); only opening, transactions, locking and
the wording of errors differ, and they live here.

Both have ``meta`` and ``winners`` (table names), ``integer`` and ``real`` (column
types), ``kind`` and ``shared`` (whether other tables are expected), ``location`` (for
messages; a URL's password masked), and ``tables()``, ``ready()``, ``query()``,
``write()``, ``schema()``, ``error()``, ``foreign()``, ``recovery()`` and ``close()``.

Opened with ``create=False`` (readers: ``autoconv show``, ``cache export``), neither
creates anything: a missing file (or a SQLite URL's missing file) raises
:class:`NoCache`.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from autoconv.errors import CacheError, first_line
from autoconv.files import path_problem, space_problem
from autoconv.urls import masked_url

#: Seconds a writer waits for another process's transaction before giving up.
BUSY_TIMEOUT_S = 60.0

SQLITE_MAGIC = b"SQLite format 3\x00"

#: What SQLite says when a write found no room (a full disk or a file-size limit: it reports the
#: latter as an I/O error).
ROOM_MESSAGES = ("disk I/O error", "database or disk is full")

#: The format name in the ``meta`` table: what makes a file or tables autoconv's.
FORMAT = "autoconv-winners-cache"

#: A statement and its named parameters (``:name`` placeholders, as both sqlite3 and
#: SQLAlchemy's ``text()`` take them).
Statement = tuple[str, Mapping[str, Any]]


def lock_conflict(message: str) -> bool:
    """Whether an SQLite error message says another connection holds the lock."""
    return "locked" in message or "busy" in message


class NoCache(CacheError):
    """There is no winners' cache at the location, and the reader asked not to create one."""


def not_ours_advice(location) -> str:
    """The way out when ``location`` holds something autoconv did not create (autoconv will
    neither write into it nor delete it)."""
    return (f"autoconv leaves {location} alone: pass another cache (--cache PATH or URL, `cache:` in the "
            "config, or AUTOCONV_CACHE), or move it away yourself if it is yours to move")


def still_locked(location) -> CacheError:
    return CacheError(f"cache {location}: still locked by another process after {BUSY_TIMEOUT_S:.0f} s; try again")


class SqliteFile:
    """The cache as a whole SQLite file, through stdlib :mod:`sqlite3`: WAL mode, a busy
    timeout, every write one ``BEGIN IMMEDIATE`` transaction. Opening checks the header
    and runs ``PRAGMA quick_check``, so a damaged file is refused before anything else."""

    meta, winners = "meta", "winners"
    integer, real = "INTEGER", "REAL"
    kind = "an SQLite database"
    shared = False  # every table in the file is the cache's

    def __init__(self, path: Path, *, create: bool = True):
        self.path = path
        self.location = str(path)
        self.create = create
        self.connection = self._connect()

    def recovery(self) -> str:
        return (f"delete {self.path} (with any {self.path.name}-wal and -shm beside it) or run "
                f"`autoconv cache clear --cache {self.path}`, then tune again (or `autoconv cache "
                f"import` an export)")

    def error(self, what: str) -> CacheError:
        return CacheError(f"cache {self.path}: {what}; {self.recovery()}")

    def _failure(self, what: str, err: sqlite3.Error) -> CacheError:
        """The error of ``err`` while ``what`` ("cannot write"...): where SQLite found no room (a
        full disk, ``ulimit -f``: it says "disk I/O error" or "database or disk is full"), how to
        make room, not the recovery of a damaged file."""
        room = space_problem(self.path) if str(err) in ROOM_MESSAGES else None
        if room:
            return CacheError(f"cache {self.path}: {what} ({err}): {room}, then run again; the entries it "
                              "held stay")
        return self.error(f"{what} ({err})")

    def foreign(self, what: str) -> CacheError:
        """The error of a file that is not an autoconv cache (never written, never deleted)."""
        return CacheError(f"cache {self.path}: {what}; {not_ours_advice(self.path)}")

    def _connect(self) -> sqlite3.Connection:
        if self.path.exists() or self.path.is_symlink():
            problem = path_problem(self.path)
            if problem:
                raise CacheError(f"cache {self.path}: {problem}; pass the path of a cache file")
            try:
                with open(self.path, "rb") as handle:
                    head = handle.read(len(SQLITE_MAGIC))
            except OSError as err:  # e.g. /proc/self/mem: a "regular" file whose reads fail
                raise CacheError(f"cache {self.path}: cannot be read ({err.strerror or err}); pass the path of a "
                                 "cache file") from None
            if head and head != SQLITE_MAGIC:
                raise self.foreign("not an SQLite database (it does not start with the SQLite header), "
                                   "so not an autoconv cache")
        elif not self.create:
            raise NoCache(f"no cache at {self.path}")
        else:
            parent = self.path.parent
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise CacheError(f"cache {self.path}: cannot create its folder {parent} "
                                 f"({err.strerror or err})") from None
        try:
            connection = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as err:
            raise CacheError(f"cache {self.path}: cannot open: {err}") from None
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            check = connection.execute("PRAGMA quick_check").fetchone()
        except sqlite3.DatabaseError as err:
            connection.close()
            raise self._failure("the database is unreadable", err) from None
        if check is None or check[0] != "ok":
            connection.close()
            raise self.error(f"the database is corrupt ({check[0] if check else 'no answer'})")
        return connection

    def tables(self) -> set[str]:
        return {row[0] for row in self.query("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def ready(self) -> None:
        """Switch to WAL: a write, so only once the file is known to be a cache (or empty).

        Processes that switch a new file at once each hold a shared lock and ask for the
        exclusive one; SQLite ends that deadlock by failing all but one at once, without
        waiting out the busy timeout. The failed ones try again (the file is in WAL mode by
        then, and the switch is a no-op) until the busy timeout has passed."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                self.connection.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as err:
                if not lock_conflict(str(err)):
                    raise self._failure("the database is unreadable", err) from None
                if time.monotonic() > deadline:
                    raise still_locked(self.path) from None
                time.sleep(random.uniform(0.005, 0.05))  # staggered, so the racers do not meet again
            except sqlite3.DatabaseError as err:
                raise self._failure("the database is unreadable", err) from None

    def query(self, sql: str, parameters: Mapping[str, Any] | None = None) -> list[tuple]:
        try:
            return self.connection.execute(sql, parameters or {}).fetchall()
        except sqlite3.DatabaseError as err:
            raise self._failure("the database is unreadable", err) from None

    def write(self, sql: str, parameters: Mapping[str, Any]) -> int:
        """Run one statement in its own transaction; the rows it changed."""
        return self._transaction([(sql, parameters)])

    def schema(self, statements: Sequence[Statement]) -> None:
        """Run schema statements in one transaction (``BEGIN IMMEDIATE`` serialises the
        processes that race to create a new file's tables)."""
        self._transaction(statements)

    def _transaction(self, statements: Sequence[Statement]) -> int:
        connection = self.connection
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                changed = 0
                for sql, parameters in statements:
                    changed = connection.execute(sql, parameters).rowcount
                connection.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):  # (SQLite may have rolled back already)
                    connection.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as err:
            if lock_conflict(str(err)):
                raise still_locked(self.path) from None
            raise self._failure("cannot write", err) from None
        except sqlite3.DatabaseError as err:
            raise self._failure("cannot write", err) from None
        return changed

    def close(self) -> None:
        self.connection.close()


class SqlDatabase:
    """The cache as two tables in a database given by a SQLAlchemy URL, shared with other
    tables (Optuna's studies) and with every host that names the same URL.

    Writes are single transactions of the engine; the upsert's ``WHERE`` runs in the
    database, so concurrent writers of one key leave the fastest entry. Creating and
    dropping the tables is one transaction, serialised with other processes': on
    PostgreSQL by a transaction-level advisory lock (concurrent ``CREATE TABLE IF NOT
    EXISTS`` can fail there), on SQLite by ``BEGIN IMMEDIATE`` (the driver's own
    transactions would commit each ``CREATE`` alone, and a reader could see the tables
    without their format rows); elsewhere it is retried once when the loser of a race
    sees "already exists".
    """

    meta, winners = "autoconv_meta", "autoconv_winners"
    integer, real = "BIGINT", "DOUBLE PRECISION"
    kind = "a database (table autoconv_meta)"
    shared = True  # other tables are expected
    #: pg_advisory_xact_lock key of autoconv's schema changes ("autoconv" in ASCII).
    SCHEMA_LOCK = 0x6175746F636F6E76

    def __init__(self, url: str, *, create: bool = True):
        self.location = masked_url(url)
        self.create = create
        self.engine = self._connect(url)
        self.dialect = self.engine.dialect.name

    def recovery(self) -> str:
        return (f"run `autoconv cache clear --cache {self.location}` (it drops the tables {self.meta} "
                f"and {self.winners}, nothing else), then tune again (or `autoconv cache import` an export)")

    def error(self, what: str) -> CacheError:
        return CacheError(f"cache {self.location}: {what}; {self.recovery()}")

    def foreign(self, what: str) -> CacheError:
        """The error of tables autoconv did not create (never written, never dropped)."""
        return CacheError(f"cache {self.location}: {what}; {not_ours_advice(self.location)}")

    def _connect(self, url: str):
        from sqlalchemy import create_engine
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import NoSuchModuleError

        engine = None
        try:
            parsed = make_url(url)
            options: dict[str, Any] = {}
            if parsed.get_backend_name() == "sqlite":
                database = parsed.database or ""
                if database and database != ":memory:" and not database.startswith("file:"):
                    file = Path(database).expanduser()
                    if not self.create and not file.exists():
                        raise NoCache(f"no cache at {self.location}")
                    if file.exists() and path_problem(file):
                        raise CacheError(f"cache {self.location}: {file} {path_problem(file)}")
                    file.parent.mkdir(parents=True, exist_ok=True)
                # The driver begins no transactions itself (isolation_level None): writes
                # begin theirs explicitly (see _begin), reads run alone.
                options["connect_args"] = {"timeout": BUSY_TIMEOUT_S, "isolation_level": None}
            else:
                options["pool_pre_ping"] = True  # a long tune outlives idle server connections
            engine = create_engine(parsed, **options)
            with engine.connect():
                pass
        except CacheError:
            raise
        except Exception as err:  # SQLAlchemy's and the drivers' errors alike: name the URL
            if engine is not None:
                engine.dispose()
            if isinstance(err, NoSuchModuleError):
                hint = ("check the database and driver names in the URL (e.g. postgresql+psycopg://user@host:5432/db, "
                        "sqlite:////abs/path.db)")
            elif isinstance(err, ImportError):
                hint = ("install its database driver (PostgreSQL: `pip install 'autoconv[postgres]'` and a "
                        "postgresql+psycopg:// URL)")
            else:
                hint = "check the URL (and that the database server runs and accepts this user)"
            raise CacheError(f"cache {self.location}: cannot open it ({first_line(err)}); {hint}, or pass "
                             "another cache with --cache, `cache:` in the config or AUTOCONV_CACHE") from None
        return engine

    def tables(self) -> set[str]:
        from sqlalchemy import inspect
        from sqlalchemy.exc import SQLAlchemyError

        try:
            return set(inspect(self.engine).get_table_names())
        except SQLAlchemyError as err:
            raise self._failure(err, "listing its tables") from None

    def ready(self) -> None:
        """Nothing to switch: the server runs the transactions."""

    def query(self, sql: str, parameters: Mapping[str, Any] | None = None) -> list[tuple]:
        from sqlalchemy import text
        from sqlalchemy.exc import SQLAlchemyError

        try:
            with self.engine.connect() as connection:
                return [tuple(row) for row in connection.execute(text(sql), dict(parameters or {}))]
        except SQLAlchemyError as err:
            raise self._failure(err, "reading") from None

    def write(self, sql: str, parameters: Mapping[str, Any]) -> int:
        """Run one statement in its own transaction; the rows it changed."""
        from sqlalchemy import text
        from sqlalchemy.exc import SQLAlchemyError

        try:
            with self.engine.begin() as connection:
                self._begin(connection, schema=False)
                return connection.execute(text(sql), dict(parameters)).rowcount
        except SQLAlchemyError as err:
            raise self._failure(err, "writing") from None

    def schema(self, statements: Sequence[Statement]) -> None:
        """Run schema statements in one transaction, serialised with other processes
        doing the same (see the class docstring)."""
        from sqlalchemy import text
        from sqlalchemy.exc import SQLAlchemyError

        for attempt in range(2):
            try:
                with self.engine.begin() as connection:
                    self._begin(connection, schema=True)
                    for sql, parameters in statements:
                        connection.execute(text(sql), dict(parameters))
                return
            except SQLAlchemyError as err:
                racing = any(word in str(err).lower() for word in ("already exists", "duplicate", "unique"))
                if not (racing and attempt == 0):
                    raise self._failure(err, "creating its tables") from None
                time.sleep(0.1 + random.random() / 2)

    def _begin(self, connection, *, schema: bool) -> None:
        """Start a write transaction the way this database needs (see the class docstring)."""
        from sqlalchemy import text

        if self.dialect == "sqlite":  # wait for other writers now, not midway (no deadlock)
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        elif self.dialect == "postgresql" and schema:
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": self.SCHEMA_LOCK})

    def _failure(self, err: Exception, doing: str) -> CacheError:
        """The error of a failed statement: the server (or the way to it) when the
        connection is lost or refused, else the tables (damaged or foreign)."""
        from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError

        reason = first_line(err)
        if self.dialect == "sqlite" and lock_conflict(reason):
            return still_locked(self.location)
        lost = isinstance(err, (InterfaceError, DisconnectionError)) or getattr(err, "connection_invalidated", False) \
            or (isinstance(err, OperationalError) and self.dialect != "sqlite")
        if lost:
            return CacheError(f"cache {self.location}: {doing} failed ({reason}); check that the database "
                              "server runs and accepts this user, then try again")
        return self.error(f"{doing} failed ({reason})")

    def close(self) -> None:
        self.engine.dispose()

    def owner_problem(self) -> str | None:
        """Why the tables ``autoconv_meta``/``autoconv_winners`` here are not autoconv's
        (their ``autoconv_meta`` lacks autoconv's format row), or None: they are (of any
        schema version), or there are none."""
        ours = self.tables() & {self.meta, self.winners}
        if not ours:
            return None
        if self.meta not in ours:
            return f"a table {self.winners} without {self.meta}: not autoconv's"
        try:
            rows = self.query(f"SELECT value FROM {self.meta} WHERE name = 'format'")
        except CacheError:
            return f"a table {self.meta} that is not autoconv's (it has no name/value columns)"
        fmt = rows[0][0] if rows else None
        if fmt != FORMAT:
            return f"a table {self.meta} with format {fmt!r}, not autoconv's"
        return None

    @classmethod
    def drop(cls, url: str) -> bool:
        """Drop autoconv's tables at ``url`` (never another table); whether there were any.

        Raises:
            CacheError: tables of those names are there but were not made by autoconv
                (nothing is dropped).
        """
        database = cls(url, create=False)
        try:
            problem = database.owner_problem()
            if problem:
                raise database.foreign(f"{problem}, so `autoconv cache clear` does not drop it")
            ours = database.tables() & {cls.meta, cls.winners}
            if ours:
                database.schema([(f"DROP TABLE IF EXISTS {cls.winners}", {}),
                                 (f"DROP TABLE IF EXISTS {cls.meta}", {})])
        finally:
            database.close()
        return bool(ours)
