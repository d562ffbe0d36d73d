"""Credentials in an endpoint URL (``https://user:password@host/v1``): split off and hidden.

A model's ``base_url`` may carry a password for a proxy in front of the model server. It
must reach the server and nothing else: not error messages, not ``repr()``, not the HTTP
library's request log (which prints request URLs whole). So the adapter sends the
credentials as an HTTP auth header instead of in the URL, and shows the URL redacted.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["UrlCredentials", "hidden_texts", "redact_url", "split_credentials"]

_HIDDEN = "***"


class UrlCredentials(NamedTuple):
    """The user name and password of a URL, percent-decoded."""

    username: str
    password: str


def split_credentials(url: str) -> tuple[str, UrlCredentials | None]:
    """*url* without its credentials, and the credentials (``None`` if there were none)."""
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url, None
    username, _, password = userinfo.partition(":")
    bare = urlunsplit(parts._replace(netloc=host))
    return bare, UrlCredentials(unquote(username), unquote(password))


def redact_url(url: str) -> str:
    """*url* with its password shown as ``***``, to name an endpoint in messages.

    The user name stays, so that the reader can tell accounts apart, unless it is the
    only credential: a lone user name is usually a token (``https://TOKEN@host``).
    """
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url
    username, colon, _ = userinfo.partition(":")
    shown = f"{username}:{_HIDDEN}" if colon else _HIDDEN
    return urlunsplit(parts._replace(netloc=f"{shown}@{host}"))


def hidden_texts(url: str) -> tuple[str, ...]:
    """What :func:`redact_url` hides, as it may appear in text: raw and percent-decoded.

    For scrubbing messages that quote the URL in a form ``redact_url`` never saw (a
    library's error text, say).
    """
    userinfo, at, _ = urlsplit(url).netloc.rpartition("@")
    if not at:
        return ()
    username, colon, password = userinfo.partition(":")
    secret = password if colon else username
    return tuple(text for text in dict.fromkeys((secret, unquote(secret))) if text)
