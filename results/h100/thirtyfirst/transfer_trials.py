"""Each transfer study of a VGG-16 run, trial by trial, from the run's own records of the journal
(journal_tail_*.gz: what the run appended to the history): how many candidates its start and each
polish round timed, and which round found its best (and how much faster than the start's best).
    python3 results/h100/thirtyfirst/transfer_trials.py results/h100/thirtyfirst/call2/journal_tail_tr*.gz"""
import collections
import gzip
import json
import sys

for path in sys.argv[1:]:
    studies, trials = {}, {}
    records = [json.loads(line) for line in gzip.open(path)]
    # (trial ids count on from the history's: the first one created here is the smallest named)
    first_id = min(record["trial_id"] for record in records if "trial_id" in record)
    for record in records:
        op = record["op_code"]
        if op == 0:
            studies[len(studies)] = record["study_name"]
        elif op == 4:
            trials[first_id + len(trials)] = {"origin": record.get("user_attrs", {}).get("origin", ""), "value": None,
                                   "study": record["study_id"], "attrs": {}}
        elif op == 8 and record["trial_id"] in trials:
            trials[record["trial_id"]]["attrs"].update(record["user_attr"])
        elif op == 6 and record["trial_id"] in trials and record.get("values"):
            trials[record["trial_id"]]["value"] = record["values"][0]
    print(path)
    by_study = collections.defaultdict(list)
    for number in sorted(trials):
        by_study[trials[number]["study"]].append(trials[number])
    for study, found in by_study.items():
        rounds = []
        for trial in found:
            origin = trial["origin"] or trial["attrs"].get("origin", "")
            kind = "polish" if origin.startswith("a variation of the best") else "start"
            if kind == "polish":
                parent = origin.split("(trial ")[1].split(")")[0]
                if not rounds or rounds[-1][0] != parent:
                    rounds.append((parent, []))
                rounds[-1][1].append(trial)
            else:
                if not rounds or rounds[-1][0] != "start":
                    rounds.append(("start", []))
                rounds[-1][1].append(trial)
        timed = [(i, t["value"]) for i, (_, members) in enumerate(rounds) for t in members if t["value"]]
        if not timed:
            continue
        best_round, best = min(timed, key=lambda item: item[1])
        start_best = min((v for i, v in timed if i == 0), default=float("nan"))
        sizes = "+".join(str(len(members)) for _, members in rounds)
        print(f"  study {study:3d} {sizes:22s} best in round {best_round} ({best:.4f}; start's best x{start_best / best:.3f})")
