"""Moving winners between machines: the export file (JSON, every entry with its key) and
the checks an imported entry passes.

``cache import`` takes only entries autoconv could have tuned, each checked whole
(:func:`entry_problem`): every field of the right form and range, a known family, plausible
times, a config valid in the family's search space that renders the kernel the entry names.
So it takes only entries of this autoconv and these templates, the ones it can render and
``autoconv.conv2d`` would run; an entry of another GPU is kept under that GPU's key, checked
against the limits of a GPU of its compute capability. A file that is not an export is never
overwritten by ``cache export``.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path

from autoconv._version import __version__
from autoconv.cache.entries import CacheEntry, CacheKey, now_iso
from autoconv.cache.schema import SCHEMA_VERSION, entry_row
from autoconv.errors import QUOTE_LIMIT, AutoconvError, CacheError, ProblemError, quoted
from autoconv.files import path_problem, write_atomically, write_problem
from autoconv.kernels.fingerprint import templates_hash
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
    except RecursionError:
        raise CacheError(f"{source}: not an autoconv cache export (JSON nested too deeply to read; an export "
                         "nests a few levels)") from None
    except ValueError as err:  # e.g. a number of more digits than Python converts
        raise CacheError(f"{source}: not an autoconv cache export ({shortened(str(err))})") from None
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
        wrong = _structure_problem(raw)
        if wrong:
            raise CacheError(f"{source}: entries[{index}] is malformed: {wrong}")
        try:
            entry = CacheEntry.from_dict(raw)
            entry_row(entry)  # type and value checks
        except (TypeError, KeyError, ValueError, OverflowError) as err:
            raise CacheError(f"{source}: entries[{index}] is malformed: {shortened(str(err))}") from None
        entries.append(entry)
    return entries


def _structure_problem(raw: object) -> str | None:
    """Why ``raw`` does not have the fields of an exported entry and of its key, or None."""
    if not isinstance(raw, dict):
        return f"the entry must be a mapping, got {quoted(raw)}"
    if "key" in raw and not isinstance(raw["key"], dict):
        return f"its key must be a mapping, got {quoted(raw.get('key'))}"
    for what, value, kind in (("the entry", raw, CacheEntry), ("its key", raw.get("key", {}), CacheKey)):
        names = {f.name for f in fields(kind)}
        required = {f.name for f in fields(kind) if f.default is MISSING and f.default_factory is MISSING}
        missing, unknown = sorted(required - set(value)), sorted(set(map(str, value)) - names)
        if missing:
            return f"{what} lacks {', '.join(missing)}"
        if unknown:
            return f"{what} has unknown fields {shortened(', '.join(unknown), QUOTE_LIMIT)}"
    return None


#: No GPU computes a float32-accurate convolution faster than this (an H100's FP32 FMA peak
#: is ~67 TFLOP/s, its dense TF32 tensor cores ~495): a generous bound an entry's time
#: must respect.
MAX_PLAUSIBLE_TFLOPS = 5000.0
#: No kernel completes in less (a nanosecond: a couple of GPU clock cycles; a real launch
#: takes microseconds, but the fake backend of the tests reports nanoseconds).
MIN_PLAUSIBLE_MS = 1e-6


def shortened(text: str, limit: int = 2 * QUOTE_LIMIT) -> str:
    """``text`` for a message, cut to ``limit`` characters with a note of its length (an
    export's values may be megabytes)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def rejection(index: int, entry: CacheEntry, reason: str) -> str:
    """How ``cache import`` names an entry it rejects, and why: ``entries[i] (problem, 'family'): why``."""
    return f"entries[{index}] ({shortened(str(entry.key.problem_key), QUOTE_LIMIT)}, {quoted(entry.family)}): {reason}"


#: Longest name an entry may hold (a GPU's, a kernel's parameters; real ones are well under this).
TEXT_LIMIT = 256
#: Longest study name or cuDNN plan name (a study's name holds its problem, GPU and families).
LONG_TEXT_LIMIT = 1024
#: Largest CUDA runtime or driver version (they count 1000 * major + 10 * minor: 13000 is 13.0).
VERSION_LIMIT = 1_000_000
#: Largest workspace an entry may need: 1 TiB, more than any GPU's memory.
WORKSPACE_LIMIT = 1 << 40
#: Most trials an entry may have taken (a long study runs thousands).
TRIALS_LIMIT = 2**31 - 1
_COMPUTE_CAPABILITY = re.compile(r"[1-9][0-9]?\.[0-9]")
_HASH = re.compile(r"[0-9a-f]{8,64}")
_VERSION = re.compile(r"[0-9A-Za-z.+_-]{1,64}")


def _text_problem(name: str, value, pattern: re.Pattern | None = None, none_allowed: bool = False,
                  limit: int = TEXT_LIMIT) -> str | None:
    """Why ``value`` is not a text field an entry may hold (printable, at most ``limit``
    characters, of ``pattern``'s form where given), or None."""
    if value is None and none_allowed:
        return None
    if not isinstance(value, str) or not value or len(value) > limit or not value.isprintable():
        return f"{name}={quoted(value)} is not a printable text of 1 to {limit} characters"
    if pattern is not None and not pattern.fullmatch(value):
        return f"{name}={quoted(value)} is not of the form {pattern.pattern}"
    return None


def _field_problem(entry: CacheEntry) -> str | None:
    """Why a field of ``entry`` has a form or range autoconv never writes, or None."""
    key = entry.key
    for name, value, pattern in (("key.gpu_name", key.gpu_name, None),
                                 ("key.compute_capability", key.compute_capability, _COMPUTE_CAPABILITY),
                                 ("key.autoconv_version", key.autoconv_version, _VERSION),
                                 ("key.templates_hash", key.templates_hash, _HASH),
                                 ("source_hash", entry.source_hash, _HASH),
                                 ("key.dtype", key.dtype, None)):
        reason = _text_problem(name, value, pattern)
        if reason:
            return reason
    reason = _text_problem("study_name", entry.study_name or "-", limit=LONG_TEXT_LIMIT)
    if reason:
        return reason
    for name, number, limit in (("key.cuda_runtime", key.cuda_runtime, VERSION_LIMIT),
                                ("key.cuda_driver", key.cuda_driver, VERSION_LIMIT),
                                ("workspace_bytes", entry.workspace_bytes, WORKSPACE_LIMIT),
                                ("trials", entry.trials, TRIALS_LIMIT)):
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= limit:
            return f"{name}={quoted(number)} is not an integer from 0 to {limit}"
    for name, when in (("measured_at", entry.measured_at), ("baseline_measured_at", entry.baseline_measured_at)):
        if when is None and name.startswith("baseline"):
            continue
        reason = _text_problem(name, when)
        if reason:
            return reason
        try:
            datetime.datetime.fromisoformat(str(when))
        except ValueError:
            return f"{name}={quoted(when)} is not an ISO 8601 time"
    reason = _text_problem("baseline_name", entry.baseline_name, none_allowed=True)
    if reason:
        return reason
    if entry.baseline_plan is not None:
        return _plan_problem(entry.baseline_plan)
    return None


def _plan_problem(plan) -> str | None:
    """Why ``plan`` is not a cuDNN plan as the benchmark records it (JSON: its mode and name), or None."""
    if not isinstance(plan, str) or len(plan) > 4 * LONG_TEXT_LIMIT:
        return f"baseline_plan={quoted(plan)} is not a JSON text of at most {4 * LONG_TEXT_LIMIT} characters"
    try:
        document = json.loads(plan)
    except (ValueError, RecursionError):
        document = None
    if not (isinstance(document, dict) and _text_problem("mode", document.get("mode")) is None
            and _text_problem("plan_name", document.get("plan_name"), limit=LONG_TEXT_LIMIT) is None):
        return f"baseline_plan={quoted(plan)} is not a cuDNN plan (JSON with a \"mode\" and a \"plan_name\")"
    return None


def entry_problem(entry: CacheEntry) -> str | None:
    """Why ``entry`` could not have been tuned by this autoconv, or None:

    - every field has the form and range autoconv writes (printable texts of bounded length,
      hashes in hex, versions and counts in range, ISO times, a cuDNN plan as JSON);
    - the problem parses and matches the key's dtype; the family is one of this autoconv's; the
      times are finite, positive and not faster than :data:`MAX_PLAUSIBLE_TFLOPS` (nor
      :data:`MIN_PLAUSIBLE_MS`);
    - the entry is of this autoconv and these templates (:attr:`~autoconv.cache.entries.CacheKey.is_current`):
      another's kernel cannot be rendered here to check it, and ``autoconv.conv2d`` never runs it;
    - the config names each of the family's parameters with one of its values, and is valid in
      the family's search space for the problem (on a device of the key's compute capability
      with the H100's limits, SMs to spare); it renders the kernel the entry names (name,
      source hash, workspace).

    An entry of another GPU passes where a GPU of its compute capability could have run it; it
    is kept under that GPU's key (``autoconv.conv2d`` looks up the GPU it runs on)."""
    # The kernels (NumPy, Jinja2) load here, when an export is imported, not with the cache:
    # the commands that only read, export or clear the cache stay quick to start.
    from autoconv.kernels.families import FAMILY_NAMES, get_family
    from autoconv.kernels.families.base import DTYPE_TAGS
    from autoconv.kernels.limits import H100
    from autoconv.kernels.space import DEFAULT_WORKSPACE_LIMIT

    reason = _field_problem(entry)
    if reason:
        return reason
    key = entry.key
    try:
        problem = parse_spec(key.problem_key)
    except ProblemError as err:
        return f"the problem is not a valid spec ({err})"
    if problem.dtype != key.dtype:
        return f"the key's dtype {quoted(key.dtype)} is not the problem's ({problem.dtype!r})"
    if entry.family not in FAMILY_NAMES:
        return f"{quoted(entry.family)} is not a kernel family of this autoconv ({', '.join(FAMILY_NAMES)})"
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
    for name in ("tflops", "baseline_tflops"):
        value = getattr(entry, name)
        if value is None and name.startswith("baseline"):
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not 0 <= value <= MAX_PLAUSIBLE_TFLOPS:
            return f"{name}={quoted(value)} is implausible (no GPU exceeds {MAX_PLAUSIBLE_TFLOPS:g} TFLOP/s)"
    family = get_family(entry.family)
    reason = _config_problem(entry.config, family.space.params)
    if reason:
        return f"the config is not one of {entry.family}'s: {reason}"
    tag = "tf32" if problem.precision == "tf32" else DTYPE_TAGS[problem.dtype]
    if not re.fullmatch(rf"{re.escape(entry.family)}_{tag}_[A-Za-z0-9_]{{1,{TEXT_LIMIT}}}_[0-9a-f]{{8}}",
                        str(entry.kernel_name)):
        return (f"kernel name {quoted(entry.kernel_name)} is not of the form {entry.family}_{tag}_<parameters>_<hash> "
                "that autoconv names kernels with")
    if not key.is_current:
        return (f"made by autoconv {quoted(key.autoconv_version)} with templates {quoted(key.templates_hash)}, not "
                f"this one ({__version__}, templates {templates_hash()}): its kernel cannot be rendered here to "
                "check it, and autoconv.conv2d would never run it; import it with the autoconv that exported it, "
                "or tune the problem with this one")
    major, minor = (int(part) for part in key.compute_capability.split("."))
    # The H100's limits (its shared memory per block is the largest of any NVIDIA GPU) at the
    # key's compute capability, with SMs to spare: a config valid on some GPU of that kind
    # passes; autoconv.conv2d checks it again against the GPU it runs on.
    device = replace(H100, name=key.gpu_name, compute_capability=(major, minor), sm_count=1024)
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
        return f"kernel name {quoted(entry.kernel_name)} is not the one this config renders ({plan.name!r})"
    if plan.source_hash != entry.source_hash:
        return f"source hash {quoted(entry.source_hash)} is not the one this config renders ({plan.source_hash!r})"
    if plan.workspace_bytes != entry.workspace_bytes:
        return f"workspace_bytes={entry.workspace_bytes} is not the plan's ({plan.workspace_bytes})"
    return None


def _config_problem(config, params) -> str | None:
    """Why ``config`` does not give each parameter of ``params`` (name -> its values) one of its
    values, of the same type (JSON's 64.0 and true are not 64 and 1), or None."""
    if not isinstance(config, dict):
        return f"{quoted(config)} is not a mapping"
    unknown = [name for name in config if name not in params]
    if unknown:
        return f"unknown parameter {quoted(unknown[0])} (parameters: {', '.join(params)})"
    missing = [name for name in params if name not in config]
    if missing:
        return f"no value for {', '.join(missing)}"
    for name, choices in params.items():
        value = config[name]
        if not any(type(value) is type(choice) and value == choice for choice in choices):
            return f"{name}={quoted(value)} is not one of {list(choices)}"
    return None
