"""Cross-site request forgery: only the console's own forms can make it write.

A signed double submit. The browser holds a random nonce in a cookie (``HttpOnly``,
``SameSite=Strict``); every form carries a token that is the HMAC, under the console's
secret, of the signed-in user's id and that nonce. A post is accepted only when its token
is the one for the nonce its cookie carries and for the user the authenticator says sent
it. Another site can make a browser post, but cannot read a page of the console, so it
never learns a token; a token stolen from one user is worthless to another; and a cookie
planted from a sibling domain does not help without the secret. The request's
``Sec-Fetch-Site`` and ``Origin`` headers, where the browser sends them, must also say the
post comes from the console's own pages.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit

from ._hosts import host_name

__all__ = ["COOKIE", "FIELD", "CsrfTokens", "cross_site"]

COOKIE: Final = "stageware_console_nonce"
FIELD: Final = "csrf_token"

_NONCE_BYTES: Final = 32


class CsrfTokens:
    """Issues and checks form tokens under one server secret.

    Args:
        secret: The key tokens are signed with; whoever holds it can forge them.
    """

    __slots__ = ("_secret",)

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    @staticmethod
    def new_nonce() -> str:
        """A fresh nonce for a browser that has none."""
        return secrets.token_urlsafe(_NONCE_BYTES)

    def token(self, user_id: str, nonce: str) -> str:
        """The token a form of *user_id*'s, in a browser holding *nonce*, carries."""
        message = f"{len(user_id)}:{user_id}:{nonce}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def valid(self, user_id: str, nonce: str | None, token: str | None) -> bool:
        """Whether *token* is the one for *user_id* and the cookie's *nonce*."""
        if not nonce or not token:
            return False
        return hmac.compare_digest(self.token(user_id, nonce), token)

    def __repr__(self) -> str:
        return "CsrfTokens(<secret>)"


def cross_site(
    headers: Mapping[str, str], host: str | None, allowed: frozenset[str] | None
) -> str | None:
    """Why a post with *headers* (names in lower case) to the console at *host* (its
    ``Host`` header) comes from another site, or ``None`` if nothing says it does.

    The ``Origin`` must be the console's own and name one of the *allowed* hosts
    (``None``: any): a page whose name was re-bound to the console's address is the same
    origin as itself, not as the console.
    """
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return f"the browser says the form was sent from a {fetch_site} page"
    origin = headers.get("origin")
    if origin is not None:
        if origin == "null":
            return "the form was sent from a page with no origin"
        netloc = urlsplit(origin).netloc.lower()
        if host is None or netloc != host.lower():
            return f"the form was sent from {origin}, not from the console"
        if allowed is not None and host_name(netloc) not in allowed:
            return f"the form was sent from {origin}, not a host the console is served under"
    return None
