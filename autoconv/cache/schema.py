"""The layout of the winners' cache: its schema version, columns and ``CREATE TABLE``
statements (the same for an SQLite file and a URL database, up to table names and column
types), and an entry as the row it is stored as."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from autoconv.cache.entries import CacheEntry, CacheKey
from autoconv.cache.sql import SqlDatabase, SqliteFile

#: The version of the tables' layout, in the ``meta`` table and in exports; a cache of a
#: newer version is refused, one of an older version is reported as such.
SCHEMA_VERSION = 1

KEY_COLUMNS = tuple(f.name for f in fields(CacheKey))
VALUE_COLUMNS = ("family", "config", "kernel_name", "source_hash", "time_ms", "tflops",
                 "workspace_bytes", "measured_at", "trials", "study_name")
BASELINE_COLUMNS = ("baseline_name", "baseline_plan", "baseline_time_ms", "baseline_tflops",
                    "baseline_measured_at")
ALL_COLUMNS = KEY_COLUMNS + VALUE_COLUMNS + BASELINE_COLUMNS

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


def create_statements(database: SqliteFile | SqlDatabase | type[SqliteFile]) -> list[str]:
    """The ``CREATE TABLE IF NOT EXISTS`` statements of the cache's two tables in
    ``database``'s kind (its table names and column types)."""
    text = _SCHEMA.format(meta=database.meta, winners=database.winners, integer=database.integer,
                          real=database.real, primary_key=", ".join(KEY_COLUMNS))
    return [statement for statement in text.split(";") if statement.strip()]


def entry_row(entry: CacheEntry) -> dict[str, Any]:
    """The column values of ``entry``, checked (ValueError/TypeError when malformed)."""
    row: dict[str, Any] = {}
    for column in KEY_COLUMNS:
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
    for column in BASELINE_COLUMNS:
        row[column] = getattr(entry, column)
    return row
