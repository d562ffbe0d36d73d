"""The demo's world: a support desk's tools and the scripted model that drives them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stageware import (
    AgentTool,
    ModelRequest,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    tool,
)

__all__ = ["ORDER_ID", "POLICY_ANSWER", "SupportDesk", "scripted_model"]

ORDER_ID = 1042
REFUND_AMOUNT = 59.9
POLICY_ANSWER = "Refunds are accepted within 30 days of delivery, no questions asked."


@dataclass
class SupportDesk:
    """The back office the tools talk to; it counts what happened, for the demo's checks.

    The inventory service times out on the first lookup, as real ones do, so the retry
    middleware has something to do.
    """

    lookups: int = 0
    refunds: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    def tools(self) -> list[AgentTool]:
        """The tools the agent may call, bound to this desk."""

        @tool
        def lookup_order(order_id: int) -> dict[str, Any]:
            """Look up an order by its number.

            Args:
                order_id: The order number the customer gave.
            """
            self.lookups += 1
            if self.lookups == 1:
                raise TimeoutError("inventory service timed out")
            return {"order_id": order_id, "item": "ceramic teapot", "paid": REFUND_AMOUNT}

        @tool
        def issue_refund(order_id: int, amount: float) -> str:
            """Refund an order to the customer's card.

            Args:
                order_id: The order to refund.
                amount: The amount to refund, in dollars.
            """
            self.refunds.append({"order_id": order_id, "amount": amount})
            return f"refunded ${amount:.2f} on order {order_id}"

        return [lookup_order, issue_refund]


def _look_up_order(request: ModelRequest) -> ScriptedTurn:
    # A responder, not a fixed turn: the reply quotes what the model was actually sent,
    # so the trace shows the redaction from the model's side.
    first = request.messages[0]["content"][0].get("text", "")
    return ScriptedTurn(
        text=f"I read: <{first}>. Let me look up the order.",
        tool_calls=[ScriptedToolCall("lookup_order", {"order_id": ORDER_ID})],
    )


def scripted_model() -> ScriptedModel:
    """The model's side of the conversation, one entry per model call."""
    return ScriptedModel(
        [
            _look_up_order,
            ScriptedTurn(
                text="The teapot arrived broken; a refund is due.",
                tool_calls=[
                    ScriptedToolCall(
                        "issue_refund", {"order_id": ORDER_ID, "amount": REFUND_AMOUNT}
                    )
                ],
            ),
            f"Done: ${REFUND_AMOUNT:.2f} is on its way back to your card.",
            POLICY_ANSWER,
        ]
    )
