"""The demo's middleware stack: typed handlers a real deployment would register.

- ``redactor``: InvokeModel Input. E-mail addresses never reach the model.
- ``ResponseCache``: InvokeModel Wrap. A question answered before is served from the
  cache, short-circuiting the model call.
- ``retrier``: ExecuteTool Wrap, the ready-made ``ToolRetry``. A tool that failed with a
  transient error runs again, up to three attempts, before the model sees the failure.
- ``refund_gate``: ExecuteTool Wrap. A refund waits for a human: the gate interrupts the
  run, and on resume lets the call through or answers it with a refusal.

Every handler is annotated with the generated per-stage aliases, so mypy and pyright check
it against the stage it is registered on.
"""

from __future__ import annotations

import copy
import re
from collections.abc import AsyncIterator
from typing import final

from stageware import (
    ContentBlock,
    ExecuteToolContext,
    ExecuteToolEvent,
    ExecuteToolNext,
    ExecuteToolWrapHandler,
    InterruptException,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelInputHandler,
    InvokeModelNext,
    Message,
    ModelStopReason,
    ToolResultEvent,
)
from stageware.middleware import ToolRetry, ToolRetryAttempt

from ._trace import Trace

__all__ = ["REDACTED", "ResponseCache", "redactor", "refund_gate", "retrier"]

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
REDACTED = "[email redacted]"
TRANSIENT_ERRORS = (TimeoutError, ConnectionError)
MAX_ATTEMPTS = 3
APPROVAL = "refund-approval"


def redactor(trace: Trace) -> InvokeModelInputHandler:
    """An Input handler that replaces e-mail addresses in the messages sent to the model."""

    def redact_emails(context: InvokeModelContext) -> InvokeModelContext:
        found = 0
        messages: list[Message] = []
        for message in context.messages:
            blocks: list[ContentBlock] = []
            for block in message["content"]:
                text = block.get("text")
                if text is None:
                    blocks.append(block)
                    continue
                redacted, count = EMAIL.subn(REDACTED, text)
                found += count
                blocks.append({"text": redacted})
            messages.append({"role": message["role"], "content": blocks})
        if found:
            trace.line(
                "InvokeModel.Input redact",
                f"hid {found} e-mail address(es) in the conversation from the model",
            )
        return context.replace(messages=messages)

    return redact_emails


@final
class ResponseCache:
    """A Wrap handler that answers a repeated question without calling the model.

    The key is the last user message's text as the model would see it (after redaction),
    and only for a conversation turn that is a plain question, not a round of tool results.
    """

    __slots__ = ("_answers", "_trace")

    def __init__(self, trace: Trace) -> None:
        self._trace = trace
        self._answers: dict[str, ModelStopReason] = {}

    async def __call__(
        self, context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        key = _question(context.messages[-1]) if context.messages else None
        cached = None if key is None else self._answers.get(key)
        if cached is not None:
            self._trace.line(
                "InvokeModel.Wrap cache",
                "hit: answered without calling the model (the hooks still bracket the stage)",
                count="cache hits",
            )
            yield copy.deepcopy(cached)
            return
        self._trace.line("InvokeModel.Wrap cache", "miss: calling the model")
        async for event in next_fn(context):
            if (
                key is not None
                and isinstance(event, ModelStopReason)
                and event.stop_reason == "end_turn"
            ):
                self._answers[key] = copy.deepcopy(event)
            yield event


def _question(message: Message) -> str | None:
    if message["role"] != "user" or any("toolResult" in block for block in message["content"]):
        return None
    return " ".join(block["text"] for block in message["content"] if "text" in block)


def retrier(trace: Trace) -> ToolRetry:
    """stageware's ``ToolRetry``: re-runs a tool call that failed with a transient error."""

    def note(attempt: ToolRetryAttempt) -> None:
        error = attempt.error
        trace.line(
            "ExecuteTool.Wrap retry",
            f"{attempt.tool_use['name']} failed ({type(error).__name__}: {error}); attempt "
            f"{attempt.attempt + 1} of {attempt.max_attempts}",
            count="retries",
        )

    # Short waits: the demo's inventory service is back at once.
    return ToolRetry(
        tools=["lookup_order"],  # a read: safe to run again (never the refund)
        max_attempts=MAX_ATTEMPTS,
        on=TRANSIENT_ERRORS,
        initial_delay=0.01,
        max_delay=0.05,
        jitter=0.01,
        on_retry=note,
    )


def refund_gate(trace: Trace) -> ExecuteToolWrapHandler:
    """A Wrap handler that puts every refund in front of a human before it runs."""

    async def approve_refunds(
        context: ExecuteToolContext, next_fn: ExecuteToolNext
    ) -> AsyncIterator[ExecuteToolEvent]:
        tool_use = context.tool_use
        if tool_use["name"] == "issue_refund":
            order, amount = tool_use["input"].get("order_id"), tool_use["input"].get("amount")
            shown = f"${amount:.2f}" if isinstance(amount, int | float) else repr(amount)
            reason = f"refund {shown} on order {order}?"
            try:
                decision = context.interrupt(APPROVAL, reason=reason).response
            except InterruptException:
                trace.line(
                    "ExecuteTool.Wrap approval",
                    f"refund needs a human: interrupting ({reason})",
                    count="interrupts",
                )
                raise
            trace.line("ExecuteTool.Wrap approval", f"human answered {decision!r}")
            if decision != "approve":
                yield ToolResultEvent(
                    tool_result={
                        "toolUseId": tool_use["toolUseId"],
                        "status": "error",
                        "content": [{"text": "A reviewer declined this refund."}],
                    }
                )
                return
        async for event in next_fn(context):
            yield event

    return approve_refunds
