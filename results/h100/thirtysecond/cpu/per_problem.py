"""CPU per problem of the tuner's own work (no compile, no GPU): enumeration, ValidPoints,
the history's model, a transfer's start. Usage: per_problem.py CONFIG STORAGE GPU_NAME"""
import sys, time
import optuna
from autoconv.problems.config import load_config
from autoconv.search.points import enumerate_points, ValidPoints
from autoconv.search.ranker import Ranker, history_samples
from autoconv.search import transfer
from autoconv.kernels.limits import H100
from autoconv.kernels.space import DEFAULT_WORKSPACE_LIMIT
from autoconv.kernels.families import FAMILY_NAMES
from autoconv.search.storage import make_storage
optuna.logging.set_verbosity(optuna.logging.WARNING)
cfg = load_config(sys.argv[1]); storage = make_storage(sys.argv[2]); gpu = sys.argv[3]
tot = {}
def clock(name, f, *a):
    s = time.process_time(); r = f(*a); tot[name] = tot.get(name, 0) + time.process_time() - s; return r
for item in cfg.problems:
    p = item.problem
    pts = clock("enumerate", enumerate_points, p, FAMILY_NAMES, H100, DEFAULT_WORKSPACE_LIMIT)
    vp = clock("ValidPoints", ValidPoints, pts)
    samples = clock("history_samples", history_samples, storage, gpu, p.precision)
    ranker = clock("Ranker", Ranker, samples)
    starts = clock("transfer.starts", transfer.starts, ranker, p, vp)
    fam, cfg0, _ = starts[0]
    clock("variations", vp.variations, fam, cfg0)
    clock("best_variations", transfer.best_variations, ranker, p, vp, fam, cfg0, set())
    from autoconv.search.points import config_key
    timed = {config_key(f, c): 1.0 + i for i, (f, c, _) in enumerate(starts)}
    clock("more_picks", transfer.more_picks, ranker, p, vp, timed)
print({k: round(v, 2) for k, v in tot.items()}, "total", round(sum(tot.values()), 2))
