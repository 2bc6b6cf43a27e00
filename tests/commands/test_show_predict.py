"""``autoconv show --predict SPEC``: what the cache knows about a problem, tuned or not."""

from __future__ import annotations

import optuna

from autoconv.backends.fake import FakeBackend
from autoconv.cache.winners import WinnerCache
from autoconv.commands.main import main
from autoconv.config.budget import Budget
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.search.options import SearchSettings
from autoconv.search.tuner import Tuner

TUNED = "N=2,C=13,H=29,W=29,K=17,R=3,S=3,pad=1"
UNTUNED = "N=2,C=13,H=31,W=29,K=17,R=3,S=3,pad=1"


def _tuned_cache(path) -> None:
    with WinnerCache(path) as cache:
        Tuner(FakeBackend(), SearchSettings(("im2col_gemm",), Budget(trials=4), seed=1),
              storage=optuna.storages.InMemoryStorage(), cache=cache).tune([NamedProblem("a", parse_spec(TUNED))])


def test_a_tuned_problem_shows_its_winner_and_an_untuned_one_its_neighbours(tmp_path, capsys):
    path = tmp_path / "cache.sqlite3"
    _tuned_cache(path)
    assert main(["show", "--predict", TUNED, "--cache", str(path)]) == 0
    out = capsys.readouterr().out
    assert "is tuned: im2col_gemm" in out
    assert main(["show", "--predict", UNTUNED, "--cache", str(path)]) == 0
    out = capsys.readouterr().out
    assert "is not tuned; a study would try first the winners of" in out
    assert f"{parse_spec(TUNED).shape_str()} (distance " in out and "im2col_gemm" in out
    # another precision has no neighbour; a missing cache creates nothing
    assert main(["show", "--predict", UNTUNED + ",precision=tf32", "--cache", str(path)]) == 0
    assert "no tuned problem of precision tf32" in capsys.readouterr().out
    assert main(["show", "--predict", UNTUNED, "--cache", str(tmp_path / "none.sqlite3")]) == 0
    assert "nothing tuned yet" in capsys.readouterr().out
    assert not (tmp_path / "none.sqlite3").exists()


def test_a_bad_spec_is_exit_2_naming_it(capsys):
    assert main(["show", "--predict", "N=2,C=13"]) == 2
    assert "missing H, W, K, R, S" in capsys.readouterr().err
