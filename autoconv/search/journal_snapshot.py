"""A snapshot of a journal file's replay: opening a long tuning history loads it instead of
replaying every record.

Optuna's ``JournalStorage`` replays a journal record by record when it opens it. A ResNet-50
history (46 000 records, 13 MB) takes 1-2 s to replay, in every tuning process of a run, before
its first candidate (results/h100/NOTES.md, thirty-first session). When its backend offers a
snapshot (``BaseJournalSnapshot``), Optuna starts from it and replays only the records after it;
it hands the backend a new one (its replay, pickled) at every 100th study and trial created.

The file ``<journal>.snapshot`` holds one line of JSON saying what the snapshot covers, then
Optuna's pickle:

- ``bytes``, ``lines``: the journal's first ``bytes`` bytes, its first ``lines`` records;
- ``sha256``: their hash. A journal whose start is not exactly what was replayed (another file
  at this path, a file cut shorter) does not match, and is replayed from its start as before;
- ``optuna``: the version that pickled it (another version's pickle is not loaded);
- ``replay_sha256``: the pickle's own hash (a damaged snapshot is ignored, never half-loaded).

The snapshot is written beside the journal (a new file renamed over the old: a reader sees a
whole snapshot or none). It is a cache: deleting it costs the next run a full replay, nothing
else. Like the journal, it is trusted as the user's own file: loading it unpickles it.
:func:`autoconv.search.storage.check_journal` takes the records it covers as checked.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

#: What the header's ``format`` says (another format is ignored, as an old snapshot).
FORMAT = "autoconv journal snapshot 1"
#: How much of the journal is hashed per read.
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Snapshot:
    """A snapshot that matches its journal: it covers the journal's first ``covered_bytes``
    bytes (``covered_lines`` records); ``replay`` is Optuna's pickle (empty when not asked for)."""

    covered_bytes: int
    covered_lines: int
    replay: bytes


def snapshot_path(journal: Path) -> Path:
    """Where the snapshot of ``journal`` is kept."""
    return journal.with_name(journal.name + ".snapshot")


class PrefixHash:
    """The SHA-256 of a growing file's first bytes, carried forward as they grow: a process
    that writes a snapshot every 100 trials hashes each byte of the journal once."""

    def __init__(self, path: Path):
        self.path = path
        self._hash = hashlib.sha256()
        self._hashed = 0

    def of_first(self, count: int) -> str | None:
        """The hash of the file's first ``count`` bytes; None if it has fewer (or cannot be read)."""
        if count < self._hashed:  # (the file was cut and rewritten: start again)
            self._hash, self._hashed = hashlib.sha256(), 0
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._hashed)
                while self._hashed < count:
                    chunk = handle.read(min(_CHUNK, count - self._hashed))
                    if not chunk:
                        return None
                    self._hash.update(chunk)
                    self._hashed += len(chunk)
        except OSError:
            return None
        return self._hash.hexdigest()


def write_snapshot(journal: Path, replay: bytes, covered_bytes: int, covered_lines: int, optuna_version: str,
                   prefix_hash: PrefixHash | None = None) -> bool:
    """Write Optuna's pickled ``replay`` of ``journal``'s first ``covered_bytes`` bytes
    (``covered_lines`` records) as its snapshot; False if it could not be (no space, no
    permission: the journal is then replayed in full, as without a snapshot)."""
    digest = (prefix_hash or PrefixHash(journal)).of_first(covered_bytes)
    if digest is None:
        return False
    header = {"format": FORMAT, "bytes": covered_bytes, "lines": covered_lines, "sha256": digest,
              "optuna": optuna_version, "replay_sha256": hashlib.sha256(replay).hexdigest()}
    target = snapshot_path(journal)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        with open(partial, "wb") as handle:
            handle.write(json.dumps(header).encode() + b"\n")
            handle.write(replay)
        os.replace(partial, target)
        return True
    except OSError:
        try:
            partial.unlink(missing_ok=True)
        except OSError:
            pass
        return False


def read_snapshot(journal: Path, optuna_version: str | None = None) -> Snapshot | None:
    """The snapshot of ``journal`` if there is one that matches it (see the module docstring),
    else None. With ``optuna_version``, also its pickle, if that version made it; without, only
    what it covers (:func:`autoconv.search.storage.check_journal`)."""
    try:
        with open(snapshot_path(journal), "rb") as handle:
            header = _header(handle.readline())
            if header is None or (optuna_version is not None and header["optuna"] != optuna_version):
                return None
            replay = handle.read() if optuna_version is not None else b""
        if optuna_version is not None and hashlib.sha256(replay).hexdigest() != header["replay_sha256"]:
            return None
        if PrefixHash(journal).of_first(header["bytes"]) != header["sha256"]:
            return None
    except OSError:
        return None
    return Snapshot(header["bytes"], header["lines"], replay)


def _header(line: bytes) -> dict | None:
    """The header line parsed, if it is one of this format with every field of its type."""
    try:
        header = json.loads(line)
    except ValueError:
        return None
    kinds = {"format": str, "bytes": int, "lines": int, "sha256": str, "optuna": str, "replay_sha256": str}
    if not isinstance(header, dict) or header.get("format") != FORMAT or not all(
            isinstance(header.get(key), kind) and not isinstance(header.get(key), bool) for key, kind in kinds.items()):
        return None
    return header if header["bytes"] >= 0 and header["lines"] >= 0 else None
