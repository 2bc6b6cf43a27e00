"""The tuning history's model with and without the GPU-fill features (work_rows), offline, each
ResNet-50 layer left out of the training in turn (thirty-fourth session).

    [FAMILY=name] python3 results/h100/thirtyfourth/ranker_fill.py JOURNAL.gz [JOURNAL.gz ...]

For $FAMILY (default implicit_gemm_wgmma, the family that wins every ResNet-50 layer), per left-out layer: the rank
correlation of predicted and measured times over the layer's timed candidates (all, and those
within 1.3x of its best); the share of candidate pairs that differ only in SPLIT_K (by more than 3%
measured) that the model orders as measured; and where the layer's fastest measured configuration
ranks among all its valid points by prediction (what a transfer study's start and polish pick from)."""
import collections
import gzip
import itertools
import math
import os
import shutil
import sys
import tempfile

import numpy
import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage

from autoconv.kernels.limits import H100
from autoconv.search import ranker as ranker_module
from autoconv.search.points import ValidPoints, config_key, enumerate_points

FAMILY = os.environ.get("FAMILY", "implicit_gemm_wgmma")
optuna.logging.set_verbosity(optuna.logging.WARNING)


def spearman(a, b):
    return numpy.corrcoef(numpy.argsort(numpy.argsort(a)), numpy.argsort(numpy.argsort(b)))[0, 1]


def load(paths):
    samples = []
    for path in paths:
        with tempfile.NamedTemporaryFile(suffix=".journal", delete=False) as copy, gzip.open(path) as source:
            shutil.copyfileobj(source, copy)
        samples += ranker_module.history_samples(JournalStorage(JournalFileBackend(copy.name)), "NVIDIA H200", "fp32")
    return samples


def evaluate(label, samples):
    by_problem = collections.defaultdict(list)
    for sample in samples:
        if sample.family == FAMILY:
            by_problem[sample.problem].append(sample)
    rhos, near_rhos, best_places, ordered, pairs = [], [], [], 0, 0
    for problem, mine in by_problem.items():
        model = ranker_module.Ranker([s for s in samples if s.problem != problem], H100)
        predicted = numpy.log(model.predict_ms(problem, FAMILY, [s.config for s in mine]))
        measured = numpy.log([s.time_ms for s in mine])
        rhos.append(spearman(predicted, measured))
        near = measured < measured.min() + math.log(1.3)
        if near.sum() > 4:
            near_rhos.append(spearman(predicted[near], measured[near]))
        for i, j in itertools.combinations(range(len(mine)), 2):
            a, b = mine[i].config, mine[j].config
            if "SPLIT_K" in a and a["SPLIT_K"] != b["SPLIT_K"] and all(a[k] == b[k] for k in a if k != "SPLIT_K") \
                    and abs(measured[i] - measured[j]) > math.log(1.03):
                pairs += 1
                ordered += (predicted[i] < predicted[j]) == (measured[i] < measured[j])
        points = ValidPoints(enumerate_points(problem, (FAMILY,), H100, 1 << 30))
        every = model.predict_valid(problem, FAMILY, points)
        fastest = mine[int(numpy.argmin(measured))].config
        keys = [config_key(FAMILY, config) for config in points.points[FAMILY]]
        if config_key(FAMILY, fastest) in keys:
            best_places.append(int((every < every[keys.index(config_key(FAMILY, fastest))]).sum()) + 1)
    print(f"{label:8s} rho median {numpy.median(rhos):.3f} | within 1.3x of the best: rho median "
          f"{numpy.median(near_rhos):.3f} | SPLIT_K pairs ordered {ordered}/{pairs} = {ordered / max(pairs, 1):.2f} | "
          f"the measured best's place by prediction: median {numpy.median(best_places):.0f}, "
          f"worst {max(best_places)}, in the top 10 for {sum(p <= 10 for p in best_places)}/{len(best_places)} layers")


samples = load(sys.argv[1:])
print(f"{len(samples)} timed candidates of {len({s.problem for s in samples})} problems")
evaluate("with", samples)
ranker_module.WORK_TILES = {}  # (every family then gets zero columns: the model without the features)
evaluate("without", samples)
