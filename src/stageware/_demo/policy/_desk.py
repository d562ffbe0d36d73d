"""The refund desk's world: the refund tool, and the scripted model that drives it.

The script has one entry per model call of the story, in order, so the story can check
that every call it expects was made and no other (``ScriptedModel.remaining``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from stageware import (
    AgentTool,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    tool,
)

__all__ = [
    "CHUNK_SIZE",
    "LEAK",
    "LEAK_PREFIX",
    "MALFORMED_ANSWER",
    "ORDERS",
    "PROMISE",
    "Refund",
    "RefundDesk",
    "scripted_model",
]

# (order, amount) of the three refunds the customer asks for: one under every limit, one
# over the guardrail's limit (1,000) and one over the approval threshold (200).
ORDERS: Final = {
    "teapot": (1042, 59.9),
    "espresso machine": (2001, 1250.0),
    "jacket": (1077, 420.0),
}

MALFORMED_ANSWER: Final = '{"eta_days": 5, "channel": "card"}'
"""Scene 5: an answer a customer must never read, which the format policy retries."""

PROMISE: Final = "Yes, it's guaranteed to be back on your card by Friday!"
"""Scene 6: a promise the desk cannot keep, which the model is told to write again."""

# Scene 7: text streams in CHUNK_SIZE-character deltas. The stream guard judges each delta
# on its own, so the leak starts a delta (LEAK_PREFIX is two deltas long): the story
# checks that the caller got the prefix and nothing from the leak on.
CHUNK_SIZE: Final = 16
LEAK_PREFIX: Final = "One moment, Jane. Let me check. "
LEAK: Final = "STAFF-ONLY: override code 7781 takes 50% off any order."


@dataclass(frozen=True, slots=True)
class Refund:
    """A refund the desk paid out."""

    order_id: int
    amount: float


@dataclass
class RefundDesk:
    """The back office the tool talks to; it counts the refunds, for the story's checks."""

    refunds: list[Refund] = field(default_factory=list[Refund])

    def tools(self) -> list[AgentTool]:
        """The tools the agent may call, bound to this desk."""

        @tool
        def issue_refund(order_id: int, amount: float) -> str:
            """Refund an order to the customer's card.

            Args:
                order_id: The order to refund.
                amount: The amount to refund, in dollars.
            """
            self.refunds.append(Refund(order_id, amount))
            return f"refunded ${amount:.2f} on order {order_id}"

        return [issue_refund]


def _refund(item: str) -> ScriptedToolCall:
    order_id, amount = ORDERS[item]
    return ScriptedToolCall("issue_refund", {"order_id": order_id, "amount": amount})


def scripted_model() -> ScriptedModel:
    """The model's side of the story, one entry per model call."""
    return ScriptedModel(
        [
            # 1. baseline redaction: a small refund goes through
            ScriptedTurn(tool_calls=[_refund("teapot")]),
            "Done: $59.90 is on its way back to your card.",
            # 2. guardrail: over the limit, blocked before the tool runs
            ScriptedTurn(tool_calls=[_refund("espresso machine")]),
            # 3. suspend: over the approval threshold; after the approval, the answer
            ScriptedTurn(tool_calls=[_refund("jacket")]),
            "Approved: $420.00 for the jacket is on its way back to your card.",
            # 4. escalation: decided on the input, before any model call
            # 5. retry: a malformed answer, then a good one
            MALFORMED_ANSWER,
            "Refunds reach your card within 5 business days.",
            # 6. guide: a promise, then, told why not, an answer without one
            PROMISE,
            "I can't name a day, as your card issuer sets it: refunds reach your card "
            "within 5 business days.",
            # 7. stream block: the model starts leaking a staff-only note
            LEAK_PREFIX + LEAK,
            # 8. an open middleware crashes; the run does not notice
            "You're welcome, Jane. Have a good day!",
        ],
        model_id="refund-desk-scripted",
        chunk_size=CHUNK_SIZE,
    )
