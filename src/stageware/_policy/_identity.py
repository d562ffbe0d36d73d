"""Who answers an approval: the verified ``Approver``, and how a credential becomes one.

An approval is a security decision, so the approver's identity is never a string the
answerer types. It comes from an authenticator the deployment supplies
(``PolicyEngine(authenticator=...)``): a callable that turns a credential into an
``Approver`` or raises ``ApprovalRefused``. ``SignedCredentials`` is the one shipped: a
console (or a test) issues signed, expiring credentials with a secret the application
keeps, and the engine verifies them. The command line uses the operating-system account
that runs it instead (``_cli._operator``).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import math
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Final, TypeAlias, cast, final

__all__ = [
    "ROLE_PREFIX",
    "ApprovalRefused",
    "Approver",
    "Authenticator",
    "SignedCredentials",
    "may_answer",
]

ROLE_PREFIX: Final = "role:"
"""How ``Suspend(approvers=...)`` names a role rather than an approver id."""

_MIN_SECRET_BYTES: Final = 32


class ApprovalRefused(ValueError):
    """An answer to a policy approval is refused: its credential, its approver or its step.

    Nothing is recorded and nothing runs. Authenticators raise it for a credential that is
    not valid.
    """


@final
@dataclass(frozen=True, slots=True)
class Approver:
    """An identity an authenticator verified.

    Attributes:
        id: Who it is (``dana@example.com``, an OS account name).
        roles: The roles or groups it holds; ``Suspend(approvers=["role:finance"])``
            matches them.
        via: How it was verified: ``"authenticator"``, ``"os-user"``, or what a custom
            authenticator says.
    """

    id: str
    roles: frozenset[str] = field(default_factory=frozenset[str])
    via: str = "authenticator"

    def __post_init__(self) -> None:
        given = cast(object, self.id)  # untyped authenticators exist
        if not isinstance(given, str) or not given.strip():
            raise ValueError(f"an Approver needs a non-empty id, got {self.id!r}")
        if given.startswith(ROLE_PREFIX):
            # Suspend(approvers=...) reads "role:<name>" as a role: an id spelled that way
            # would pass as the role without holding it.
            raise ValueError(
                f"an Approver id may not start with {ROLE_PREFIX!r} (that names a role), "
                f"got {self.id!r}"
            )
        roles = cast(object, self.roles)
        if isinstance(roles, str) or not isinstance(roles, Iterable):
            raise TypeError(f"Approver.roles must be a set of role names, got {self.roles!r}")
        # A list or tuple is accepted and kept as the frozenset the type says.
        object.__setattr__(self, "roles", frozenset(cast(Iterable[str], roles)))


Authenticator: TypeAlias = Callable[[str], Approver]
"""Turns a credential into the ``Approver`` it proves, or raises ``ApprovalRefused``."""


def may_answer(approver: Approver, approvers: Collection[str] | None) -> bool:
    """Whether *approver* is among *approvers* (ids and ``role:<name>``); ``None``: anyone."""
    if approvers is None:
        return True
    roles = {ROLE_PREFIX + role for role in approver.roles}
    # The id is compared only with entries that are ids: "role:ops" names a role, never
    # an approver (whose id cannot start with the prefix anyway).
    ids = {entry for entry in approvers if not entry.startswith(ROLE_PREFIX)}
    return approver.id in ids or not roles.isdisjoint(approvers)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _claims(body: str) -> tuple[str, frozenset[str], float]:
    """The subject, roles and expiry of a signed *body*; ``ApprovalRefused`` if any is
    missing or of the wrong type (a signature proves who wrote it, not that it is right)."""
    try:
        claims: object = json.loads(_unb64(body))
    # Bad base64, UTF-8 and JSON are ValueErrors; nesting too deep a RecursionError.
    except (ValueError, RecursionError):
        raise ApprovalRefused("the credential's body is not JSON claims") from None
    if not isinstance(claims, dict):
        raise ApprovalRefused("the credential's claims are not a JSON object")
    fields = cast("dict[str, object]", claims)
    sub, roles, exp = fields.get("sub"), fields.get("roles"), fields.get("exp")
    if not isinstance(sub, str) or not sub.strip():
        raise ApprovalRefused("the credential's 'sub' claim is not a non-empty string")
    if not isinstance(roles, list) or not all(
        isinstance(role, str) for role in cast("list[object]", roles)
    ):
        raise ApprovalRefused("the credential's 'roles' claim is not a list of strings")
    # bool is an int; NaN or infinity (or an int too large for a float) would never expire.
    expiry = math.nan
    if isinstance(exp, int | float) and not isinstance(exp, bool):
        with contextlib.suppress(OverflowError):  # an int too large: expiry stays NaN
            expiry = float(exp)
    if not math.isfinite(expiry):
        raise ApprovalRefused("the credential's 'exp' claim is not a finite number")
    return sub, frozenset(cast("list[str]", roles)), expiry


@final
class SignedCredentials:
    """An authenticator of HMAC-SHA256 signed, expiring credentials.

    The application keeps *secret*; whoever holds it issues credentials, so only the
    console (or the service) that authenticates approvers should:

    ```python
    credentials = SignedCredentials(secret)
    engine = PolicyEngine([...], authenticator=credentials)
    token = credentials.issue("dana@example.com", roles=["finance"], ttl=300)
    ```

    Args:
        secret: At least 32 bytes of key material.
        clock: The time in seconds since the epoch; for tests.

    Raises:
        ValueError: If *secret* is too short.
    """

    __slots__ = ("_clock", "_secret")

    def __init__(self, secret: bytes, *, clock: Callable[[], float] = time.time) -> None:
        given = cast(object, secret)
        if not isinstance(given, bytes) or len(given) < _MIN_SECRET_BYTES:
            raise ValueError(
                f"SignedCredentials needs a secret of at least {_MIN_SECRET_BYTES} bytes "
                "(os.urandom(32), kept where the application keeps its keys)"
            )
        self._secret = secret
        self._clock = clock

    def issue(
        self,
        approver_id: str,
        *,
        roles: Iterable[str] = (),
        ttl: float | timedelta = 900.0,
    ) -> str:
        """A credential proving *approver_id* (with *roles*) for *ttl* (seconds or a delta).

        Raises:
            ValueError: If the id is empty or starts with ``role:``, or *ttl* is not a
                finite positive number of seconds.
        """
        seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else float(ttl)
        # A credential that never expires (inf) or cannot be compared (nan) is refused.
        if not (math.isfinite(seconds) and seconds > 0):
            raise ValueError(f"a credential's ttl must be finite and positive, got {ttl!r}")
        approver = Approver(approver_id, frozenset(roles))
        claims = {
            "sub": approver.id,
            "roles": sorted(approver.roles),
            "exp": self._clock() + seconds,
        }
        body = _b64(json.dumps(claims, sort_keys=True, separators=(",", ":")).encode())
        return f"{body}.{self._sign(body)}"

    def __call__(self, credential: str) -> Approver:
        """The approver *credential* proves.

        Raises:
            ApprovalRefused: A malformed, forged (another secret's) or expired credential;
                never another error, whatever *credential* is.
        """
        given = cast(object, credential)  # it comes from a prompt: anything
        # A credential this class issued is ASCII; anything else (a lone surrogate would
        # not even encode) is refused before it is signed or decoded.
        if not isinstance(given, str) or not given.isascii():
            raise ApprovalRefused("the credential is not one this authenticator signed")
        body, dot, signature = given.partition(".")
        # compare_digest: the time taken says nothing about how much of a guess was right.
        if not dot or not hmac.compare_digest(signature.encode(), self._sign(body).encode()):
            raise ApprovalRefused("the credential is not one this authenticator signed")
        sub, roles, exp = _claims(body)
        if self._clock() >= exp:
            raise ApprovalRefused(f"the credential of {sub!r} has expired")
        try:
            return Approver(sub, roles, "authenticator")
        except ValueError as error:  # a signed sub that is not a valid id ("role:...")
            raise ApprovalRefused(f"the credential's subject is not valid: {error}") from None

    def _sign(self, body: str) -> str:
        return _b64(hmac.new(self._secret, body.encode(), hashlib.sha256).digest())

    def __repr__(self) -> str:
        return "SignedCredentials(<secret>)"
