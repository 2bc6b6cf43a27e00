"""Per transfer study, the trials that came after a pause with none in flight (a revisit at the run's end,
or another worker joining the study late): how many, and their best over the study's best before them.
    python3 late_blocks.py JOURNAL.gz [...]"""
import gzip, shutil, sys, tempfile, optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage
optuna.logging.set_verbosity(optuna.logging.WARNING)
for path in sys.argv[1:]:
    with tempfile.NamedTemporaryFile(suffix=".journal", delete=False) as out, gzip.open(path) as src:
        shutil.copyfileobj(src, out)
    storage = JournalStorage(JournalFileBackend(out.name))
    gains=[]
    for s in optuna.get_all_study_summaries(storage):
        if "/N=8," not in s.study_name: continue
        st=optuna.load_study(study_name=s.study_name, storage=storage)
        tr=sorted([t for t in st.trials if t.datetime_start and t.datetime_complete], key=lambda t:t.datetime_start)
        end=None; split=None
        for i,t in enumerate(tr):
            if end is not None and t.datetime_start > end and (t.datetime_start-end).total_seconds()>0.3:
                split=i; break
            end=max(end or t.datetime_complete, t.datetime_complete)
        if split is None: continue
        before=min([t.value for t in tr[:split] if t.value is not None and t.user_attrs.get('status')=='ok'] or [9e9])
        after=min([t.value for t in tr[split:] if t.value is not None and t.user_attrs.get('status')=='ok'] or [9e9])
        gains.append((s.study_name.split('/')[1][:26], len(tr)-split, round(after/before,3)))
    print('/'.join(path.split('/')[-3:]), gains)
