"""Each worker's studies in a VGG-16 (N=8) tuning journal: first start and last completion of its trials,
seconds from the run's first trial, and how many.
    python3 spans.py JOURNAL.gz"""
import gzip, shutil, sys, tempfile, optuna, collections
from optuna.storages.journal import JournalFileBackend, JournalStorage
optuna.logging.set_verbosity(optuna.logging.WARNING)
path=sys.argv[1]
with tempfile.NamedTemporaryFile(suffix=".journal", delete=False) as out, gzip.open(path) as src:
    shutil.copyfileobj(src, out)
storage = JournalStorage(JournalFileBackend(out.name))
rows=[]
for s in optuna.get_all_study_summaries(storage):
    if "/N=8," not in s.study_name: continue
    st=optuna.load_study(study_name=s.study_name, storage=storage)
    for t in st.trials:
        if t.datetime_complete is None: continue
        rows.append((t.user_attrs.get('owner'), s.study_name.split('/')[1][:24], t.datetime_start, t.datetime_complete, t.user_attrs.get('origin','')))
t0=min(r[2] for r in rows)
g=collections.defaultdict(list)
for r in rows: g[(r[0],r[1])].append(r)
for k,v in sorted(g.items(), key=lambda kv:(str(kv[0][0]), min(x[2] for x in kv[1]))):
    a=min(x[2] for x in v); b=max(x[3] for x in v)
    print(k[0], k[1], f"{(a-t0).total_seconds():6.2f} {(b-t0).total_seconds():6.2f} n={len(v)}")
