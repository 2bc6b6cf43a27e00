"""The tuner's Optuna studies: their names, and how a candidate and its evaluation are
written into a trial and read back (by the tuner, and by ``autoconv bench`` for each
family's best time and the convergence plots: :class:`autoconv.bench.benchmark.StudyHistory`).

This is a stored format: the studies of earlier runs (journal files, databases) are read
by it, so a name or a value here must not change without a way to read the old one.

**A study** per problem, GPU model, families and templates, named
``autoconv/<problem key>/<GPU name>/<families>/<template hash>`` (:func:`study_name`; the
families requested that can run the problem at all, :func:`searched_families`), minimising the
time; its user attributes: ``problem`` (the problem's key) and ``winner`` (the re-verified
winner's trial, kernel name, time and TFLOP/s).

**A trial** is one proposal:

- *params*: ``family``, a categorical over the searched families, and ``<family>.<name>``
  for each parameter of that family's search space, suggested define-by-run
  (:func:`suggest`), so each distribution is fixed within a study;
- *user attributes*: ``owner``, the process that asked for it (:func:`claim`: the write
  right after asking); on a queued trial ``origin`` (why: a family's default or seed, a
  repair, a retry) and ``retries`` (:func:`autoconv.search.storage.retry_trial`); once
  decided, ``status`` (a :class:`~autoconv.backends.base.Status` value) and ``reason``,
  and for an evaluated candidate ``compile_s``, ``run_s``, ``time_ms`` (ok only) and
  ``details`` (:func:`evaluation_attrs`);
- *state and value* (:func:`state_of`): COMPLETE with the time in ms for ``ok``; PRUNED
  for any other evaluated status and for ``invalid`` (TPE ranks pruned trials worst, so
  it learns to avoid them) and for ``predicted_slow`` (a proposal the tuning history's model
  ranks among the slowest: :mod:`autoconv.search.prefilter`); FAIL for ``repeat`` and
  ``abandoned`` (samplers ignore failed trials).

A trial reads back as a :class:`TrialRecord` (:func:`read_trial`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import optuna
from optuna.trial import FrozenTrial, TrialState

from autoconv.backends.base import Status, TrialResult
from autoconv.errors import ProblemError
from autoconv.kernels.families import KernelPlan, get_family
from autoconv.kernels.fingerprint import templates_hash
from autoconv.problems.problem import ConvProblem, parse_spec
from autoconv.search.points import config_key

#: The param naming the kernel family; the family's own params are ``<family>.<name>``.
FAMILY_PARAM = "family"
#: Trial statuses of candidates that were compiled or run (others: invalid proposals,
#: repeats, and trials abandoned when a run ended): :attr:`Status.evaluated`.
EVALUATED = frozenset(status.value for status in Status if status.evaluated)
#: Longest ``reason`` stored (a compiler's output can be long).
MAX_REASON_CHARS = 2000

_STATUSES = {status.value: status for status in Status}


# ---- studies ------------------------------------------------------------------------------

def searched_families(problem: ConvProblem, families: Sequence[str]) -> tuple[str, ...]:
    """Those of ``families`` that can run ``problem`` at all (its precision, dtype and layout:
    :meth:`~autoconv.kernels.families.base.Family.unsupported_reason`), in their order: the
    study's choices of family. A choice that cannot serve the problem is proposed for nothing:
    with every family a choice, a tune spent a large share of its candidates on points of another
    family that such proposals were repaired into; without them the budget goes to the families
    that serve, at the same cost.
    This depends on the problem alone, so the study's distribution stays fixed, whatever the
    GPU or the workspace allows. (Studies named with every family, before, are still read; an
    unfinished one is not resumed.)"""
    return tuple(name for name in families if get_family(name).unsupported_reason(problem) is None)


def study_name(problem: ConvProblem, gpu_name: str, families: Sequence[str]) -> str:
    """``autoconv/<problem key>/<GPU name>/<families>/<template hash>``, ``<families>`` those of
    ``families`` that serve the problem (:func:`searched_families`)."""
    searched = searched_families(problem, families)
    return f"autoconv/{problem.key()}/{gpu_name}/{'+'.join(searched)}/{templates_hash()}"


@dataclass(frozen=True)
class StudyName:
    """A :func:`study_name` read back."""

    problem: ConvProblem
    gpu_name: str
    families: tuple[str, ...]
    templates_hash: str


def parse_study_name(name: str) -> StudyName | None:
    """``name`` read back (:func:`study_name`); None for a study autoconv did not name, or
    whose problem key this autoconv cannot read."""
    parts = name.split("/")
    if len(parts) < 5 or parts[0] != "autoconv":
        return None
    try:
        problem = parse_spec(parts[1])
    except ProblemError:  # (a study of another autoconv's spec syntax)
        return None
    return StudyName(problem, "/".join(parts[2:-2]), tuple(parts[-2].split("+")), parts[-1])


def mark_problem(study: optuna.Study, problem: ConvProblem) -> None:
    study.set_user_attr("problem", problem.key())


def record_winner(study: optuna.Study, trial_number: int, kernel_name: str, time_ms: float,
                  tflops: float) -> None:
    study.set_user_attr("winner", {"trial": trial_number, "kernel_name": kernel_name,
                                   "time_ms": time_ms, "tflops": tflops})


# ---- writing a trial ---------------------------------------------------------------------------

def params_of(family: str, config: Mapping[str, object]) -> dict[str, object]:
    """A configuration as trial params (to enqueue it)."""
    return {FAMILY_PARAM: family, **{f"{family}.{name}": value for name, value in config.items()}}


def config_of(params: Mapping[str, object], family: str) -> dict[str, object]:
    """The configuration of ``family`` in trial params."""
    prefix = family + "."
    return {name[len(prefix):]: value for name, value in params.items() if name.startswith(prefix)}


def suggest(trial: optuna.Trial, families: Sequence[str]) -> tuple[str, dict[str, object]]:
    """Ask ``trial``'s sampler for a family among ``families`` (every one stays a choice,
    so the distribution is fixed per study) and a value of each of its parameters."""
    family = trial.suggest_categorical(FAMILY_PARAM, list(families))
    space = get_family(family).space
    config = {name: trial.suggest_categorical(f"{family}.{name}", list(choices))
              for name, choices in space.params.items()}
    return family, config


def enqueue(study: optuna.Study, family: str, config: Mapping[str, object], origin: str) -> None:
    """Queue ``config`` as the study's next trial, saying why."""
    study.enqueue_trial(params_of(family, config), user_attrs={"origin": origin})


def claim(trial: optuna.Trial, owner: str) -> None:
    """Mark ``trial`` as the one process ``owner`` (:func:`autoconv.processes.process_owner`)
    evaluates."""
    trial.set_user_attr("owner", owner)


def owner_of(trial: FrozenTrial) -> str:
    """The process that claimed ``trial`` (``""``: none did)."""
    return str(trial.user_attrs.get("owner", ""))


def state_of(status: Status) -> TrialState:
    """The state a trial of this status ends in (see the module docstring)."""
    if status is Status.OK:
        return TrialState.COMPLETE
    if status.evaluated or status in (Status.INVALID, Status.PREDICTED_SLOW):
        return TrialState.PRUNED
    return TrialState.FAIL


def decision_attrs(status: Status, reason: str) -> dict[str, Any]:
    """The user attributes of a trial decided without evaluating it."""
    return {"status": status.value, "reason": reason}


def refuse(study: optuna.Study, trial: optuna.Trial, status: Status, reason: str) -> None:
    """End ``trial`` unevaluated: ``invalid``, ``repeat`` or ``abandoned``, and why."""
    for name, value in decision_attrs(status, reason).items():
        trial.set_user_attr(name, value)
    study.tell(trial, state=state_of(status))


def evaluation_attrs(plan: KernelPlan, result: TrialResult) -> dict[str, Any]:
    """The user attributes of an evaluated trial: ``status``, ``reason``, ``compile_s``,
    ``compile_cpu_s``, ``run_s``, ``time_ms`` (ok only) and ``details`` (the rest: one attribute, as each
    is a journal write with an fsync)."""
    details = {"kernel_name": plan.name, "workspace_bytes": plan.workspace_bytes,
               "source_hash": plan.source_hash}
    for name in ("tflops", "min_ms", "max_ms", "error", "registers", "spill_bytes", "shared_bytes"):
        value = getattr(result, name)
        if value is not None:
            details[name] = value
    for name in ("compile_queue_s", "gpu_queue_s"):
        if getattr(result, name):
            details[name] = round(getattr(result, name), 4)
    if result.cut_short:
        details["cut_short"] = True
    attrs = {"status": result.status.value, "reason": result.reason[:MAX_REASON_CHARS],
             "compile_s": round(result.compile_s, 4), "compile_cpu_s": round(result.compile_cpu_s, 4),
             "run_s": round(result.run_s, 4),
             "details": details}
    if result.time_ms is not None:
        attrs["time_ms"] = result.time_ms
    return attrs


def record_evaluation(study: optuna.Study, trial: optuna.Trial, plan: KernelPlan, result: TrialResult) -> None:
    """Write ``result`` into ``trial`` and end it: COMPLETE with the time in ms when ok,
    else PRUNED.

    Raises:
        optuna.exceptions.UpdateFinishedTrialError: another process ended the trial.
    """
    for name, value in evaluation_attrs(plan, result).items():
        trial.set_user_attr(name, value)
    if result.ok:
        study.tell(trial, result.time_ms)
    else:
        study.tell(trial, state=state_of(result.status))


# ---- reading it back ---------------------------------------------------------------------

@dataclass(frozen=True)
class TrialRecord:
    """A trial with a family, as written above. ``status`` is None until the trial is
    decided (or for a string this autoconv does not know); ``value`` is Optuna's, the
    time in ms of a COMPLETE trial."""

    number: int
    state: TrialState
    family: str
    config: dict[str, object]
    status: Status | None = None
    value: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return config_key(self.family, self.config)

    @property
    def evaluated(self) -> bool:
        """Compiled or run (:data:`EVALUATED`)."""
        return self.status is not None and self.status.evaluated

    @property
    def time_ms(self) -> float | None:
        """The time of a COMPLETE trial (an ok candidate), else None."""
        return self.value if self.state == TrialState.COMPLETE else None


def read_trial(trial: FrozenTrial) -> TrialRecord | None:
    """``trial`` as a :class:`TrialRecord`; None when it has no family (yet: a trial just
    asked for has none until it is suggested them). A queued trial's are the params it was
    queued with (Optuna keeps them apart until it is asked for)."""
    params = trial.params
    if trial.state == TrialState.WAITING and not params:
        queued_with = trial.system_attrs.get("fixed_params")
        params = queued_with if isinstance(queued_with, dict) else {}
    family = params.get(FAMILY_PARAM)
    if family is None:
        return None
    raw = trial.user_attrs.get("status")
    details = trial.user_attrs.get("details")
    return TrialRecord(number=trial.number, state=trial.state, family=family,
                       config=config_of(params, family),
                       status=_STATUSES.get(raw) if isinstance(raw, str) else None,
                       value=trial.value, details=details if isinstance(details, dict) else {})


def read_trials(study: optuna.Study, states: Sequence[TrialState] | None = None) -> list[TrialRecord]:
    """The study's trials with a family, in the storage's order (trial numbers)."""
    trials = study.get_trials(deepcopy=False, states=tuple(states) if states is not None else None)
    return [record for record in map(read_trial, trials) if record is not None]


@dataclass
class SearchHistory:
    """The evaluated trials of a study (all runs, all processes), in trial order, and the
    configurations queued (``waiting``) or being evaluated (``running``) by anyone.
    ``judged`` counts the evaluated trials and the proposals skipped as predicted slow;
    ``since_best`` counts those of them after the last significant improvement."""

    results: dict[str, tuple[int, Status, float | None]]  # config key -> (trial, status, ms)
    evaluated: int
    best_ms: float | None
    since_best: int
    waiting: set[str]
    running: set[str]
    judged: int = 0

    @classmethod
    def of(cls, study: optuna.Study, min_improvement: float = 0.0) -> SearchHistory:
        """The study's history. ``since_best`` counts the evaluated trials, and the
        proposals skipped as predicted slow (each a proposal that did not improve, by the
        model's judgement), since the last evaluated trial that was faster than every
        earlier one by more than the fraction ``min_improvement`` (0: since the fastest);
        ``best_ms`` is the fastest all the same."""
        results: dict[str, tuple[int, Status, float | None]] = {}
        evaluated, judged, since = 0, 0, 0
        best: float | None = None
        mark: float | None = None  # the best when ``since`` was last reset
        waiting: set[str] = set()
        running: set[str] = set()
        for record in read_trials(study):
            if record.state == TrialState.WAITING:
                waiting.add(record.key)
                continue
            if record.state == TrialState.RUNNING:
                running.add(record.key)
                continue
            if record.status is Status.PREDICTED_SLOW:
                judged += 1
                since += 1
                continue
            if not record.evaluated:
                continue
            value = record.time_ms
            results.setdefault(record.key, (record.number, cast(Status, record.status), value))  # (evaluated)
            evaluated += 1
            judged += 1
            if value is not None and (mark is None or value < mark * (1.0 - min_improvement)):
                mark, since = value, 0
            else:
                since += 1
            if value is not None and (best is None or value < best):
                best = value
        return cls(results, evaluated, best, since, waiting, running, judged)

    def known(self) -> set[str]:
        """The configurations evaluated, queued or being evaluated: not to be queued again."""
        return set(self.results) | self.waiting | self.running

    def timed(self) -> dict[str, float]:
        """The ok trials' times by config key."""
        return {key: ms for key, (_, status, ms) in self.results.items() if status is Status.OK and ms is not None}

    def best_key(self) -> str | None:
        """The fastest ok trial's config key (None: none yet)."""
        timed = self.timed()
        return min(timed, key=timed.__getitem__) if timed else None


def claimed_by_another(study: optuna.Study, number: int, key: str) -> str | None:
    """Why another trial than ``number`` holds the config ``key`` (it was evaluated, or
    it is being evaluated), or None."""
    for record in read_trials(study, (TrialState.RUNNING, TrialState.COMPLETE, TrialState.PRUNED)):
        if record.number == number or record.key != key:
            continue
        if record.state == TrialState.RUNNING:
            return f"being evaluated now (trial {record.number})"
        if record.evaluated:
            return f"evaluated before (trial {record.number})"
    return None


def ok_trials(study: optuna.Study) -> list[TrialRecord]:
    """The study's ok trials, fastest first."""
    return sorted((record for record in read_trials(study, (TrialState.COMPLETE,)) if record.status is Status.OK),
                  key=lambda record: cast(float, record.value))  # (COMPLETE: a value)
