"""``TuneSession``: a config and the command line's overrides, resolved once for every
command (tune, its GPU workers, bench, show)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from autoconv.backends.fake import FakeBackend
from autoconv.config.budget import Budget
from autoconv.config.load import load_config_text
from autoconv.errors import UsageError
from autoconv.search.options import SearchOptions, TuneOptions
from autoconv.search.session import TuneSession, cache_location

PROBLEMS = "problems:\n  - name: p\n    spec: \"N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=1\"\n"


def _config(extra: str = ""):
    return load_config_text(PROBLEMS + "families: [direct]\nbudget: {trials: 5, seconds: 60}\n" + extra,
                            base_dir="/base")


@pytest.fixture(autouse=True)
def default_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOCONV_CACHE", str(tmp_path / "default.sqlite"))
    return str(tmp_path / "default.sqlite")


def test_the_config_alone(default_cache):
    session = TuneSession.from_config(_config())
    assert session.families == ("direct",) and session.budget == Budget(trials=5, seconds=60)
    assert session.storage == "/base/.autoconv/studies.journal" and session.cache == default_cache
    assert session.options == TuneOptions() and session.settings.search == SearchOptions()


def test_command_line_overrides():
    options = TuneOptions(families=("direct", "im2col_gemm"), trials=9, patience=3, storage="/elsewhere/s.journal",
                          cache="/elsewhere/c.sqlite", search=SearchOptions(retune=True, transfer=False))
    session = TuneSession.from_config(_config(), options)
    assert session.families == ("direct", "im2col_gemm")
    assert session.budget == Budget(trials=9, seconds=60, patience=3)
    assert (session.storage, session.cache) == ("/elsewhere/s.journal", "/elsewhere/c.sqlite")
    assert session.options is options and session.settings.search is options.search
    assert TuneSession.from_config(_config(), families=[]).families == ("direct",)  # empty: the config's
    # the options' fields as keywords, as ``autoconv bench`` gives them; not both
    assert TuneSession.from_config(_config(), trials=9, patience=3).budget == Budget(trials=9, seconds=60, patience=3)
    with pytest.raises(UsageError, match="give a TuneOptions or its fields"):
        TuneSession.from_config(_config(), options, trials=2)


def test_the_command_lines_precision_and_layout_set_every_problem():
    # A float32 NCHW config tuned as PyTorch's autocast runs it: bf16, channels_last.
    session = TuneSession.from_config(_config(), precision="bf16", layout="NHWC")
    problem = session.config.problems[0].problem
    assert (problem.precision, problem.dtype, problem.layout) == ("bf16", "bfloat16", "NHWC")
    unchanged = TuneSession.from_config(_config()).config.problems[0].problem
    assert (unchanged.precision, unchanged.layout) == ("fp32", "NCHW")


def test_the_tune_command_takes_a_layout_in_any_case():
    from autoconv.commands.main import build_parser

    args = build_parser().parse_args(["tune", "c.yaml", "--precision", "fp16", "--layout", "nhwc"])
    assert (args.precision, args.layout) == ("fp16", "NHWC")
    bench = build_parser().parse_args(["bench", "c.yaml", "--layout", "NCHW"])
    assert bench.layout == "NCHW"


@pytest.mark.parametrize("extra, storage, cache, expected", [
    # a URL storage and no cache named: the winners go into the studies' database
    ("storage: postgresql+psycopg://u:pw@h/db\n", None, None, "postgresql+psycopg://u:pw@h/db"),
    ("", "sqlite:////s/studies.db", None, "sqlite:////s/studies.db"),
    # a cache named in the config or on the command line wins
    ("storage: postgresql+psycopg://u:pw@h/db\ncache: c.sqlite\n", None, None, "/base/c.sqlite"),
    ("", "sqlite:////s/studies.db", "/given.sqlite", "/given.sqlite"),
    # a journal file: the config's cache
    ("cache: state/c.sqlite\n", None, None, "/base/state/c.sqlite"),
])
def test_where_the_winners_go(extra, storage, cache, expected, default_cache):
    config = _config(extra)
    session = TuneSession.from_config(config, storage=storage, cache=cache)
    assert session.cache == expected == cache_location(cache, session.storage, config)


def test_a_url_storage_without_a_cache_ignores_the_default_cache(default_cache):
    assert TuneSession.from_config(_config(), storage="sqlite:////s/studies.db").cache != default_cache


def test_on_device_and_pickling():
    session = TuneSession.from_config(_config("device: 1\n"), trials=3)
    moved = session.on_device(2)
    assert moved.config.device == 2 and session.config.device == 1 and moved.budget == session.budget
    assert pickle.loads(pickle.dumps(moved)) == moved  # it can travel to a worker process


def test_load_reads_the_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(PROBLEMS + "storage: s.journal\n")
    session = TuneSession.load(path, seconds=5.0)
    assert session.storage == str(tmp_path / "s.journal") and session.budget.seconds == 5.0


def test_the_tuner_gets_the_sessions_settings(tmp_path):
    session = TuneSession.from_config(_config("seed: 7\nworkspace_limit_mb: 3\n"), trials=2,
                                      search=SearchOptions(retune=True), storage=str(tmp_path / "s.journal"))
    assert (session.settings.seed, session.settings.workspace_limit) == (7, 3 << 20)
    with session.open_cache() as winners:
        tuner = session.tuner(FakeBackend(), cache=winners)
        assert (tuner.settings, tuner.cache) == (session.settings, winners)
    assert Path(session.cache).exists()
