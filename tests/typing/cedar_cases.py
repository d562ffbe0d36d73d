"""Cedar policies: the declared middleware, its settings, the schema, the run's Principal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, assert_type

from stageware.cedar import CedarPolicyError, CedarSettings, cedar_policy, schema_for
from stageware.policy import (
    PRINCIPAL_KEY,
    MiddlewareDef,
    PolicyEngine,
    PolicyEntry,
    PolicyEnv,
    Principal,
)

# Positive cases.

assert_type(cedar_policy, MiddlewareDef)
PolicyEngine([cedar_policy])
PolicyEngine(
    [PolicyEntry(cedar_policy, settings={"policy_text": "forbid(principal, action, resource);"})]
)
assert_type(schema_for(), dict[str, Any])
assert_type(
    schema_for("myapp.tools:TOOLS", principal_attributes={"type": "object"}), dict[str, Any]
)
assert_type(CedarSettings(policy_text="").on_deny, Literal["block", "guide"])
assert_type(CedarPolicyError(["a.cedar:1:1: bad"]).problems, tuple[str, ...])

dana = Principal("dana", frozenset({"finance"}), {"team": "refunds"})
assert_type(dana.roles, frozenset[str])
assert_type(dana.attributes, Mapping[str, Any])
state: dict[str, Any] = {PRINCIPAL_KEY: dana}


def who(env: PolicyEnv) -> str | None:
    return None if env.principal is None else env.principal.id


# Negative cases: each line must be an error under both checkers.

Principal("dana", ["finance"])  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
schema_for(tools=1)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
CedarSettings(on_deny="warn")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def principal_id(env: PolicyEnv) -> str:
    return env.principal.id  # type: ignore[union-attr]  # pyright: ignore[reportOptionalMemberAccess]
