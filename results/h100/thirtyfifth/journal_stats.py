"""What a tuning run's study journal says it compiled and ran (thirty-fifth session): candidates
(evaluated trials), their compile CPU seconds and GPU seconds, the proposals told invalid, and the
candidates by family and by where they came from (the sampler, a repair of a proposal of the same
family or of another, a family default or seed, a neighbour's winner, a variation of the best).

    python3 journal_stats.py JOURNAL[.gz] [--by-origin]
"""
import collections
import gzip
import os
import re
import shutil
import sys
import tempfile

import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage

REPAIR = re.compile(r"nearest unevaluated valid point to trial (\d+)")


def load(path):
    if path.endswith(".gz"):
        handle, plain = tempfile.mkstemp(suffix=".journal")
        with gzip.open(path) as source, os.fdopen(handle, "wb") as target:
            shutil.copyfileobj(source, target)
        path = plain
    return JournalStorage(JournalFileBackend(path))


def origin_kind(trial, family_of):
    origin = trial.user_attrs.get("origin")
    if origin is None:
        return "sampler"
    repaired = REPAIR.match(origin)
    if repaired:
        source = family_of.get(int(repaired.group(1)))
        return "repair, same family" if source == trial.params["family"] else f"repair of a {source} proposal"
    if origin.startswith("winner of"):
        return "a neighbour's winner"
    if origin.startswith("a variation of the best"):
        return "a variation of the best"
    return re.sub(r"\s*\(.*", "", origin)


def main():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = load(sys.argv[1])
    total = collections.Counter()
    by = collections.defaultdict(collections.Counter)
    for study in storage.get_all_studies():
        trials = storage.get_all_trials(study._study_id, deepcopy=False)
        family_of = {t.number: t.params.get("family") for t in trials}
        for trial in trials:
            status = trial.user_attrs.get("status")
            if status == "invalid":
                total["invalid proposals"] += 1
            if "compile_cpu_s" not in trial.user_attrs:
                continue
            key = (trial.params["family"], origin_kind(trial, family_of))
            for counter in (total, by[key]):
                counter["candidates"] += 1
                counter["compile CPU s"] += trial.user_attrs["compile_cpu_s"]
                counter["GPU s"] += trial.user_attrs.get("run_s", 0.0)
    print(f"{sys.argv[1]}: {len(storage.get_all_studies())} studies, {total['candidates']} candidates, "
          f"{total['compile CPU s']:.0f} compile CPU s, {total['GPU s']:.1f} GPU s, "
          f"{total['invalid proposals']} proposals told invalid")
    families = collections.Counter()
    for (family, _), counter in by.items():
        families[family] += counter["candidates"]
    print("  by family: " + ", ".join(f"{family} {count}" for family, count in families.most_common()))
    crossed = collections.Counter()
    for (_, kind), counter in by.items():
        if kind.startswith("repair of a"):
            crossed.update(counter)
    print(f"  repairs of another family's proposal: {crossed['candidates']} candidates, "
          f"{crossed['compile CPU s']:.0f} compile CPU s, {crossed['GPU s']:.1f} GPU s")
    if "--by-origin" in sys.argv:
        for (family, kind), counter in sorted(by.items(), key=lambda item: -item[1]["compile CPU s"]):
            print(f"  {family:24s} {kind:36s} {counter['candidates']:5d} {counter['compile CPU s']:7.1f} CPU s "
                  f"{counter['GPU s']:6.1f} GPU s")


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:  # (piped into head)
        pass
