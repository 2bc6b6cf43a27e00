"""Hostile or odd input to problem specs and config files (issue 18, findings 4 and 5):
sizes are limited before parsing, special files are refused, messages quote a bounded
prefix of a bad value, and spec integers are ASCII digits only."""

from __future__ import annotations

import os
import resource
import stat

import pytest

from autoconv.config.load import CONFIG_MAX_BYTES, load_config
from autoconv.errors import ConfigError, ProblemError
from autoconv.problems.problem import parse_spec
from tests.helpers import run_cli

SPEC = "N=1,C=1,H=8,W=8,K=1,R=3,S=3"


@pytest.mark.parametrize("text", ["١", "٣", "1_0", "+1_000", "１", "1.0", "0x10", "1e3"])
def test_spec_integers_are_ascii_digits_only(text):
    with pytest.raises(ProblemError) as info:
        parse_spec(SPEC.replace("N=1", f"N={text}"))
    assert info.value.field == "N" and "ASCII digits" in str(info.value)


def test_spec_pad_and_pairs_refuse_lenient_integers_too():
    for spec in (SPEC + ",pad=1_0", SPEC + ",stride=1x٢", SPEC + ",pad=1:1:1:1_0"):
        with pytest.raises(ProblemError):
            parse_spec(spec)


def test_a_huge_spec_is_refused_quoting_a_prefix():
    with pytest.raises(ProblemError) as info:
        parse_spec("N=" + "1" * 10_000_000 + ",C=1")
    assert info.value.field == "spec"
    assert len(str(info.value)) < 400 and "10000006 characters" in str(info.value)


def test_a_huge_problem_name_is_not_echoed_whole(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(f"problems:\n  - name: {'a' * 200_000}\n    spec: '{SPEC}'\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "not a valid name" in str(info.value) and len(str(info.value)) < 600


def test_a_huge_unknown_key_is_not_echoed_whole(tmp_path):
    path = tmp_path / "key.yaml"
    path.write_text(f"? {'k' * 500_000}\n: 1\nproblems:\n  - name: a\n    spec: '{SPEC}'\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "unknown key" in str(info.value) and len(str(info.value)) < 600


def test_a_config_beyond_the_size_limit_is_refused_before_reading(tmp_path):
    path = tmp_path / "large.yaml"
    with open(path, "wb") as handle:  # sparse: 2 GiB that must not be read
        handle.truncate(2**31)
    with pytest.raises(ConfigError, match=rf"2147483648 bytes; a config has at most {CONFIG_MAX_BYTES}"):
        load_config(path)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused_without_reading_them(device, capsys):
    if not (os.path.exists(device) and stat.S_ISCHR(os.stat(device).st_mode)):
        pytest.skip(f"{device} is not a character device here")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code, out, err = run_cli(capsys, "check", device)
    assert code == 2 and "not a regular file" in err
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):  # opening it used to block here
        load_config(fifo)


@pytest.mark.parametrize("extra, fragment", [(",dtype=float16", "not fp16"),
                                             (",layout=NHWC", "not NHWC")])
def test_space_refuses_what_render_refuses(extra, fragment, capsys):
    for command in ("space", "render"):
        code, out, err = run_cli(capsys, command, "implicit_gemm", "--problem",
                                 "N=1,C=8,H=8,W=8,K=8,R=3,S=3" + extra)
        assert code == 2 and fragment in err and "valid configurations" not in out, command
