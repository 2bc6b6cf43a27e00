"""Why call 4's transfer runs missed Inception-v3's Conv2d_4a_3x3 (thirty-fifth session): the history's
model refitted from the history run's journal (call4/journal_H.gz), and for the layer's valid
implicit_gemm_wgmma configurations: where it ranks the full studies' winners (call4/tune_P_*.json.gz),
what it predicted for the configurations the transfer run T_a timed (call4/journal_T_a.gz), and the
order in which it ranks the variations of T_a's final best. CPU only; H100's limits (the H200's SM
count and shared memory are the same).

    python3 results/h100/thirtyfifth/conv2d_4a.py
"""
import gzip
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy
import optuna

from autoconv.kernels.limits import H100
from autoconv.problems.config import load_config
from autoconv.search.points import ValidPoints, config_key, enumerate_points
from autoconv.search.ranker import Ranker, history_samples
from autoconv.search.storage import make_storage
from autoconv.search.study import parse_study_name, read_trials

HERE = Path(__file__).parent / "call4"
FAMILY = "implicit_gemm_wgmma"
LAYER = "Conv2d_4a_3x3"
SHOWN = ("BM", "BN", "WGN", "BK", "STAGES", "SPLIT_K", "MIN_BLOCKS", "GATHER", "MMA_OVERLAP")


def journal(name):
    handle, path = tempfile.mkstemp(suffix=".journal")
    with gzip.open(HERE / name) as source, os.fdopen(handle, "wb") as target:
        shutil.copyfileobj(source, target)
    return make_storage(path)


def short(config):
    return " ".join(f"{name} {config[name]}" for name in SHOWN)


def main():
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    history = journal("journal_H.gz")
    gpu_name = parse_study_name(optuna.get_all_study_names(history)[0]).gpu_name
    ranker = Ranker(history_samples(history, gpu_name, "fp32"), H100)
    problem = next(item.problem for item in load_config("examples/inception_v3_layers.yaml").problems
                   if item.name == LAYER)
    points = ValidPoints(enumerate_points(problem, (FAMILY,), H100, 1 << 30))
    configs = points.points[FAMILY]
    keys = [config_key(FAMILY, config) for config in configs]
    predicted = ranker.predict_ms(problem, FAMILY, configs)
    place = {keys[index]: rank for rank, index in enumerate(numpy.argsort(predicted, kind="stable"), 1)}
    print(f"{LAYER}: {len(configs)} valid {FAMILY} configurations; model of {ranker.problems} problems")
    for run in ("P_a", "P_b"):
        with gzip.open(HERE / f"tune_{run}.json.gz") as file:
            outcome = next(p for p in json.load(file)["problems"] if p["name"] == LAYER)
        key = config_key(outcome["family"], outcome["config"])
        print(f"  {run}'s winner, {outcome['time_ms']:.4f} ms: predicted "
              f"{predicted[keys.index(key)]:.4f} ms, {place[key]} of {len(configs)}  ({short(outcome['config'])})")
    transfer = journal("journal_T_a.gz")
    timed = []
    for name in optuna.get_all_study_names(transfer):
        if parse_study_name(name).problem == problem:
            timed = sorted((record for record in read_trials(optuna.load_study(study_name=name, storage=transfer))
                            if record.family == FAMILY and record.time_ms is not None), key=lambda r: r.time_ms)
    print(f"  T_a timed {len(timed)} of them:")
    for record in timed:
        print(f"    {record.time_ms:.4f} ms, predicted {predicted[keys.index(record.key)]:.4f} ms, "
              f"{place[record.key]} of {len(configs)}  ({short(record.config)})")
    variations = points.variations(FAMILY, timed[0].config)
    by_prediction = ranker.predict_ms(problem, FAMILY, variations)
    print("  the variations of T_a's best, fastest predicted first:")
    for index in numpy.argsort(by_prediction, kind="stable"):
        seen = "timed" if config_key(FAMILY, variations[index]) in {r.key for r in timed} else ""
        print(f"    predicted {by_prediction[index]:.4f} ms  {short(variations[index])}  {seen}")


if __name__ == "__main__":
    main()
