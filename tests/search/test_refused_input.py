"""Reliability (issue 7): bad input is refused with file, line and field; problems too
large for the device's memory are refused before anything is allocated, and candidates
whose workspace does not fit are never evaluated; the fake backend's knobs are checked."""

from __future__ import annotations

import json

import optuna
import pytest

from autoconv.backends.factory import make_backend
from autoconv.backends.fake import FakeBackend
from autoconv.config.budget import Budget
from autoconv.errors import BackendUnavailable
from autoconv.gpu.memory import estimate
from autoconv.kernels.limits import H100
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.search.options import SearchSettings
from autoconv.search.tuner import Tuner
from tests.helpers import ONE_PROBLEM, SMALL, run_cli

LAYER = """\
problems:
  - name: layer
    N: 2
    C: 13
    H: 31
    W: 29
    K: 17
    R: 3
    S: 3
    padding: 1
"""


@pytest.mark.parametrize("text, expected", [
    (LAYER.replace("N: 2", "N: [2"), ":4: invalid YAML"),
    (LAYER + "budget: {trails: 3}\n", ":11: budget.trails: unknown key (did you mean 'trials'?)"),
    (LAYER.replace("H: 31", "H: tall"), ":5: problems[0].H: expected an integer, got 'tall'"),
    (LAYER.replace("K: 17", "K: 0"), ":7: problems[0].K: must be >= 1, got 0"),
    (LAYER.replace("C: 13", "C: -13"), ":4: problems[0].C: must be >= 1, got -13"),
    (LAYER.replace("R: 3", "R: 40"), ":8: problems[0].R: R=40: filter height with dilation (40) exceeds"),
    (LAYER.replace("N: 2", "N: 40000").replace("C: 13", "C: 256").replace("H: 31", "H: 224")
     .replace("W: 29", "W: 224"), "beyond the 32-bit indexing"),
], ids=["malformed", "unknown-key", "wrong-type", "zero", "negative", "impossible", "32-bit"])
def test_bad_configs_are_refused_with_file_line_and_field(tmp_path, capsys, fake_gpu, text, expected):
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 2 and f"{config}:" in err and expected in err, err
    assert "Traceback" not in err and not (tmp_path / "state").exists()


def test_a_problem_too_large_for_the_device_memory_is_refused_before_anything(tmp_path):
    big = NamedProblem("big", parse_spec("N=64,C=64,H=56,W=56,K=64,R=3,S=3,pad=1"))
    memory = 256 << 20
    assert estimate(SMALL.problem, H100.l2_bytes).total < memory < estimate(big.problem, H100.l2_bytes).total
    backend = FakeBackend(memory_bytes=memory)
    storage = optuna.storages.InMemoryStorage()
    tuner = Tuner(backend, SearchSettings(("direct", "im2col_gemm"), Budget(trials=3)), storage=storage)
    small_outcome, big_outcome = tuner.tune([SMALL, big])
    assert small_outcome.source == "tuned"
    assert (big_outcome.source, big_outcome.stop_reason) == ("none", "too large for GPU memory")
    message = big_outcome.message
    assert message.startswith("big (64x64x56x56 * 64x3x3") and "needs about" in message
    assert "float64 reference" in message and "but Fake GPU" not in message  # the device's name...
    assert H100.name in message and "256.0 MiB" in message and "N=64" in message  # ...size and fix
    assert all(plan.problem == SMALL.problem for plan in backend.evaluated)
    assert len(optuna.get_all_study_names(storage)) == 1  # no study, no enumeration for it


def test_candidates_whose_workspace_does_not_fit_are_never_evaluated():
    problem = NamedProblem("ws", parse_spec("N=1,C=4,H=9,W=9,K=6,R=3,S=3"))
    plenty = FakeBackend()
    Tuner(plenty, SearchSettings(("direct", "im2col_gemm"), Budget(trials=8)),
          storage=optuna.storages.InMemoryStorage()).tune_problem(problem)
    assert {plan.family for plan in plenty.evaluated} == {"direct", "im2col_gemm"}

    backend = FakeBackend(memory_bytes=estimate(problem.problem, H100.l2_bytes).fixed + 1000)
    tuner = Tuner(backend, SearchSettings(("direct", "im2col_gemm"), Budget(trials=8)),
                  storage=optuna.storages.InMemoryStorage())
    assert tuner.problem_workspace_limit(problem) == 1000
    outcome = tuner.tune_problem(problem)
    assert outcome.source == "tuned" and outcome.trials_run == 8
    # im2col_gemm's column buffer (C*R*S * N*P*Q floats = 7056 bytes) does not fit in what is left.
    assert {plan.family for plan in backend.evaluated} == {"direct"}


def test_tune_refuses_a_problem_too_large_for_the_device(tmp_path, capsys, monkeypatch, fake_gpu):
    monkeypatch.setenv("AUTOCONV_FAKE_MEMORY_MB", "32")
    config = tmp_path / "tune.yaml"
    config.write_text(ONE_PROBLEM)
    code, out, err = run_cli(capsys, "tune", config)
    assert code == 1 and "Traceback" not in err
    text = " ".join(err.split())  # (the terminal output wraps)
    assert "x small: no winner (too large for GPU memory; small (1x4x9x9 * 6x3x3 s1 p1 d1) needs about" in text
    assert "CuPy's own 64.0 MiB), but NVIDIA H100 80GB HBM3 has 32.0 MiB; nothing was allocated" in text
    summary = json.loads((tmp_path / "results" / "tune.json").read_text())
    assert "needs about" in summary["problems"][0]["message"] and "32.0 MiB" in summary["problems"][0]["message"]


def test_fake_backend_knobs_are_checked(monkeypatch, fake_gpu):
    monkeypatch.setenv("AUTOCONV_FAKE_DELAY_S", "0.01")
    monkeypatch.setenv("AUTOCONV_FAKE_MEMORY_MB", "64")
    backend = make_backend()
    assert backend.available_memory_bytes() == 64 << 20 and backend._delay_s == 0.01
    for value in ("soon", "-1", "nan"):
        monkeypatch.setenv("AUTOCONV_FAKE_DELAY_S", value)
        with pytest.raises(BackendUnavailable, match="AUTOCONV_FAKE_DELAY_S"):
            make_backend()
