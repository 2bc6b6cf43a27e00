"""``autoconv report`` and hostile input: it never changes its input or a file it did not
write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autoconv.bench.report import PLOTS
from autoconv.commands import main as cli
from tests.bench.test_report import sample_results


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if not p.is_symlink()}


def _compact(results) -> str:
    """A results file as another writer would lay it out: one line, no indentation."""
    return json.dumps(results, separators=(",", ":"))


# ---- nothing report did not write is changed -----------------------------------------------------

@pytest.mark.parametrize("plots", [False, True])
def test_report_leaves_its_input_and_a_bench_results_file_beside_it_as_they_were(tmp_path, capsys, plots):
    """Reporting ``other.json`` into the folder of a bench ``results.json`` (no --out), then
    reporting that ``results.json`` itself: neither JSON file changes by one byte, and report
    writes only its own files (report.md, results.csv, the plots)."""
    if plots:
        pytest.importorskip("matplotlib")
    flags = [] if plots else ["--no-plots"]
    bench_results = sample_results()
    other = sample_results()
    other["problems"] = other["problems"][:1]
    other["environment"]["gpu"] = "another GPU"
    (tmp_path / "results.json").write_text(_compact(bench_results))
    (tmp_path / "other.json").write_text(_compact(other))
    before = _snapshot(tmp_path)

    assert cli.main(["report", "--results", str(tmp_path / "other.json"), *flags]) == 0
    assert cli.main(["report", "--results", str(tmp_path / "results.json"), *flags]) == 0
    after = _snapshot(tmp_path)
    assert {name: after[name] for name in before} == before
    assert set(after) - set(before) <= {"report.md", "results.csv", *PLOTS}
    assert "# autoconv vs cuDNN on NVIDIA H100" in after["report.md"].decode()  # the last report's
    assert "results.json" not in capsys.readouterr().out.split("wrote")[-1].split(":")[1]


def test_report_never_replaces_a_link_or_its_own_input(tmp_path, capsys):
    """A results file named like a report's file, in the folder the report goes to, is
    refused and left as it was; so is a link named like one (replacing it would change what
    the link is, which report did not write)."""
    results = _compact(sample_results())
    named = tmp_path / "named"
    named.mkdir()
    (named / "report.md").write_text(results)
    code = cli.main(["report", "--results", str(named / "report.md"), "--no-plots"])
    assert code == 2 and "report.md" in capsys.readouterr().err
    assert (named / "report.md").read_text() == results and sorted(p.name for p in named.iterdir()) == ["report.md"]

    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "results.json").write_text(results)
    elsewhere = tmp_path / "elsewhere"
    assert cli.main(["report", "--results", str(linked / "results.json"), "--out", str(elsewhere),
                     "--no-plots"]) == 0
    (linked / "report.md").symlink_to(elsewhere / "report.md")
    code = cli.main(["report", "--results", str(linked / "results.json"), "--no-plots"])
    err = capsys.readouterr().err
    assert code == 2 and "report.md" in err and len(err.strip().splitlines()) == 1, err
    assert (linked / "report.md").is_symlink()
