"""The ``Model`` protocol: what the host streams a model call from; and ``TokenCounter``.

It is typed with the generated Converse payloads, so it lives above them, not in the
runtime. Any object with a fitting ``stream`` method is a model; the adapters beside
this module are two of them. A model that can count a request's input tokens itself
also has ``count_tokens`` (:class:`TokenCounter`), which the host prefers to its estimate.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

from stageware._generated.payloads import (
    Messages,
    StreamEvent,
    SystemContentBlock,
    ToolChoice,
    ToolSpec,
)

__all__ = ["Model", "TokenCounter"]


@runtime_checkable
class Model(Protocol):
    """A model that streams Converse-style events for a conversation."""

    def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: ToolChoice | None = None,
        system_prompt_content: list[SystemContentBlock] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[StreamEvent]:
        """Stream the model's response to *messages* as Converse stream events.

        Read *messages* and *tool_specs*, never change them: where no InvokeModel handler
        can see the call they are the agent's own history and its tools' own specs.

        A model that can constrain its reply to a JSON schema itself (a provider's native
        structured-output mode) says so with a true ``supports_structured_output``
        attribute; in a structured run it is then called with ``output_schema=`` (an
        ``OutputSchema``), and the text of its final reply must be that JSON object. Any
        other model is never passed ``output_schema``: the host asks it for the object
        through a tool instead.
        """
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """A model that counts a request's input tokens by its own rule.

    The host asks it for ``InvokeModelContext.projected_input_tokens`` instead of
    estimating (``stageware.estimate_tokens`` scaled by what the last call reported), on
    every model call an InvokeModel Input or Wrap handler sees. So implement it only
    where a count is cheap and local; a count that costs a request to the provider
    belongs behind an option the user turns on. ``ScriptedModel`` implements it.
    """

    async def count_tokens(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        system_prompt_content: list[SystemContentBlock] | None = None,
    ) -> int:
        """The input tokens of a request with these parameters, as ``stream`` takes them.

        Read the arguments, never change them (they may be the agent's own).
        """
        ...
