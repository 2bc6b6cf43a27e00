"""How much of a tune's compile work went to configurations it had already compiled for another
problem, and which families the compile work went to (CPU, from the journals of ../startup).

    python results/h100/tuning_cost/config_reuse/reuse.py

A candidate's source has the problem's sizes as compile-time constants, so the same configuration
on another layer is compiled again. This counts, per run, the evaluated candidates (those with a
``compile_cpu_s``) whose family and parameters had been evaluated on an earlier problem of the
same run (by ``datetime_start``), those whose configuration a ResNet-50 tune had evaluated
(:data:`HISTORY`), and their compile CPU-seconds.
"""

from __future__ import annotations

import collections
import gzip
import shutil
import tempfile
from pathlib import Path

import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage

from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.problems.problem import parse_spec
from autoconv.search.study import config_of

JOURNALS = Path(__file__).parent.parent / "startup"
#: Derived values that would still fix a family's code with the problem's sizes at run time (read
#: off its templates, seventeenth session): a compiled kernel's key is the configuration and these.
#: Only implicit_gemm_wgmma's are listed (~60% of the compile CPU); for the other families the
#: share counted is an upper bound.
STRUCTURAL = {"implicit_gemm_wgmma": ("OUT_VEC", "PRECISION_TF32", "HAS_BIAS")}
#: A ResNet-50 tune's journal (H100, 8317039, the same search spaces): the history a VGG-16 tune
#: could have drawn compiled configurations from.
HISTORY = Path(__file__).parent.parent / "prefilter" / "call1" / "journal_rn50.gz"


def structural_key(problem_spec: str, params: dict) -> tuple:
    """The configuration and its :data:`STRUCTURAL` values on the problem ``problem_spec``."""
    family = params["family"]
    config = config_of(params, family)
    names = STRUCTURAL.get(family, ())
    values = get_family(family).space.context(config, parse_spec(problem_spec), H100) if names else {}
    return (family, tuple(sorted(config.items())), tuple(values[name] for name in names))


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


def problem_specs(journal: Path) -> dict[str, str]:
    """Each study's problem (its ``problem`` attribute) by study name."""
    with tempfile.TemporaryDirectory() as folder:
        plain = Path(folder, "journal")
        with gzip.open(journal, "rb") as packed, open(plain, "wb") as out:
            shutil.copyfileobj(packed, out)
        storage = JournalStorage(JournalFileBackend(str(plain)))
        return {study.study_name: study.user_attrs["problem"] for study in storage.get_all_studies()}


def main() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    history = evaluated(HISTORY)
    history_configs = {key for _start, _study, key, _cpu, _family in history}
    first: dict[tuple, str] = {}
    again, again_cpu = 0, 0.0
    for _start, study, key, cpu, _family in history:
        if key in first and first[key] != study:
            again, again_cpu = again + 1, again_cpu + cpu
        first.setdefault(key, study)
    total = sum(cpu for *_, cpu, _family in history)
    print(f"ResNet-50 history ({HISTORY.parent.name}/{HISTORY.name}): {len(history)} evaluated candidates, "
          f"{len(history_configs)} distinct configurations; {again} repeat one evaluated on another layer, "
          f"{again_cpu:.1f} of its {total:.1f} compile CPU-s ({again_cpu / total:.0%})")
    specs = problem_specs(HISTORY)
    first_kernel: dict[tuple, str] = {}
    kernel_again_cpu = 0.0
    for _start, study, key, cpu, _family in history:
        kernel = structural_key(specs[study], dict(key))
        if kernel in first_kernel and first_kernel[kernel] != study:
            kernel_again_cpu += cpu
        first_kernel.setdefault(kernel, study)
    print(f"  keyed also by the values that fix the code ({', '.join(sorted(STRUCTURAL))}): "
          f"{kernel_again_cpu:.1f} compile CPU-s ({kernel_again_cpu / total:.0%})\n")
    print("| run | evaluated | repeated config (CPU-s) | config in the history (CPU-s) | either (CPU-s) "
          "| all compile CPU-s | by family (CPU-s, share) |")
    print("|---|---|---|---|---|---|---|")
    for journal in sorted(JOURNALS.glob("journal_*.gz")):
        first_problem: dict[tuple, str] = {}
        counts: collections.Counter = collections.Counter()
        cpus: collections.Counter = collections.Counter()
        by_family: collections.Counter = collections.Counter()
        rows = evaluated(journal)
        for _start, study, key, cpu, family in rows:
            by_family[family] += cpu
            repeated = key in first_problem and first_problem[key] != study
            first_problem.setdefault(key, study)
            for name, holds in (("repeated", repeated), ("history", key in history_configs),
                                ("either", repeated or key in history_configs), ("all", True)):
                counts[name] += holds
                cpus[name] += cpu * holds
        total = cpus["all"]
        families = ", ".join(f"{name} {cpu:.0f} ({cpu / total:.0%})" for name, cpu in by_family.most_common())
        run = journal.name.removeprefix("journal_").removesuffix(".gz")
        shares = " | ".join(f"{counts[name]} ({cpus[name]:.1f}, {cpus[name] / total:.0%})"
                            for name in ("repeated", "history", "either"))
        print(f"| {run} | {len(rows)} | {shares} | {total:.1f} | {families} |")


if __name__ == "__main__":
    main()
