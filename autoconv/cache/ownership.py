"""Whether a file is an autoconv cache file, told from its contents alone: autoconv
never writes into, or deletes, a file it did not create (a user's database given as
``--cache`` by mistake), even when the file is damaged and cannot be opened as a cache.
The URL database's counterpart is ``SqlDatabase.owner_problem``
(:mod:`autoconv.cache.sql`)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from autoconv.cache.schema import create_statements
from autoconv.cache.sql import FORMAT, SQLITE_MAGIC, SqliteFile
from autoconv.files import path_problem


def _schema_statements() -> dict[str, str]:
    """The ``CREATE TABLE`` text of the file cache's tables, as SQLite stores it (whitespace
    folded)."""
    statements = {}
    for statement in create_statements(SqliteFile):
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
    statements = [statement.strip().replace("IF NOT EXISTS ", "").encode()
                  for statement in create_statements(SqliteFile)]
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
