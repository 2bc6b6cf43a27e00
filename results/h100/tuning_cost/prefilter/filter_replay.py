"""Replay a pre-compile filter on journals: the ranker trained on TRAIN journal(s) predicts each
evaluated candidate of each TEST study; report, per study, the predicted percentile (among the
problem's valid points, all families with a model) of every evaluated candidate, the share that a
filter at percentile Q would have skipped, and the percentile of the study's best and of any
candidate within 2% of it."""
import sys, math, warnings, json
import numpy as np, optuna
warnings.simplefilter("ignore"); optuna.logging.set_verbosity(optuna.logging.ERROR)
from autoconv.search.storage import make_storage
from autoconv.search.ranker import Ranker, history_samples, Sample
from autoconv.search.study import parse_study_name, read_trials, ok_trials
from autoconv.search.points import enumerate_points, config_key
from autoconv.kernels.limits import H100
from autoconv.backends.base import Status
GPU = "NVIDIA H100 80GB HBM3"
mode, train, test = sys.argv[1], sys.argv[2], sys.argv[3]
QS = (0.05, 0.10, 0.2, 0.3)

def studies(path):
    st = make_storage(path)
    for name in optuna.get_all_study_names(st):
        found = parse_study_name(name)
        yield found.problem, optuna.load_study(study_name=name, storage=st)

test_studies = list(studies(test))
base = history_samples(make_storage(train), GPU, "fp32") if mode == "history" else []
tot = {q: [0, 0] for q in QS}
for problem, study in test_studies:
    samples = list(base)
    if mode == "self":  # the other test studies (leave one out)
        for p2, s2 in test_studies:
            if p2 != problem:
                samples += [Sample(p2, r.family, r.config, r.value) for r in ok_trials(s2)]
    ranker = Ranker(samples)
    points = enumerate_points(problem, ranker.families, H100, 1 << 30)
    preds = {}
    allp = []
    for fam, configs in points.items():
        if configs:
            p = ranker.predict_ms(problem, fam, configs)
            allp += list(p)
            for c, v in zip(configs, p):
                preds[config_key(fam, c)] = v
    allp = np.sort(np.array(allp))
    pct = lambda key: float(np.searchsorted(allp, preds[key]) / len(allp)) if key in preds else float('nan')
    recs = sorted((r for r in read_trials(study) if r.evaluated), key=lambda r: r.number)
    ok = [r for r in recs if r.status is Status.OK]
    best = min(r.value for r in ok)
    near = [pct(r.key) for r in ok if r.value <= best * 1.02]
    pcts = [pct(r.key) for r in recs]
    # sequential guard: active after MIN_SEEN ok trials with rho >= RHO; threshold max(Q, 3 x pct(best so far))
    seen_ok=[]; skipped=0; total=0; active_at=None; lost=False; bestv=math.inf; bestkey=None
    finalbest=min(ok, key=lambda r: r.value)
    for r in recs:
        p = pct(r.key)
        if active_at is not None:
            total += 1
            thr = max(0.10, 3 * pct(bestkey))
            if p > thr:
                skipped += 1
                if r.value is not None and r.status is Status.OK and r.value <= best * 1.02: lost=True
                continue
        if r.status is Status.OK:
            seen_ok.append((preds.get(r.key, math.nan), r.value))
            if r.value < bestv: bestv, bestkey = r.value, r.key
        if active_at is None and len(seen_ok) >= 12:
            a=np.array(seen_ok); a=a[~np.isnan(a[:,0])]
            rho=float(np.corrcoef(np.argsort(np.argsort(a[:,0])),np.argsort(np.argsort(a[:,1])))[0,1]) if len(a)>3 else 0
            if rho >= 0.6: active_at = r.number
            else: active_at = -1 if False else None
    print(f"   seq: active from trial {active_at} skip {skipped}/{total} of rest, of all {skipped/len(recs):.2f} lost={lost}")
    line = f"{problem.spec()[:44]:44s} n={len(recs):3d} best@{pct(min(ok, key=lambda r: r.value).key):.3f} near2%min@{min(near):.3f} "
    for q in QS:
        skipped = sum(1 for p in pcts if p > q)
        tot[q][0] += skipped; tot[q][1] += len(pcts)
        line += f" Q{q:.2f}:skip {skipped/len(pcts):.2f}{'!' if min(near) > q else ''}"
    print(line, flush=True)
print("overall", {q: round(a / b, 3) for q, (a, b) in tot.items()})
