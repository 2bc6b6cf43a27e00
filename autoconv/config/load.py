"""Loading a config: the file read with care (never a device, a FIFO or a huge file; UTF-8
only), then checked by :class:`~autoconv.config.schema.ConfigReader` into a
:class:`~autoconv.config.tune_config.TuneConfig`. The format is described in
:mod:`autoconv.config.schema`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from autoconv.config.schema import ConfigReader
from autoconv.config.tune_config import TuneConfig
from autoconv.errors import ConfigError, quoted

#: Largest config file read (checked before reading; a real one is a few KiB).
CONFIG_MAX_BYTES = 1024 * 1024


def load_config(path: str | os.PathLike) -> TuneConfig:
    """Read and check a config file.

    Raises:
        ConfigError: every problem found, each as ``file:line: key.path: message``
            (or ``file: message`` when the file cannot be read).
    """
    path = Path(path)
    shown = str(path) if len(str(path)) <= 200 else quoted(str(path), 200)
    try:
        # O_NONBLOCK: opening a FIFO would otherwise wait for a writer (regular files ignore it).
        with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as handle:
            # Before reading: a FIFO, a device (/dev/zero) or a huge file would be read
            # without end; a config is a few kilobytes.
            info = os.fstat(handle.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise ConfigError([f"{shown}: is a directory, expected a YAML file"])
            if not stat.S_ISREG(info.st_mode):
                raise ConfigError([f"{shown}: not a regular file (a device, pipe or socket); "
                                   "expected a YAML file"])
            if info.st_size > CONFIG_MAX_BYTES:
                raise ConfigError([f"{shown}: {info.st_size} bytes; a config has at most "
                                   f"{CONFIG_MAX_BYTES} bytes ({CONFIG_MAX_BYTES // 1024} KiB)"])
            data = handle.read(CONFIG_MAX_BYTES + 1)  # (it may have grown meanwhile)
    except FileNotFoundError:
        raise ConfigError([f"{shown}: no such file"]) from None
    except IsADirectoryError:
        raise ConfigError([f"{shown}: is a directory, expected a YAML file"]) from None
    except OSError as err:
        raise ConfigError([f"{shown}: cannot read: {err.strerror or err}"]) from None
    if len(data) > CONFIG_MAX_BYTES:
        raise ConfigError([f"{shown}: more than {CONFIG_MAX_BYTES} bytes; a config has at most "
                           f"{CONFIG_MAX_BYTES // 1024} KiB"])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError([f"{shown}: not UTF-8 text ({err.reason} at byte {err.start})"]) from None
    return load_config_text(text, str(path), base_dir=path.resolve().parent)


def load_config_text(text: str, origin: str = "<config>",
                     base_dir: str | Path | None = None) -> TuneConfig:
    """Check config ``text``; ``origin`` names it in errors, relative paths are
    resolved against ``base_dir`` (default: the current directory).

    Raises:
        ConfigError: as :func:`load_config`.
    """
    reader = ConfigReader(origin, Path(base_dir) if base_dir is not None else Path.cwd())
    config = reader.read(text)
    if reader.errors or config is None:
        raise ConfigError(reader.sorted_errors())
    return config
