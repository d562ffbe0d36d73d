"""The host names the console answers to: a defence against DNS rebinding.

A web page on ``attacker.example`` can have its name re-resolved to ``127.0.0.1`` and then
read and post to a console served there as if it were its own origin: the browser sees one
site, and the console sees a request from the loopback interface that names
``attacker.example`` in its ``Host`` header. So the console answers only requests whose
``Host`` names one of the allowed hosts (any port), and accepts a form only from a page of
one of them (``_csrf.cross_site``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final
from urllib.parse import urlsplit

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["LOOPBACK_HOSTS", "AllowedHosts", "host_name", "parse_allowed_hosts"]

LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1"})
"""What this machine is called from its own browser: the only hosts of local mode."""


def host_name(value: str | None) -> str | None:
    """The host of a ``Host`` header or of a URL's netloc (lower case, no port, an IPv6
    address without its brackets), or ``None`` for none or a malformed one."""
    if not value or any(character in value for character in "@/\\?# "):
        return None  # no browser sends these in a host; "a@127.0.0.1" must not pass
    try:
        parts = urlsplit(f"//{value}")
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return None
    return parts.hostname or None


def parse_allowed_hosts(entries: Collection[str]) -> frozenset[str]:
    """*entries* (host names or addresses, ``[::1]`` or ``::1``) as ``host_name`` gives them.

    Raises:
        ValueError: No entry, or one with a scheme, a path or a port, or empty.
    """
    if isinstance(entries, str):
        raise ValueError(f"allowed_hosts must be a list of host names, not the string {entries!r}")
    names: set[str] = set()
    for entry in entries:
        bare = entry.strip()
        if bare.startswith("[") and bare.endswith("]"):
            bare = bare[1:-1]
        if not bare or any(character in bare for character in "/@ ") or bare.count(":") == 1:
            raise ValueError(
                f"allowed host {entry!r} is not a host name or address (console.example.com, "
                "10.0.3.20, ::1): no scheme, port or path"
            )
        names.add(bare.lower())
    if not names:
        raise ValueError("allowed_hosts is empty: the console would answer no request")
    return frozenset(names)


class AllowedHosts:
    """Answers 400, before anything else runs, to a request for a host not in *allowed*."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str]) -> None:
        self._app = app
        self._allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            sent = [value for name, value in scope["headers"] if name == b"host"]
            named = host_name(sent[0].decode("latin-1")) if len(sent) == 1 else None
            if named not in self._allowed:
                refused = PlainTextResponse(
                    "The console is not served under this host name; nothing was read or written.",
                    status_code=400,
                )
                await refused(scope, receive, send)
                return
        await self._app(scope, receive, send)
