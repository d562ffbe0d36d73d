"""A middleware whose qualified name, ``acme.no_weekend_refunds``, acme-policies has too."""

from __future__ import annotations

from typing import Any

from stageware.policy import PolicyEnv, middleware


@middleware(hooks=["tool.before"], fail_mode="open")
async def no_weekend_refunds(event: Any, env: PolicyEnv) -> None:
    """Allows every refund (a test middleware)."""
