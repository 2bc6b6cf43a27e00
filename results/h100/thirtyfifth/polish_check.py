"""Which of call 4's transfer losses the per-parameter polish could recover (offline, thirty-fifth
session): for each Inception layer where a transfer run's winner is over 3% behind the better full
run's (each run's own `tune.json` times), whether that full winner is one of the variations of the
transfer's best (:meth:`ValidPoints.variations`), its place among them by the history's model
(refitted on call4/journal_H.gz), and the parameters for which it is the fastest-predicted variation
changing that parameter (what the per-parameter polish of ../thirtyfourth/per_parameter_polish.diff
adds to the 6 fastest predicted).

    python3 results/h100/thirtyfifth/polish_check.py
"""
import gzip
import json
import os
import shutil
import tempfile
from pathlib import Path

import optuna

from autoconv.kernels.limits import H100
from autoconv.problems.config import load_config
from autoconv.search.points import ValidPoints, config_key, enumerate_points
from autoconv.search.ranker import Ranker, history_samples
from autoconv.search.storage import make_storage
from autoconv.search.study import parse_study_name

HERE = Path(__file__).parent / "call4"
BEHIND = 1.03


def outcomes(run):
    with gzip.open(HERE / f"tune_{run}.json.gz") as file:
        return {problem["name"]: problem for problem in json.load(file)["problems"]}


def main():
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    handle, path = tempfile.mkstemp(suffix=".journal")
    with gzip.open(HERE / "journal_H.gz") as source, os.fdopen(handle, "wb") as target:
        shutil.copyfileobj(source, target)
    history = make_storage(path)
    gpu_name = parse_study_name(optuna.get_all_study_names(history)[0]).gpu_name
    ranker = Ranker(history_samples(history, gpu_name, "fp32"), H100)
    runs = {run: outcomes(run) for run in ("P_a", "P_b", "T_a", "T_b")}
    for item in load_config("examples/inception_v3_layers.yaml").problems:
        full = min((runs[run][item.name] for run in ("P_a", "P_b")), key=lambda outcome: outcome["time_ms"])
        for run in ("T_a", "T_b"):
            transfer = runs[run][item.name]
            ratio = transfer["time_ms"] / full["time_ms"]
            if ratio < BEHIND:
                continue
            line = f"{item.name:24s} {run} {ratio:.3f}: transfer {transfer['family']}, full {full['family']}"
            family = transfer["family"]
            if family == full["family"]:
                changed = {name for name, value in transfer["config"].items() if full["config"][name] != value}
                points = ValidPoints(enumerate_points(item.problem, (family,), H100, 1 << 30))
                variations = points.variations(family, transfer["config"])
                predicted = ranker.predict_ms(item.problem, family, variations)
                keys = [config_key(family, variation) for variation in variations]
                target = config_key(family, full["config"])
                line += f"; differs in {sorted(changed)}"
                if target in keys:
                    at = keys.index(target)
                    # The per-parameter polish takes, for each parameter, the fastest-predicted
                    # variation that changes it.
                    picked_for = sorted(name for name in changed if predicted[at] <= min(
                        predicted[i] for i, v in enumerate(variations) if v[name] != transfer["config"][name]))
                    line += (f"; a variation, {int((predicted < predicted[at]).sum()) + 1} of {len(keys)} by "
                             f"prediction; the fastest predicted of those changing {picked_for or 'none of them'}")
                else:
                    line += "; not a variation"
            print(line)


if __name__ == "__main__":
    main()
