"""The cache of tuned winners: which kernel to run for a problem on a GPU.

One SQLite database (stdlib :mod:`sqlite3`) in WAL mode with a busy timeout, so several
``autoconv tune`` processes and any number of readers can use it at once; every write is
one ``BEGIN IMMEDIATE`` transaction, so a killed writer leaves the previous state.

An entry is keyed by everything that changes the answer (:class:`CacheKey`): the GPU's
name and compute capability, the CUDA runtime and driver versions, autoconv's version,
a hash of the kernel templates, search spaces and launch code (:func:`templates_hash`),
the problem and its dtype. A lookup matches all of them, so an entry measured on another
GPU or with other templates is never used. When two measurements of one key meet (two
tuners, an import), the faster one stays.

Values are JSON and numbers, never pickles. The file carries its format name and schema
version in a ``meta`` table; a file that is not such a database, a newer schema, or a
corrupt or truncated file raises :class:`~autoconv.errors.CacheError` naming the file
and the way out (``autoconv cache clear``, or deleting the file), never a wrong kernel.

Columns ``baseline_*`` hold cuDNN's time and plan for the same key; the benchmark fills
them (:meth:`WinnerCache.set_baseline`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import sqlite3
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Mapping

from autoconv.errors import CacheError

FORMAT = "autoconv-winners-cache"
EXPORT_FORMAT = "autoconv-winners-export"
SCHEMA_VERSION = 1
#: Seconds a writer waits for another process's transaction before giving up.
BUSY_TIMEOUT_S = 60.0

_SQLITE_MAGIC = b"SQLite format 3\x00"


def default_path() -> Path:
    """``$AUTOCONV_CACHE``, else ``$XDG_CACHE_HOME/autoconv/winners.sqlite3`` (``~/.cache``)."""
    configured = os.environ.get("AUTOCONV_CACHE")
    if configured:
        return Path(configured).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "autoconv" / "winners.sqlite3"


@lru_cache(maxsize=1)
def templates_hash() -> str:
    """A hash of everything that decides what a (family, config) compiles to and how it
    launches: the templates, the search spaces and the families' launch code."""
    from autoconv.resources import search_spaces_dir, templates_dir

    families_dir = Path(__file__).resolve().parent / "families"
    files = sorted([*templates_dir().glob("*.j2"), *templates_dir().glob("*.cuh"),
                    *search_spaces_dir().glob("*.yaml"), *families_dir.glob("*.py")],
                   key=lambda p: (p.parent.name, p.name))
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.parent.name}/{path.name}\0".encode())
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class CacheKey:
    gpu_name: str
    compute_capability: str   # "9.0"
    cuda_runtime: int
    cuda_driver: int
    autoconv_version: str
    templates_hash: str
    problem_key: str          # ConvProblem.key(): parses back with parse_spec
    dtype: str

    @classmethod
    def for_problem(cls, identity, problem) -> "CacheKey":
        """The key of ``problem`` on the device ``identity`` (a BackendIdentity) with this
        installation's autoconv and templates."""
        from autoconv import __version__
        return cls(gpu_name=identity.gpu_name, compute_capability=identity.compute_capability_str,
                   cuda_runtime=int(identity.cuda_runtime), cuda_driver=int(identity.cuda_driver),
                   autoconv_version=__version__, templates_hash=templates_hash(),
                   problem_key=problem.key(), dtype=problem.dtype)

    @property
    def is_current(self) -> bool:
        """Made by this autoconv version with these templates (the GPU is not checked)."""
        from autoconv import __version__
        return self.autoconv_version == __version__ and self.templates_hash == templates_hash()


@dataclass(frozen=True)
class CacheEntry:
    key: CacheKey
    family: str
    config: Mapping[str, Any]
    kernel_name: str
    source_hash: str
    time_ms: float
    tflops: float
    workspace_bytes: int
    measured_at: str = field(default_factory=lambda: now_iso())
    trials: int = 0              # candidates evaluated to find it
    study_name: str = ""
    baseline_name: str | None = None
    baseline_plan: str | None = None   # JSON, as the benchmark writes it
    baseline_time_ms: float | None = None
    baseline_tflops: float | None = None
    baseline_measured_at: str | None = None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["config"] = dict(self.config)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "CacheEntry":
        values = dict(data)
        values["key"] = CacheKey(**values["key"])
        return cls(**values)


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


_KEY_COLUMNS = tuple(f.name for f in fields(CacheKey))
_VALUE_COLUMNS = ("family", "config", "kernel_name", "source_hash", "time_ms", "tflops",
                  "workspace_bytes", "measured_at", "trials", "study_name")
_BASELINE_COLUMNS = ("baseline_name", "baseline_plan", "baseline_time_ms", "baseline_tflops",
                     "baseline_measured_at")
_ALL_COLUMNS = _KEY_COLUMNS + _VALUE_COLUMNS + _BASELINE_COLUMNS

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS winners (
    gpu_name TEXT NOT NULL,
    compute_capability TEXT NOT NULL,
    cuda_runtime INTEGER NOT NULL,
    cuda_driver INTEGER NOT NULL,
    autoconv_version TEXT NOT NULL,
    templates_hash TEXT NOT NULL,
    problem_key TEXT NOT NULL,
    dtype TEXT NOT NULL,
    family TEXT NOT NULL,
    config TEXT NOT NULL,
    kernel_name TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    time_ms REAL NOT NULL,
    tflops REAL NOT NULL,
    workspace_bytes INTEGER NOT NULL,
    measured_at TEXT NOT NULL,
    trials INTEGER NOT NULL,
    study_name TEXT NOT NULL,
    baseline_name TEXT,
    baseline_plan TEXT,
    baseline_time_ms REAL,
    baseline_tflops REAL,
    baseline_measured_at TEXT,
    PRIMARY KEY ({", ".join(_KEY_COLUMNS)})
);
"""


class WinnerCache:
    """The winners' cache in the SQLite file ``path`` (created on first use).

    Raises:
        CacheError: the file is not an autoconv cache, has a newer schema, or is corrupt;
            the message names the file and how to recover.
    """

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path is not None else default_path()
        self._connection = self._open()

    # ---- opening and checking ------------------------------------------------------
    def _recovery(self) -> str:
        return (f"delete {self.path} (with any {self.path.name}-wal and -shm beside it) or run "
                f"`autoconv cache clear --cache {self.path}`, then tune again (or `autoconv cache "
                f"import` an export)")

    def _error(self, what: str) -> CacheError:
        return CacheError(f"cache {self.path}: {what}; {self._recovery()}")

    def _open(self) -> sqlite3.Connection:
        if self.path.exists():
            if self.path.is_dir():
                raise CacheError(f"cache {self.path} is a directory; pass the path of a cache file")
            with open(self.path, "rb") as handle:
                head = handle.read(len(_SQLITE_MAGIC))
            if head and head != _SQLITE_MAGIC:
                raise self._error("not an SQLite database (it does not start with the SQLite header)")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            connection = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as err:
            raise CacheError(f"cache {self.path}: cannot open: {err}") from None
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            check = connection.execute("PRAGMA quick_check").fetchone()
            if check is None or check[0] != "ok":
                raise self._error(f"the database is corrupt ({check[0] if check else 'no answer'})")
            # Check what the file is before switching it to WAL (a write): a foreign
            # database is left exactly as it was.
            tables = self._tables(connection)
            if tables:
                self._check_format(connection, tables)
            connection.execute("PRAGMA journal_mode = WAL")
            if not tables:
                self._initialise(connection)
        except sqlite3.DatabaseError as err:
            connection.close()
            raise self._error(f"the database is unreadable ({err})") from None
        except CacheError:
            connection.close()
            raise
        return connection

    @staticmethod
    def _tables(connection: sqlite3.Connection) -> set[str]:
        return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _initialise(self, connection: sqlite3.Connection) -> None:
        """Create the schema in a new file (several processes may race to: each statement
        is idempotent), then check it as any other file."""
        connection.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    connection.execute(statement)
            connection.execute("INSERT OR IGNORE INTO meta VALUES ('format', ?)", (FORMAT,))
            connection.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                               (str(SCHEMA_VERSION),))
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        self._check_format(connection, self._tables(connection))

    def _check_format(self, connection: sqlite3.Connection, tables: set[str]) -> None:
        """CacheError unless the database is an autoconv cache of this schema (reads only)."""
        if "meta" not in tables:
            raise self._error(f"an SQLite database of something else (tables {', '.join(sorted(tables))}), "
                              "not an autoconv cache")
        meta = dict(connection.execute("SELECT name, value FROM meta").fetchall())
        if meta.get("format") != FORMAT:
            raise self._error(f"an SQLite database with format {meta.get('format')!r}, not an autoconv cache")
        version = meta.get("schema_version", "")
        if not version.isdigit():
            raise self._error(f"schema version {version!r} is not a number")
        if int(version) > SCHEMA_VERSION:
            raise CacheError(f"cache {self.path} has schema version {version}, newer than this autoconv "
                             f"understands ({SCHEMA_VERSION}); upgrade autoconv, or use another cache "
                             "file (--cache PATH or AUTOCONV_CACHE)")
        if int(version) < SCHEMA_VERSION:
            raise self._error(f"schema version {version} is older than this autoconv's ({SCHEMA_VERSION})")

    def close(self) -> None:
        self._connection.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- reading -------------------------------------------------------------------
    def _query(self, sql: str, parameters: tuple = ()) -> list[tuple]:
        try:
            return self._connection.execute(sql, parameters).fetchall()
        except sqlite3.DatabaseError as err:
            raise self._error(f"the database is unreadable ({err})") from None

    def get(self, key: CacheKey) -> CacheEntry | None:
        """The entry for exactly ``key``, or None."""
        where = " AND ".join(f"{column} = ?" for column in _KEY_COLUMNS)
        rows = self._query(f"SELECT {', '.join(_ALL_COLUMNS)} FROM winners WHERE {where}",
                           tuple(getattr(key, column) for column in _KEY_COLUMNS))
        return self._entry(rows[0]) if rows else None

    def entries(self) -> list[CacheEntry]:
        """Every entry, of any GPU or version, sorted by GPU then problem."""
        rows = self._query(f"SELECT {', '.join(_ALL_COLUMNS)} FROM winners "
                           "ORDER BY gpu_name, problem_key, dtype, measured_at")
        return [self._entry(row) for row in rows]

    def __iter__(self) -> Iterator[CacheEntry]:
        return iter(self.entries())

    def __len__(self) -> int:
        return int(self._query("SELECT COUNT(*) FROM winners")[0][0])

    def _entry(self, row: tuple) -> CacheEntry:
        values = dict(zip(_ALL_COLUMNS, row))
        key = CacheKey(**{column: values.pop(column) for column in _KEY_COLUMNS})
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
        row = _row(entry)
        columns = _KEY_COLUMNS + _VALUE_COLUMNS
        update = ", ".join(f"{column} = excluded.{column}" for column in _VALUE_COLUMNS)
        condition = " WHERE excluded.time_ms < winners.time_ms" if only_if_faster else ""
        sql = (f"INSERT INTO winners ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
               f"ON CONFLICT ({', '.join(_KEY_COLUMNS)}) DO UPDATE SET {update}{condition}")
        return self._write(lambda c: c.execute(sql, tuple(row[column] for column in columns)).rowcount > 0)

    def set_baseline(self, key: CacheKey, *, name: str, plan: str | None, time_ms: float,
                     tflops: float, measured_at: str | None = None) -> bool:
        """Record cuDNN's time for an existing entry; False when there is no entry for ``key``."""
        where = " AND ".join(f"{column} = ?" for column in _KEY_COLUMNS)
        sql = (f"UPDATE winners SET baseline_name = ?, baseline_plan = ?, baseline_time_ms = ?, "
               f"baseline_tflops = ?, baseline_measured_at = ? WHERE {where}")
        parameters = (name, plan, float(time_ms), float(tflops), measured_at or now_iso(),
                      *(getattr(key, column) for column in _KEY_COLUMNS))
        return self._write(lambda c: c.execute(sql, parameters).rowcount > 0)

    def _write(self, action) -> Any:
        connection = self._connection
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                result = action(connection)
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as err:
            if "locked" in str(err) or "busy" in str(err):
                raise CacheError(f"cache {self.path}: still locked by another process after "
                                 f"{BUSY_TIMEOUT_S:.0f} s; try again") from None
            raise self._error(f"cannot write ({err})") from None
        except sqlite3.DatabaseError as err:
            raise self._error(f"cannot write ({err})") from None
        return result

    # ---- moving entries between machines -------------------------------------------
    def export(self, path: str | os.PathLike) -> int:
        """Write every entry to the JSON file ``path`` (replaced atomically); returns the count."""
        entries = self.entries()
        document = {"format": EXPORT_FORMAT, "schema_version": SCHEMA_VERSION, "exported_at": now_iso(),
                    "entries": [entry.as_dict() for entry in entries]}
        from autoconv.files import write_atomically

        write_atomically(path, json.dumps(document, indent=1, sort_keys=True) + "\n")
        return len(entries)

    def import_file(self, path: str | os.PathLike) -> tuple[int, int]:
        """Merge the entries of an export; per key the faster entry stays.

        Returns:
            (stored, kept): entries taken from the file, and entries of the file not taken
            because the cache already had one at least as fast.

        Raises:
            CacheError: the file is missing, not an export, or has a malformed entry
                (nothing is imported then).
        """
        source = Path(path)
        try:
            document = json.loads(source.read_text())
        except FileNotFoundError:
            raise CacheError(f"{source}: no such file") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise CacheError(f"{source}: not an autoconv cache export (invalid JSON: {err})") from None
        if not isinstance(document, dict) or document.get("format") != EXPORT_FORMAT:
            raise CacheError(f"{source}: not an autoconv cache export (expected \"format\": \"{EXPORT_FORMAT}\"; "
                             "make one with `autoconv cache export FILE`)")
        if document.get("schema_version") != SCHEMA_VERSION:
            raise CacheError(f"{source}: export schema version {document.get('schema_version')!r}; this "
                             f"autoconv reads version {SCHEMA_VERSION}")
        raw_entries = document.get("entries")
        if not isinstance(raw_entries, list):
            raise CacheError(f"{source}: \"entries\" must be a list")
        entries = []
        for index, raw in enumerate(raw_entries):
            try:
                entry = CacheEntry.from_dict(raw)
                _row(entry)  # type and value checks
            except (TypeError, KeyError, ValueError) as err:
                raise CacheError(f"{source}: entries[{index}] is malformed: {err}") from None
            entries.append(entry)
        stored = 0
        for entry in entries:
            if self.put(entry):
                stored += 1
                if entry.baseline_time_ms is not None and entry.baseline_name is not None:
                    self.set_baseline(entry.key, name=entry.baseline_name, plan=entry.baseline_plan,
                                      time_ms=entry.baseline_time_ms, tflops=entry.baseline_tflops or 0.0,
                                      measured_at=entry.baseline_measured_at)
        return stored, len(entries) - stored

    @staticmethod
    def clear(path: str | os.PathLike | None = None) -> bool:
        """Delete the cache file (with its WAL and shared-memory files), readable or not.
        Returns whether there was a file."""
        target = Path(path) if path is not None else default_path()
        existed = target.exists()
        for candidate in (target, target.with_name(target.name + "-wal"),
                          target.with_name(target.name + "-shm")):
            try:
                candidate.unlink()
            except FileNotFoundError:
                pass
        return existed


def _row(entry: CacheEntry) -> dict[str, Any]:
    """The column values of ``entry``, checked (ValueError/TypeError when malformed)."""
    row: dict[str, Any] = {}
    for column in _KEY_COLUMNS:
        value = getattr(entry.key, column)
        expected = int if column in ("cuda_runtime", "cuda_driver") else str
        if isinstance(value, bool) or not isinstance(value, expected):
            raise TypeError(f"key.{column} must be {expected.__name__}, got {value!r}")
        row[column] = value
    if not isinstance(entry.config, Mapping):
        raise TypeError(f"config must be a mapping, got {entry.config!r}")
    row["config"] = json.dumps(dict(entry.config), sort_keys=True)
    for column in ("family", "kernel_name", "source_hash", "measured_at", "study_name"):
        value = getattr(entry, column)
        if not isinstance(value, str):
            raise TypeError(f"{column} must be a string, got {value!r}")
        row[column] = value
    for column in ("time_ms", "tflops"):
        value = getattr(entry, column)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"{column} must be a positive number, got {value!r}")
        row[column] = float(value)
    for column in ("workspace_bytes", "trials"):
        value = getattr(entry, column)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{column} must be an integer >= 0, got {value!r}")
        row[column] = value
    for column in _BASELINE_COLUMNS:
        row[column] = getattr(entry, column)
    return row
