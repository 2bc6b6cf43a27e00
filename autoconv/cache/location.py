"""Where the winners' cache is when none is given: the one place ``autoconv tune`` writes
to and ``autoconv.conv2d`` reads from by default, ``$AUTOCONV_CACHE`` (a file or a
SQLAlchemy URL) or a file in the user's cache folder."""

from __future__ import annotations

from pathlib import Path

from autoconv import settings
from autoconv.files import user_cache_dir
from autoconv.urls import is_url


def default_path() -> Path:
    """``$AUTOCONV_CACHE``, else ``$XDG_CACHE_HOME/autoconv/winners.sqlite3`` (``~/.cache``):
    the cache file. Where ``$AUTOCONV_CACHE`` may be a URL, use :func:`default_location`."""
    configured = settings.CACHE.value()
    if configured:
        return Path(configured).expanduser()
    return user_cache_dir() / "winners.sqlite3"


def default_location() -> str | Path:
    """Where the cache is when none is given: ``$AUTOCONV_CACHE`` as is when it is a
    SQLAlchemy URL (:func:`~autoconv.urls.is_url`), else :func:`default_path`."""
    configured = settings.CACHE.value()
    return configured if configured and is_url(configured) else default_path()
