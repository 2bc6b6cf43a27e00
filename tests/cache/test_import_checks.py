"""Issue 18: ``cache import`` checks each entry as if it had been tuned here, and says
what it rejected and why; importing entries already there says so.

An entry is rejected when its family is not one of autoconv's, its config is outside the
family's search space for the problem (or renders another kernel than it names), or a
time is not a positive finite number or implausibly fast (faster than any GPU could
compute the problem's FLOPs). The rest of the file is imported; the exit status is 1."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from autoconv.backends.fake import FAKE_IDENTITY
from autoconv.cache.entries import CacheKey
from autoconv.cache.exchange import EXPORT_FORMAT, entry_problem
from autoconv.cache.schema import SCHEMA_VERSION
from autoconv.cache.winners import WinnerCache
from autoconv.problems.problem import parse_spec
from tests.cache.entries import tuned_entry
from tests.helpers import run_cli

PROBLEM = parse_spec("N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1")
OTHER = parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1")


@pytest.fixture
def key() -> CacheKey:
    return CacheKey.for_problem(FAKE_IDENTITY, PROBLEM)


def _export(path, entries) -> None:
    path.write_text(json.dumps({"format": EXPORT_FORMAT, "schema_version": SCHEMA_VERSION,
                                "entries": [entry.as_dict() for entry in entries]}))


def _bad_entries(key: CacheKey) -> dict[str, object]:
    good = tuned_entry(key, 0.5)
    return {
        "a family that is a path": replace(good, family="../../etc/passwd"),
        "an unknown family": replace(good, family="implicit_gem"),
        "a config outside the space": replace(good, config={**good.config, "BM": 7}),
        "an unknown parameter": replace(good, config={**good.config, "EVIL": 1}),
        "another kernel's name": replace(good, kernel_name="implicit_gemm_f32_other"),
        "another kernel's source": replace(good, source_hash="0" * 16),
        "an absurdly fast time": replace(good, time_ms=1e-9),
        "faster than any GPU": replace(good, time_ms=PROBLEM.flops / 1e18 * 1e3),  # 1000 PFLOP/s
        "an infinite time": replace(good, time_ms=float("inf")),
        "a tiny cuDNN time": replace(good, baseline_name="cudnn", baseline_time_ms=1e-12, baseline_plan="{}"),
        "a problem that is not one": replace(good, key=replace(key, problem_key="N=0,C=1")),
    }


def test_each_kind_of_implausible_entry_is_named(key):
    assert entry_problem(tuned_entry(key, 0.5)) is None
    for label, bad in _bad_entries(key).items():
        assert entry_problem(bad), label
    # A family unknown to this autoconv is rejected even in an entry that is never run.
    stale = replace(key, templates_hash="ffffffffffffffff")
    assert entry_problem(replace(tuned_entry(key), key=stale, config={"whatever": 1})) is None
    assert "not a kernel family" in entry_problem(replace(tuned_entry(key), key=stale, family="../x"))


def test_import_rejects_entries_autoconv_could_not_have_tuned(tmp_path, capsys, key):
    cache = tmp_path / "c.sqlite"
    real = tuned_entry(key, 0.5)
    with WinnerCache(cache) as winners:
        winners.put(real)
    bad = _bad_entries(key)
    good_other = tuned_entry(replace(key, problem_key=OTHER.key()), 0.2)
    export = tmp_path / "w.json"
    _export(export, [*bad.values(), good_other])

    code, out, err = run_cli(capsys, "cache", "import", export, "--cache", cache)
    assert code == 1, err
    assert "imported 1 winner" in out and f"rejected {len(bad)} entries" in out
    assert "'../../etc/passwd' is not a kernel family" in out
    assert "... and" in out  # the first reasons, then the count of the rest
    with WinnerCache(cache) as winners:
        entries = {entry.key.problem_key: entry for entry in winners.entries()}
    assert entries == {key.problem_key: real, OTHER.key(): good_other}  # the real winner stays

    code, out, _ = run_cli(capsys, "show", "--cache", cache)
    assert code == 0 and "passwd" not in out and "2 cached winners" in out


def test_reimporting_identical_entries_says_they_were_there(tmp_path, capsys, key):
    cache = tmp_path / "c.sqlite"
    with WinnerCache(cache) as winners:
        for i, problem in enumerate((PROBLEM, OTHER, parse_spec("N=1,C=1,H=4,W=4,K=1,R=1,S=1"))):
            winners.put(tuned_entry(replace(key, problem_key=problem.key()), 0.1 * (i + 1)))
    export = tmp_path / "w.json"
    assert run_cli(capsys, "cache", "export", export, "--cache", cache)[0] == 0
    code, out, _ = run_cli(capsys, "cache", "import", export, "--cache", cache)
    assert code == 0
    assert "imported 0 winners" in out and "3 already there (identical)" in out and "faster" not in out
