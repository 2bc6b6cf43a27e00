"""The trial encoding (:mod:`autoconv.search.study`): what the tuner writes into a trial
reads back the same, by the tuner and by ``autoconv bench``; the stored strings are those
of earlier studies."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState

from autoconv.backends.base import Status, TrialResult
from autoconv.bench.benchmark import StudyHistory
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.problems.problem import parse_spec
from autoconv.search.points import ValidPoints, config_key, enumerate_points
from autoconv.search.study import (
    EVALUATED,
    SearchHistory,
    claim,
    claimed_by_another,
    config_of,
    enqueue,
    ok_trials,
    params_of,
    read_trial,
    read_trials,
    record_evaluation,
    refuse,
    state_of,
    suggest,
)

PROBLEM = parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1")
FAMILIES = ("direct", "im2col_gemm")


@pytest.fixture(scope="module")
def configs():
    """Three valid configs of each family."""
    points = ValidPoints(enumerate_points(PROBLEM, FAMILIES, H100, 1 << 30))
    return [(family, config) for family in FAMILIES for config in points.points[family][:3]]


@pytest.fixture
def study():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(study_name="s", storage=optuna.storages.InMemoryStorage(), direction="minimize")


def ask(study, family, config):
    """A trial proposing ``config``, asked and suggested as the tuner does."""
    enqueue(study, family, config, "test")
    trial = study.ask()
    claim(trial, "host[0]:1")
    assert suggest(trial, FAMILIES) == (family, config)
    return trial


def result(family, config, status=Status.OK, time_ms=None, reason=""):
    plan = get_family(family).plan(PROBLEM, config, H100, 1 << 30)
    ok = status is Status.OK
    return plan, TrialResult(status=status, reason=reason or ("verified" if ok else "planted"),
                             kernel_name=plan.name, time_ms=time_ms if ok else None,
                             tflops=1.25 if ok else None, error=1e-7 if ok else 0.5, compile_s=0.123456,
                             run_s=0.5, registers=40, spill_bytes=0, shared_bytes=4096,
                             workspace_bytes=plan.workspace_bytes, source_hash=plan.source_hash)


def test_params_and_configs_are_inverse(configs):
    for family, config in configs:
        params = params_of(family, config)
        assert params["family"] == family and all(f"{family}.{name}" in params for name in config)
        assert config_of(params, family) == config


def test_an_evaluated_trial_reads_back_as_written(study, configs):
    (family, config), (other, other_config) = configs[0], configs[3]
    plan, ok = result(family, config, time_ms=0.75)
    trial = ask(study, family, config)
    record_evaluation(study, trial, plan, ok)
    failed_plan, wrong = result(other, other_config, Status.WRONG_RESULT)
    record_evaluation(study, ask(study, other, other_config), failed_plan, wrong)

    first, second = read_trials(study)
    assert (first.family, first.config, first.status, first.state) == (family, config, Status.OK, TrialState.COMPLETE)
    assert first.value == first.time_ms == 0.75 and first.evaluated and first.key == config_key(family, config)
    assert first.details == {"kernel_name": plan.name, "workspace_bytes": plan.workspace_bytes,
                             "source_hash": plan.source_hash, "tflops": 1.25, "error": 1e-7, "registers": 40,
                             "spill_bytes": 0, "shared_bytes": 4096}
    attrs = study.trials[0].user_attrs
    assert attrs["status"] == "ok" and attrs["time_ms"] == 0.75 and attrs["compile_s"] == 0.1235
    assert attrs["owner"] == "host[0]:1" and attrs["origin"] == "test"
    assert (second.status, second.state, second.time_ms, second.evaluated) == \
        (Status.WRONG_RESULT, TrialState.PRUNED, None, True)
    assert "time_ms" not in study.trials[1].user_attrs and study.trials[1].user_attrs["reason"] == "planted"


def test_refused_trials_end_unevaluated(study, configs):
    for (family, config), status in zip(configs, (Status.INVALID, Status.REPEAT, Status.ABANDONED)):
        refuse(study, ask(study, family, config), status, f"why {status.value}")
    records = read_trials(study)
    assert [(r.status, r.state, r.evaluated) for r in records] == [
        (Status.INVALID, TrialState.PRUNED, False), (Status.REPEAT, TrialState.FAIL, False),
        (Status.ABANDONED, TrialState.FAIL, False)]
    assert [t.user_attrs["reason"] for t in study.trials] == ["why invalid", "why repeat", "why abandoned"]
    history = SearchHistory.of(study)
    assert (history.results, history.evaluated, history.best_ms) == ({}, 0, None)


def test_predicted_slow_proposals_count_towards_the_patience_not_the_evaluations(study, configs):
    """A proposal the model skipped did not improve the best: it counts in ``since_best`` and
    ``judged``, not in ``evaluated`` (the trial budget counts compilations)."""
    (first, one), (second, two), (third, three) = configs[:3]
    record_evaluation(study, ask(study, first, one), *result(first, one, time_ms=1.0))
    refuse(study, ask(study, second, two), Status.PREDICTED_SLOW, "predicted slow")
    record_evaluation(study, ask(study, third, three), *result(third, three, time_ms=1.5))
    record = read_trials(study)[1]
    assert (record.status, record.state, record.evaluated) == (Status.PREDICTED_SLOW, TrialState.PRUNED, False)
    history = SearchHistory.of(study)
    assert (history.evaluated, history.judged, history.since_best, history.best_ms) == (2, 3, 2, 1.0)
    assert history.best_key() == read_trials(study)[0].key
    assert history.timed() == {read_trials(study)[0].key: 1.0, read_trials(study)[2].key: 1.5}


def test_the_history_knows_the_configurations_queued_and_not_yet_asked_for(study, configs):
    """A queued trial's params are kept apart by Optuna until it is asked for; the history reads
    them there, so that nothing queued is queued again or picked by a repair."""
    (first, one), (second, two) = configs[:2]
    enqueue(study, first, one, "test")
    enqueue(study, second, two, "test")
    history = SearchHistory.of(study)
    assert history.waiting == {config_key(first, one), config_key(second, two)}
    assert [r.state for r in read_trials(study)] == [TrialState.WAITING] * 2
    trial = study.ask()
    assert suggest(trial, FAMILIES) == (first, one)
    assert SearchHistory.of(study).waiting == {config_key(second, two)}


def test_stored_status_strings_are_the_old_ones():
    """Journals and databases of earlier runs hold these strings: they must still read."""
    assert {status.value for status in Status} == {
        "ok", "invalid", "compile_failed", "out_of_resources", "spills", "wrong_result", "runtime_failed",
        "timeout", "repeat", "predicted_slow", "abandoned"}
    assert EVALUATED == {"ok", "compile_failed", "out_of_resources", "spills", "wrong_result", "runtime_failed",
                         "timeout"}
    assert {status: state_of(status) for status in Status} == {
        Status.OK: TrialState.COMPLETE, Status.INVALID: TrialState.PRUNED, Status.COMPILE_FAILED: TrialState.PRUNED,
        Status.OUT_OF_RESOURCES: TrialState.PRUNED, Status.SPILLS: TrialState.PRUNED,
        Status.WRONG_RESULT: TrialState.PRUNED, Status.RUNTIME_FAILED: TrialState.PRUNED,
        Status.TIMEOUT: TrialState.PRUNED, Status.REPEAT: TrialState.FAIL, Status.PREDICTED_SLOW: TrialState.PRUNED,
        Status.ABANDONED: TrialState.FAIL}


def test_trials_written_by_hand_read_back_by_their_strings(study):
    """A trial written attribute by attribute, as an older autoconv did, reads back; an
    unknown status is no status, and a trial without a family is skipped."""
    study.add_trial(optuna.trial.create_trial(
        params={"family": "direct", "direct.X": 2}, distributions={
            "family": optuna.distributions.CategoricalDistribution(["direct"]),
            "direct.X": optuna.distributions.CategoricalDistribution([1, 2])},
        value=1.5, user_attrs={"status": "ok", "details": "not a dict"}))
    study.add_trial(optuna.trial.create_trial(
        params={"family": "direct", "direct.X": 1}, distributions={
            "family": optuna.distributions.CategoricalDistribution(["direct"]),
            "direct.X": optuna.distributions.CategoricalDistribution([1, 2])},
        state=TrialState.FAIL, user_attrs={"status": "some future status"}))
    study.add_trial(optuna.trial.create_trial(state=TrialState.FAIL, user_attrs={"status": "abandoned"}))
    first, second = read_trials(study)
    assert (first.config, first.status, first.time_ms, first.details) == ({"X": 2}, Status.OK, 1.5, {})
    assert (second.status, second.evaluated) == (None, False)
    assert read_trial(study.trials[2]) is None


def test_history_claims_and_the_fastest(study, configs):
    times = [0.9, 0.5, None, 0.7]  # None: a failed candidate
    for (family, config), ms in zip(configs, times):
        plan, evaluated = result(family, config, Status.OK if ms else Status.TIMEOUT, ms)
        record_evaluation(study, ask(study, family, config), plan, evaluated)
    running_family, running_config = configs[4]
    running = ask(study, running_family, running_config)

    history = SearchHistory.of(study)
    assert history.evaluated == 4 and history.best_ms == 0.5 and history.since_best == 2
    # 0.5 beats 0.9 by 44%: it restarts the count unless that is not enough.
    assert SearchHistory.of(study, min_improvement=0.4).since_best == 2
    slow = SearchHistory.of(study, min_improvement=0.5)
    assert slow.best_ms == 0.5 and slow.since_best == 3
    assert history.results[config_key(*configs[2])] == (2, Status.TIMEOUT, None)
    assert history.running == {config_key(running_family, running_config)} and not history.waiting
    assert [record.value for record in ok_trials(study)] == [0.5, 0.7, 0.9]

    assert claimed_by_another(study, 99, config_key(*configs[1])) == "evaluated before (trial 1)"
    assert claimed_by_another(study, 99, config_key(running_family, running_config)) == \
        f"being evaluated now (trial {running.number})"
    assert claimed_by_another(study, running.number, config_key(running_family, running_config)) is None
    assert claimed_by_another(study, 99, config_key(*configs[5])) is None

    # autoconv bench reads the same study: evaluated trials only, in order, per-family bests.
    bench = StudyHistory.of(study)
    assert bench.family_best_ms == {"direct": 0.5, "im2col_gemm": 0.7}
    assert [(t["number"], t["optuna_number"], t["value_ms"], t["state"]) for t in bench.trials] == [
        (0, 0, 0.9, "COMPLETE"), (1, 1, 0.5, "COMPLETE"), (2, 2, None, "timeout"), (3, 3, 0.7, "COMPLETE")]
    assert bench.trials[0]["kernel"] == get_family(configs[0][0]).plan(PROBLEM, configs[0][1], H100, 1 << 30).name
