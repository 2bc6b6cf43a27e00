"""Locations of the studies' storage and the winners' cache: a file path or a SQLAlchemy URL.

Every layer that opens or names a location (the cache, the search's storage, the runtime,
the commands) asks here, so that they agree on what is a URL and never print a password.
"""

from __future__ import annotations

import os


def is_url(text: str | os.PathLike) -> bool:
    """Whether a storage or cache location is a SQLAlchemy URL (else a file path)."""
    return "://" in str(text)


def masked_url(url: str) -> str:
    """``url`` with its password masked, for messages."""
    try:
        from sqlalchemy.engine import make_url
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not even a URL: show it as given
        return url
