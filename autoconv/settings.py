"""Every environment variable autoconv reads, in one place: its name, what it sets, and how
its text is read.

The features ask here (``settings.CACHE.value()``) and read nothing else from the
environment under an ``AUTOCONV_`` name, so :data:`VARIABLES` is the whole list (a test
keeps it so). A variable is read when it is asked for, not at import, so that a test or a
parent process can set it late. Text that does not parse is refused with the variable, the
value and the form it takes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from autoconv.errors import AutoconvError, BackendUnavailable, StorageError, quoted

T = TypeVar("T")


@dataclass(frozen=True)
class Variable(Generic[T]):
    """One environment variable: ``parse`` turns its text into a value or raises ValueError;
    ``form`` says what it takes, and ``error`` is the error a bad value raises (the one the
    feature it sets raises for its other failures)."""

    name: str
    meaning: str
    parse: Callable[[str], T]
    form: str
    error: type[AutoconvError] = AutoconvError

    def text(self) -> str | None:
        """The variable's text, stripped; None when it is unset or empty."""
        text = os.environ.get(self.name, "").strip()
        return text or None

    def value(self) -> T | None:
        """The parsed value; None when unset or empty.

        Raises:
            AutoconvError: (:attr:`error`) the text does not parse, naming the variable, the value
                and the form it takes."""
        text = self.text()
        if text is None:
            return None
        try:
            return self.parse(text)
        except ValueError:
            raise self.error(f"{self.name}={quoted(text)}: expected {self.form}") from None


def _whole_number_at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not text.isdigit() or int(text) < low:
            raise ValueError(text)
        return int(text)
    return parse


def _non_negative_number(text: str) -> float:
    value = float(text)  # (ValueError for text that is no number)
    if not value >= 0 or value == float("inf"):
        raise ValueError(text)
    return value


def _on_or_off(text: str) -> bool:
    if text.lower() not in ("on", "off"):
        raise ValueError(text)
    return text.lower() == "on"


def _backend(text: str) -> str:
    kind = text.lower()
    if kind not in ("cupy", "fake"):
        raise ValueError(text)
    return kind


BACKEND = Variable("AUTOCONV_BACKEND", "the backend `autoconv tune` evaluates candidates with: `cupy` (the GPU, "
                   "the default) or `fake` (synthetic timings, no GPU: tests of the search and the command line)",
                   _backend, "'cupy' or 'fake'", BackendUnavailable)
FAKE_DELAY_S = Variable("AUTOCONV_FAKE_DELAY_S", "with the fake backend: seconds each candidate takes",
                        _non_negative_number, "a number >= 0", BackendUnavailable)
FAKE_MEMORY_MB = Variable("AUTOCONV_FAKE_MEMORY_MB", "with the fake backend: the device memory it pretends to have, "
                          "in MiB", _non_negative_number, "a number >= 0", BackendUnavailable)
FAKE_DEVICES = Variable("AUTOCONV_FAKE_DEVICES", "with the fake backend: how many GPUs `--gpus all` finds "
                        "(default 1)", _whole_number_at_least(1), "a whole number >= 1", BackendUnavailable)
CACHE = Variable("AUTOCONV_CACHE", "the winners' cache when a config or command names none: a file or a "
                 "SQLAlchemy URL (default: ~/.cache/autoconv/winners.sqlite3)", str, "a file path or a URL")
CUBIN_CACHE = Variable("AUTOCONV_CUBIN_CACHE", "where the runtime keeps compiled winners (default: "
                       "~/.cache/autoconv/cubins); `off` keeps none", str, "a folder, or 'off'")
HEARTBEAT_S = Variable("AUTOCONV_HEARTBEAT_S", "seconds between two heartbeats of a trial being evaluated "
                       "(default 10); a worker silent for six of them is taken for dead",
                       _whole_number_at_least(1), "a whole number of seconds >= 1", StorageError)
GIT_COMMIT = Variable("AUTOCONV_GIT_COMMIT", "the commit `autoconv bench` records, for a copy of the tree whose "
                      ".git is missing or stale (a remote GPU machine)", str, "a commit")
EMU_CACHE = Variable("AUTOCONV_EMU_CACHE", "where the emulator keeps built programs (default: "
                     "~/.cache/autoconv/emulator)", str, "a folder")
EMU_CXX = Variable("AUTOCONV_EMU_CXX", "the host C++ compiler the emulator builds with (default g++)", str,
                   "a compiler command")
EMU_WORKERS = Variable("AUTOCONV_EMU_WORKERS", "threads an emulated launch runs blocks on (default: the usable "
                       "CPUs, at most 8)", _whole_number_at_least(1), "a whole number >= 1")
NATIVE_AUTOGRAD = Variable("AUTOCONV_NATIVE_AUTOGRAD", "`on`: eager autoconv.torch calls that need gradients use "
                           "the C++ autograd node (built on first use; default off: the Python one)", _on_or_off,
                           "'on' or 'off'")

#: Every variable autoconv reads.
VARIABLES: tuple[Variable, ...] = (BACKEND, FAKE_DELAY_S, FAKE_MEMORY_MB, FAKE_DEVICES, CACHE, CUBIN_CACHE,
                                   HEARTBEAT_S, GIT_COMMIT, EMU_CACHE, EMU_CXX, EMU_WORKERS, NATIVE_AUTOGRAD)
