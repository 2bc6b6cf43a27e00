"""Offline: train the ranker on a ResNet-50 journal, evaluate on VGG-16 journals:
rank correlation per study, residual spread, and a model-confident stopping rule replayed on
each study's actual trial order (the search path is unchanged until the rule stops it)."""
import json, math, sys, time, warnings
import numpy as np
import optuna
from autoconv.search.storage import make_storage
from autoconv.search.ranker import Ranker, history_samples, Sample
from autoconv.search.study import parse_study_name, read_trials, ok_trials
from autoconv.search.points import enumerate_points, config_key
from autoconv.kernels.limits import H100
from autoconv.backends.base import Status
warnings.simplefilter("ignore"); optuna.logging.set_verbosity(optuna.logging.ERROR)
GPU = "NVIDIA H100 80GB HBM3"
train_path, *test_paths = sys.argv[1:]
samples = history_samples(make_storage(train_path), GPU, "fp32")
t = time.time(); ranker = Ranker(samples); print("samples", len(samples), "families", ranker.families, f"{time.time()-t:.1f}s")

def spearman(a, b):
    ra = np.argsort(np.argsort(a)); rb = np.argsort(np.argsort(b)); return float(np.corrcoef(ra, rb)[0, 1])

def phi(z): return 0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))

out = {}
for path in test_paths:
    storage = make_storage(path)
    for name in optuna.get_all_study_names(storage):
        found = parse_study_name(name); problem = found.problem
        study = optuna.load_study(study_name=name, storage=storage)
        recs = [r for r in read_trials(study) if r.evaluated]
        recs.sort(key=lambda r: r.number)
        ok = [r for r in recs if r.status is Status.OK and r.family in ranker.families]
        pred = {}
        for fam in {r.family for r in ok}:
            rs = [r for r in ok if r.family == fam]
            for r, p in zip(rs, ranker.predict_ms(problem, fam, [r.config for r in rs])): pred[r.number] = float(p)
        actual = np.array([r.value for r in ok]); predicted = np.array([pred[r.number] for r in ok])
        rho = spearman(actual, predicted) if len(ok) > 3 else float('nan')
        resid = np.log(actual) - np.log(predicted)
        # all valid points and their predictions (families with a model)
        points = enumerate_points(problem, ranker.families, H100, 1 << 30)
        allkeys, allpred = [], []
        for fam, configs in points.items():
            if configs:
                allkeys += [config_key(fam, c) for c in configs]; allpred += list(ranker.predict_ms(problem, fam, configs))
        allpred = np.log(np.array(allpred)); allkeys = np.array(allkeys)
        # where does the study's final best rank among all points by prediction?
        best = min(ok, key=lambda r: r.value); bk = config_key(best.family, best.config)
        rank_of_best = int((allpred < allpred[list(allkeys).index(bk)]).sum()) if bk in set(allkeys) else -1
        # replay a stopping rule: after each evaluated trial (from the 5th), offset/sigma from the
        # residuals so far, expected number of unevaluated points beating best by 2%
        seq = []; evaluated = set(); res_so_far = []; bestv = math.inf
        for i, r in enumerate(recs):
            evaluated.add(config_key(r.family, r.config))
            if r.status is Status.OK:
                bestv = min(bestv, r.value)
                if r.number in pred: res_so_far.append(math.log(r.value) - math.log(pred[r.number]))
            if i >= 4 and len(res_so_far) >= 3:
                off = float(np.median(res_so_far)); sig = max(0.05, 1.4826 * float(np.median(np.abs(np.array(res_so_far) - off))))
                mask = ~np.isin(allkeys, list(evaluated))
                z = (math.log(bestv * 0.98) - (allpred[mask] + off)) / sig
                p = phi(z[z > -4]) if (z > -4).any() else np.array([0.0])
                seq.append((i + 1, bestv, float(p.sum()), float(p.max())))
        final = min(r.value for r in ok)
        out[f"{path}:{problem.spec()}"] = dict(rho=rho, resid_sd=float(np.std(resid)), n=len(recs), valid=len(allkeys),
                                                rank_of_best=rank_of_best, seq=seq, final=final)
        print(f"{problem.spec()[:52]:52s} n={len(recs):3d} rho={rho:.2f} resid_sd={np.std(resid):.2f} offset={np.median(resid):+.2f} best ranks {rank_of_best}/{len(allkeys)}", flush=True)
json.dump(out, open(".probe/ranker_eval.json", "w"))
