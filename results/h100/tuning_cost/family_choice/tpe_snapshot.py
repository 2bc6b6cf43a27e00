"""Rebuild a study of a tune's journal as it stood when trial AT was asked for (trials finished by
then with their states, those started and not finished as RUNNING), then ask a TPE sampler set up
as the tuner's 100 times and count the families it proposes; and TPE's log ratio l/g per family.
    python3 tpe_snapshot.py JOURNAL STUDY_INDEX AT      (e.g. ../revisit/call1/journal_1 0 60)"""
import collections, copy, sys, warnings
import numpy as np
import optuna
from optuna.samplers._tpe.sampler import _split_trials
from optuna.trial import TrialState as S
from autoconv.search.storage import make_storage
from autoconv.search.study import suggest

warnings.simplefilter("ignore"); optuna.logging.set_verbosity(optuna.logging.ERROR)
storage = make_storage(sys.argv[1]); index, at = int(sys.argv[2]), int(sys.argv[3])
summary = optuna.get_all_study_summaries(storage)[index]
trials = optuna.load_study(study_name=summary.study_name, storage=storage).get_trials(deepcopy=False)
asked = trials[at].datetime_start
snapshot = []
for t in trials[:at]:
    if t.datetime_start is None or t.datetime_start > asked:
        continue
    if t.datetime_complete is not None and t.datetime_complete <= asked:
        if t.state.name in ("COMPLETE", "PRUNED"):
            snapshot.append(t)
    else:
        running = copy.deepcopy(t); running.state = S.RUNNING; running.value = None; running.datetime_complete = None
        snapshot.append(running)
families = list(trials[0].distributions["family"].choices)
sampler = optuna.samplers.TPESampler(seed=1, multivariate=True, group=True, constant_liar=True)
study = optuna.create_study(sampler=sampler)
for t in snapshot:
    study.add_trial(t)
print(summary.study_name, "at trial", at, collections.Counter(t.state.name for t in snapshot))
proposed = collections.Counter()
for _ in range(100):
    trial = study.ask(); family, _config = suggest(trial, families); proposed[family] += 1
    study.tell(trial, state=S.FAIL)  # (failed trials are invisible to TPE: every ask sees the snapshot)
print("proposed:", dict(proposed))
held = study._get_trials(deepcopy=False, states=(S.COMPLETE, S.PRUNED, S.RUNNING), use_cache=False)
below, above = _split_trials(study, held, sampler._gamma(sum(t.state != S.RUNNING for t in held)))
space = {"family": trials[0].distributions["family"]}
log_l = sampler._build_parzen_estimator(study, space, below, True).log_pdf({"family": np.arange(len(families))})
log_g = sampler._build_parzen_estimator(study, space, above, False).log_pdf({"family": np.arange(len(families))})
print("log l/g:", {f: round(float(v), 2) for f, v in zip(families, log_l - log_g)})
