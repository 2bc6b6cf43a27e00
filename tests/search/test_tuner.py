"""The search loop on the CPU, with the fake backend (deterministic synthetic timings).

What is checked: budgets (trials, seconds, patience), that invalid proposals are never
evaluated, that each family's default comes first, that the winner is the fastest
evaluated candidate and is re-verified, that failures are recorded and never win, and
that a resumed study repeats no evaluated configuration.
"""

from __future__ import annotations

import dataclasses
import zlib

import optuna
import pytest
from optuna.trial import TrialState

from autoconv.backends.base import Status
from autoconv.backends.fake import FakeBackend
from autoconv.cache.winners import WinnerCache
from autoconv.config.budget import Budget
from autoconv.kernels.families import get_family
from autoconv.kernels.fingerprint import templates_hash
from autoconv.kernels.limits import H100
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.search.full_study import FullStudy
from autoconv.search.options import SearchOptions, SearchSettings
from autoconv.search.points import ValidPoints, config_key, enumerate_points
from autoconv.search.stopping import SIGNIFICANT_IMPROVEMENT
from autoconv.search.study import EVALUATED, SearchHistory, config_of, params_of, study_name, suggest
from autoconv.search.study_loop import LAUNCH_SLACK_MS, SLOW_CUTOFF, cutoff_ms
from autoconv.search.tuner import Tuner
from tests.helpers import dead_pid

#: Small, awkward problem; the two families with quick-to-enumerate spaces.
PROBLEM = NamedProblem("odd", parse_spec("N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1"))
FAMILIES = ("direct", "im2col_gemm")


@pytest.fixture(scope="module")
def points():
    return ValidPoints(enumerate_points(PROBLEM.problem, FAMILIES, H100, 1 << 30))


def storage():
    return optuna.storages.InMemoryStorage()


def make_tuner(backend, budget, store=None, cache=None, **search):
    return Tuner(backend, SearchSettings(FAMILIES, budget, seed=3, search=SearchOptions(**search)),
                 storage=store or storage(), cache=cache)


def study_of(tuner, problem=PROBLEM.problem):
    name = study_name(problem, tuner.backend.identity.gpu_name, tuner.families)
    return optuna.load_study(study_name=name, storage=tuner.storage)


def keys(plans):
    return [config_key(plan.family, plan.config) for plan in plans]


def test_trial_budget_defaults_first_and_only_valid_points(points):
    backend = FakeBackend()
    tuner = make_tuner(backend, Budget(trials=15))
    outcome = tuner.tune_problem(PROBLEM, points)

    searched = backend.evaluated[:-1]  # the last one is the winner's re-verification
    assert outcome.trials_run == outcome.trials_total == len(searched) == 15
    assert outcome.stop_reason == "15 trials"
    assert len(set(keys(searched))) == 15, "a configuration was evaluated twice"
    for plan in searched:
        assert get_family(plan.family).space.is_valid(plan.config, PROBLEM.problem, H100)
    defaults = [(name, points.default(name)) for name in FAMILIES]
    assert [(plan.family, dict(plan.config)) for plan in searched[:2]] == defaults

    study = study_of(tuner)
    invalid = [t for t in study.trials if t.user_attrs.get("status") == Status.INVALID.value]
    assert outcome.invalid == len(invalid) > 0, "TPE proposed no invalid point: the test proves nothing"
    for trial in invalid:
        assert trial.state == TrialState.PRUNED
        assert trial.user_attrs["reason"]
        family = trial.params["family"]
        config = {k.split(".", 1)[1]: v for k, v in trial.params.items() if k != "family"}
        assert config_key(family, config) not in keys(backend.evaluated)
    evaluated = [t for t in study.trials if t.user_attrs.get("status") in EVALUATED]
    assert len(evaluated) == 15
    for trial in evaluated:
        assert trial.state == TrialState.COMPLETE
        assert {"status", "reason", "compile_s", "compile_cpu_s", "run_s", "time_ms", "details"} \
            <= set(trial.user_attrs)
        assert trial.value == trial.user_attrs["time_ms"]
    # The compilers' wall and CPU time, each summed over the evaluations (the fake backend's
    # 0.01 s and 0.008 CPU-s per candidate; the winner's re-verification compiles once more).
    compiled = len(evaluated) + 1
    assert outcome.compile_s == pytest.approx(0.01 * compiled)
    assert outcome.compile_cpu_s == pytest.approx(0.008 * compiled)


def test_seeds_follow_the_default_each_as_its_nearest_valid_point():
    name = "implicit_gemm_wgmma"
    space = get_family(name).space
    assert len(space.seeds) >= 2, "pick a family with seeds"
    problem = NamedProblem("seeded", parse_spec("N=2,C=64,H=14,W=14,K=128,R=3,S=3,pad=1"))  # GEMM_N = 128
    points = ValidPoints(enumerate_points(problem.problem, (name,), H100, 1 << 30))
    starts = [points.default(name)]
    for seed in space.seeds:
        config = points.nearest(name, seed)
        assert config == seed or not space.is_valid(seed, problem.problem, H100)
        if config not in starts:
            starts.append(config)
    backend = FakeBackend()
    Tuner(backend, SearchSettings((name,), Budget(trials=len(starts) + 2), seed=3),
          storage=storage()).tune_problem(problem, points)
    assert [dict(plan.config) for plan in backend.evaluated[:len(starts)]] == starts


def test_winner_is_the_fastest_evaluated_and_is_reverified(points, tmp_path):
    backend = FakeBackend()
    with WinnerCache(tmp_path / "cache.sqlite") as cache:
        tuner = make_tuner(backend, Budget(trials=12), cache=cache)
        outcome, = tuner.tune([PROBLEM])
        entry, = cache.entries()
    searched, reverified = backend.evaluated[:-1], backend.evaluated[-1]
    # The search ranks candidates by the shorter screening timing; the winner is timed in full.
    assert all(backend.screened[:-1]) and not backend.screened[-1]
    fastest = min(searched, key=FakeBackend.synthetic_time_ms)
    assert reverified.name == fastest.name == outcome.kernel_name == entry.kernel_name
    assert outcome.time_ms == pytest.approx(FakeBackend.synthetic_time_ms(fastest))
    assert outcome.tflops == pytest.approx(PROBLEM.problem.flops / (outcome.time_ms * 1e-3) / 1e12)
    assert (entry.family, dict(entry.config)) == (fastest.family, dict(fastest.config))
    assert entry.source_hash == fastest.source_hash and entry.trials == 12
    assert entry.key.templates_hash == templates_hash() and entry.key.problem_key == PROBLEM.problem.key()

    # A second run is served from the cache: nothing evaluated.
    count = len(backend.evaluated)
    with WinnerCache(tmp_path / "cache.sqlite") as cache:
        again, = make_tuner(backend, Budget(trials=12), cache=cache).tune([PROBLEM])
    assert again.source == "cache" and again.kernel_name == outcome.kernel_name
    assert len(backend.evaluated) == count


def test_failures_are_recorded_and_never_win(points):
    def fail(plan):
        if plan.family == "im2col_gemm":
            return Status.WRONG_RESULT, "planted: relative L2 error 0.3 exceeds 1e-05"
        if plan.config.get("TILE_P") == 2:
            return Status.TIMEOUT, "planted hang"
        return None

    backend = FakeBackend(fail=fail)
    tuner = make_tuner(backend, Budget(trials=20))
    outcome = tuner.tune_problem(PROBLEM, points)
    assert outcome.family == "direct" and outcome.config.get("TILE_P") != 2
    assert outcome.failures.get("wrong_result", 0) >= 1
    assert outcome.failed == sum(1 for plan in backend.evaluated[:-1] if fail(plan))
    study = study_of(tuner)
    failed = [t for t in study.trials if t.user_attrs.get("status") in ("wrong_result", "timeout")]
    assert len(failed) == outcome.failed
    for trial in failed:
        assert trial.state == TrialState.PRUNED  # TPE ranks them worst
        assert trial.user_attrs["reason"].startswith("planted")


def test_a_winner_failing_reverification_gives_way_to_the_next(points):
    calls: dict[str, int] = {}
    best_name = []

    def fail(plan):
        calls[plan.name] = calls.get(plan.name, 0) + 1
        if best_name and plan.name == best_name[0] and calls[plan.name] > 1:
            return Status.WRONG_RESULT, "planted: wrong on fresh inputs"
        return None

    # The first run finds the best; the second (same study, more trials) fails it on
    # re-verification, so the runner-up becomes the winner.
    store = storage()
    first = make_tuner(FakeBackend(), Budget(trials=10), store).tune_problem(PROBLEM, points)
    best_name.append(first.kernel_name)
    calls[first.kernel_name] = 1
    backend = FakeBackend(fail=fail)
    second = make_tuner(backend, Budget(trials=10), store).tune_problem(PROBLEM, points)
    assert second.trials_run == 0 and second.kernel_name != first.kernel_name
    assert "re-verification failed" in second.message and first.kernel_name in second.message
    assert second.time_ms > first.time_ms


def test_seconds_budget(points):
    backend = FakeBackend(delay_s=0.05)
    tuner = make_tuner(backend, Budget(trials=None, seconds=0.6), pipeline_depth=2)
    outcome = tuner.tune_problem(PROBLEM, points)
    assert outcome.stop_reason == "0.6 s"
    assert 4 <= outcome.trials_run <= 0.6 / 0.05 + 3
    assert outcome.wall_s < 3


@pytest.mark.parametrize("depth", [1, 4, 8])
def test_patience_stops_after_trials_without_improvement(points, depth):
    tuner = make_tuner(FakeBackend(), Budget(trials=200, patience=4), pipeline_depth=depth)
    outcome = tuner.tune_problem(PROBLEM, points)
    assert outcome.stop_reason == "no improvement of more than 2% in 4 trials and none among the best's variations"
    trials = [t for t in sorted(study_of(tuner).trials, key=lambda t: t.number)
              if t.user_attrs.get("status") in EVALUATED]
    values = [t.value for t in trials]
    # The last trial that beat the previous such trial by more than SIGNIFICANT_IMPROVEMENT.
    best, mark = 0, values[0]
    for i, value in enumerate(values):
        if value < mark * (1 - SIGNIFICANT_IMPROVEMENT):
            best, mark = i, value
    # A study ends `patience` evaluated trials after its last significant best at the
    # earliest; then the variations of its fastest trial are evaluated (and
    # of a faster one that they find, up to POLISH_ROUNDS), every one of them.
    assert len(values) - 1 - best >= 4
    origins = [t.user_attrs.get("origin", "") for t in trials]
    polished = [int(origin.rsplit("(trial ", 1)[1].rstrip(")")) for origin in origins
                if origin.startswith("a variation of the best")]
    assert polished
    last = next(t for t in trials if t.number == polished[-1])
    family = last.params["family"]
    variations = {config_key(family, c) for c in points.variations(family, config_of(last.params, family))}
    evaluated = {config_key(t.params["family"], config_of(t.params, t.params["family"])) for t in trials}
    assert variations <= evaluated
    assert len(values) < 200


def test_polish_finds_the_one_parameter_step_the_sampler_missed(points):
    """A fake whose fastest configuration is one parameter away from a plateau that the
    warm start lands on: the patience alone stops on the plateau; the variations of its
    best find the fast one."""
    default = points.default("im2col_gemm")
    variations = points.variations("im2col_gemm", default)
    target = variations[-1]

    class Plateau(FakeBackend):
        @staticmethod
        def synthetic_time_ms(plan):
            return 0.1 if plan.config == target else (1.0 if plan.config == default else 2.0)

    tuner = make_tuner(Plateau(), Budget(trials=200, patience=2), pipeline_depth=1)
    outcome = tuner.tune_problem(PROBLEM, points)
    assert outcome.config == target and outcome.time_ms == pytest.approx(0.1, rel=0.2)


def test_small_space_is_exhausted_without_repeats():
    problem = NamedProblem("tiny", parse_spec("N=1,C=2,H=4,W=4,K=2,R=3,S=3,pad=1"))
    points = ValidPoints(enumerate_points(problem.problem, ("im2col_gemm",), H100, 1 << 30))
    backend = FakeBackend()
    tuner = Tuner(backend, SearchSettings(("im2col_gemm",), Budget(trials=100_000)), storage=storage())
    outcome = tuner.tune_problem(problem, points)
    assert outcome.stop_reason == "every valid configuration evaluated"
    assert outcome.trials_run == len(points) == len(set(keys(backend.evaluated[:-1])))


def test_resume_after_interruption_repeats_no_evaluated_trial(points, tmp_path):
    journal = tmp_path / "study.journal"

    class Interrupted(FakeBackend):
        def result(self, ticket):
            if len(self.evaluated) == 7:
                raise KeyboardInterrupt
            return super().result(ticket)

    first = Interrupted()
    with pytest.raises(KeyboardInterrupt):
        make_tuner(first, Budget(trials=16), str(journal)).tune_problem(PROBLEM, points)

    # A run killed outright leaves a RUNNING trial whose process is gone.
    tuner = make_tuner(FakeBackend(), Budget(trials=16), str(journal))
    study = study_of(tuner)
    orphan = study.ask()
    orphan.set_user_attr("owner", f"{tuner.owner.rpartition(':')[0]}:{dead_pid()}")

    second = FakeBackend()
    tuner = make_tuner(second, Budget(trials=16), str(journal))
    outcome = tuner.tune_problem(PROBLEM, points)
    assert outcome.trials_total == 16 and outcome.trials_run == 16 - 7
    before, after = keys(first.evaluated), keys(second.evaluated[:-1])
    assert not set(before) & set(after), "a configuration evaluated before the interruption ran again"
    states = {t.number: (t.state, t.user_attrs.get("status")) for t in study_of(tuner).trials}
    assert states[orphan.number] == (TrialState.FAIL, "abandoned")
    assert not [t for t in study_of(tuner).trials if t.state == TrialState.RUNNING]

    # Re-running the finished command evaluates nothing more (but re-verifies the winner).
    third = FakeBackend()
    again = make_tuner(third, Budget(trials=16), str(journal)).tune_problem(PROBLEM, points)
    assert again.trials_run == 0 and len(third.evaluated) == 1
    assert again.kernel_name == outcome.kernel_name


def test_an_interrupted_run_queues_its_in_flight_candidates_again(points, tmp_path):
    journal = str(tmp_path / "study.journal")

    class Interrupted(FakeBackend):
        def result(self, ticket):
            if len(self.evaluated) == 5:
                raise KeyboardInterrupt
            return super().result(ticket)

    with pytest.raises(KeyboardInterrupt):
        make_tuner(Interrupted(), Budget(trials=16), journal, pipeline_depth=4).tune_problem(PROBLEM, points)
    study = study_of(make_tuner(FakeBackend(), Budget(trials=16), journal))
    abandoned = [t for t in study.trials if t.user_attrs.get("status") == "abandoned"]
    retries = [t for t in study.trials if t.state == TrialState.WAITING
               and str(t.user_attrs.get("origin", "")).startswith("retry of trial")]
    assert len(abandoned) == 4  # the pipeline's candidates, none of them evaluated
    queued = [t.system_attrs["fixed_params"] for t in retries]  # (a waiting trial's params, fixed when asked)
    assert sorted(map(str, queued)) == sorted(map(str, (t.params for t in abandoned)))

    second = FakeBackend()
    make_tuner(second, Budget(trials=16), journal, pipeline_depth=4).tune_problem(PROBLEM, points)
    evaluated_next = {str(params_of(plan.family, plan.config)) for plan in second.evaluated[:4]}
    assert evaluated_next == {str(t.params) for t in abandoned}  # the queued ones come first


def test_a_candidate_the_backend_abandons_is_queued_again_and_not_counted(points):
    abandoned_once: set[str] = set()

    def abandon_each_once(plan):
        key = config_key(plan.family, plan.config)
        if len(abandoned_once) < 3 and key not in abandoned_once:
            abandoned_once.add(key)
            return Status.ABANDONED, "not run: the backend was closed"
        return None

    backend = FakeBackend(fail=abandon_each_once)
    tuner = make_tuner(backend, Budget(trials=12), pipeline_depth=1)
    outcome = tuner.tune_problem(PROBLEM, points)
    study = study_of(tuner)
    evaluated = [t for t in study.trials if t.user_attrs.get("status") in EVALUATED]
    assert len(evaluated) == 12 and outcome.trials_total == 12 and outcome.trials_run == 12
    assert outcome.failures == {"abandoned": 3}
    evaluated_keys = {config_key(*next(iter(_family_config(t)))) for t in evaluated}
    assert abandoned_once <= evaluated_keys  # each evaluated after all, in the same run


def _family_config(trial):
    family = trial.params["family"]
    yield family, config_of(trial.params, family)


def test_a_cached_winner_whose_study_lost_candidates_to_a_kill_is_tuned_on(points, tmp_path):
    journal, cache_path = str(tmp_path / "study.journal"), tmp_path / "cache.sqlite"
    with WinnerCache(cache_path) as cache:
        make_tuner(FakeBackend(), Budget(trials=6), journal, cache=cache).tune([PROBLEM])
        # Another worker of a killed run held a candidate when this one stopped at the budget
        # (counting it as spent) and cached its winner: a RUNNING trial whose process is gone.
        tuner = make_tuner(FakeBackend(), Budget(trials=8), journal, cache=cache)
        study = study_of(tuner)
        seen = {config_key(*next(_family_config(t))) for t in study.trials if t.params}
        family, config = points.nearest_unseen(FAMILIES[0], points.default(FAMILIES[0]), seen)
        study.enqueue_trial(params_of(family, config))
        orphan = study.ask()
        orphan.set_user_attr("owner", f"{tuner.owner.rpartition(':')[0]}:{dead_pid()}")
        suggest(orphan, FAMILIES)

        untouched = FakeBackend()  # a budget of 6 was spent: the cached winner stands
        make_tuner(untouched, Budget(trials=6), journal, cache=cache).tune([PROBLEM])
        assert untouched.evaluated == []

        resumed = FakeBackend()
        outcome, = make_tuner(resumed, Budget(trials=8), journal, cache=cache).tune([PROBLEM])
    assert outcome.source == "tuned" and outcome.trials_total == 8
    assert config_key(resumed.evaluated[0].family, resumed.evaluated[0].config) == config_key(family, config)
    assert not [t for t in study_of(tuner).trials if t.state == TrialState.RUNNING]


def test_a_worker_evaluates_what_another_abandoned_after_counting_it_as_spent(points):
    """Another worker of the run holds two candidates when this one reaches the budget counting
    them as spent; that worker is then interrupted and queues them again. Before leaving, this
    worker evaluates them (:meth:`Tuner._settle`)."""
    import os

    from autoconv.search.outcome import Reporter
    from autoconv.search.storage import retry_trial
    from autoconv.search.study import decision_attrs, state_of

    backend = FakeBackend()
    tuner = make_tuner(backend, Budget(trials=8))
    study = optuna.create_study(study_name=study_name(PROBLEM.problem, tuner.backend.identity.gpu_name, FAMILIES),
                                storage=tuner.storage, direction="minimize")
    others = []
    for family, config in [points.nearest_unseen(FAMILIES[1], points.default(FAMILIES[1]), set())] + \
            [points.nearest_unseen(FAMILIES[0], points.default(FAMILIES[0]), set())]:
        study.enqueue_trial(params_of(family, config))
        trial = study.ask()
        trial.set_user_attr("owner", f"{tuner.owner.rpartition(':')[0]}:{os.getppid()}")  # alive
        suggest(trial, FAMILIES)
        others.append(trial)

    class Interrupting(Reporter):
        def problem_finished(self, outcome):  # the other worker's run ends: its candidates go back
            for trial in others:
                if study_of(tuner).trials[trial.number].state == TrialState.RUNNING:
                    for name, value in decision_attrs(Status.ABANDONED, "its run was interrupted").items():
                        trial.set_user_attr(name, value)
                    study.tell(trial, state=state_of(Status.ABANDONED))
                    retry_trial(study, trial, Status.ABANDONED.value)

    tuner.reporter = Interrupting()
    outcome, = tuner.tune([PROBLEM])
    evaluated = [t for t in study_of(tuner).trials if t.user_attrs.get("status") in EVALUATED]
    assert len(evaluated) == 8 and outcome.trials_run == 8
    assert {str(t.params) for t in others} <= {str(t.params) for t in evaluated}


def test_study_name_and_tune_all_problems(tmp_path):
    problem_b = NamedProblem("b", parse_spec("N=1,C=4,H=9,W=9,K=6,R=1,S=1"))
    backend = FakeBackend()
    tuner = Tuner(backend, SearchSettings(("im2col_gemm",), Budget(trials=3)), storage=storage())
    outcomes = tuner.tune([PROBLEM, problem_b])
    assert [o.name for o in outcomes] == ["odd", "b"]
    assert all(o.source == "tuned" and o.family == "im2col_gemm" for o in outcomes)
    name = outcomes[1].study_name
    assert problem_b.problem.key() in name and backend.identity.gpu_name in name and templates_hash() in name
    assert {s.study_name for s in optuna.get_all_study_summaries(tuner.storage)} == \
        {o.study_name for o in outcomes}


def test_no_valid_configuration_is_reported_not_raised():
    # A workspace limit of 0 bytes rules out im2col_gemm (its column buffer).
    problem = NamedProblem("ws", parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3"))
    backend = FakeBackend()
    tuner = Tuner(backend, SearchSettings(("im2col_gemm",), Budget(trials=3), workspace_limit=0), storage=storage())
    outcome, = tuner.tune([problem])
    assert outcome.source == "none" and outcome.time_ms is None
    assert "no configuration" in outcome.message and not backend.evaluated


def test_a_family_that_cannot_run_the_problem_is_no_choice_of_its_study():
    # implicit_gemm_wgmma_f16 computes 16-bit precisions only: an FP32 study never proposes it.
    backend = FakeBackend()
    tuner = Tuner(backend, SearchSettings((*FAMILIES, "implicit_gemm_wgmma_f16"), Budget(trials=12), seed=3),
                  storage=storage())
    outcome, = tuner.tune([PROBLEM])
    assert outcome.study_name == study_name(PROBLEM.problem, backend.identity.gpu_name, FAMILIES)
    trials = study_of(tuner).trials
    assert trials and {t.params["family"] for t in trials} <= set(FAMILIES)
    assert {t.distributions["family"].choices for t in trials} == {FAMILIES}


def test_a_family_without_a_valid_point_is_told_invalid_and_not_repaired():
    # A workspace limit of 0 bytes leaves im2col_gemm no valid point for a 3x3 problem; it stays a
    # choice (what the workspace allows is no property of the problem), but its proposals are only
    # told invalid: a repair would queue a point of direct that has nothing to do with them.
    problem = NamedProblem("ws", parse_spec("N=1,C=5,H=11,W=9,K=6,R=3,S=3,pad=1"))
    backend = FakeBackend()
    tuner = Tuner(backend, SearchSettings(FAMILIES, Budget(trials=12), seed=3, workspace_limit=0), storage=storage())
    outcome, = tuner.tune([problem])
    trials = study_of(tuner, problem.problem).trials
    proposed = {t.number for t in trials if t.params.get("family") == "im2col_gemm"}
    assert proposed, "the sampler never proposed im2col_gemm: the test proves nothing"
    assert all(trials[n].user_attrs["status"] == Status.INVALID.value for n in proposed)
    repaired_from = {int(origin.rsplit(" ", 1)[1]) for t in trials
                     if (origin := t.user_attrs.get("origin", "")).startswith("nearest unevaluated")}
    assert not repaired_from & proposed
    assert outcome.family == "direct" and outcome.trials_run == 12


def test_a_new_study_starts_with_the_winners_of_the_nearest_tuned_problems(tmp_path):
    """Transfer: the cache's winners of similar problems (same GPU and precision) are the first
    candidates of a new problem, before any family default; a problem of another precision or a
    far one is not a neighbour."""
    from autoconv.cache.neighbours import distance, nearest_winners

    tuned = [NamedProblem("near", parse_spec("N=2,C=13,H=29,W=29,K=17,R=3,S=3,stride=2x1,pad=1")),
             NamedProblem("far", parse_spec("N=8,C=3,H=64,W=64,K=64,R=1,S=1")),
             NamedProblem("tf32", parse_spec("N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1,precision=tf32"))]
    backend = FakeBackend()
    with WinnerCache(tmp_path / "cache.sqlite") as cache:
        Tuner(backend, SearchSettings(("im2col_gemm",), Budget(trials=6), seed=3),
              storage=storage(), cache=cache).tune(tuned[:2])
        Tuner(backend, SearchSettings(("implicit_gemm",), Budget(trials=3), seed=3),
              storage=storage(), cache=cache).tune(tuned[2:])
        entries = cache.entries()
        neighbours = nearest_winners(PROBLEM.problem, entries, gpu_name=backend.identity.gpu_name)
        assert [n.problem for n in neighbours] == [tuned[0].problem, tuned[1].problem]  # not tf32's
        assert distance(PROBLEM.problem, tuned[0].problem) < distance(PROBLEM.problem, tuned[1].problem)
        assert nearest_winners(PROBLEM.problem, entries, gpu_name="another GPU") == []

        near_winner = next(e for e in entries if e.key.problem_key == tuned[0].problem.key())
        backend.evaluated.clear()
        tuner = make_tuner(backend, Budget(trials=4), cache=cache)
        tuner.tune([PROBLEM])
    first = backend.evaluated[0]
    assert (first.family, dict(first.config)) == (near_winner.family, dict(near_winner.config))
    trial = study_of(tuner).trials[0]
    assert trial.user_attrs["origin"].startswith(f"winner of {tuned[0].problem.spec()} (distance ")


def test_a_neighbours_winner_cached_during_a_study_is_tried_before_it_stops(tmp_path, points, monkeypatch):
    """A study begun before its neighbour's winner was cached (another worker of the run tuned
    it meanwhile) tries that winner before its patience ends it, as its warm start would have."""
    from autoconv.cache.neighbours import Neighbour

    near = NamedProblem("near", parse_spec("N=2,C=13,H=29,W=29,K=17,R=3,S=3,stride=2x1,pad=1"))
    backend = FakeBackend()
    with WinnerCache(tmp_path / "cache.sqlite") as cache:
        Tuner(backend, SearchSettings(FAMILIES, Budget(trials=4), seed=3), storage=storage(), cache=cache).tune([near])
        entry = next(e for e in cache.entries() if e.key.problem_key == near.problem.key())
        # its winner, as far as this test is concerned: a valid point of PROBLEM no search would
        # come to in a few trials (the last of thousands in the listing's order)
        config = points.points["direct"][-1]
        entry = dataclasses.replace(entry, family="direct", config=config)
        tuner = make_tuner(backend, Budget(trials=200, patience=4), cache=cache)
        cached: list[Neighbour] = []  # (empty when the study begins)
        tuner.starts.neighbours = lambda problem: list(cached)  # type: ignore[method-assign]
        original_polish = FullStudy.polish

        def cache_it_once_the_study_runs(*args, **kwargs):
            cached[:] = [Neighbour(near.problem, entry, 0.5)]
            return original_polish(*args, **kwargs)

        monkeypatch.setattr(FullStudy, "polish", cache_it_once_the_study_runs)
        outcome = tuner.tune_problem(PROBLEM, points)
    late = [t for t in study_of(tuner).trials if "cached since the study began" in t.user_attrs.get("origin", "")]
    assert len(late) == 1 and late[0].user_attrs["origin"].startswith(f"winner of {near.problem.spec()}")
    assert config_of(late[0].params, "direct") == config and late[0].user_attrs.get("status") in EVALUATED
    assert outcome.stop_reason.startswith("no improvement")


@pytest.mark.parametrize("budget", [Budget(trials=200, patience=4), Budget(trials=6, patience=40)],
                         ids=["patience-spent", "trials-spent"])
def test_a_problem_tuned_before_its_neighbour_tries_the_neighbours_winner_at_the_end_of_the_run(
        tmp_path, points, budget):
    """A study that ended before a near problem was tuned never saw its winner: at the end of the
    run the problem is tuned once more with that winner queued; it wins if faster. A problem whose
    neighbours' winners were all tried is not tuned again, nor one whose trial budget is spent."""
    from autoconv.cache.neighbours import Neighbour

    near = NamedProblem("near", parse_spec("N=2,C=13,H=29,W=29,K=17,R=3,S=3,stride=2x1,pad=1"))
    # The neighbour's winner: a point of `direct` the study never tried, picked once it has ended
    # (a fixed point can be one the search came to: the sampler's path follows the study's name,
    # which holds the templates' hash).
    winner: dict = {}

    class Fast(FakeBackend):
        @staticmethod
        def synthetic_time_ms(plan):
            if plan.family == "direct" and dict(plan.config) == winner:
                return 0.001
            return 1.0 + FakeBackend.synthetic_time_ms(plan)

    backend = Fast()
    with WinnerCache(tmp_path / "cache.sqlite") as cache:
        Tuner(backend, SearchSettings(FAMILIES, Budget(trials=4), seed=3), storage=storage(), cache=cache).tune([near])
        near_entry = next(e for e in cache.entries() if e.key.problem_key == near.problem.key())
        tuner = make_tuner(backend, budget, cache=cache, pipeline_depth=2)
        cached: list[Neighbour] = []  # (empty while the problem is tuned: the neighbour comes later)
        tuner.starts.neighbours = lambda problem: list(cached)  # type: ignore[method-assign]
        tuned_again = []
        original_tune_problem, original_revisit = tuner.tune_problem, tuner._revisit

        def count(item, valid):
            tuned_again.append(item.name)
            return original_tune_problem(item, valid)

        def neighbour_tuned_meanwhile(tuned, outcomes):
            first = outcomes[0]
            assert first.time_ms > 1.0
            assert first.stop_reason == ("6 trials" if budget.trials == 6 else "no improvement of more than 2% "
                                         "in 4 trials and none among the best's variations")
            tried = [config_of(t.params, "direct") for t in study_of(tuner).trials
                     if t.params.get("family") == "direct"]
            winner.update(next(point for point in reversed(points.points["direct"]) if dict(point) not in tried))
            cached[:] = [Neighbour(near.problem, dataclasses.replace(near_entry, family="direct", config=dict(winner)),
                                   0.5)]
            tuner.tune_problem = count  # type: ignore[method-assign]
            original_revisit(tuned, outcomes)
            original_revisit(tuned, outcomes)  # (again: its winner is tried now, nothing to revisit)

        tuner._revisit = neighbour_tuned_meanwhile  # type: ignore[method-assign]
        (outcome,) = tuner.tune([PROBLEM])
        cached_ms = cache.get(tuner.cache_key(PROBLEM.problem)).time_ms
    if budget.trials == 6:
        assert tuned_again == [] and cached_ms > 1.0 and outcome.trials_run == 6
        return
    assert cached_ms == pytest.approx(0.001, rel=0.2)
    assert tuned_again == [PROBLEM.name]
    tried = [t for t in study_of(tuner).trials if t.user_attrs.get("origin", "").startswith("winner of ")]
    assert len(tried) == 1 and tried[0].user_attrs.get("status") in EVALUATED
    assert config_of(tried[0].params, "direct") == winner
    assert outcome.family == "direct" and dict(outcome.config) == dict(winner)
    assert outcome.trials_run == outcome.trials_total == SearchHistory.of(study_of(tuner)).evaluated
    assert not study_of(tuner).get_trials(deepcopy=False, states=(TrialState.WAITING,))


# ---- the ranking build with sizes at run time ----------------------------------------------------

#: A problem implicit_gemm_wgmma serves (C a multiple of its K tiles), for the tests of its ranking build.
WGMMA_PROBLEM = NamedProblem("c64", parse_spec("N=2,C=64,H=14,W=14,K=64,R=3,S=3,pad=1"))


class _InvertedRankingBuild(FakeBackend):
    """The run-time-size build ranks implicit_gemm_wgmma's configurations in the reverse order of
    their times with constants: whatever the search evaluates, its fastest three rebuilt are
    fastest in reverse, so the rule that picks the winner shows."""

    @staticmethod
    def synthetic_time_ms(plan) -> float:
        with_constants = FakeBackend.synthetic_time_ms(dataclasses.replace(plan, constants={}))
        return 1.0 / with_constants if plan.constants else with_constants


def test_a_family_ranked_with_run_time_sizes_is_decided_by_the_build_with_constants():
    """implicit_gemm_wgmma's candidates are searched in the build whose sizes come at run time (one
    compilation per configuration, but slower kernels, unevenly); the winner is the fastest of the
    search's best REVERIFY_CANDIDATES when each is rebuilt with constants, and that build is cached."""
    from autoconv.search.finish import REVERIFY_CANDIDATES

    problem = WGMMA_PROBLEM
    families = ("implicit_gemm_wgmma",)
    points = ValidPoints(enumerate_points(problem.problem, families, H100, 1 << 30))
    backend = _InvertedRankingBuild()
    cache = WinnerCache(":memory:")
    tuner = Tuner(backend, SearchSettings(families, Budget(trials=30), seed=3,
                                          search=SearchOptions(run_time_sizes=True)),
                  storage=storage(), cache=cache)
    outcome = tuner.tune_problem(problem, points)

    searched, finals = backend.evaluated[:-REVERIFY_CANDIDATES], backend.evaluated[-REVERIFY_CANDIDATES:]
    assert len(searched) == 30 and all(plan.constants for plan in searched)
    assert not any(plan.constants for plan in finals)
    ranked = sorted(searched, key=backend.synthetic_time_ms)[:REVERIFY_CANDIDATES]
    assert keys(finals) == keys(ranked)   # the search's best three, in its order, rebuilt
    # each new best's build with constants was prepared (compiled ahead) during the search
    assert backend.prepared and not any(plan.constants for plan in backend.prepared)
    assert keys(backend.prepared[-1:]) == keys(ranked[:1])
    # the fastest with constants won: the search's third
    best = min(finals, key=backend.synthetic_time_ms)
    assert keys([best]) == keys(ranked[-1:])
    assert (outcome.family, dict(outcome.config)) == (best.family, dict(best.config))
    assert outcome.time_ms == backend.synthetic_time_ms(best)
    entry = cache.get(tuner.cache_key(problem.problem))
    assert entry is not None and entry.source_hash == best.source_hash and entry.kernel_name == best.name


def test_without_run_time_sizes_the_search_builds_with_constants():
    problem = WGMMA_PROBLEM
    families = ("implicit_gemm_wgmma",)
    points = ValidPoints(enumerate_points(problem.problem, families, H100, 1 << 30))
    backend = FakeBackend()
    Tuner(backend, SearchSettings(families, Budget(trials=10), seed=9), storage=storage()).tune_problem(problem, points)
    assert len(backend.evaluated) == 11 and not any(plan.constants for plan in backend.evaluated)
    assert not backend.prepared


class _SlowRankingBuild(FakeBackend):
    """implicit_gemm_wgmma three times slower than the other family in its run-time-size build,
    twice as fast with constants: the search's top is all the other family's."""

    @staticmethod
    def synthetic_time_ms(plan) -> float:
        time_ms = FakeBackend.synthetic_time_ms(plan)
        if plan.family == "implicit_gemm_wgmma":
            return time_ms * (30.0 if plan.constants else 0.05)
        return time_ms


def test_the_best_of_a_family_ranked_in_its_slower_build_is_rebuilt_though_others_rank_ahead():
    from autoconv.search.finish import REVERIFY_CANDIDATES

    problem = WGMMA_PROBLEM
    families = ("implicit_gemm_mma", "implicit_gemm_wgmma")
    points = ValidPoints(enumerate_points(problem.problem, families, H100, 1 << 30))
    backend = _SlowRankingBuild()
    tuner = Tuner(backend, SearchSettings(families, Budget(trials=20), seed=9,
                                          search=SearchOptions(run_time_sizes=True)),
                  storage=storage())
    outcome = tuner.tune_problem(problem, points)
    searched, finals = backend.evaluated[:20], backend.evaluated[20:]
    assert sorted(searched, key=backend.synthetic_time_ms)[0].family == "implicit_gemm_mma"
    assert len(finals) == REVERIFY_CANDIDATES + 1 and not any(plan.constants for plan in finals)
    best_wgmma = min((p for p in searched if p.family == "implicit_gemm_wgmma"), key=backend.synthetic_time_ms)
    assert keys(finals[-1:]) == keys([best_wgmma])
    assert outcome.family == "implicit_gemm_wgmma" and dict(outcome.config) == dict(best_wgmma.config)


class _FastestJumpsInFull(FakeBackend):
    """The search's fastest configuration takes longer when timed in full (a kernel whose time jumps
    between runs): ``past_the_next`` longer than the search's next fastest took, else half way to it.
    Every other configuration takes the same either way."""

    def __init__(self, past_the_next: bool):
        super().__init__()
        self.past_the_next = past_the_next
        self.searched: dict[str, float] = {}

    def result(self, ticket):
        result = super().result(ticket)
        key = config_key(ticket.plan.family, ticket.plan.config)
        if ticket.screening:
            self.searched[key] = result.time_ms
            return result
        first, second = sorted(self.searched.values())[:2]
        if result.time_ms != first:
            return result
        jumped = second * 1.1 if self.past_the_next else (first + second) / 2
        return dataclasses.replace(result, time_ms=jumped, min_ms=jumped, max_ms=jumped)


@pytest.mark.parametrize("past_the_next", [True, False])
def test_a_winner_slower_in_full_than_the_next_in_the_search_is_timed_against_it(points, past_the_next):
    """The search's fastest is re-verified and timed in full; if that time is above the next
    fastest's in the search, the next is verified and timed in full too, and the faster in full wins
    (and is cached). Otherwise the next is not timed again."""
    backend = _FastestJumpsInFull(past_the_next)
    cache = WinnerCache(":memory:")
    tuner = make_tuner(backend, Budget(trials=15), cache=cache)
    outcome = tuner.tune_problem(PROBLEM, points)
    searched = [plan for plan, screened in zip(backend.evaluated, backend.screened) if screened]
    finals = [plan for plan, screened in zip(backend.evaluated, backend.screened) if not screened]
    ranked = sorted(searched, key=backend.synthetic_time_ms)
    assert len(searched) == 15 and len(set(keys(ranked[:3]))) == 3
    if past_the_next:
        assert keys(finals) == keys(ranked[:2])   # the fastest, then the next (the third: slower than it)
        winner = ranked[1]
        assert outcome.time_ms == backend.synthetic_time_ms(winner)
        assert "in full" in outcome.message
    else:
        assert keys(finals) == keys(ranked[:1])
        winner = ranked[0]
        assert outcome.time_ms > backend.synthetic_time_ms(winner)   # its time in full stands
        assert "in full" not in outcome.message
    assert (outcome.family, dict(outcome.config)) == (winner.family, dict(winner.config))
    entry = cache.get(tuner.cache_key(PROBLEM.problem))
    assert entry is not None and entry.kernel_name == winner.name and entry.time_ms == outcome.time_ms


def test_a_problems_wall_time_is_accounted_by_phase(points):
    """phases_s splits the tuning process's time on a problem: waiting for results (here the fake
    backend's sleep per result) is ``wait``, and the phases add up to the wall time."""
    from autoconv.search.outcome import PHASES

    backend = FakeBackend(delay_s=0.02)
    outcome = make_tuner(backend, Budget(trials=10)).tune_problem(PROBLEM, points)
    assert set(outcome.phases_s) == set(PHASES) and all(seconds >= 0 for seconds in outcome.phases_s.values())
    results = len(backend.evaluated)   # the search's and the winner's re-verification
    assert outcome.phases_s["wait"] >= 0.02 * (results - 1)
    assert outcome.phases_s["finish"] >= 0.02   # the re-verification's result
    assert sum(outcome.phases_s.values()) == pytest.approx(outcome.wall_s, abs=0.02)


class _LastFirstBackend(FakeBackend):
    """Results ready newest first (a backend whose earlier candidates compile slowest)."""

    def __init__(self):
        super().__init__()
        self.redeemed: list[int] = []   # submission numbers, in the order the tuner redeemed them
        self._submitted = 0

    def submit(self, plan, *, seed=None, screening=False, cutoff_ms=None, priority=None):
        ticket = super().submit(plan, seed=seed, screening=screening, cutoff_ms=cutoff_ms)
        ticket.number = self._submitted  # type: ignore[attr-defined]
        self._submitted += 1
        return ticket

    def first_done(self, tickets):
        return len(tickets) - 1

    def result(self, ticket):
        self.redeemed.append(ticket.number)
        return super().result(ticket)


def test_the_tuner_takes_results_in_the_order_the_backend_has_them(points):
    """first_done, not submission order, decides which result the tuner waits for: each
    candidate is told once, the study ends with no trial left running, the winner is the fastest."""
    backend = _LastFirstBackend()
    tuner = make_tuner(backend, Budget(trials=20), pipeline_depth=6)
    outcome = tuner.tune_problem(PROBLEM, points)
    assert outcome.trials_run == 20
    assert sorted(backend.redeemed) == list(range(len(backend.redeemed)))  # (each once)
    assert backend.redeemed[:2] != [0, 1] and backend.redeemed != sorted(backend.redeemed)
    study = study_of(tuner)
    assert not study.get_trials(states=(TrialState.RUNNING,))
    timed = [t.value for t in study.trials if t.state == TrialState.COMPLETE]
    assert outcome.time_ms == pytest.approx(min(timed))


class _CutoffRecorder(FakeBackend):
    """Records each submission's cut-off; a third of the configurations run 10x slower."""

    def __init__(self):
        super().__init__()
        self.cutoffs: list[tuple[bool, float | None]] = []   # (screening, cutoff_ms) per submission
        self.applied: list[float | None] = []  # the cut-off each ticket had when evaluated

    def submit(self, plan, *, seed=None, screening=False, cutoff_ms=None, priority=None):
        self.cutoffs.append((screening, cutoff_ms))
        return super().submit(plan, seed=seed, screening=screening, cutoff_ms=cutoff_ms)

    def result(self, ticket):
        self.applied.append(ticket.cutoff_ms)
        return super().result(ticket)

    @staticmethod
    def synthetic_time_ms(plan):
        slow = zlib.crc32(config_key(plan.family, plan.config).encode()) % 3 == 0
        return FakeBackend.synthetic_time_ms(plan) * (10.0 if slow else 1.0)


def test_candidates_far_slower_than_the_best_are_cut_short_and_never_win(points):
    """Each screened candidate is submitted with the cut-off of the best known when it was asked
    (none before the first result); the ones past it count as cut short; the winner's timing in
    full has no cut-off."""
    backend = _CutoffRecorder()
    tuner = make_tuner(backend, Budget(trials=40), pipeline_depth=1)
    outcome = tuner.tune_problem(PROBLEM, points)
    screened = [cutoff for screening, cutoff in backend.cutoffs if screening]
    assert screened[0] is None and all(cutoff is not None for cutoff in screened[1:])
    assert backend.cutoffs[-1] == (False, None)  # (the winner's re-verification, timed in full)
    plans = backend.evaluated[:-1]
    times = [backend.synthetic_time_ms(plan) for plan in plans]
    assert {len(plan.launches) for plan in plans} == {1, 2}  # (im2col_gemm's two: a slack per launch)
    for index, cutoff in enumerate(screened[1:], start=1):  # (depth 1: the best of all before it)
        assert cutoff == pytest.approx(SLOW_CUTOFF * min(times[:index]) + LAUNCH_SLACK_MS * len(plans[index].launches))
    cut = sum(cutoff is not None and time > cutoff for time, cutoff in zip(times, screened))
    assert outcome.cut_short == cut > 0, "no candidate was 3x slower than the best: the test proves nothing"
    study = study_of(tuner)
    marked = [t for t in study.trials if t.user_attrs.get("details", {}).get("cut_short")]
    assert len(marked) == cut and all(t.value > outcome.time_ms * SLOW_CUTOFF for t in marked)


def test_a_new_best_lowers_the_cut_off_of_candidates_waiting_for_the_gpu(points):
    """A study's first candidates are submitted before any result: once one is timed, those
    still waiting are cut off by it."""
    backend = _CutoffRecorder()
    tuner = make_tuner(backend, Budget(trials=12), pipeline_depth=6)
    tuner.tune_problem(PROBLEM, points)
    assert [cutoff for _, cutoff in backend.cutoffs[:6]] == [None] * 6
    assert backend.applied[0] is None and all(cutoff is not None for cutoff in backend.applied[1:6])
    plans = backend.evaluated
    times = [backend.synthetic_time_ms(plan) for plan in plans]
    for index in range(1, 6):  # (each redeemed with the best of those before it, the fake's order)
        assert backend.applied[index] == pytest.approx(cutoff_ms(min(times[:index]), len(plans[index].launches)))


def test_the_sampler_seed_follows_the_problem_not_the_templates_version():
    """A template edit (its hash in the study name) leaves a study's proposals as they were; another
    problem, GPU, family list or run seed draws others."""
    from autoconv.search.study_loop import sampler_seed

    name = "autoconv/N=1,C=8,H=5,W=5,K=8,R=3,S=3/NVIDIA H100 80GB HBM3/direct+implicit_gemm/"
    assert sampler_seed(0, name + "0123456789abcdef") == sampler_seed(0, name + "fedcba9876543210")
    others = {sampler_seed(0, name.replace("K=8", "K=16") + "0"), sampler_seed(0, name.replace("H100", "H200") + "0"),
              sampler_seed(0, name.replace("+implicit_gemm", "") + "0"), sampler_seed(1, name + "0")}
    assert sampler_seed(0, name + "0") not in others and len(others) == 4
    assert all(0 <= seed < 2 ** 32 for seed in others)
