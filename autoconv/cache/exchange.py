"""Moving winners between machines: the export file (JSON, every entry with its key) and
the checks an imported entry passes.

``cache import`` takes only entries autoconv could have tuned (:func:`entry_problem`): a
known family, plausible times and, for an entry of this autoconv and these templates, a
config valid in its search space that renders the kernel the entry names. A file that
is not an export is never overwritten by ``cache export``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from autoconv.cache.entries import CacheEntry, now_iso
from autoconv.cache.schema import SCHEMA_VERSION, entry_row
from autoconv.errors import AutoconvError, CacheError, ProblemError
from autoconv.files import path_problem, write_atomically, write_problem
from autoconv.problems.problem import parse_spec

EXPORT_FORMAT = "autoconv-winners-export"


@dataclass
class ImportResult:
    """What :meth:`~autoconv.cache.winners.WinnerCache.import_file` did with a file's entries."""

    stored: int = 0      # taken (new, or faster than the cached one)
    kept: int = 0        # not taken: the cache had a faster (or as fast) different entry
    identical: int = 0   # already in the cache, the same measurement
    rejected: list[str] = field(default_factory=list)  # not imported: "entries[i] (...): why"


def same_measurement(a: CacheEntry, b: CacheEntry) -> bool:
    """Whether ``a`` and ``b`` record one measurement (an export imported again)."""
    return (a.family, dict(a.config), a.kernel_name, a.source_hash, a.time_ms, a.measured_at) == \
        (b.family, dict(b.config), b.kernel_name, b.source_hash, b.time_ms, b.measured_at)


def is_export(path: Path) -> bool:
    """Whether the regular file at ``path`` is an autoconv cache export (JSON with its format)."""
    try:
        document = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(document, dict) and document.get("format") == EXPORT_FORMAT


def check_export_target(target: Path) -> None:
    """Raise :class:`CacheError` unless an export may be written to ``target``: a file that
    can be written, and is absent or an export itself (anything else is never overwritten)."""
    problem = write_problem(target)
    if problem is None and target.exists() and not is_export(target):
        problem = ("a file that is not an autoconv cache export is there, so `autoconv cache export` "
                   "does not overwrite it; choose another name or move it away")
    if problem:
        raise CacheError(f"cannot export to {target}: {problem}")


def write_export(target: Path, entries: list[CacheEntry]) -> None:
    """Write ``entries`` to the export file ``target`` (replaced atomically; check it first
    with :func:`check_export_target`)."""
    document = {"format": EXPORT_FORMAT, "schema_version": SCHEMA_VERSION, "exported_at": now_iso(),
                "entries": [entry.as_dict() for entry in entries]}
    try:
        write_atomically(target, json.dumps(document, indent=1, sort_keys=True) + "\n")
    except OSError as err:
        raise CacheError(f"cannot export to {target}: {err.strerror or err}") from None


def read_export(source: Path) -> list[CacheEntry]:
    """The entries of the export file ``source``, each of the right structure (not yet
    checked with :func:`entry_problem`).

    Raises:
        CacheError: the file is missing or unreadable, not an export, or has an entry of
            the wrong structure.
    """
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
            entry_row(entry)  # type and value checks
        except (TypeError, KeyError, ValueError) as err:
            raise CacheError(f"{source}: entries[{index}] is malformed: {err}") from None
        entries.append(entry)
    return entries


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
    (:attr:`~autoconv.cache.entries.CacheKey.is_current`, the ones ``autoconv.conv2d`` would run) also: the
    config is valid in the family's search space for the problem (on a device of the
    key's compute capability with the H100's limits, SMs to spare) and renders the kernel
    the entry names (name, source hash, workspace)."""
    # The kernels (NumPy, Jinja2) load here, when an export is imported, not with the cache:
    # the commands that only read, export or clear the cache stay quick to start.
    from autoconv.kernels.families import FAMILY_NAMES, get_family
    from autoconv.kernels.limits import H100
    from autoconv.kernels.space import DEFAULT_WORKSPACE_LIMIT

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
