"""How much of a tune's compile work went to configurations it had already compiled for another
problem, and which families the compile work went to (CPU, from the journals of ../startup).

    python results/h100/tuning_cost/config_reuse/reuse.py

A candidate's source has the problem's sizes as compile-time constants, so the same configuration
on another layer is compiled again. This counts, per run, the evaluated candidates (those with a
``compile_cpu_s``) whose family and parameters had been evaluated on an earlier problem of the
same run (by ``datetime_start``), and their compile CPU-seconds.
"""

from __future__ import annotations

import collections
import gzip
import shutil
import tempfile
from pathlib import Path

import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage

JOURNALS = Path(__file__).parent.parent / "startup"


def evaluated(journal: Path) -> list[tuple]:
    """(start, study, params key, compile CPU-s, family) of each evaluated trial, in start order."""
    with tempfile.TemporaryDirectory() as folder:
        plain = Path(folder, "journal")
        with gzip.open(journal, "rb") as packed, open(plain, "wb") as out:
            shutil.copyfileobj(packed, out)
        storage = JournalStorage(JournalFileBackend(str(plain)))
        rows = []
        for study in storage.get_all_studies():
            for trial in storage.get_all_trials(study._study_id):
                if "compile_cpu_s" in trial.user_attrs and trial.params:
                    rows.append((trial.datetime_start, study.study_name, tuple(sorted(trial.params.items())),
                                 trial.user_attrs["compile_cpu_s"], trial.params["family"]))
    return sorted(rows)


def main() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    print("| run | evaluated | repeated config | their compile CPU-s | all compile CPU-s | by family (CPU-s, share) |")
    print("|---|---|---|---|---|---|")
    for journal in sorted(JOURNALS.glob("journal_*.gz")):
        first_problem: dict[tuple, str] = {}
        repeated, repeated_cpu, total = 0, 0.0, 0.0
        by_family: collections.Counter = collections.Counter()
        rows = evaluated(journal)
        for _start, study, key, cpu, family in rows:
            total += cpu
            by_family[family] += cpu
            if key in first_problem and first_problem[key] != study:
                repeated += 1
                repeated_cpu += cpu
            first_problem.setdefault(key, study)
        families = ", ".join(f"{name} {cpu:.0f} ({cpu / total:.0%})" for name, cpu in by_family.most_common())
        run = journal.name.removeprefix("journal_").removesuffix(".gz")
        print(f"| {run} | {len(rows)} | {repeated} | {repeated_cpu:.1f} | {total:.1f} | {families} |")


if __name__ == "__main__":
    main()
