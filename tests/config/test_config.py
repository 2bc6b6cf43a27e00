"""Tests of autoconv.config (YAML tuning configs), ``autoconv check`` and the example configs."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoconv.cache.location import default_path as default_cache_path
from autoconv.commands.main import main
from autoconv.config.budget import Budget
from autoconv.config.load import load_config, load_config_text
from autoconv.config.schema import BUDGET_KEYS, MODEL_KEYS, PROBLEM_KEYS, TOP_KEYS
from autoconv.config.tune_config import TuneConfig
from autoconv.errors import AutoconvError, ConfigError
from autoconv.kernels.families import FAMILY_NAMES, get_family
from autoconv.problems.problem import make_problem, parse_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def load(text: str, base_dir="/base") -> TuneConfig:
    return load_config_text(textwrap.dedent(text), "test.yaml", base_dir=base_dir)


def errors_of(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load(text)
    assert str(info.value) == "\n".join(info.value.errors)
    return info.value.errors


PROBLEM = textwrap.dedent("""\
    problems:
      - name: odd_layer
        N: 2
        C: 13
        H: 31
        W: 29
        K: 17
        R: 3
        S: 3
        stride: [2, 1]
        padding: same
        dilation: 1
        bias: false
""")


# ---- good configs ------------------------------------------------------------------------

def test_full_problem_and_defaults():
    config = load(PROBLEM)
    assert len(config.problems) == 1
    item = config.problems[0]
    assert item.name == "odd_layer" and item.count == 1
    # SAME with stride (2, 1): output ceil(31/2) x 29 = 16 x 29; padding totals
    # (16-1)*2+3-31 = 2 -> (1, 1) and (29-1)*1+3-29 = 2 -> (1, 1).
    assert item.problem == make_problem(N=2, C=13, H=31, W=29, K=17, R=3, S=3, stride=(2, 1),
                                        padding=(1, 1, 1, 1))
    assert (item.problem.P, item.problem.Q) == (16, 29)
    assert config.families == FAMILY_NAMES
    assert config.budget == Budget(trials=50, seconds=None, patience=None)
    assert config.seed == 0 and config.device == 0
    assert config.workspace_limit_mb == 1024 and config.workspace_limit_bytes == 1 << 30
    assert config.cache == default_cache_path()  # the user's cache, which autoconv.conv2d reads
    assert config.storage == "/base/.autoconv/studies.journal" and not config.storage_is_url
    assert config.results == Path("/base/results")
    assert config.origin == "test.yaml" and config.notes == ()


def test_every_setting():
    # the last family that computes fp32 (the 16-bit families come last)
    family = next(name for name in reversed(FAMILY_NAMES) if "fp32" in get_family(name).precisions)
    config = load(PROBLEM + textwrap.dedent(f"""\
        families: [{family}]
        budget:
          trials: 60
          seconds: 2.5
          patience: 25
        seed: 7
        cache: /abs/cache.sqlite
        storage: sqlite:///studies.db
        results: ../out/
        device: 1
        workspace_limit_mb: 0
    """))
    assert config.families == (family,)
    assert config.budget == Budget(trials=60, seconds=2.5, patience=25)
    assert "60 trials, 2.5 s, patience 25" == config.budget.describe()
    assert (config.seed, config.device, config.workspace_limit_bytes) == (7, 1, 0)
    assert config.cache == Path("/abs/cache.sqlite")
    assert config.storage == "sqlite:////base/studies.db" and config.storage_is_url
    assert config.results == Path("/out")


@pytest.mark.parametrize("storage, expected", [
    ("postgresql://user@host/db", "postgresql://user@host/db"),
    ("sqlite:////abs/x.db", "sqlite:////abs/x.db"),
    ("sqlite:///:memory:", "sqlite:///:memory:"),
    ("journal.log", "/base/journal.log"),
])
def test_storage_forms(storage, expected):
    assert load(PROBLEM + f"storage: '{storage}'\n").storage == expected


def test_budget_variants():
    assert load(PROBLEM + "budget: {seconds: 30}\n").budget == Budget(trials=None, seconds=30.0)
    assert load(PROBLEM + "budget: {trials: 5, seconds: null}\n").budget == Budget(trials=5)
    assert load(PROBLEM + "budget: null\nseed: null\n").budget == Budget()


def test_spec_form_count_and_family_scalar():
    config = load(f"""\
        problems:
          - name: compact
            spec: "N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1"
            count: 3
          - name: asym
            N: 1
            C: 3
            H: 10
            W: 9
            K: 4
            R: 3
            S: 2
            padding: [0, 2, 1, 0]
            dilation: [2, 1]
            stride: 2
            bias: true
        families: {FAMILY_NAMES[0]}
    """)
    compact, asym = config.problems
    assert compact.problem == parse_spec("N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1") and compact.count == 3
    assert asym.problem.padding == (0, 2, 1, 0) and asym.problem.dilation == (2, 1)
    assert asym.problem.stride == (2, 2) and asym.problem.bias
    assert (asym.problem.P, asym.problem.Q) == ((10 + 2 - 5) // 2 + 1, (9 + 1 - 2) // 2 + 1)
    assert config.families == (FAMILY_NAMES[0],)


def test_anchors_aliases_and_merge_keys():
    config = load("""\
        problems:
          - &base
            name: a
            N: 1
            C: 8
            H: 12
            W: 12
            K: 8
            R: 3
            S: 3
          - <<: *base
            name: b
            stride: 2
          - <<: [*base]
            name: c
            padding: &pad [1, 1]
    """)
    a, b, c = config.problems
    assert b.problem == a.problem.with_(stride=(2, 2))
    assert c.problem == a.problem.with_(padding=(1, 1, 1, 1))


def test_identical_problems_are_merged_with_a_note():
    config = load("""\
        problems:
          - {name: a, spec: "N=1,C=4,H=8,W=8,K=4,R=3,S=3"}
          - {name: b, N: 1, C: 4, H: 8, W: 8, K: 4, R: 3, S: 3, padding: valid, count: 2}
          - {name: c, spec: "N=1,C=4,H=8,W=8,K=4,R=3,S=3,pad=1"}
    """)
    assert [(p.name, p.count) for p in config.problems] == [("a", 3), ("c", 1)]
    assert config.notes == ("test.yaml:3: problems[1]: 'b' is the same problem as 'a'; tuned once as 'a'",)


def test_models_expand_with_prefix_and_batch():
    config = load("""\
        models:
          - preset: resnet50
            batch: 32
          - {preset: resnet50, name: rn50_b1}
    """)
    assert len(config.problems) == 46
    names = [p.name for p in config.problems]
    assert names[:3] == ["resnet50.conv1", "resnet50.layer1.0.conv1", "resnet50.layer1.0.conv2"]
    assert "rn50_b1.layer4.1.conv2" in names
    assert {p.problem.N for p in config.problems[:23]} == {32}
    assert {p.problem.N for p in config.problems[23:]} == {1}
    assert sum(p.count for p in config.problems) == 2 * 53


# ---- errors: every one with file, line and key -------------------------------------------

@pytest.mark.parametrize("text, expected", [
    # the brief's example, verbatim
    (PROBLEM.replace("stride: [2, 1]", "stride: two"),
     "test.yaml:10: problems[0].stride: expected an integer or [h, w], got 'two'"),
    (PROBLEM.replace("stride: [2, 1]", "stride: [2, 1, 1]"),
     "test.yaml:10: problems[0].stride: expected an integer or [h, w], got a list of 3 items"),
    (PROBLEM.replace("stride: [2, 1]", "stride: [2, 0]"),
     "test.yaml:10: problems[0].stride[1]: must be >= 1, got 0"),
    (PROBLEM.replace("stride: [2, 1]", "strid: [2, 1]"),
     "test.yaml:10: problems[0].strid: unknown key (did you mean 'stride'?)"),
    (PROBLEM.replace("N: 2", "N: 0"), "test.yaml:3: problems[0].N: must be >= 1, got 0"),
    (PROBLEM.replace("C: 13", "C: -13"), "test.yaml:4: problems[0].C: must be >= 1, got -13"),
    (PROBLEM.replace("H: 31", "H: 31.5"), "test.yaml:5: problems[0].H: expected an integer, got 31.5"),
    (PROBLEM.replace("W: 29", "W: true"), "test.yaml:6: problems[0].W: expected an integer, got True"),
    (PROBLEM.replace("K: 17", "K:"), "test.yaml:7: problems[0].K: expected an integer, got nothing (null)"),
    (PROBLEM.replace("    K: 17\n", ""), "test.yaml:2: problems[0]: missing K (or give a 'spec' string)"),
    (PROBLEM.replace("R: 3", "R: 40").replace("padding: same", "padding: 1"),
     "test.yaml:8: problems[0].R: R=40: filter height with dilation (40) exceeds the padded input height"),
    (PROBLEM.replace("padding: same", "padding: full"),
     "test.yaml:11: problems[0].padding: expected an integer, [h, w], [top, bottom, left, right], "
     "same or valid, got 'full'"),
    (PROBLEM.replace("padding: same", "padding: [1, 2, 3]"),
     "test.yaml:11: problems[0].padding: expected an integer, [h, w], [top, bottom, left, right], "
     "same or valid, got a list of 3 items"),
    (PROBLEM.replace("padding: same", "padding: -1"), "test.yaml:11: problems[0].padding: must be >= 0, got -1"),
    (PROBLEM.replace("dilation: 1", "dilation: [1, x]"),
     "test.yaml:12: problems[0].dilation[1]: expected an integer, got 'x'"),
    (PROBLEM.replace("bias: false", "bias: 1"), "test.yaml:13: problems[0].bias: expected true or false, got 1"),
    (PROBLEM.replace("name: odd_layer", "name: odd layer"),
     "test.yaml:2: problems[0].name: 'odd layer' is not a valid name"),
    (PROBLEM.replace("name: odd_layer", "name: 12"),
     "test.yaml:2: problems[0].name: expected a non-empty string, got 12"),
    (PROBLEM.replace("- name: odd_layer\n    N: 2", "- N: 2"),
     "test.yaml:2: problems[0]: missing 'name'"),
    (PROBLEM.replace("bias: false", "dtype: float16"),
     "test.yaml:2: problems[0]: no selected family can run 'odd_layer': "),
    (PROBLEM.replace("bias: false", "dtype: float64"),
     "test.yaml:13: problems[0].dtype: dtype='float64': must be one of float32, float16, bfloat16"),
    (PROBLEM.replace("bias: false", "count: 0"), "test.yaml:13: problems[0].count: must be >= 1, got 0"),
    (PROBLEM.replace("bias: false", "spec: N=1"),
     "test.yaml:3: problems[0].N: give either 'spec' or the problem's fields, not both"),
    ("problems:\n  - {name: a, spec: 'N=1,C=1,H=4,W=4,K=1,R=3,S=3,strde=1'}\n",
     "test.yaml:2: problems[0].spec: spec='strde': unknown key (did you mean 'stride'?)"),
    ("problems:\n  - {name: a, spec: 7}\n", "test.yaml:2: problems[0].spec: expected a non-empty string, got 7"),
    ("problems:\n  - just a string\n", "test.yaml:2: problems[0]: expected a mapping with keys name, count"),
    ("problems: {name: a}\n", "test.yaml:1: problems: expected a list of problems, got a mapping"),
    # duplicate keys: PyYAML silently keeps the last one
    (PROBLEM.replace("bias: false", "N: 3"), "test.yaml:13: problems[0].N: duplicate key (first given on line 3)"),
    (PROBLEM + "seed: 1\nseed: 2\n", "test.yaml:15: seed: duplicate key (first given on line 14)"),
    # top level
    (PROBLEM + "sed: 1\n", "test.yaml:14: sed: unknown key (did you mean 'seed'?); the config takes problems"),
    (PROBLEM + "seed: -1\n", "test.yaml:14: seed: must be >= 0, got -1"),
    (PROBLEM + "seed: 4294967296\n", "test.yaml:14: seed: must be <= 4294967295, got 4294967296"),
    (PROBLEM + "device: gpu0\n", "test.yaml:14: device: expected an integer, got 'gpu0'"),
    (PROBLEM + "workspace_limit_mb: -5\n", "test.yaml:14: workspace_limit_mb: must be >= 0, got -5"),
    (PROBLEM + "cache: ''\n", "test.yaml:14: cache: expected a non-empty string, got ''"),
    (PROBLEM + "results: [a]\n", "test.yaml:14: results: expected a non-empty string, got a list"),
    (PROBLEM + "families: [implict_gemm]\n",
     "test.yaml:14: families[0]: unknown kernel family 'implict_gemm' (did you mean 'implicit_gemm'?)"),
    (PROBLEM + "families: []\n", "test.yaml:14: families: the list is empty"),
    (PROBLEM + "families: [implicit_gemm, implicit_gemm]\n",
     "test.yaml:14: families[1]: 'implicit_gemm' is listed twice"),
    (PROBLEM + "budget: {}\n", "test.yaml:14: budget: give 'trials' and/or 'seconds' per problem"),
    (PROBLEM + "budget: {trials: 0}\n", "test.yaml:14: budget.trials: must be >= 1, got 0"),
    (PROBLEM + "budget: {seconds: -1}\n", "test.yaml:14: budget.seconds: must be >= 0.5 (one candidate takes"),
    (PROBLEM + "budget: {seconds: .inf}\n", "test.yaml:14: budget.seconds: expected a number of seconds, got inf"),
    (PROBLEM + "budget: {trails: 5}\n", "test.yaml:14: budget.trails: unknown key (did you mean 'trials'?)"),
    (PROBLEM + "budget: 60\n", "test.yaml:14: budget: expected a mapping with keys trials, seconds, patience, got 60"),
    # models
    ("models:\n  - preset: resnet5\n",
     "test.yaml:2: models[0].preset: unknown preset 'resnet5' (did you mean 'resnet50'?); presets: resnet50"),
    ("models:\n  - preset: resnet50\n    batch: 0\n", "test.yaml:3: models[0].batch: must be >= 1, got 0"),
    ("models:\n  - preset: resnet50\n    batch: big\n", "test.yaml:3: models[0].batch: expected an integer, got 'big'"),
    ("models:\n  - preset: resnet50\n    batch: 100000\n",
     "test.yaml:3: models[0].batch: size=15052800000: input N*C*H*W has 15052800000 elements"),
    ("models:\n  - batch: 2\n", "test.yaml:2: models[0]: missing 'preset' (one of resnet50, vgg16)"),
    ("models:\n  - {preset: resnet50, bacth: 2}\n",
     "test.yaml:2: models[0].bacth: unknown key (did you mean 'batch'?)"),
    ("models:\n  - {preset: resnet50}\nproblems:\n  - {name: resnet50.conv1, spec: 'N=1,C=1,H=4,W=4,K=1,R=1,S=1'}\n",
     "test.yaml:4: problems[0]: name 'resnet50.conv1' is already used by models[0] (line 2) for a different problem"),
    # the document as a whole
    ("", "test.yaml:1: the file is empty; expected a mapping with keys problems, models"),
    ("# only a comment\n", "test.yaml:1: the file is empty"),
    ("- a\n- b\n", "test.yaml:1: expected a mapping with keys problems, models"),
    ("just text\n", "test.yaml:1: expected a mapping with keys problems, models"),
    ("seed: 1\n", "test.yaml:1: nothing to tune: add a 'problems' list or a 'models' list"),
    ("problems: []\nmodels: []\n", "test.yaml:1: nothing to tune"),
    ("problems:\n  - name: a\n    N: [1\n", "test.yaml:4: invalid YAML: "),
    ("problems:\n\t- a\n", "test.yaml:2: invalid YAML: "),
    ("a: 1\n---\nb: 2\n", "test.yaml:2: invalid YAML: expected a single document"),
    ("seed: *nowhere\n", "test.yaml:1: invalid YAML: found undefined alias 'nowhere'"),
    ("seed: 1\x07\n", "test.yaml:1: invalid YAML: unacceptable character"),
    # tags beyond plain YAML are refused, never constructed
    (PROBLEM + "seed: !!python/object/apply:os.getcwd []\n",
     "test.yaml:14: seed: YAML tag !!python/object/apply:os.getcwd is not allowed"),
    ("!!python/object:autoconv.config.tune_config.TuneConfig {}\n",
     "test.yaml:1: YAML tag !!python/object:autoconv.config.tune_config.TuneConfig is not allowed"),
    (PROBLEM + "families: !!set {implicit_gemm: null}\n", "test.yaml:14: families: YAML tag !!set is not allowed"),
    (PROBLEM.replace("N: 2", "N: !custom 2"), "test.yaml:3: problems[0].N: YAML tag !custom is not allowed"),
    (PROBLEM + "seed: !!int abc\n", "test.yaml:14: seed: expected an integer, got 'abc'"),
    (PROBLEM + "seed: 2024-01-01\n", "test.yaml:14: seed: YAML tag !!timestamp is not allowed"),
    (PROBLEM + "seed: " + "9" * 5000 + "\n", "test.yaml:14: seed: expected an integer, got '99999999"),
])
def test_errors_name_file_line_and_key(text, expected):
    errors = errors_of(text)
    assert any(error.startswith(expected) for error in errors), errors
    for error in errors:
        assert re.match(r"test\.yaml:\d+: ", error), error


def test_all_errors_are_collected_in_file_order():
    errors = errors_of("""\
        problems:
          - name: a
            N: 0
            C: 1
            H: 4
            W: 4
            K: 1
            R: 3
            S: 3
            strid: 1
        models:
          - preset: resnet5
        families: [nope]
        budget: {trials: 0}
        seed: -1
    """)
    lines = [int(e.split(":")[1]) for e in errors]
    assert lines == [3, 10, 12, 13, 14, 15]
    assert len(errors) == 6


def test_alias_errors_are_reported_once():
    errors = errors_of("""\
        bad: &b {N: 0}
        problems:
          - {<<: *b, name: a, C: 1, H: 4, W: 4, K: 1, R: 1, S: 1}
          - {<<: *b, name: b, C: 1, H: 4, W: 4, K: 1, R: 1, S: 2}
    """)
    assert errors[0].startswith("test.yaml:1: bad: unknown key")
    assert "test.yaml:1: problems[0].N: must be >= 1, got 0" in errors
    assert "test.yaml:1: problems[1].N: must be >= 1, got 0" in errors


def test_recursive_and_self_merging_aliases_are_errors_not_hangs():
    errors = errors_of("problems: &p [*p]\n")
    assert errors == ["test.yaml:1: problems[0]: expected a mapping with keys name, count, spec, N, C, H, "
                      "W, K, R, S, stride, padding, dilation, bias, dtype, layout, precision, out_dtype, got a list"]
    errors = errors_of("problems:\n  - &a {name: x, <<: *a}\n")
    assert any("'<<' merges a mapping into itself" in e for e in errors), errors


def test_billion_laughs_is_cheap():
    # Nine levels of ten aliases would be 10^9 strings if constructed; compose never does.
    lines = ['a0: &a0 "lol"']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    lines.append("seed: *a9")
    errors = errors_of("\n".join(lines) + "\n")
    # (an error in an aliased value points at the anchor's line: the node is shared)
    assert "test.yaml:10: seed: expected an integer, got a list" in errors


def test_tags_are_never_executed(tmp_path):
    marker = tmp_path / "executed"
    text = PROBLEM + f"seed: !!python/object/apply:os.mkdir ['{marker}']\n"
    with pytest.raises(ConfigError):
        load(text)
    assert not marker.exists()


def test_load_config_reads_files_relative_to_their_folder(tmp_path):
    folder = tmp_path / "sub"
    folder.mkdir()
    path = folder / "c.yaml"
    path.write_text(textwrap.dedent(PROBLEM) + "results: out\n")
    config = load_config(path)
    assert config.results == folder.resolve() / "out"
    assert config.cache == default_cache_path()
    assert config.origin == str(path)


def test_load_config_unreadable_files(tmp_path):
    with pytest.raises(ConfigError, match=r"missing\.yaml: no such file"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path)
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"seed: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        load_config(binary)


def test_config_error_is_an_autoconv_error():
    with pytest.raises(AutoconvError):
        load("seed: 1\n")


# ---- autoconv check ------------------------------------------------------------------------

def test_check_prints_the_problems(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(PROBLEM) + "budget: {trials: 9, seconds: 3}\n")
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{path}: 1 problem (1 layer instance, 0.004 GFLOP in all)" in out
    row = next(line for line in out.splitlines() if line.startswith("odd_layer"))
    assert row.split() == ["odd_layer", "1", "2x13x31x29", "*", "17x3x3", "s2x1", "p1", "d1", "16x29", "0.003692"]
    assert f"families: {', '.join(FAMILY_NAMES)}" in out
    assert "budget per problem: 9 trials, 3 s" in out


def test_check_shows_where_tune_puts_the_winners_with_passwords_masked(tmp_path, capsys):
    """With a URL storage and no cache, ``tune`` writes the winners into the storage's
    database: ``check`` said the default cache, and showed the URL's password."""
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(PROBLEM) + "storage: postgresql+psycopg://tuner:s3cret@db.example/autoconv\n")
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "s3cret" not in out
    assert "cache: postgresql+psycopg://tuner:***@db.example/autoconv" in out
    assert "storage: postgresql+psycopg://tuner:***@db.example/autoconv" in out


def test_check_reports_every_error_and_exits_2(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(textwrap.dedent(PROBLEM).replace("stride: [2, 1]", "stride: two") + "seed: -1\n")
    assert main(["check", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"{path}:10: problems[0].stride: expected an integer or [h, w], got 'two'",
        f"{path}:14: seed: must be >= 0, got -1",
        f"autoconv check: 2 errors in {path}",
    ]
    assert "Traceback" not in captured.err


def test_check_missing_file(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nope.yaml")]) == 2
    assert f"{tmp_path / 'nope.yaml'}: no such file" in capsys.readouterr().err


# ---- the shipped examples ------------------------------------------------------------------

def test_quickstart_example(capsys):
    config = load_config(EXAMPLES / "quickstart.yaml")
    by_name = {p.name: p.problem for p in config.problems}
    assert set(by_name) == {"odd_stride", "same_even_kernel", "dilated_bias"}
    assert by_name["odd_stride"].stride == (2, 1)
    assert by_name["same_even_kernel"].padding == (1, 2, 0, 1)  # SAME, asymmetric
    assert by_name["dilated_bias"].dilation == (2, 2) and by_name["dilated_bias"].bias
    assert config.families == FAMILY_NAMES
    assert config.cache == default_cache_path()
    assert main(["check", str(EXAMPLES / "quickstart.yaml")]) == 0


def test_resnet50_example():
    config = load_config(EXAMPLES / "resnet50.yaml")
    assert len(config.problems) == 23 and {p.problem.N for p in config.problems} == {32}
    assert sum(p.count for p in config.problems) == 53
    assert config.budget == Budget(trials=160, seconds=80.0, patience=40)
    assert config.families == FAMILY_NAMES
    # (nothing written into the checkout: the user's folder, ~ expanded)
    assert config.results == Path.home() / ".cache" / "autoconv" / "results" / "resnet50"
    assert Path(config.storage) == Path.home() / ".cache" / "autoconv" / "studies.journal"


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.yaml")), ids=lambda path: path.name)
def test_no_example_writes_into_the_checkout(example):
    config = load_config(example)
    for place in (Path(config.results), Path(config.storage)):
        assert EXAMPLES.parent not in place.parents, place


# ---- fuzzing -------------------------------------------------------------------------------

KEYS = list(TOP_KEYS + PROBLEM_KEYS + MODEL_KEYS + BUDGET_KEYS) + ["<<", "sed", "preset ", ""]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(),
                    st.text(max_size=10), st.sampled_from(["same", "valid", "resnet50", *FAMILY_NAMES,
                                                           "N=1,C=1,H=4,W=4,K=1,R=3,S=3", "a.b"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)), max_leaves=20)


@st.composite
def near_valid_configs(draw):
    """Configs shaped like the real thing with random defects, to get past the first checks."""
    problem = {k: draw(st.one_of(st.integers(1, 40), scalars)) if draw(st.integers(0, 9)) == 0
               else draw(st.integers(1, 40)) for k in "NCHWKRS"}
    problem["name"] = draw(st.sampled_from(["a", "b", "bad name", "x.y"]))
    for key in ("stride", "dilation", "padding", "bias", "count", "spec", "dtype"):
        if draw(st.integers(0, 3)) == 0:
            problem[key] = draw(values)
    doc = {"problems": [problem] * draw(st.integers(1, 2))}
    for key in ("models", "families", "budget", "seed", "storage", "device", "workspace_limit_mb"):
        if draw(st.booleans()):
            doc[key] = draw(values)
    return doc


@FUZZ
@given(st.one_of(values, st.dictionaries(st.sampled_from(KEYS), values, max_size=8), near_valid_configs()))
def test_fuzz_config_structures(doc):
    text = yaml.safe_dump(doc, sort_keys=False)
    try:
        config = load_config_text(text, "fuzz.yaml", base_dir="/base")
    except ConfigError as err:
        assert err.errors and all(e.startswith("fuzz.yaml:") for e in err.errors), err.errors
        return
    assert config.problems and config.families


CONFIG_LINES = [
    "problems:", "  - name: a", "    N: 1", "    C: 2", "    H: 8", "    W: 8", "    K: 2", "    R: 3",
    "    S: 3", "    stride: [2, 1]", "    padding: same", "    N: !!int abc", "    bias: !!bool maybe",
    "  - &x {name: b, spec: 'N=1,C=1,H=4,W=4,K=1,R=1,S=1'}", "  - *x", "  - <<: *x", "  - <<: *y",
    "models:", "  - preset: resnet50", "    batch: 2", "families: [implicit_gemm]", "budget: {trials: 3}",
    "seed: !!python/object/apply:os.getcwd []", "seed: !!timestamp x", "seed: 2001-12-14",
    "cache: !!binary aGVsbG8=", "device: " + "9" * 5000, "? [1]", ": 2", "\t- x", "---", "...",
    "%YAML 1.1", "!!set {a}", "'unclosed", "&a [*a]", "seed: &s [*s]", "{", "- - -",
]


@FUZZ
@given(st.one_of(st.text(max_size=200), st.lists(st.sampled_from(CONFIG_LINES), max_size=14).map("\n".join)))
def test_fuzz_config_text(text):
    try:
        load_config_text(text, "fuzz.yaml", base_dir="/base")
    except ConfigError as err:
        assert err.errors and all(e.startswith("fuzz.yaml:") for e in err.errors), err.errors


# ---- precision ---------------------------------------------------------------------------------

def test_precision_defaults_to_fp32_and_the_config_sets_the_rest():
    config = load("""
        precision: tf32
        problems:
          - {name: a, spec: "N=1,C=8,H=8,W=8,K=8,R=3,S=3"}
          - {name: b, spec: "N=1,C=8,H=8,W=8,K=9,R=3,S=3,precision=fp32"}
          - {name: c, N: 1, C: 8, H: 8, W: 8, K: 10, R: 3, S: 3}
          - {name: d, N: 1, C: 8, H: 8, W: 8, K: 11, R: 3, S: 3, precision: fp32}
        models:
          - {preset: resnet50, batch: 1, precision: fp32}
        """)
    precisions = {item.name: item.problem.precision for item in config.problems}
    assert [precisions[n] for n in "abcd"] == ["tf32", "fp32", "tf32", "fp32"]
    assert precisions["resnet50.conv1"] == "fp32"
    assert load("problems: [{name: a, spec: 'N=1,C=8,H=8,W=8,K=8,R=3,S=3'}]").problems[0].problem.precision == "fp32"


def test_a_bad_precision_is_an_error_naming_the_key():
    errors = errors_of("""
        precision: bf17
        problems:
          - {name: a, N: 1, C: 8, H: 8, W: 8, K: 8, R: 3, S: 3, precision: tf33}
        """)
    assert any("precision: 'bf17' is not a precision (did you mean 'bf16'?)" in e for e in errors)
    assert any("problems[0].precision: 'tf33' is not a precision (did you mean 'tf32'?)" in e for e in errors)


def test_the_command_lines_precision_sets_every_problem_and_merges_what_becomes_equal():
    from autoconv.config.tune_config import with_precision

    config = load("""
        problems:
          - {name: a, spec: "N=1,C=8,H=8,W=8,K=8,R=3,S=3", count: 2}
          - {name: b, spec: "N=1,C=8,H=8,W=8,K=8,R=3,S=3,precision=tf32", count: 3}
        """)
    assert len(config.problems) == 2  # different precisions: different problems
    merged = with_precision(config, "tf32")
    assert [(i.name, i.problem.precision, i.count) for i in merged.problems] == [("a", "tf32", 5)]
    with pytest.raises(AutoconvError, match="--precision"):
        with_precision(config, "fp8")
    halves = with_precision(config, "fp16")
    assert [(i.problem.precision, i.problem.dtype, i.count) for i in halves.problems] == [("fp16", "float16", 5)]


def test_16_bit_precisions_and_layouts_in_a_config():
    config = load("""
        precision: bf16
        layout: nhwc
        problems:
          - {name: a, N: 1, C: 8, H: 8, W: 8, K: 8, R: 3, S: 3}
          - {name: b, N: 1, C: 8, H: 8, W: 8, K: 8, R: 3, S: 3, dtype: float16}
          - {name: c, N: 1, C: 8, H: 8, W: 8, K: 8, R: 3, S: 3, precision: fp32, layout: NCHW}
          - {name: d, N: 1, C: 8, H: 8, W: 8, K: 8, R: 3, S: 3, out_dtype: float32}
          - {name: e, spec: "N=1,C=8,H=8,W=8,K=8,R=1,S=1"}
          - {name: f, spec: "N=1,C=8,H=8,W=8,K=8,R=1,S=1,dtype=float16"}
        models:
          - {preset: resnet50, batch: 2, precision: fp16}
        """)
    got = {i.name: (i.problem.precision, i.problem.dtype, i.problem.layout, i.problem.output_dtype)
           for i in config.problems}
    assert got["a"] == ("bf16", "bfloat16", "NHWC", "bfloat16")
    assert got["b"] == ("fp16", "float16", "NHWC", "float16")
    assert got["c"] == ("fp32", "float32", "NCHW", "float32")
    assert got["d"] == ("bf16", "bfloat16", "NHWC", "float32")
    assert got["e"] == ("bf16", "bfloat16", "NHWC", "bfloat16")
    assert got["f"] == ("fp16", "float16", "NHWC", "float16")
    assert got["resnet50.conv1"] == ("fp16", "float16", "NHWC", "float16")
    errors = errors_of("""
        layout: NWHC
        problems:
          - {name: a, N: 1, C: 8, H: 8, W: 8, K: 8, R: 3, S: 3, dtype: float16, precision: bf16}
          - {name: b, N: 1, C: 8, H: 8, W: 8, K: 8, R: 3, S: 3, out_dtype: float16}
          - {name: c, N: 1, C: 8, H: 8, W: 8, K: 8, R: 3, S: 3, precision: fp16, layout: NCHW}
        """)
    assert any("problems[2]: no selected family can run 'c'" in e for e in errors)
    assert any("layout: 'NWHC' is not a layout (did you mean 'NHWC'?)" in e for e in errors)
    assert any("problems[0].precision: " in e and "bf16 computes bfloat16 inputs, not float16" in e for e in errors)
    assert any("problems[1].out_dtype: " in e and "not float16" in e for e in errors)
