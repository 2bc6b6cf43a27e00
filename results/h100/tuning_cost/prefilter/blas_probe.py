"""Time the history model's set-up for one VGG-16 problem (history: a ResNet-50 journal), as a
tuning worker does at a study's start."""
import sys, time, warnings, optuna
warnings.simplefilter("ignore"); optuna.logging.set_verbosity(optuna.logging.ERROR)
import numpy
from autoconv.search.storage import make_storage
from autoconv.search.ranker import Ranker, history_samples
from autoconv.search.prefilter import PreFilter
from autoconv.search.points import ValidPoints, enumerate_points
from autoconv.kernels.limits import H100
from autoconv.kernels.families import FAMILY_NAMES
from autoconv.problems.problem import parse_spec
st = make_storage(sys.argv[1])
p = parse_spec("N=8,C=512,H=14,W=14,K=512,R=3,S=3,stride=1,pad=1,dilation=1,bias=1")
pts = ValidPoints(enumerate_points(p, FAMILY_NAMES, H100, 1 << 30))
for round in range(3):
    t0 = time.perf_counter(); s = history_samples(st, "NVIDIA H100 80GB HBM3", "fp32")
    t1 = time.perf_counter(); r = Ranker(s)
    t2 = time.perf_counter(); f = PreFilter(r, p, pts)
    t3 = time.perf_counter()
    print(f"samples {t1-t0:.2f} s, fit {t2-t1:.2f} s, prefilter {t3-t2:.2f} s", flush=True)
