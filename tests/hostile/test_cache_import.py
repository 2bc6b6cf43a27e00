"""Hostile ``autoconv cache import``: an export of the tuned state's winners with one field of
one entry made hostile (implausible times, configurations outside the space, names that are
paths, 100 KB values, another GPU, another autoconv), and files that are not exports at all.
The harness checks that no cached winner is replaced by a slower one."""

from __future__ import annotations

import json
import math

import pytest

from autoconv.cache.exchange import EXPORT_FORMAT
from autoconv.cache.schema import SCHEMA_VERSION
from autoconv.cache.winners import WinnerCache
from tests.helpers import delete_at, set_at
from tests.hostile.harness import CACHE, Case, params
from tests.hostile.states import copy_tuned

HUGE = "x" * 100_000


def _scale_time(factor):
    def change(entry):
        entry["time_ms"] *= factor
        entry["tflops"] /= factor
    return change


#: (id, change to the first exported entry)
ENTRIES = [
    ("time-1e-30", set_at("time_ms", 1e-30)),
    ("time-zero", set_at("time_ms", 0.0)),
    ("time-negative", set_at("time_ms", -1.0)),
    ("time-nan", set_at("time_ms", math.nan)),
    ("time-inf", set_at("time_ms", math.inf)),
    ("time-text", set_at("time_ms", "fast")),
    ("time-null", set_at("time_ms", None)),
    ("time-half", _scale_time(0.5)),
    ("time-double", _scale_time(2.0)),
    ("tflops-inconsistent", set_at("tflops", 1e6)),
    ("config-1e30", set_at("config", "BLOCK_P", 1e30)),
    ("config-negative", set_at("config", "BLOCK_P", -8)),
    ("config-text", set_at("config", "BLOCK_P", "8")),
    ("config-missing", delete_at("config", "BLOCK_P")),
    ("config-extra", set_at("config", "EVIL", 1)),
    ("config-empty", set_at("config", {})),
    ("config-list", set_at("config", [8, 8])),
    ("kernel-path", set_at("kernel_name", "../../evil")),
    ("kernel-empty", set_at("kernel_name", "")),
    ("kernel-huge", set_at("kernel_name", HUGE)),
    ("family-path", set_at("family", "../x")),
    ("family-huge", set_at("family", HUGE)),
    ("family-number", set_at("family", 123)),
    ("source-hash-other", set_at("source_hash", "0" * 16)),
    ("gpu-other", set_at("key", "gpu_name", "Another GPU")),
    ("gpu-empty", set_at("key", "gpu_name", "")),
    ("gpu-huge", set_at("key", "gpu_name", HUGE)),
    ("capability-99", set_at("key", "compute_capability", "99.9")),
    ("capability-text", set_at("key", "compute_capability", "x")),
    ("problem-zero", set_at("key", "problem_key", "N=0,C=1")),
    ("problem-huge", set_at("key", "problem_key", f"N={2**63},C=4,H=9,W=9,K=6,R=3,S=3")),
    ("problem-garbage", set_at("key", "problem_key", "'; DROP TABLE autoconv_winners; --")),
    ("templates-other", set_at("key", "templates_hash", "ffffffffffffffff")),
    ("version-other", set_at("key", "autoconv_version", "9.9.9")),
    ("dtype-other", set_at("key", "dtype", "float64")),
    ("workspace-negative", set_at("workspace_bytes", -1)),
    ("workspace-2**63", set_at("workspace_bytes", 2**63)),
    ("trials-negative", set_at("trials", -1)),
    ("trials-2**63", set_at("trials", 2**63)),
    ("measured-garbage", set_at("measured_at", "yesterday")),
    ("baseline-tiny", lambda e: e.update(baseline_name="cudnn", baseline_time_ms=1e-12, baseline_plan="{}",
                                         baseline_tflops=1e9)),
    ("key-missing", delete_at("key")),
    ("unknown-field", set_at("evil", True)),
]


def _export(box) -> dict:
    with WinnerCache(box.path(CACHE)) as winners:
        return {"format": EXPORT_FORMAT, "schema_version": SCHEMA_VERSION,
                "entries": [entry.as_dict() for entry in winners.entries()]}


def _entry_case(name, change):
    def setup(box):
        copy_tuned(box)
        export = _export(box)
        change(export["entries"][0])
        box.write("winners.json", json.dumps(export))
    return Case(f"import-{name}", setup=setup, writes=("state/*",),
                act=lambda box: box.cli("cache", "import", "winners.json", "--cache", CACHE))


#: (id, the export file's text, given the tuned state's export)
FILES = [
    ("empty", lambda export: ""),
    ("not-json", lambda export: "winners!"),
    ("a-list", lambda export: json.dumps(export["entries"])),
    ("entries-object", lambda export: json.dumps({**export, "entries": {"a": 1}})),
    ("entries-of-strings", lambda export: json.dumps({**export, "entries": ["a", "b"]})),
    ("format-other", lambda export: json.dumps({**export, "format": "something-else"})),
    ("schema-999", lambda export: json.dumps({**export, "schema_version": 999})),
    ("deep", lambda export: '{"format": "autoconv-winners-export", "entries": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    ("bare-nan", lambda export: json.dumps(export).replace('"trials": 8', '"trials": NaN', 1)),
    ("duplicates-1000", lambda export: json.dumps({**export, "entries": export["entries"] * 1000})),
    ("binary", lambda export: "\x00\x01\xfe"),
]


def _file_case(name, text):
    def setup(box):
        copy_tuned(box)
        box.write("winners.json", text(_export(box)))
    return Case(f"import-file-{name}", setup=setup, writes=("state/*",),
                act=lambda box: box.cli("cache", "import", "winners.json", "--cache", CACHE))


def _fresh_cache_case():
    """Hostile entries, every one rejected, into a cache that does not exist yet."""
    def setup(box):
        copy_tuned(box)
        export = _export(box)
        for entry in export["entries"]:
            entry["kernel_name"] = "../../evil"
        box.write("winners.json", json.dumps(export))
    return Case("import-into-a-new-cache", setup=setup, writes=("new/*", "new"),
                act=lambda box: box.cli("cache", "import", "winners.json", "--cache", "new/cache.sqlite"))


CASES = [_entry_case(*e) for e in ENTRIES] + [_file_case(*f) for f in FILES] + [_fresh_cache_case()]


@pytest.mark.parametrize("case", params(CASES))
def test_cache_import(hostile, case):
    box = hostile(case)
    for outcome in box.outcomes:
        longest = max((len(line) for line in outcome.text.splitlines()), default=0)
        assert longest < 2000, f"a message quotes a long value in full ({longest} characters)"
