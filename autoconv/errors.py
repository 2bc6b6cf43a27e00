"""autoconv's exceptions. Each says what was wrong, where, and how to fix it.

Expected failures of a candidate kernel (it does not compile, computes a wrong result,
faults, times out) are not exceptions: they are results with a status, see
:mod:`autoconv.backends.base`. The classes here are for bad input and misuse.
"""

from __future__ import annotations

#: Messages quote at most this many characters of a bad value (it may be megabytes).
QUOTE_LIMIT = 80


def quoted(value, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)``, cut to ``limit`` characters with a note of the full length."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = len(value) if isinstance(value, str) else len(text)
    return f"{text[:limit]}... ({size} characters)"


def first_line(err: BaseException) -> str:
    """``err`` for a message: its type and the first line of what it says."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


class AutoconvError(Exception):
    """Base class of every error autoconv raises on purpose (the CLI prints these
    without a traceback)."""


class ProblemError(AutoconvError, ValueError):
    """A convolution problem is invalid. Names the field and the offending value."""

    def __init__(self, field: str, value, message: str):
        self.field = field
        self.value = value
        super().__init__(f"{field}={quoted(value)}: {message}")


class UsageError(AutoconvError, ValueError):
    """A command-line argument or API argument is wrong. Names it and the offending value."""

    def __init__(self, field: str, value, message: str):
        self.field = field
        self.value = value
        super().__init__(f"{field}: {message}" if value is None else f"{field}={quoted(value)}: {message}")


class ConfigError(AutoconvError):
    """One or more errors in a YAML file, each with file, line and key."""

    def __init__(self, errors: list[str]):
        self.errors = list(errors)
        super().__init__("\n".join(self.errors))


class ExpressionError(AutoconvError, ValueError):
    """A search-space expression is malformed, unsafe, or names an unknown variable."""


class SearchSpaceError(AutoconvError):
    """A search-space file or a kernel configuration is invalid."""


class BackendUnavailable(AutoconvError):
    """A required optional backend (CuPy, a GPU, the cuDNN frontend) is not available."""


class CacheError(AutoconvError):
    """The winners' cache cannot be read or written."""


class StorageError(AutoconvError):
    """The Optuna study storage (a journal file or a database) cannot be read or written."""


class DeviceMemoryError(AutoconvError):
    """A problem's buffers do not fit in the GPU's memory (refused before allocating)."""
