"""Issues 18 and 65: ``cache import`` checks each entry as if it had been tuned here, and says
what it rejected and why (quoting values cut short); importing entries already there says so.

An entry is rejected when its family is not one of autoconv's, its config is outside the
family's search space for the problem (or renders another kernel than it names), or a
time is not a positive finite number or implausibly fast (faster than any GPU could
compute the problem's FLOPs), a field has a form or range autoconv never writes, or it was
made by another autoconv or other templates (whose kernel cannot be checked here, and which
``autoconv.conv2d`` never runs). An entry of another GPU is kept under that GPU's key. The rest
of the file is imported; the exit status is 1."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from autoconv.backends.fake import FAKE_IDENTITY
from autoconv.cache.entries import CacheKey
from autoconv.cache.exchange import EXPORT_FORMAT, entry_problem
from autoconv.cache.schema import SCHEMA_VERSION
from autoconv.cache.winners import WinnerCache
from autoconv.errors import CacheError
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


# ---- issue 65: no entry is imported unchecked --------------------------------------------------

HUGE_TEXT = "x" * 100_000


def _foreign_entries(key: CacheKey) -> dict[str, object]:
    """Entries that passed unchecked: of other templates or another autoconv (never rendered),
    with absurd parameter values or kernel names, or fields out of any range autoconv writes."""
    good = tuned_entry(key, 0.5)
    direct = tuned_entry(key, 0.5, family="direct")
    return {
        "other templates": (replace(good, key=replace(key, templates_hash="ffffffffffffffff")),
                            "with templates 'ffffffffffffffff', not this one"),
        "another autoconv": (replace(good, key=replace(key, autoconv_version="0.0.1")), "made by autoconv '0.0.1'"),
        "a parameter of 1e30": (replace(direct, config={**direct.config, "BLOCK_P": 1e30}),
                                "BLOCK_P=1e+30 is not one of"),
        "a float for an int": (replace(good, config={**good.config, "BM": float(good.config["BM"])}), "is not one of"),
        "true for 1": (replace(direct, config={**direct.config, "TILE_P": True}), "TILE_P=True is not one of"),
        "a missing parameter": (replace(good, config={k: v for k, v in good.config.items() if k != "BM"}),
                                "no value for BM"),
        "a kernel name that is a path": (replace(good, kernel_name="../../evil"),
                                         "kernel name '../../evil' is not of the form implicit_gemm_f32_"),
        "a stale path name": (replace(good, key=replace(key, templates_hash="ffffffffffffffff"),
                                      kernel_name="../../evil"), "kernel name '../../evil'"),
        "a huge GPU name": (replace(good, key=replace(key, gpu_name=HUGE_TEXT)), "key.gpu_name='xxxx"),
        "a control character": (replace(good, key=replace(key, gpu_name="H100\n| evil |")), "printable text"),
        "a compute capability": (replace(good, key=replace(key, compute_capability="9")), "key.compute_capability='9'"),
        "a huge runtime version": (replace(good, key=replace(key, cuda_runtime=2**63)),
                                   "key.cuda_runtime=9223372036854775808"),
        "a huge workspace": (replace(good, workspace_bytes=2**63), "workspace_bytes=9223372036854775808"),
        "trials beyond SQLite": (replace(good, trials=2**63), "trials=9223372036854775808 is not an integer from 0"),
        "a time that is no time": (replace(good, measured_at="yesterday"),
                                   "measured_at='yesterday' is not an ISO 8601"),
        "a plan that is no plan": (replace(good, baseline_name="cudnn", baseline_plan="[1]", baseline_time_ms=0.4,
                                           baseline_tflops=1.0), "baseline_plan='[1]' is not a cuDNN plan"),
    }


def test_no_entry_is_imported_unchecked(key):
    for label, (bad, fragment) in _foreign_entries(key).items():
        reason = entry_problem(bad)
        assert reason and fragment in reason, (label, reason)
        assert len(reason) < 600, (label, len(reason))  # values quoted cut short


def test_an_entry_of_another_gpu_is_kept_under_its_gpu_and_checked_for_it(tmp_path, key):
    a100 = replace(key, gpu_name="NVIDIA A100-SXM4-80GB", compute_capability="8.0")
    ok = tuned_entry(a100, 0.5)
    assert entry_problem(ok) is None
    # A config that needs a Hopper GPU (wgmma) is refused for a GPU of compute capability 8.0.
    tf32 = parse_spec("N=2,C=64,H=14,W=14,K=128,R=3,S=3,pad=1,precision=tf32")
    hopper_only = tuned_entry(replace(key, problem_key=tf32.key()), 0.5, family="implicit_gemm_wgmma")
    assert entry_problem(hopper_only) is None
    assert "outside implicit_gemm_wgmma's search space" in entry_problem(
        replace(hopper_only, key=replace(hopper_only.key, gpu_name="NVIDIA A100-SXM4-80GB", compute_capability="8.0")))
    export = tmp_path / "w.json"
    _export(export, [ok])
    with WinnerCache(tmp_path / "c.sqlite") as winners:
        assert winners.import_file(export).stored == 1
        assert winners.get(a100) == ok and winners.get(key) is None  # under the A100's key only


def test_cache_import_names_each_rejected_entry_in_short_lines(tmp_path, capsys, key):
    huge = [replace(tuned_entry(key), family=HUGE_TEXT),
            replace(tuned_entry(key), key=replace(key, problem_key=HUGE_TEXT))]
    bad = [*huge, *(entry for entry, _ in _foreign_entries(key).values())]
    export = tmp_path / "w.json"
    _export(export, bad)
    code, out, err = run_cli(capsys, "cache", "import", export, "--cache", tmp_path / "c.sqlite")
    assert code == 1 and err == ""
    text = " ".join(out.split())  # (the console wraps long lines)
    assert text.startswith(f"imported 0 winners into {tmp_path / 'c.sqlite'}; rejected {len(bad)} entries")
    assert "rejected entries[0] (N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1,dilation=1, 'xxxx" in text
    assert "... (100000 characters)): '" in text and "(100000 characters) is not a kernel family" in text
    assert "rejected entries[1] (xxxx" in text and "the problem is not a valid spec" in text
    assert len(out) < 4000  # five reasons shown, each value cut short
    with WinnerCache(tmp_path / "c.sqlite") as winners:
        assert len(winners) == 0


def test_a_malformed_entry_is_quoted_short(tmp_path, key):
    entry = tuned_entry(key).as_dict()
    entry["key"]["cuda_runtime"] = HUGE_TEXT
    export = tmp_path / "w.json"
    export.write_text(json.dumps({"format": EXPORT_FORMAT, "schema_version": SCHEMA_VERSION, "entries": [entry]}))
    with WinnerCache(tmp_path / "c.sqlite") as winners:
        with pytest.raises(CacheError) as info:
            winners.import_file(export)
    assert "entries[0] is malformed: key.cuda_runtime must be int" in str(info.value)
    assert len(str(info.value)) < 600 and "(100" in str(info.value)


@pytest.mark.parametrize("action", [["import", "w.json"], ["export", "out.json"]])
def test_a_cache_that_cannot_be_read_is_named(action, tmp_path, capsys, monkeypatch, key):
    """``--cache /proc/self/mem``: a "regular" file whose reads fail said "Input/output error" alone."""
    monkeypatch.chdir(tmp_path)
    _export(tmp_path / "w.json", [tuned_entry(key)])
    code, out, err = run_cli(capsys, "cache", *action, "--cache", "/proc/self/mem")
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.startswith("autoconv cache: error: cache /proc/self/mem: cannot be read (")
    assert not (tmp_path / "out.json").exists()
