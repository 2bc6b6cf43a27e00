"""Per study of a tune's journal: the place, among its evaluated trials, of the last improvement of
more than 2% (the tuner's SIGNIFICANT_IMPROVEMENT), and where that candidate came from.
    python3 last_improvement.py JOURNAL"""
import collections, statistics, sys, warnings
import optuna
from autoconv.search.storage import make_storage

warnings.simplefilter("ignore"); optuna.logging.set_verbosity(optuna.logging.ERROR)
storage = make_storage(sys.argv[1])
places, origins = [], collections.Counter()
for summary in optuna.get_all_study_summaries(storage):
    trials = optuna.load_study(study_name=summary.study_name, storage=storage).get_trials(deepcopy=False)
    evaluated = [t for t in trials if t.user_attrs.get("status") not in (None, "invalid", "repeat", "abandoned",
                                                                          "predicted_slow")]
    mark, place, origin = None, 0, None
    for i, t in enumerate(evaluated):
        if t.state.name == "COMPLETE" and (mark is None or t.value < mark * 0.98):
            mark, place, origin = t.value, i, t.user_attrs.get("origin") or "sampler"
    places.append(place)
    origins[origin.split(" (")[0].split(" N=")[0].split(" to trial")[0]] += 1
print("place of the last improvement > 2%:", sorted(places), "median", statistics.median(places))
print("its origin:", dict(origins))
