"""The command line shows autoconv's diagnostics (its loggers' records) on stderr: warnings by
default, more with --log-level."""

from __future__ import annotations

import logging

import pytest

from autoconv.commands.main import main


@pytest.fixture
def restored_logger():
    logger = logging.getLogger("autoconv")
    handlers, level = list(logger.handlers), logger.level
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)


def test_log_level_chooses_what_the_console_shows(capsys, restored_logger):
    logger = logging.getLogger("autoconv.test")
    for level in ("warning", "info", "debug"):
        assert main(["--log-level", level, "families"]) == 0
        capsys.readouterr()
        logger.debug("a detail")
        logger.info("a decision")
        logger.warning("a problem")
        shown = capsys.readouterr().err.splitlines()
        expected = {"warning": ["WARNING: autoconv.test: a problem"],
                    "info": ["INFO: autoconv.test: a decision", "WARNING: autoconv.test: a problem"],
                    "debug": ["DEBUG: autoconv.test: a detail", "INFO: autoconv.test: a decision",
                              "WARNING: autoconv.test: a problem"]}[level]
        assert shown == [f"autoconv: {line}" for line in expected], level


def test_an_unknown_log_level_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--log-level", "loud", "families"])
    assert "invalid choice: 'loud'" in capsys.readouterr().err
