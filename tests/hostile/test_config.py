"""Hostile values for ``autoconv tune``, ``check`` and ``show``: config keys and flags at 2**63,
zero, negative, NaN, tiny and huge; ``--families ,,,``; bad devices and worker counts; problems
whose names or sizes are hostile; bad environment variables. Each runs on a copy of a tuned
state, so a refusal must leave it as it was and an accepted run must keep what it held."""

from __future__ import annotations

import pytest

from tests.hostile.harness import TUNE_WRITES, Case, params
from tests.hostile.states import config, copy_tuned

BIG = str(2**63)

#: (id, top-level key, its YAML value)
KEYS = [
    ("trials-2**63", "budget", f"{{trials: {BIG}}}"),
    ("trials-zero", "budget", "{trials: 0}"),
    ("trials-negative", "budget", "{trials: -1}"),
    ("trials-float", "budget", "{trials: 1.5}"),
    ("trials-text", "budget", "{trials: many}"),
    ("trials-bool", "budget", "{trials: true}"),
    ("trials-inf", "budget", "{trials: .inf}"),
    ("seconds-1e-300", "budget", "{seconds: 1e-300}"),
    ("seconds-zero", "budget", "{seconds: 0}"),
    ("seconds-negative", "budget", "{seconds: -5}"),
    ("seconds-nan", "budget", "{seconds: .nan}"),
    ("seconds-inf", "budget", "{seconds: .inf}"),
    ("seconds-1e300", "budget", "{seconds: 1e300, trials: 8}"),
    ("patience-zero", "budget", "{patience: 0}"),
    ("patience-2**63", "budget", f"{{patience: {BIG}, trials: 8}}"),
    ("budget-empty", "budget", "{}"),
    ("budget-list", "budget", "[1, 2]"),
    ("budget-unknown-key", "budget", "{trails: 3}"),
    ("device-2**63", "device", BIG),
    ("device-negative", "device", "-1"),
    ("device-256", "device", "256"),
    ("device-text", "device", "cuda:0"),
    ("device-float", "device", "0.5"),
    ("workspace-2**63", "workspace_limit_mb", BIG),
    ("workspace-negative", "workspace_limit_mb", "-1"),
    ("workspace-nan", "workspace_limit_mb", ".nan"),
    ("seed-2**64", "seed", str(2**64)),
    ("seed-negative", "seed", "-1"),
    ("seed-text", "seed", "abc"),
    ("families-empty", "families", "[]"),
    ("families-commas", "families", "[',,,']"),
    ("families-unknown", "families", "[nonesuch]"),
    ("families-string", "families", "direct"),
    ("families-twice", "families", "[direct, direct]"),
    ("families-null", "families", "null"),
    ("precision-fp64", "precision", "fp64"),
    ("layout-nwhc", "layout", "NWHC"),
    ("cache-number", "cache", "123"),
    ("cache-list", "cache", "[a, b]"),
    ("storage-empty", "storage", "''"),
    ("results-null", "results", "null"),
    ("unknown-key", "budgett", "{trials: 3}"),
    ("python-tag", "seed", "!!python/object/apply:os.system ['echo pwned > pwned']"),
]

#: (id, the problems list's YAML)
PROBLEMS = [
    ("count-2**63", f'  - {{name: a, spec: "N=1,C=4,H=9,W=9,K=6,R=3,S=3", count: {BIG}}}'),
    ("count-zero", '  - {name: a, spec: "N=1,C=4,H=9,W=9,K=6,R=3,S=3", count: 0}'),
    ("count-float", '  - {name: a, spec: "N=1,C=4,H=9,W=9,K=6,R=3,S=3", count: 2.5}'),
    ("n-2**63", f'  - {{name: a, spec: "N={BIG},C=4,H=9,W=9,K=6,R=3,S=3"}}'),
    ("h-huge", '  - {name: a, N: 1, C: 4, H: 100000000, W: 100000000, K: 6, R: 3, S: 3}'),
    ("c-zero", '  - {name: a, N: 1, C: 0, H: 9, W: 9, K: 6, R: 3, S: 3}'),
    ("stride-zero", '  - {name: a, spec: "N=1,C=4,H=9,W=9,K=6,R=3,S=3,stride=0"}'),
    ("pad-negative", '  - {name: a, spec: "N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=-1"}'),
    ("filter-larger", '  - {name: a, spec: "N=1,C=4,H=2,W=2,K=6,R=9,S=9"}'),
    ("dilation-zero", '  - {name: a, N: 1, C: 4, H: 9, W: 9, K: 6, R: 3, S: 3, dilation: 0}'),
    ("name-pipe-newline", '  - {name: "a|b\\n# c", spec: "N=1,C=4,H=9,W=9,K=6,R=3,S=3"}'),
    ("name-long", '  - {name: ' + "n" * 5000 + ', spec: "N=1,C=4,H=9,W=9,K=6,R=3,S=3"}'),
    ("name-path", '  - {name: ../../evil, spec: "N=1,C=4,H=9,W=9,K=6,R=3,S=3"}'),
    ("name-duplicate", '  - {name: a, spec: "N=1,C=4,H=9,W=9,K=6,R=3,S=3"}\n'
                       '  - {name: a, spec: "N=1,C=5,H=9,W=9,K=6,R=3,S=3"}'),
    ("spec-garbage", '  - {name: a, spec: "N=1,,C=4;drop table"}'),
    ("spec-and-fields", '  - {name: a, spec: "N=1,C=4,H=9,W=9,K=6,R=3,S=3", N: 2}'),
    ("problems-none", ""),
]


def _tuned_with(text: str):
    def setup(box):
        copy_tuned(box)
        box.write("tune.yaml", text)
    return setup


def _key_case(name, key, value):
    return Case(f"config-{name}", setup=_tuned_with(config(0, **{key: value})), writes=TUNE_WRITES,
                act=lambda box: box.cli("tune", "tune.yaml"))


def _problem_case(name, problems):
    def text():
        return "problems:\n" + problems + "\n" + "\n".join(config(0).split("\n")[5:])
    return Case(f"problem-{name}", setup=_tuned_with(text()), writes=TUNE_WRITES,
                act=lambda box: box.cli("tune", "tune.yaml"))


#: (id, flags after `tune tune.yaml`)
FLAGS = [
    ("families-commas", ["--families", ",,,"]),
    ("families-empty", ["--families", ""]),
    ("families-unknown", ["--families", "direct,nonesuch"]),
    ("families-spaces", ["--families", " , direct ,"]),
    ("trials-2**63", ["--trials", BIG, "--patience", "2", "--retune"]),
    ("trials-zero", ["--trials", "0"]),
    ("trials-nan", ["--trials", "nan"]),
    ("seconds-1e-300", ["--seconds", "1e-300"]),
    ("seconds-nan", ["--seconds", "nan"]),
    ("seconds-inf", ["--seconds", "inf"]),
    ("seconds-negative", ["--seconds", "-1"]),
    ("seconds-1e300", ["--seconds", "1e300"]),
    ("patience-negative", ["--patience", "-3"]),
    ("pipeline-zero", ["--pipeline-depth", "0"]),
    ("pipeline-2**63", ["--pipeline-depth", BIG, "--retune", "--trials", "9"]),
    ("per-family-2**63", ["--per-family", BIG, "--retune", "--trials", "9"]),
    ("rank-negative", ["--rank", "-1"]),
    ("rank-2**63", ["--rank", BIG, "--retune", "--trials", "9"]),
    ("gpus-empty", ["--gpus", ""]),
    ("gpus-999", ["--gpus", "999"]),
    ("gpus-negative", ["--gpus", "-1"]),
    ("gpus-twice", ["--gpus", "0,0"]),
    ("gpus-2**63", ["--gpus", BIG]),
    ("gpus-text", ["--gpus", "cuda"]),
    ("workers-zero", ["--workers-per-gpu", "0"]),
    ("workers-2**63", ["--workers-per-gpu", BIG]),
    ("workers-65", ["--workers-per-gpu", "65"]),
    ("precision-bad", ["--precision", "fp8"]),
    ("layout-bad", ["--layout", "CHWN"]),
    ("unknown-flag", ["--trails", "3"]),
    ("per-family-without-dry-run", ["--per-family", "3"]),
    ("input-without-model", ["--input", "1x3x8x8"]),
    ("model-and-config", ["--model", "torchvision.models:resnet18"]),
]


def _flag_case(name, flags):
    return Case(f"flag-{name}", setup=_tuned_with(config(0)), writes=TUNE_WRITES,
                act=lambda box: box.cli("tune", "tune.yaml", *flags))


#: (id, environment variable, value)
ENVIRONMENT = [
    ("backend-unknown", "AUTOCONV_BACKEND", "nonesuch"),
    ("fake-delay-negative", "AUTOCONV_FAKE_DELAY_S", "-1"),
    ("fake-delay-nan", "AUTOCONV_FAKE_DELAY_S", "nan"),
    ("fake-memory-zero", "AUTOCONV_FAKE_MEMORY_MB", "0"),
    ("fake-devices-2**63", "AUTOCONV_FAKE_DEVICES", BIG),
    ("heartbeat-zero", "AUTOCONV_HEARTBEAT_S", "0"),
    ("cubin-cache-file", "AUTOCONV_CUBIN_CACHE", "tune.yaml"),
]


def _environment_case(name, variable, value):
    return Case(f"env-{name}", setup=_tuned_with(config(0)), writes=TUNE_WRITES,
                act=lambda box: box.cli("tune", "tune.yaml", "--retune", "--trials", "9", **{variable: value}))


#: Other commands on hostile configs: (id, the config's text, argv)
OTHERS = [
    ("check-2**63-count", config(0, workspace_limit_mb=BIG), ["check", "tune.yaml"]),
    ("check-binary", "\x00\x01\x02", ["check", "tune.yaml"]),
    ("check-deep-yaml", "a: " + "[" * 10_000 + "]" * 10_000, ["check", "tune.yaml"]),
    ("check-billion-laughs", "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi")) + "problems: *i\n", ["check", "tune.yaml"]),
    ("show-bad-config", config(0, device="-1"), ["show", "tune.yaml"]),
    ("check-good", config(0), ["check", "tune.yaml"]),
]


def _other_case(name, text, argv):
    return Case(f"other-{name}", setup=_tuned_with(text), act=lambda box: box.cli(*argv))


CASES = ([_key_case(*k) for k in KEYS] + [_problem_case(*p) for p in PROBLEMS] + [_flag_case(*f) for f in FLAGS]
         + [_environment_case(*e) for e in ENVIRONMENT] + [_other_case(*o) for o in OTHERS])


@pytest.mark.parametrize("case", params(CASES))
def test_config(hostile, case):
    box = hostile(case)
    assert not box.path("pwned").exists()
