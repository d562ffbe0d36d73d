"""Approver identities for the tests: one test secret, its authenticator and credentials.

``STAGEWARE_APPROVAL_AUTHENTICATOR=tests.policy.approvers:authenticator`` makes the
command line verify ``STAGEWARE_APPROVAL_CREDENTIAL`` with the same secret the tests'
policies use, so a test can act as several operators.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable
from typing import Any, Final

from stageware.policy import SignedCredentials

__all__ = ["FACTORY", "SECRET", "answer", "authenticator", "credential", "signed"]

SECRET: Final = b"stageware tests: not a secret anywhere else"
FACTORY: Final = "tests.policy.approvers:authenticator"


def authenticator() -> SignedCredentials:
    """The authenticator factory the command line loads."""
    return SignedCredentials(SECRET)


def credential(approver_id: str, roles: Iterable[str] = ()) -> str:
    """A credential for *approver_id*, good for an hour (longer than any test run)."""
    return authenticator().issue(approver_id, roles=roles, ttl=3600)


def answer(interrupt_id: str, approved: bool = True, by: str = "ana") -> list[dict[str, Any]]:
    """The prompt that answers policy approval *interrupt_id* as *by*, with a credential."""
    response = {"approved": approved, "credential": credential(by)}
    return [{"interruptResponse": {"interruptId": interrupt_id, "response": response}}]


def signed(body: bytes, secret: bytes = SECRET) -> str:
    """A credential whose claims are *body*, whatever it holds, signed with *secret*: what a
    console that holds the secret (or a bug in one) could issue, which ``issue`` would not."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")

    encoded = b64(body)
    return f"{encoded}.{b64(hmac.new(secret, encoded.encode(), hashlib.sha256).digest())}"
