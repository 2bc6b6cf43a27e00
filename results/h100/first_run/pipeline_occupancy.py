"""Per tuning worker of a run, from its Optuna journal: how many candidates it had in flight
(asked and not yet told) over time, and a candidate's latency (asked to told) against its
compile and GPU seconds. Counts only evaluated candidates (not invalid proposals or repeats).

    python3 results/h100/first_run/pipeline_occupancy.py results/h100/first_run/call3/journal_new1.gz ...
"""

import collections
import gzip
import shutil
import sys
import tempfile

import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

#: In-flight counts are reported in buckets of this many (24 is the default pipeline depth).
BUCKET = 4


def candidates_by_worker(journal: str) -> dict[str, list[tuple[float, float, float, float]]]:
    """owner -> [(asked, told, compile_s, run_s)] of the journal's evaluated candidates."""
    with tempfile.NamedTemporaryFile(suffix=".journal") as plain:
        with gzip.open(journal, "rb") as packed:
            shutil.copyfileobj(packed, plain)
        plain.flush()
        storage = JournalStorage(JournalFileBackend(plain.name))
        found = collections.defaultdict(list)
        for name in optuna.get_all_study_names(storage):
            for trial in optuna.load_study(study_name=name, storage=storage).get_trials(deepcopy=False):
                if trial.datetime_start is None or trial.datetime_complete is None \
                        or trial.user_attrs.get("status") in ("invalid", "repeat"):
                    continue
                found[trial.user_attrs.get("owner", "?")].append(
                    (trial.datetime_start.timestamp(), trial.datetime_complete.timestamp(),
                     trial.user_attrs.get("compile_s", 0.0), trial.user_attrs.get("run_s", 0.0)))
        return found


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def main(journals):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for journal in journals:
        print(journal)
        for owner, candidates in candidates_by_worker(journal).items():
            changes = sorted([(asked, 1) for asked, *_ in candidates] + [(told, -1) for _, told, *_ in candidates])
            in_flight, last, area = 0, changes[0][0], 0.0
            share: collections.Counter = collections.Counter()
            for moment, change in changes:
                area += in_flight * (moment - last)
                share[in_flight // BUCKET * BUCKET] += moment - last
                last, in_flight = moment, in_flight + change
            span = changes[-1][0] - changes[0][0]
            print(f"  {owner}: {len(candidates)} candidates in {span:.1f} s, {area / span:.1f} in flight on average; "
                  f"median latency {median(told - asked for asked, told, *_ in candidates):.2f} s, "
                  f"compile {median(c[2] for c in candidates):.2f} s, GPU {median(c[3] for c in candidates):.3f} s")
            print("    share of the time with N.. in flight: "
                  + ", ".join(f"{bucket}: {seconds / span:.2f}" for bucket, seconds in sorted(share.items())))


if __name__ == "__main__":
    main(sys.argv[1:])
