"""Approver identities for the tests: one test secret, its authenticator and credentials.

``STAGEWARE_APPROVAL_AUTHENTICATOR=tests.policy.approvers:authenticator`` makes the
command line verify ``STAGEWARE_APPROVAL_CREDENTIAL`` with the same secret the tests'
policies use, so a test can act as several operators.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from stageware.policy import SignedCredentials

__all__ = ["FACTORY", "SECRET", "authenticator", "credential"]

SECRET: Final = b"stageware tests: not a secret anywhere else"
FACTORY: Final = "tests.policy.approvers:authenticator"


def authenticator() -> SignedCredentials:
    """The authenticator factory the command line loads."""
    return SignedCredentials(SECRET)


def credential(approver_id: str, roles: Iterable[str] = ()) -> str:
    """A credential for *approver_id*, good for an hour (longer than any test run)."""
    return authenticator().issue(approver_id, roles=roles, ttl=3600)
