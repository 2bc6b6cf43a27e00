"""The cache of tuned winners: which kernel to run for a problem on a GPU.

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

An entry is keyed by everything that changes the answer (:class:`CacheKey`): the GPU's
name and compute capability, the CUDA runtime and driver versions, autoconv's version,
a hash of the kernel templates, search spaces and launch code
(:func:`~autoconv.kernels.fingerprint.templates_hash`),
the problem and its dtype. A lookup matches all of them, so an entry measured on another
GPU or with other templates is never used. When two measurements of one key meet (two
tuners, two hosts, an import), the faster one stays, decided by the database in the
upsert itself, so concurrent writers never lose the faster entry.

Values are JSON and numbers, never pickles. The cache carries its format name and schema
version in a ``meta`` table (``autoconv_meta`` in a URL database); a newer schema, or a
corrupt or truncated cache raises :class:`~autoconv.errors.CacheError` naming the file
(or the URL, password masked) and the way out (``autoconv cache clear``, or deleting the
file), never a wrong kernel. A file or tables that are not an autoconv cache raise one
that asks for another cache: autoconv never writes into them, and :meth:`WinnerCache.clear`
refuses to delete them (:func:`cache_file_problem`, ``SqlDatabase.owner_problem``).

``cache import`` takes only entries autoconv could have tuned (:func:`entry_problem`).

Columns ``baseline_*`` hold cuDNN's time and plan for the same key; the benchmark fills
them (:meth:`WinnerCache.set_baseline`).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from autoconv._version import __version__
from autoconv.cache.sql import FORMAT, SQLITE_MAGIC, NoCache, SqlDatabase, SqliteFile, not_ours_advice
from autoconv.errors import CacheError
from autoconv.files import path_problem, user_cache_dir, write_atomically, write_problem
from autoconv.kernels.fingerprint import templates_hash
from autoconv.urls import is_url

EXPORT_FORMAT = "autoconv-winners-export"
SCHEMA_VERSION = 1


def default_path() -> Path:
    """``$AUTOCONV_CACHE``, else ``$XDG_CACHE_HOME/autoconv/winners.sqlite3`` (``~/.cache``):
    the cache file. Where ``$AUTOCONV_CACHE`` may be a URL, use :func:`default_location`."""
    configured = os.environ.get("AUTOCONV_CACHE")
    if configured:
        return Path(configured).expanduser()
    return user_cache_dir() / "winners.sqlite3"


def default_location() -> str | Path:
    """Where the cache is when none is given: ``$AUTOCONV_CACHE`` as is when it is a
    SQLAlchemy URL (:func:`is_url`), else :func:`default_path`."""
    configured = os.environ.get("AUTOCONV_CACHE", "")
    return configured if is_url(configured) else default_path()


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
    def for_problem(cls, identity, problem) -> CacheKey:
        """The key of ``problem`` on the device ``identity`` (a BackendIdentity) with this
        installation's autoconv and templates."""
        return cls(gpu_name=identity.gpu_name, compute_capability=identity.compute_capability_str,
                   cuda_runtime=int(identity.cuda_runtime), cuda_driver=int(identity.cuda_driver),
                   autoconv_version=__version__, templates_hash=templates_hash(),
                   problem_key=problem.key(), dtype=problem.dtype)

    @property
    def is_current(self) -> bool:
        """Made by this autoconv version with these templates (the GPU is not checked)."""
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
    def from_dict(cls, data: Mapping[str, Any]) -> CacheEntry:
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

# The schema of both kinds. Table names and column types are filled in per kind: a URL
# database is shared (Optuna's tables, maybe others), so its tables carry a prefix, and
# PostgreSQL's REAL and INTEGER are 4 bytes (times need doubles, workspaces > 2 GiB).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS {meta} (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS {winners} (
    gpu_name TEXT NOT NULL,
    compute_capability TEXT NOT NULL,
    cuda_runtime {integer} NOT NULL,
    cuda_driver {integer} NOT NULL,
    autoconv_version TEXT NOT NULL,
    templates_hash TEXT NOT NULL,
    problem_key TEXT NOT NULL,
    dtype TEXT NOT NULL,
    family TEXT NOT NULL,
    config TEXT NOT NULL,
    kernel_name TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    time_ms {real} NOT NULL,
    tflops {real} NOT NULL,
    workspace_bytes {integer} NOT NULL,
    measured_at TEXT NOT NULL,
    trials {integer} NOT NULL,
    study_name TEXT NOT NULL,
    baseline_name TEXT,
    baseline_plan TEXT,
    baseline_time_ms {real},
    baseline_tflops {real},
    baseline_measured_at TEXT,
    PRIMARY KEY ({primary_key})
);
"""

class WinnerCache:
    """The winners' cache at ``location`` (created on first use): the path of an SQLite
    file, or a SQLAlchemy URL (:func:`is_url`; see the module docstring). None:
    :func:`default_location`. With ``create=False`` (a reader) nothing is created or
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
        creates = _SCHEMA.format(meta=database.meta, winners=database.winners, integer=database.integer,
                                 real=database.real, primary_key=", ".join(_KEY_COLUMNS))
        insert = (f"INSERT INTO {database.meta} (name, value) VALUES (:name, :value) "
                  "ON CONFLICT (name) DO NOTHING")
        database.schema([*((statement, {}) for statement in creates.split(";") if statement.strip()),
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
        where = " AND ".join(f"{column} = :{column}" for column in _KEY_COLUMNS)
        rows = self._database.query(f"SELECT {', '.join(_ALL_COLUMNS)} FROM {self._database.winners} WHERE {where}",
                                    {column: getattr(key, column) for column in _KEY_COLUMNS})
        return self._entry(rows[0]) if rows else None

    def entries(self) -> list[CacheEntry]:
        """Every entry, of any GPU or version, sorted by GPU then problem."""
        rows = self._database.query(f"SELECT {', '.join(_ALL_COLUMNS)} FROM {self._database.winners} "
                                    "ORDER BY gpu_name, problem_key, dtype, measured_at")
        return [self._entry(row) for row in rows]

    def __iter__(self) -> Iterator[CacheEntry]:
        return iter(self.entries())

    def __len__(self) -> int:
        return int(self._database.query(f"SELECT COUNT(*) FROM {self._database.winners}")[0][0])

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
        winners = self._database.winners
        columns = _KEY_COLUMNS + _VALUE_COLUMNS
        update = ", ".join(f"{column} = excluded.{column}" for column in _VALUE_COLUMNS)
        # The comparison runs inside the upsert, under the database's row lock: of
        # concurrent writers of one key, the fastest entry stays.
        condition = f" WHERE excluded.time_ms < {winners}.time_ms" if only_if_faster else ""
        sql = (f"INSERT INTO {winners} ({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)}) "
               f"ON CONFLICT ({', '.join(_KEY_COLUMNS)}) DO UPDATE SET {update}{condition}")
        return self._database.write(sql, {column: row[column] for column in columns}) > 0

    def set_baseline(self, key: CacheKey, *, name: str, plan: str | None, time_ms: float,
                     tflops: float, measured_at: str | None = None) -> bool:
        """Record cuDNN's time for an existing entry; False when there is no entry for ``key``."""
        where = " AND ".join(f"{column} = :{column}" for column in _KEY_COLUMNS)
        sql = (f"UPDATE {self._database.winners} SET baseline_name = :baseline_name, "
               "baseline_plan = :baseline_plan, baseline_time_ms = :baseline_time_ms, "
               f"baseline_tflops = :baseline_tflops, baseline_measured_at = :baseline_measured_at WHERE {where}")
        parameters = {"baseline_name": name, "baseline_plan": plan, "baseline_time_ms": float(time_ms),
                      "baseline_tflops": float(tflops), "baseline_measured_at": measured_at or now_iso(),
                      **{column: getattr(key, column) for column in _KEY_COLUMNS}}
        return self._database.write(sql, parameters) > 0

    # ---- moving entries between machines -------------------------------------------
    def export(self, path: str | os.PathLike) -> int:
        """Write every entry to the JSON file ``path`` (replaced atomically); returns the count.

        Raises:
            CacheError: ``path`` cannot be written (no such folder, a folder, a device, not
                writable), or a file is there that is not an autoconv export (never
                overwritten)."""
        target = Path(path)
        problem = write_problem(target)
        if problem is None and target.exists() and not _is_export(target):
            problem = ("a file that is not an autoconv cache export is there, so `autoconv cache export` "
                       "does not overwrite it; choose another name or move it away")
        if problem:
            raise CacheError(f"cannot export to {target}: {problem}")
        entries = self.entries()
        document = {"format": EXPORT_FORMAT, "schema_version": SCHEMA_VERSION, "exported_at": now_iso(),
                    "entries": [entry.as_dict() for entry in entries]}
        try:
            write_atomically(target, json.dumps(document, indent=1, sort_keys=True) + "\n")
        except OSError as err:
            raise CacheError(f"cannot export to {target}: {err.strerror or err}") from None
        return len(entries)

    def import_file(self, path: str | os.PathLike) -> ImportResult:
        """Merge the entries of an export; per key the faster entry stays.

        Each entry is checked as if it had been tuned here (:func:`entry_problem`: a known
        family, a config valid in its search space for the problem, the kernel this
        autoconv renders for it, plausible times); entries that fail are not imported and
        are listed in the result with the reason.

        Raises:
            CacheError: the file is missing or unreadable, not an export, or has an entry
                of the wrong structure (nothing is imported then).
        """
        source = Path(path)
        problem = path_problem(source)
        if problem:
            raise CacheError(f"{source}: {problem}")
        try:
            document = json.loads(source.read_bytes().decode("utf-8"))
        except OSError as err:
            raise CacheError(f"{source}: cannot be read ({err.strerror or err})") from None
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
        result = ImportResult()
        for index, entry in enumerate(entries):
            reason = entry_problem(entry)
            if reason:
                result.rejected.append(f"entries[{index}] ({entry.key.problem_key}, {entry.family!r}): {reason}")
                continue
            existing = self.get(entry.key)
            if existing is not None and _same_measurement(existing, entry):
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

        Only what autoconv created goes (:func:`cache_file_problem`): a file or tables that
        are not an autoconv cache raise :class:`CacheError` with the reason, and stay."""
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


def _schema_statements() -> dict[str, str]:
    """The ``CREATE TABLE`` text of the file cache's tables, as SQLite stores it (whitespace
    folded)."""
    creates = _SCHEMA.format(meta=SqliteFile.meta, winners=SqliteFile.winners, integer=SqliteFile.integer,
                             real=SqliteFile.real, primary_key=", ".join(_KEY_COLUMNS))
    statements = {}
    for statement in creates.split(";"):
        if statement.strip():
            text = " ".join(statement.replace("IF NOT EXISTS ", "").split())
            statements[text.split()[2]] = text
    return statements


def _first_page_holds_our_schema(path: Path) -> bool:
    """Whether the first page of the SQLite file at ``path`` (where SQLite keeps the schema)
    holds exactly autoconv's two ``CREATE TABLE`` statements, as autoconv wrote them."""
    with open(path, "rb") as handle:
        head = handle.read(100)
        size = int.from_bytes(head[16:18], "big") if len(head) >= 18 else 0
        page_size = 65536 if size == 1 else size
        if page_size < 512:
            return False
        page = head + handle.read(page_size - len(head))
    creates = _SCHEMA.format(meta=SqliteFile.meta, winners=SqliteFile.winners, integer=SqliteFile.integer,
                             real=SqliteFile.real, primary_key=", ".join(_KEY_COLUMNS))
    statements = [statement.strip().replace("IF NOT EXISTS ", "").encode()
                  for statement in creates.split(";") if statement.strip()]
    return page.count(b"CREATE TABLE") == len(statements) and all(text in page for text in statements)


def cache_file_problem(path: str | os.PathLike) -> str | None:
    """Why the file at ``path`` is not an autoconv cache file, or None when it is: an
    SQLite database whose ``meta`` table has autoconv's format row (any schema version),
    or a damaged one whose schema is autoconv's two tables, or an empty file or database
    (one autoconv may have begun; nothing in it to lose). Reads only (never opens a FIFO
    or a device); the file is opened read-only."""
    path = Path(path)
    problem = path_problem(path)
    if problem:
        return problem
    if path.stat().st_size == 0:
        return None
    with open(path, "rb") as handle:
        head = handle.read(len(SQLITE_MAGIC))
    if head != SQLITE_MAGIC:
        return "not an SQLite database, so not an autoconv cache"
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as err:
        return f"an SQLite database that cannot be opened ({err}), so it cannot be told to be an autoconv cache"
    try:
        try:
            schema = {name: sql for name, sql in connection.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.Error as err:
            if _first_page_holds_our_schema(path):  # damaged past its first page: autoconv's all the same
                return None
            return (f"an SQLite database whose schema cannot be read ({err}), so it cannot be told to be "
                    "an autoconv cache")
        if not schema:
            return None
        if set(schema) != {SqliteFile.meta, SqliteFile.winners}:
            return f"an SQLite database of something else (tables {', '.join(sorted(schema))})"
        try:
            row = connection.execute(f"SELECT value FROM {SqliteFile.meta} WHERE name = 'format'").fetchone()
        except sqlite3.Error:
            row = None  # damaged: the schema decides
        if row is not None:
            return None if row[0] == FORMAT else f"an SQLite database with format {row[0]!r}, not an autoconv cache"
        expected = _schema_statements()
        if all(" ".join((schema[name] or "").split()) == text for name, text in expected.items()):
            return None
        return "an SQLite database whose tables meta and winners are not autoconv's"
    finally:
        connection.close()

@dataclass
class ImportResult:
    """What :meth:`WinnerCache.import_file` did with a file's entries."""

    stored: int = 0      # taken (new, or faster than the cached one)
    kept: int = 0        # not taken: the cache had a faster (or as fast) different entry
    identical: int = 0   # already in the cache, the same measurement
    rejected: list[str] = field(default_factory=list)  # not imported: "entries[i] (...): why"


def _same_measurement(a: CacheEntry, b: CacheEntry) -> bool:
    return (a.family, dict(a.config), a.kernel_name, a.source_hash, a.time_ms, a.measured_at) == \
        (b.family, dict(b.config), b.kernel_name, b.source_hash, b.time_ms, b.measured_at)


def _is_export(path: Path) -> bool:
    """Whether the regular file at ``path`` is an autoconv cache export (JSON with its format)."""
    try:
        document = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(document, dict) and document.get("format") == EXPORT_FORMAT


#: No GPU computes a float32-accurate convolution faster than this (an H100's FP32 FMA peak
#: is ~67 TFLOP/s, its dense TF32 tensor cores ~495): a generous bound an entry's time
#: must respect.
MAX_PLAUSIBLE_TFLOPS = 5000.0
#: No kernel completes in less (a nanosecond: a couple of GPU clock cycles; a real launch
#: takes microseconds, but the fake backend of the tests reports nanoseconds).
MIN_PLAUSIBLE_MS = 1e-6


def entry_problem(entry: CacheEntry) -> str | None:
    """Why ``entry`` could not have been tuned by autoconv, or None: the problem parses
    and matches the key's dtype; the family is one of this autoconv's; the times are
    finite, positive and not faster than :data:`MAX_PLAUSIBLE_TFLOPS` (nor
    :data:`MIN_PLAUSIBLE_MS`). For an entry of this autoconv and these templates
    (:attr:`CacheKey.is_current`, the ones ``autoconv.conv2d`` would run) also: the
    config is valid in the family's search space for the problem (on a device of the
    key's compute capability with the H100's limits, SMs to spare) and renders the kernel
    the entry names (name, source hash, workspace)."""
    import math

    from autoconv.errors import AutoconvError, ProblemError
    from autoconv.kernels.families import FAMILY_NAMES, get_family
    from autoconv.kernels.limits import H100
    from autoconv.kernels.space import DEFAULT_WORKSPACE_LIMIT
    from autoconv.problems.problem import parse_spec

    key = entry.key
    try:
        problem = parse_spec(key.problem_key)
    except ProblemError as err:
        return f"the problem is not a valid spec ({err})"
    if problem.dtype != key.dtype:
        return f"the key's dtype {key.dtype!r} is not the problem's ({problem.dtype!r})"
    if entry.family not in FAMILY_NAMES:
        return f"{entry.family!r} is not a kernel family of this autoconv ({', '.join(FAMILY_NAMES)})"
    for name in ("time_ms", "baseline_time_ms"):
        value = getattr(entry, name)
        if value is None and name.startswith("baseline"):
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            return f"{name}={value!r} is not a positive finite time"
        rate = problem.flops / (value * 1e-3) / 1e12
        if value < MIN_PLAUSIBLE_MS or rate > MAX_PLAUSIBLE_TFLOPS:
            return (f"{name}={value!r} is implausibly fast ({rate:.3g} TFLOP/s; no GPU exceeds "
                    f"{MAX_PLAUSIBLE_TFLOPS:g}, no launch takes under {MIN_PLAUSIBLE_MS:g} ms)")
    if not math.isfinite(entry.tflops) or entry.tflops > MAX_PLAUSIBLE_TFLOPS:
        return f"tflops={entry.tflops!r} is implausible"
    if not key.is_current:
        return None  # never run (another autoconv or other templates): kept for the record
    try:
        major, minor = (int(part) for part in key.compute_capability.split("."))
    except ValueError:
        return f"compute capability {key.compute_capability!r} is not MAJOR.MINOR"
    # The H100's limits (its shared memory per block is the largest of any NVIDIA GPU) at the
    # key's compute capability, with SMs to spare: a config valid on some GPU of that kind
    # passes; autoconv.conv2d checks it again against the GPU it runs on.
    device = replace(H100, name=key.gpu_name, compute_capability=(major, minor), sm_count=1024)
    family = get_family(entry.family)
    reason = family.unsupported_reason(problem)
    if reason:
        return reason
    config = dict(entry.config)
    limit = max(DEFAULT_WORKSPACE_LIMIT, entry.workspace_bytes)
    try:
        broken = family.space.violations(config, problem, device, limit)
        if broken:
            return f"config {config} is outside {entry.family}'s search space for this problem: {broken[0]}"
        plan = family.plan(problem, config, device, limit)
    except AutoconvError as err:
        return f"config {config} cannot be planned ({str(err).splitlines()[0]})"
    if plan.name != entry.kernel_name:
        return f"kernel name {entry.kernel_name!r} is not the one this config renders ({plan.name!r})"
    if plan.source_hash != entry.source_hash:
        return f"source hash {entry.source_hash!r} is not the one this config renders ({plan.source_hash!r})"
    if plan.workspace_bytes != entry.workspace_bytes:
        return f"workspace_bytes={entry.workspace_bytes} is not the plan's ({plan.workspace_bytes})"
    return None


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
