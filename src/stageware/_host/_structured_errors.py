"""The error a structured run raises when it cannot give the caller its typed output.

Apart from the run loop's structured-output module so that the result type can name it
without importing the loop, and so that importing it costs no pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stageware._generated.payloads import Message

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

__all__ = ["StructuredOutputError"]


class StructuredOutputError(Exception):
    """A structured run has no valid output to return.

    Raised by ``agent(..., output_type=M)`` when the model's replies still did not
    validate as ``M`` after the run's ``output_retries`` corrections, or at once when a
    reply stopped at ``max_tokens`` before its output was complete, and by
    ``AgentResult.output`` when the run stopped before producing its output (an
    interrupt, a policy block, a cancellation, ...).
    """

    def __init__(self, message: str, *, last_reply: Message, errors: list[ErrorDetails]) -> None:
        super().__init__(message)
        self.last_reply = last_reply
        """The model's last reply (an assistant message), as it entered the history."""
        self.errors = errors
        """What did not validate in it, as pydantic reports it (empty when the reply
        held no candidate at all, or the run stopped before one)."""
