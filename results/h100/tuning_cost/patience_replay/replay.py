"""What a shorter patience would have done, replayed on tune journals with the pipeline's timeline.

For each study, in the order its trials were asked (trial numbers), at each sampler-driven ask
(not a queued variation of the best) the state the tuner saw then is rebuilt from the journal's
timestamps: the evaluated trials completed by then (in trial order, as SearchHistory reads them)
give the count since the last improvement of more than 2%, and the trials asked and not yet
completed are the ones in flight. The first ask at which ``since + in flight >= P`` is where a
run with patience P stops asking; everything asked before it is still evaluated. The polish that
follows is taken from the journal where the real run polished the same best (its variations'
times), else left out (so the replayed best is pessimistic there); where those variations beat the
best by more than 2%, the study goes on, as the real one did. Reported per P: the trials
the shorter run would have evaluated, and its best against the real run's, per study.
    python3 replay.py PATIENCE[,PATIENCE...] JOURNAL [JOURNAL...] [-v: the studies over 1.02]
"""
import math
import sys
import warnings

import optuna

from autoconv.search.storage import make_storage

warnings.simplefilter("ignore")
optuna.logging.set_verbosity(optuna.logging.ERROR)
NOT_EVALUATED = (None, "invalid", "repeat", "abandoned", "predicted_slow")
SIGNIFICANT = 0.02


def replay(trials, patience):
    evaluated = [t for t in trials if t.user_attrs.get("status") not in NOT_EVALUATED and t.datetime_complete]
    real_best = min(t.value for t in evaluated if t.state.name == "COMPLETE")
    cut = None
    for t in evaluated:
        if str(t.user_attrs.get("origin", "")).startswith("a variation"):
            continue  # (queued by the polish, not asked of the sampler)
        now = t.datetime_start
        done = [u for u in evaluated if u.number < t.number and u.datetime_complete <= now]
        flying = sum(1 for u in evaluated if u.number < t.number and u.datetime_complete > now)
        mark, since = None, 0
        for u in done:
            v = u.value if u.state.name == "COMPLETE" else None
            if v is not None and (mark is None or v < mark * (1 - SIGNIFICANT)):
                mark, since = v, 0
            else:
                since += 1
        if mark is None or since + flying < patience:
            continue
        # The patience is spent: the best's variations are evaluated; where one of them beats the
        # mark by more than 2% (in the real run's results) the study goes on, as the real one did.
        fastest = min((u for u in done if u.state.name == "COMPLETE"), key=lambda u: u.value)
        found = [u.value for u in polish_of(evaluated, fastest) if u.state.name == "COMPLETE"]
        if found and min(found) < mark * (1 - SIGNIFICANT):
            continue
        cut = t.number
        break
    if cut is None:
        return real_best, real_best, len(evaluated), len(evaluated), True
    kept = [t for t in evaluated if t.number < cut]
    timed = [t for t in kept if t.state.name == "COMPLETE"]
    best = min(timed, key=lambda t: t.value)
    polish = [t for t in polish_of(evaluated, best) if t.number >= cut]
    replayed = min([best.value] + [t.value for t in polish if t.state.name == "COMPLETE"])
    return replayed, real_best, len(kept) + len(polish), len(evaluated), bool(polish) or best.value == real_best


def polish_of(evaluated, best):
    """The real run's evaluated variations of ``best``."""
    origin = f"a variation of the best (trial {best.number})"
    return [t for t in evaluated if t.user_attrs.get("origin", "") == origin]


def main():
    patiences = [int(p) for p in sys.argv[1].split(",")]
    verbose = "-v" in sys.argv
    for path in [a for a in sys.argv[2:] if a != "-v"]:
        storage = make_storage(path)
        names = [s.study_name for s in optuna.get_all_study_summaries(storage)]
        studies = [optuna.load_study(study_name=name, storage=storage).get_trials(deepcopy=False) for name in names]
        for patience in patiences:
            rows = [replay(trials, patience) for trials in studies]
            if verbose:
                for name, (r, b, kept, real, known) in zip(names, rows):
                    if r / b > 1.02:
                        print(f"   P={patience} {name.split('/')[1]}: {r / b:.3f} ({kept} of {real} trials)"
                              f"{'' if known else ', polish unknown'}")
            ratios = [r / b for r, b, *_ in rows]
            kept, real = sum(r[2] for r in rows), sum(r[3] for r in rows)
            print(f"{path.split('/')[-1]:14s} P={patience:2d}: trials {kept:5d} of {real:5d} ({kept / real:.0%}), "
                  f"best vs the real run's: geomean {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}, "
                  f"worst {max(ratios):.3f}, studies over 1.02: {sum(x > 1.02 for x in ratios)}, "
                  f"polish unknown: {sum(not r[4] for r in rows)}")


if __name__ == "__main__":
    main()
