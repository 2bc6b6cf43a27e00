"""Which other parameters of the runner-up tiles would reach the layers a run lost, replayed on journals.

For each run (a tune_run journal) and each study: the study's final best, its family's runner-up
tiles as ``autoconv.search.runners_up`` picks them (the fastest configuration of each of the next
TILES grids within MARGIN of the best), and each runner-up's variations (``ValidPoints.variations``)
that change one of PARAMETERS. Each variation's time is looked up among what the journals given
measured for that layer (the median where several did); a variation no journal timed is counted as
a candidate, not as a time. Prints, per parameter set: the studies whose best would improve by more
than 1%, the lost layers (over LOST x the fastest time any journal measured for the layer) reached
(their best brought within 1.02x of that fastest), and the candidates a run would add at most
(variations the run did not time itself).

    python3 runner_up_replay.py [--tiles 2] [--margin 1.10] [--lost 1.08] \\
        --parameters SPLIT_K --parameters SPLIT_K,STAGES JOURNAL.gz ...

Device limits: H100's (the H200's SM count, shared memory and registers are the same).
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage

from autoconv.kernels.limits import H100
from autoconv.problems.problem import parse_spec
from autoconv.search import runners_up
from autoconv.search.points import ValidPoints, config_key, enumerate_points
from autoconv.search.study import ok_trials

WORKSPACE = 1 << 30
IMPROVES = 0.99    # a time under 99% of the study's best is an improvement
REACHED = 1.02     # a lost layer is reached when its best comes within this of the fastest


def load_runs(paths: list[str]) -> dict[str, dict[str, list]]:
    """run -> problem key -> (family, [ok trial records, fastest first])."""
    runs: dict[str, dict[str, list]] = {}
    for path in paths:
        with tempfile.NamedTemporaryFile(suffix=".log") as plain:
            with gzip.open(path, "rb") as packed:
                shutil.copyfileobj(packed, plain)
            plain.flush()
            storage = JournalStorage(JournalFileBackend(plain.name))
            studies = {}
            for summary in optuna.get_all_study_summaries(storage):
                problem = summary.study_name.split("/")[1]
                studies[problem] = ok_trials(optuna.load_study(study_name=summary.study_name, storage=storage))
        runs[Path(path).name] = studies
    return runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tiles", type=int, default=runners_up.RUNNER_UP_TILES)
    parser.add_argument("--margin", type=float, default=runners_up.RUNNER_UP_MARGIN)
    parser.add_argument("--lost", type=float, default=1.08)
    parser.add_argument("--parameters", action="append", required=True)
    parser.add_argument("journals", nargs="+")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    runners_up.RUNNER_UP_TILES, runners_up.RUNNER_UP_MARGIN = args.tiles, args.margin
    runs = load_runs(args.journals)

    measured: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for studies in runs.values():
        for problem, records in studies.items():
            for record in records:
                measured[problem][record.key].append(record.time_ms)
    time_of = {problem: {key: statistics.median(times) for key, times in by_key.items()}
               for problem, by_key in measured.items()}
    fastest = {problem: min(times.values()) for problem, times in time_of.items()}

    points_of: dict[str, ValidPoints] = {}
    for parameters in args.parameters:
        names = parameters.split(",")
        improved, reached, lost, added = [], [], [], []
        for run, studies in runs.items():
            run_added = 0
            for problem_key, records in studies.items():
                if not records:
                    continue
                problem = parse_spec(problem_key)
                best = records[0]
                if best.time_ms > fastest[problem_key] * args.lost:
                    lost.append((run, problem_key))
                if problem_key not in points_of:
                    points_of[problem_key] = ValidPoints(enumerate_points(problem, (best.family,), H100, WORKSPACE))
                points = points_of[problem_key]
                if best.family not in points.points:
                    points = points_of[problem_key] = ValidPoints(
                        {**points.points, **enumerate_points(problem, (best.family,), H100, WORKSPACE)})

                def grid_of(record, problem=problem):
                    return runners_up.output_grid(record.family, record.config, problem, H100, WORKSPACE)

                timed_here = {record.key for record in records}
                new_best = best.time_ms
                for runner_up in runners_up.tile_runners_up(records, grid_of):
                    for variation in points.variations(runner_up.family, runner_up.config):
                        if all(variation.get(name) == runner_up.config.get(name) for name in names):
                            continue
                        key = config_key(runner_up.family, variation)
                        if key not in timed_here:
                            run_added += 1
                        new_best = min(new_best, time_of[problem_key].get(key, new_best))
                if new_best < best.time_ms * IMPROVES:
                    improved.append((run, problem_key, round(best.time_ms / new_best, 3)))
                if best.time_ms > fastest[problem_key] * args.lost and new_best <= fastest[problem_key] * REACHED:
                    reached.append((run, problem_key))
            added.append(run_added)
        print(f"{parameters}: {len(improved)} studies improved {improved}")
        print(f"  lost layers (over {args.lost}x the fastest) {len(lost)}, reached {len(reached)}: {reached}")
        print(f"  candidates a run more, at most: {max(added)} (mean {statistics.mean(added):.0f})")


if __name__ == "__main__":
    main()
