"""A tuning run's timeline from proc_sampler.py's samples and (optionally) its study journal
(thirty-fourth session): per bucket of BUCKET_S seconds from the run's start, the cores each role
kept busy (the tune's own process, its tuning workers, their GPU workers, the compilers) and the
trials that ended (results of candidates compiled and run).

    python3 timeline.py SAMPLES.jsonl [JOURNAL[.gz]]

Roles by the process tree: the tune's process (not `timeout`); its children with children of
their own are tuning workers, those children GPU workers; its other children compilers."""
import collections
import gzip
import json
import sys

BUCKET_S = 1.0
TICKS = 100.0


def load(path):
    with open(path) as file:
        return [json.loads(line) for line in file if line.strip()]


def roles(samples):
    parent, name = {}, {}
    for sample in samples:
        for pid, (ppid, _, title) in sample["p"].items():
            parent[int(pid)], name[int(pid)] = ppid, title
    roots = {int(pid) for sample in samples for pid in sample["r"]}
    top = next(pid for pid in sorted(roots) if name.get(pid) != "timeout")
    children = collections.defaultdict(set)
    for pid, ppid in parent.items():
        children[ppid].add(pid)
    role = {top: "tune"}
    for child in children[top]:
        if children[child]:
            role[child] = "worker"
            for grandchild in children[child]:
                role[grandchild] = "gpu"
        else:
            role[child] = "compiler"
    return top, role


def cpu_by_bucket(samples, role, start):
    last, used = {}, collections.defaultdict(lambda: collections.Counter())
    for sample in samples:
        bucket = int((sample["t"] - start) // BUCKET_S)
        for pid, (_, ticks, _) in sample["p"].items():
            pid = int(pid)
            if pid in last:
                used[bucket][role.get(pid, "other")] += (ticks - last[pid]) / TICKS / BUCKET_S
            last[pid] = ticks
    return used


def trial_ends(path, start):
    import optuna
    from optuna.storages.journal import JournalFileBackend, JournalStorage
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if path.endswith(".gz"):
        import shutil
        import tempfile
        copy = tempfile.NamedTemporaryFile(suffix=".journal", delete=False)
        with gzip.open(path) as source:
            shutil.copyfileobj(source, copy)
        copy.close()
        path = copy.name
    storage = JournalStorage(JournalFileBackend(path))
    ends = collections.Counter()
    for summary in optuna.get_all_study_summaries(storage):
        for trial in optuna.load_study(study_name=summary.study_name, storage=storage).trials:
            if trial.datetime_complete is not None and trial.user_attrs.get("compile_s") is not None:
                ends[int((trial.datetime_complete.timestamp() - start) // BUCKET_S)] += 1
    return ends


samples = load(sys.argv[1])
top, role = roles(samples)
present = [sample for sample in samples if str(top) in sample["p"]]
start = present[0]["t"]
used = cpu_by_bucket(samples, role, start)
ends = trial_ends(sys.argv[2], start) if len(sys.argv) > 2 else collections.Counter()
counts = collections.Counter(role.values())
print(f"# {sys.argv[1]}: {counts['worker']} tuning workers, {counts['gpu']} GPU workers, {counts['compiler']} "
      f"compilers; cores busy per role, trials ended, per {BUCKET_S:g} s from the tune's start")
print(f"{'s':>4} {'tune':>5} {'worker':>6} {'gpu':>5} {'compil':>6} {'trials':>6}")
for bucket in range(0, int(present[-1]["t"] - start) + 1):
    cells = used[bucket]
    print(f"{bucket * BUCKET_S:4.0f} {cells['tune']:5.1f} {cells['worker']:6.1f} {cells['gpu']:5.1f} "
          f"{cells['compiler']:6.1f} {ends[bucket]:6d}")
total = collections.Counter()
for cells in used.values():
    total.update({key: value * BUCKET_S for key, value in cells.items()})
print("# CPU-s: " + ", ".join(f"{key} {value:.1f}" for key, value in sorted(total.items())))
