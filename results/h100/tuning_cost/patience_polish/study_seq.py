"""Dump each study of a journal as ordered (number, state, value, origin) sequences -> JSON."""
import json, sys, warnings
import optuna
from autoconv.search.storage import make_storage
warnings.simplefilter("ignore")
optuna.logging.set_verbosity(optuna.logging.ERROR)
path, out = sys.argv[1:3]
storage = make_storage(path)
res = {}
for s in optuna.get_all_study_summaries(storage):
    st = optuna.load_study(study_name=s.study_name, storage=storage)
    rows = []
    for t in st.get_trials(deepcopy=False):
        ua = t.user_attrs
        rows.append(dict(n=t.number, state=t.state.name, value=t.value, status=ua.get("status"),
                         origin=ua.get("origin") or t.system_attrs.get("origin"), family=t.params.get("family"),
                         params={k: v for k, v in t.params.items()}))
    res[s.study_name] = rows
json.dump(res, open(out, "w"))
print(len(res), "studies")
