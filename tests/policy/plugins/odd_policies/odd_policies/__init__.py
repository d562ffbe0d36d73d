"""Entry points of every form, for the plugin discovery tests; see its pyproject.toml."""

from __future__ import annotations

from typing import Any

from stageware.policy import Continue, PolicyEnv, middleware

__all__ = ["shout", "shout_again", "whisper"]


@middleware(hooks=["output.final"], fail_mode="open")
async def shout(event: Any, env: PolicyEnv) -> Continue:
    """Leaves the answer as it is (a test middleware)."""
    return Continue()


@middleware(hooks=["run.end"], fail_mode="open")
async def whisper(event: Any, env: PolicyEnv) -> None:
    """Does nothing at the end of a run (a test middleware)."""


@middleware(hooks=["run.start"], fail_mode="open")
async def hidden(event: Any, env: PolicyEnv) -> None:
    """Not in __all__, so the module entry point does not contribute it."""


shout_again = shout
"""The same middleware exported twice: contributed once."""


@middleware(hooks=["output.final"], fail_mode="closed", name="shout")
async def loud(event: Any, env: PolicyEnv) -> None:
    """Another middleware named ``shout``."""


NOT_MIDDLEWARE = {"name": "not a middleware"}
NOTHING: tuple[object, ...] = ()
MIXED = [shout, "whisper"]
TWINS = (shout, loud)
