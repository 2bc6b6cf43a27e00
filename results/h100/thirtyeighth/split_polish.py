"""What the polish's extra splits did, counted from tune_run's journals.

For each run: how many of the polish's variations that change SPLIT_K were not the first such
variation of their polish (a polish queues its variations fastest predicted first, so the first
one that changes SPLIT_K is the model's pick, the later ones are what ``EVERY_CHOICE`` adds), and
which of those set their study's best by more than 1%; then the same of the other splits of
runner-up tiles (``autoconv.search.runners_up``).

    python3 results/h100/thirtyeighth/split_polish.py call1/journal_E_a.gz ...

Prints one line per journal; reads them with Optuna's journal storage (unzipped to a temporary file).
"""

from __future__ import annotations

import gzip
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage

VARIATION = re.compile(r"a variation of the best \(trial (\d+)\)")
# (the origin named "split" before the thirty-ninth session, then SPLIT_K or STAGES)
RUNNER_UP = re.compile(r"another \w+ of a runner-up tile")
SPLIT_K = re.compile(r"_SPLIT_K(\d+)_")
NEW_BEST_MARGIN = 0.99  # a time under 99% of the best so far counts as a new best


def split_k(trial: optuna.trial.FrozenTrial) -> str | None:
    match = SPLIT_K.search(trial.user_attrs.get("details", {}).get("kernel_name", ""))
    return match.group(1) if match else None


def count(storage: JournalStorage) -> tuple[int, list[tuple[str, float]], int, list[tuple[str, float]]]:
    later_splits, new_bests, runner_up_splits, runner_up_bests = 0, [], 0, []
    for summary in optuna.get_all_study_summaries(storage):
        trials = optuna.load_study(study_name=summary.study_name, storage=storage).trials
        splits_per_polish: Counter[int] = Counter()
        best = None
        for trial in trials:
            timed = trial.state == optuna.trial.TrialState.COMPLETE and trial.value is not None
            origin = trial.user_attrs.get("origin", "")
            problem = summary.study_name.split("/")[1]
            if RUNNER_UP.match(origin):
                runner_up_splits += 1
                if timed and best is not None and trial.value < best * NEW_BEST_MARGIN:
                    runner_up_bests.append((problem, round(best / trial.value, 3)))
            match = VARIATION.match(origin)
            if match and split_k(trial) is not None:
                base = trials[int(match.group(1))]
                if split_k(trial) != split_k(base):
                    splits_per_polish[base.number] += 1
                    if splits_per_polish[base.number] > 1:
                        later_splits += 1
                        if timed and best is not None and trial.value < best * NEW_BEST_MARGIN:
                            new_bests.append((problem, round(best / trial.value, 3)))
            if timed and (best is None or trial.value < best):
                best = trial.value
    return later_splits, new_bests, runner_up_splits, runner_up_bests


def main(paths: list[str]) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for path in paths:
        with tempfile.NamedTemporaryFile(suffix=".log") as plain:
            with gzip.open(path, "rb") as packed:
                shutil.copyfileobj(packed, plain)
            plain.flush()
            later_splits, new_bests, runner_up_splits, runner_up_bests = count(
                JournalStorage(JournalFileBackend(plain.name)))
        print(f"{Path(path).name}: {later_splits} later splits timed, new bests among them: {new_bests}; "
              f"{runner_up_splits} runner-up tiles' splits timed, new bests among them: {runner_up_bests}")


if __name__ == "__main__":
    main(sys.argv[1:])
