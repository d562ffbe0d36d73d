"""Approvals: who may answer a Suspend, the verified Approver, and the engine's authenticator."""

from __future__ import annotations

from collections.abc import Collection
from typing import assert_type

from stageware.policy import Approver, PolicyEngine, SignedCredentials, Suspend

# Positive cases.

asked = Suspend("refund of 500", approvers=["ana", "role:finance"])
assert_type(asked.approvers, Collection[str] | None)

approver = Approver("ana", frozenset({"finance"}), "os-user")
assert_type(approver.id, str)
assert_type(approver.roles, frozenset[str])

credentials = SignedCredentials(b"0123456789abcdef0123456789abcdef")
assert_type(credentials.issue("ana", roles=["finance"], ttl=60), str)
assert_type(credentials("token"), Approver)


def from_console(credential: str) -> Approver:
    return Approver(credential)


PolicyEngine([], authenticator=credentials)
PolicyEngine([], authenticator=from_console)

# Negative cases: each line must be an error under both checkers.

Suspend("x", approvers=[1])  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]


def not_an_approver(credential: str) -> str:
    return credential


def takes_bytes(credential: bytes) -> Approver:
    return Approver("x")


PolicyEngine([], authenticator=not_an_approver)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
PolicyEngine([], authenticator=takes_bytes)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
credentials.issue(7)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
