import sys, collections, warnings, optuna, math
from autoconv.search.storage import make_storage
warnings.simplefilter("ignore"); optuna.logging.set_verbosity(optuna.logging.ERROR)
st = make_storage(sys.argv[1])
cnt=collections.Counter(); cpu=collections.Counter(); gpu=collections.Counter(); near=collections.Counter()
for s in optuna.get_all_study_summaries(st):
    study=optuna.load_study(study_name=s.study_name, storage=st)
    trials=study.get_trials(deepcopy=False)
    best=min((t.value for t in trials if t.state.name=="COMPLETE" and t.value), default=None)
    fam_best={}
    for t in trials:
        f=t.params.get("family"); d=t.user_attrs
        if not f or t.user_attrs.get("status") in (None,"invalid","repeat"): continue
        cnt[f]+=1; cpu[f]+=d.get("compile_cpu_s",0) or 0; gpu[f]+=d.get("run_s",0) or d.get("gpu_s",0) or 0
        if t.value: fam_best[f]=min(fam_best.get(f,9e9), t.value)
    for f,v in fam_best.items():
        if v <= 1.3*best: near[f]+=1
tot=sum(cpu.values())
for f in cnt: print(f"{f:24s} trials {cnt[f]:5d} compile CPU {cpu[f]:7.1f} s ({cpu[f]/tot:.0%})  studies where its best is within 1.3x of the winner: {near[f]}")
print("details keys example:", list((t.user_attrs.get('details') or {}).keys())[:30])
