"""The refund desk's policy middleware, as a platform team would declare them.

None of them says where it runs: the bands and settings come from the demo's policy spec
(``policy.yaml``) and the org baseline profile (``org.yaml``).

- ``redact_pii`` (``input.received``): e-mail addresses and card numbers are masked before
  the input enters the history or reaches the model. The org profile puts it in the
  baseline band, which no application spec can remove.
- ``refund_limit`` (``tool.before``, closed, 2 s): a refund over the limit never runs.
- ``refund_approval`` (``tool.before``, closed): a refund over the threshold waits for a
  person's approval (``Suspend``).
- ``legal_escalation`` (``input.received``): a legal threat goes to the legal queue
  (``Escalate``), and the session waits for a person.
- ``plain_answers`` (``model.response``): an answer that is raw JSON is asked for again
  (``Retry``).
- ``no_promises`` (``model.response``): an answer that promises a date is refused, and the
  model, told why, writes it again (``Guide``).
- ``stream_guard`` (``stream.chunk``): a staff-only note stops the stream (``Block``).
- ``csat_survey`` (``input.received``, open): sends a satisfaction survey when the
  customer says thanks; when the survey service is down, the run carries on.

Every middleware copes with any event its hook points can carry (the conformance suite
feeds them generated ones): an input that is not an object, or an amount that is not a
number, is not a refund to judge.

The middleware classes are declared apart from their definitions
(``refund_limit = middleware(...)(RefundLimit)``) rather than with a class decorator:
mypy ignores what a class decorator returns, and would take ``refund_limit`` for the
class rather than the ``MiddlewareDef`` it is.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Final, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from stageware import Message
from stageware.policy import (
    Block,
    Continue,
    Escalate,
    Guide,
    InputEvent,
    ModelResponseEvent,
    PolicyEnv,
    Retry,
    StreamChunkEvent,
    Suspend,
    ToolCallEvent,
    middleware,
)

__all__ = [
    "DEMO_MIDDLEWARE",
    "NO_PROMISES",
    "STAFF_ONLY",
    "ApprovalSettings",
    "CsatSurvey",
    "RedactPii",
    "RedactionSettings",
    "RefundApproval",
    "RefundLimit",
    "RefundLimitSettings",
    "SurveySettings",
    "csat_survey",
    "legal_escalation",
    "no_promises",
    "plain_answers",
    "redact_pii",
    "refund_approval",
    "refund_limit",
    "stream_guard",
]

_PATTERNS: Final = {
    "email": re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    # 13 to 19 digits, in groups separated by single spaces or dashes: card numbers.
    "card": re.compile(r"\b\d(?:[ -]?\d){12,18}\b"),
}
_LEGAL: Final = re.compile(r"\b(lawyers?|attorneys?|sue|suing|lawsuit|court)\b", re.IGNORECASE)
_THANKS: Final = re.compile(r"\b(thanks|thank you)\b", re.IGNORECASE)
_PROMISE: Final = re.compile(r"\b(guarantee[ds]?|promise[ds]?)\b", re.IGNORECASE)
NO_PROMISES: Final = (
    "the desk cannot promise a date, the card issuer sets it: say that refunds reach the "
    "card within 5 business days"
)
"""What ``no_promises`` tells the model."""
STAFF_ONLY: Final = "STAFF-ONLY"
"""The marker of notes the model may read and the customer must not."""


def _texts(messages: Sequence[Message]) -> list[str]:
    return [block["text"] for m in messages for block in m["content"] if "text" in block]


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RedactionSettings(_Settings):
    """What ``redact_pii`` masks."""

    kinds: list[Literal["email", "card"]] = Field(min_length=1)
    """The kinds of personal data to mask."""


class RedactPii:
    """E-mail addresses and card numbers in the input are masked before anything sees them.

    Closed: an input the redactor could not check must not reach the model or the history.
    """

    def __init__(self, settings: RedactionSettings) -> None:
        self._patterns = {kind: _PATTERNS[kind] for kind in settings.kinds}

    async def __call__(self, event: InputEvent, env: PolicyEnv) -> Continue | None:
        # A copy to edit: the event itself must stay as it came.
        messages = copy.deepcopy(event.messages)
        found: dict[str, int] = {}
        for message in messages:
            for block in message["content"]:
                if "text" not in block:
                    continue
                for kind, pattern in self._patterns.items():
                    block["text"], count = pattern.subn(f"[{kind}]", block["text"])
                    if count:
                        found[kind] = found.get(kind, 0) + count
        if not found:
            return None
        env.note("masked " + ", ".join(f"{count} {kind}" for kind, count in found.items()))
        return Continue(modified={"messages": messages})


redact_pii = middleware(
    hooks=["input.received"],
    fail_mode="closed",
    timeout="1s",
    name="redact_pii",
    config=RedactionSettings,
    sample={"kinds": ["email", "card"]},
)(RedactPii)


def _refund(event: ToolCallEvent, tool: str) -> tuple[object, float] | None:
    """The order and amount of a refund call to *tool*, or ``None`` for anything else."""
    arguments: object = event.input
    if event.tool_name != tool or not isinstance(arguments, dict):
        return None
    # The model's JSON: an object's keys are strings; its values are anything.
    amount = cast("dict[str, object]", arguments).get("amount")
    if isinstance(amount, bool) or not isinstance(amount, int | float):
        return None
    return cast("dict[str, object]", arguments).get("order_id"), float(amount)


class RefundLimitSettings(_Settings):
    """How much one refund may pay out."""

    limit: float = Field(gt=0)
    """The largest refund, in dollars."""
    tool: str = "issue_refund"
    """The tool that pays refunds."""


class RefundLimit:
    """A refund over the limit never runs.

    Closed, with a 2 s timeout: if the check cannot finish, the refund does not happen.
    """

    def __init__(self, settings: RefundLimitSettings) -> None:
        self._settings = settings

    async def __call__(self, event: ToolCallEvent, env: PolicyEnv) -> Block | None:
        refund = _refund(event, self._settings.tool)
        if refund is None or refund[1] <= self._settings.limit:
            return None
        order, amount = refund
        return Block(
            f"refund of ${amount:,.2f} on order {order} is over the ${self._settings.limit:,.2f} "
            "limit"
        )


refund_limit = middleware(
    hooks=["tool.before"],
    fail_mode="closed",
    timeout="2s",
    name="refund_limit",
    config=RefundLimitSettings,
    sample={"limit": 500},
)(RefundLimit)


class ApprovalSettings(_Settings):
    """Which refunds need a person's approval."""

    threshold: float = Field(gt=0)
    """Refunds over this amount, in dollars, wait for approval."""
    tool: str = "issue_refund"
    """The tool that pays refunds."""
    approvers: list[str] | None = None
    """Who may approve: approver ids and ``role:<name>`` entries; anyone verified if unset."""


class RefundApproval:
    """A refund over the threshold waits for a person's approval; it runs once approved."""

    def __init__(self, settings: ApprovalSettings) -> None:
        self._settings = settings

    async def __call__(self, event: ToolCallEvent, env: PolicyEnv) -> Suspend | None:
        refund = _refund(event, self._settings.tool)
        if refund is None or refund[1] <= self._settings.threshold:
            return None
        order, amount = refund
        return Suspend(
            f"refund of ${amount:,.2f} on order {order} is over ${self._settings.threshold:,.2f}",
            details={"order_id": order, "amount": amount},
            approvers=self._settings.approvers,
        )


refund_approval = middleware(
    hooks=["tool.before"],
    fail_mode="closed",
    timeout="2s",
    name="refund_approval",
    config=ApprovalSettings,
    sample={"threshold": 100},
)(RefundApproval)


@middleware(hooks=["input.received"], fail_mode="closed", timeout="1s")
async def legal_escalation(event: InputEvent, env: PolicyEnv) -> Escalate | None:
    """A legal threat is for the legal team: the run stops and goes to their queue."""
    for text in _texts(event.messages):
        threat = _LEGAL.search(text)
        if threat is not None:
            return Escalate(f"legal threat in the input ({threat.group(0)!r})", queue="legal")
    return None


@middleware(hooks=["model.response"], fail_mode="closed", timeout="1s")
async def plain_answers(event: ModelResponseEvent, env: PolicyEnv) -> Retry | None:
    """A final answer must be sentences for the customer, not raw JSON or code."""
    if event.stop_reason != "end_turn":
        return None
    text = " ".join(_texts([event.message])).strip()
    if text.startswith(("{", "[", "```")):
        return Retry("the answer is raw JSON, not sentences for the customer")
    return None


@middleware(hooks=["model.response"], fail_mode="closed", timeout="1s")
async def no_promises(event: ModelResponseEvent, env: PolicyEnv) -> Guide | None:
    """The desk cannot promise when a refund arrives: such an answer is written again."""
    if event.stop_reason != "end_turn":
        return None
    if _PROMISE.search(" ".join(_texts([event.message]))) is None:
        return None
    return Guide(NO_PROMISES)


@middleware(hooks=["stream.chunk"], fail_mode="closed", timeout="250ms")
async def stream_guard(event: StreamChunkEvent, env: PolicyEnv) -> Block | None:
    """A staff-only note never reaches the customer: the stream stops at its first chunk."""
    delta = event.chunk.get("contentBlockDelta")
    if delta is not None and STAFF_ONLY in delta["delta"].get("text", ""):
        return Block(f"the response started a {STAFF_ONLY} note")
    return None


class SurveySettings(_Settings):
    """Where ``csat_survey`` sends its surveys."""

    endpoint: str = Field(min_length=1)
    """``memory:<name>`` keeps the surveys in the process (the conformance suite uses
    one); any other endpoint is a network service, and the demo has no network: sending
    there fails as it would while the service is down."""


class CsatSurvey:
    """When the customer says thanks, a satisfaction survey is sent.

    Open: a survey is nice to have; its service being down must not stop the desk.
    """

    def __init__(self, settings: SurveySettings) -> None:
        self._endpoint = settings.endpoint
        self.sent: list[str] = []

    async def __call__(self, event: InputEvent, env: PolicyEnv) -> None:
        if not any(_THANKS.search(text) for text in _texts(event.messages)):
            return
        if not self._endpoint.startswith("memory:"):
            raise ConnectionError(f"survey service {self._endpoint} is unreachable")
        self.sent.append(env.run_id)
        env.note(f"survey sent to {self._endpoint}")


csat_survey = middleware(
    hooks=["input.received"],
    fail_mode="open",
    timeout="500ms",
    name="csat_survey",
    config=SurveySettings,
    sample={"endpoint": "memory:surveys"},
)(CsatSurvey)

DEMO_MIDDLEWARE: Final = (
    redact_pii,
    refund_limit,
    refund_approval,
    legal_escalation,
    plain_answers,
    no_promises,
    stream_guard,
    csat_survey,
)
"""Every middleware of the demo, for the conformance suite."""
