import sys, optuna, warnings
from autoconv.search.storage import make_storage
warnings.simplefilter("ignore"); optuna.logging.set_verbosity(optuna.logging.ERROR)
NOT_EVAL=(None,"invalid","repeat","abandoned","predicted_slow")
for path in sys.argv[1:]:
    st=make_storage(path); allst=[]
    for s in optuna.get_all_study_summaries(st):
        trials=optuna.load_study(study_name=s.study_name,storage=st).get_trials(deepcopy=False)
        # patience counts trials in completion order (SearchHistory reads in trial order of completed)
        ev=[t for t in trials if t.user_attrs.get("status") not in NOT_EVAL and t.datetime_complete]
        allt=[t for t in trials if t.datetime_complete]
        allt.sort(key=lambda t:t.number)
        mark=None; since=0; stands=[]
        for t in allt:
            v=t.value if t.state.name=="COMPLETE" else None
            if v is not None and (mark is None or v<mark*0.98):
                if mark is not None: stands.append((since, t.user_attrs.get("origin","")[:28], round(mark/v,3)))
                mark=v; since=0
            else: since+=1
        allst.append((s.study_name.split('/')[1][:40], stands))
    print(path)
    for n,s in allst: print('  ',n, [x for x in s if x[0]>=8])
