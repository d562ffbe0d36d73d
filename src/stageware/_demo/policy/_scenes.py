"""The policy demo's scenes: one customer's conversation with a refund desk, in order.

Each scene runs the agent, prints its decisions and checks what it claims against what
the model was sent, what the refund tool did and what the SQLite session holds.

1. baseline redaction: the org profile masks the e-mail address and the card number;
2. guardrail: a refund over the limit is blocked before the tool runs;
3. suspend: a high-value refund waits for approval, across a "restart" (a new ``Agent``
   on the same SQLite file), and runs exactly once when approved;
4. escalate: a legal threat goes to the legal queue; the session refuses prompts until a
   person resolves it;
5. retry: a malformed model answer is asked for again;
6. guide: an answer that promises a date is refused, and the model, told why, writes it
   again; neither the promise nor what the model was told stays in the history;
7. stream block: a staff-only note stops the stream; the caller gets nothing of it;
8. an ``open`` middleware crashes and the run carries on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Final

from stageware import Escalation, SessionEscalatedError
from stageware.policy import Approval, ApprovalRefused

from ._cast import SESSION_ID, Cast
from ._desk import LEAK, LEAK_PREFIX, MALFORMED_ANSWER, ORDERS, PROMISE, Refund
from ._middleware import NO_PROMISES, STAFF_ONLY

__all__ = ["SCENES"]

EMAIL: Final = "jane.doe@example.com"
CARD: Final = "4111 1111 1111 1111"
APPROVER: Final = "dana"
LEGAL_REVIEWER: Final = "lee"


def _seconds(limit: timedelta | None) -> str:
    return "-" if limit is None else f"{limit.total_seconds():g}s"


def show_policy(cast: Cast) -> None:
    """What the loaded policy installs, in spec order, with bands, fail modes and timeouts."""
    cast.trace.heading('the policy: load_policy("policy.yaml", baseline="org.yaml")')
    for entry in cast.engine.entries:
        limit = _seconds(entry.effective_timeout)
        hooks = ", ".join(hook.value for hook in entry.effective_hooks)
        settings = ", ".join(f"{k}={v}" for k, v in (entry.settings or {}).items())
        band, mode = entry.effective_band.value, entry.effective_fail_mode.value
        row = f"{band:<9}  {entry.name:<16}  {mode:<6}  {limit:<5}  {hooks:<14}  {settings}"
        cast.trace.note(f"  {row.rstrip()}")
    cast.trace.note(
        "each run below prints its result.decisions: hook point, middleware, band, outcome, "
        "the slowest call, what the record says"
    )


def baseline_redaction(cast: Cast) -> None:
    """The org profile's redactor masks personal data before the model or the history."""
    order, amount = ORDERS["teapot"]
    cast.trace.heading(
        f"1. baseline redaction (org.yaml)  (session {SESSION_ID!r} in {cast.database.name})"
    )
    before = len(cast.model.requests)
    result = cast.ask(
        f"Hi, I'm {EMAIL}. Order {order} arrived broken; please refund the ${amount:.2f} "
        f"to my card {CARD}."
    )
    seen = cast.model.requests[before].messages[-1]["content"][0].get("text", "")
    cast.trace.note(f'the model read: "{seen}"')
    redacted = [
        d for d in result.decisions if d.middleware == "redact_pii" and d.band == "baseline"
    ]
    cast.check(
        bool(redacted) and redacted[0].modified,
        "redact_pii ran in the baseline band and changed the input",
        f"expected a baseline-band redact_pii decision that modified the input, got {redacted}",
    )
    cast.check(
        EMAIL not in seen and CARD not in seen and "[email]" in seen and "[card]" in seen,
        "the model saw [email] and [card], never the address or the card number",
        f"the model was sent {seen!r}",
    )
    stored = cast.history_text()
    cast.check(
        EMAIL not in stored and CARD not in stored,
        f"neither is in the session stored in {cast.database.name}",
        "the stored session holds the customer's e-mail address or card number",
    )
    cast.check(
        result.stop_reason == "end_turn" and cast.desk.refunds == [Refund(order, amount)],
        f"the ${amount:.2f} refund was paid",
        f"expected the small refund to be paid, got {result.stop_reason} and {cast.desk.refunds}",
    )


def guardrail_block(cast: Cast) -> None:
    """A refund over the limit is blocked at tool.before; the tool never runs."""
    order, amount = ORDERS["espresso machine"]
    limit = next(e for e in cast.engine.entries if e.name == "refund_limit")
    cast.trace.heading(
        f"2. guardrail: refund_limit (fail_mode={limit.effective_fail_mode.value}, "
        f"timeout {_seconds(limit.effective_timeout)}) blocks a refund over the limit"
    )
    paid = len(cast.desk.refunds)
    result = cast.ask(f"Please also refund order {order}, the ${amount:,.0f} espresso machine.")
    halt = result.halt
    cast.check(
        result.stop_reason == "blocked"
        and halt is not None
        and (halt.middleware, halt.hook) == ("refund_limit", "tool.before"),
        "the run ended blocked, by refund_limit at tool.before",
        f"expected the ${amount:,.2f} refund to be blocked by refund_limit, got "
        f"stop_reason={result.stop_reason} (halt: {halt})",
    )
    cast.check(
        len(cast.desk.refunds) == paid
        and not any(d.middleware == "refund_approval" for d in result.decisions),
        "the refund tool never ran, and refund_approval was never asked",
        f"a blocked refund ran, or the sequence went on: {cast.desk.refunds}",
    )


def suspend_across_a_restart(cast: Cast) -> None:
    """A high-value refund waits for approval across a restart, then runs once."""
    order, amount = ORDERS["jacket"]
    cast.trace.heading("3. suspend: a high-value refund waits for a person, across a restart")
    first = cast.ask(f"And order {order}, the ${amount:.0f} jacket, please.")
    cast.check(
        first.stop_reason == "interrupt"
        and [i.name for i in first.interrupts] == ["refund_approval"],
        "the run stopped for refund_approval's question, and the refund did not run",
        f"expected refund_approval to suspend the run, got {first.stop_reason}",
    )
    cast.trace.note(
        f"restart: a new Agent, with the policy loaded again, on the same {cast.database.name}"
    )
    cast.trace.note("         (as a restarted process would build it; the first is dropped)")
    cast.restart()
    pending = cast.agent.pending_interrupts
    for interrupt in pending:
        cast.trace.note(f"  it loaded the pending approval {interrupt.id}")
    cast.check(
        [i.id for i in pending] == [i.id for i in first.interrupts],
        "the new Agent found the same approval waiting in the session",
        f"the restarted agent is waiting for {[i.id for i in pending]}",
    )
    # The spec lets only role:refunds approve: a support agent's credential is refused.
    support = cast.credentials.issue("sam", roles=["support"], ttl=300)
    try:
        cast.agent(
            [
                {
                    "interruptResponse": {
                        "interruptId": i.id,
                        "response": {"approved": True, "credential": support},
                    }
                }
                for i in pending
            ]
        )
    except ApprovalRefused as refused:
        cast.trace.note(f"sam (support) tries to approve: refused: {refused}")
        blocked_sam = True
    else:
        blocked_sam = False
    cast.check(
        blocked_sam and not [r for r in cast.desk.refunds if r.order_id == order],
        "sam, who is not in refunds, could not approve it, and nothing ran",
        "sam's approval was accepted, or the refund ran",
    )
    credential = cast.credentials.issue(APPROVER, roles=["refunds"], ttl=300)
    approval = Approval(approved=True, credential=credential, comment="long-standing customer")
    cast.trace.note(
        f"{APPROVER} signs in to the console, which issues a credential; she approves: "
        "Approval(approved=True, credential=..., ...)"
    )
    resumed = cast.report(
        cast.agent(
            [
                {
                    "interruptResponse": {
                        "interruptId": i.id,
                        "response": approval.model_dump(),
                    }
                }
                for i in pending
            ]
        )
    )
    paid = [r for r in cast.desk.refunds if r.order_id == order]
    cast.check(
        resumed.stop_reason == "end_turn" and paid == [Refund(order, amount)],
        f"the ${amount:.2f} refund ran exactly once after the approval",
        f"expected one refund on order {order} after the approval, got {paid} "
        f"(stop_reason={resumed.stop_reason})",
    )


def escalation(cast: Cast) -> None:
    """A legal threat escalates; the session refuses prompts until a person resolves it."""
    cast.trace.heading("4. escalate: a legal threat goes to a person")
    before = len(cast.model.requests)
    result = cast.ask("This is taking forever. My lawyer will hear about this.")
    halt = result.halt
    cast.check(
        result.stop_reason == "escalated"
        and halt is not None
        and halt.middleware == "legal_escalation"
        and cast.model_calls(before) == 0,
        "the run ended escalated before the model was called",
        f"expected legal_escalation to escalate the run, got {result.stop_reason} (halt: {halt})",
    )
    waiting = cast.store.escalations("legal")
    for escalation in waiting:
        cast.trace.note(
            f"store.escalations('legal'): {escalation.status}, session "
            f"{escalation.session_id!r}, {escalation.middleware} at {escalation.hook}: "
            f"{escalation.reason}"
        )
    cast.check(
        len(waiting) == 1
        and halt is not None
        and waiting[0].id == halt.escalation_id
        and (waiting[0].session_id, waiting[0].status) == (SESSION_ID, "open"),
        "the escalation was written with the session, and waits in the legal queue",
        f"expected one open escalation of {SESSION_ID!r} in the legal queue, got {waiting}",
    )
    (escalation,) = waiting
    prompt = "Hello? Is anyone there?"
    try:
        cast.agent(prompt)
    except SessionEscalatedError as error:
        refused: Escalation | None = error.escalation
    else:
        refused = None
    cast.trace.note(f'user: "{prompt}"  -> SessionEscalatedError')
    cast.check(
        refused is not None and refused.id == escalation.id,
        "the session refused the prompt while the escalation was open",
        f"expected the session to refuse a prompt, waiting on {escalation.id}",
    )
    cast.store.claim_escalation(escalation.id, by=LEGAL_REVIEWER)
    resolved = cast.store.resolve_escalation(
        escalation.id,
        by=LEGAL_REVIEWER,
        resolution="called the customer: no legal matter",
        comment="the refunds stand as paid",
    )
    cast.trace.note(
        f"{LEGAL_REVIEWER} claims it, then resolves it: {resolved.resolution!r} ({resolved.status})"
    )
    cast.check(
        resolved.status == "resolved" and cast.store.open_escalation(SESSION_ID) is None,
        "nothing holds the session any more",
        f"the escalation is still {resolved.status}",
    )


def retry(cast: Cast) -> None:
    """A malformed answer is asked for again, in the session the escalation no longer holds."""
    cast.trace.heading("5. retry: a malformed model answer is asked for again")
    before = len(cast.model.requests)
    result = cast.ask("OK. When will the refunds reach my card?")
    cast.check(
        cast.model_calls(before) > 0,
        "the session took the prompt, now that the escalation is resolved",
        f"the run after the escalation called no model: {result.stop_reason}",
    )
    retried = [d for d in result.decisions if d.outcome == "retry"]
    cast.check(
        [(d.middleware, d.hook, d.attempt) for d in retried]
        == [("plain_answers", "model.response", 1)]
        and cast.model_calls(before) == 2,
        "plain_answers retried the first answer; the model was called twice",
        f"expected one retry by plain_answers and two model calls, got {retried} and "
        f"{cast.model_calls(before)} call(s)",
    )
    cast.check(
        result.stop_reason == "end_turn"
        and not result.text.startswith("{")
        and MALFORMED_ANSWER not in cast.history_text(),
        "the customer got the good answer; the malformed one is not in the history",
        f"the malformed answer got through: {result.text!r}",
    )


def guide(cast: Cast) -> None:
    """A promise is refused with feedback; the model writes the answer again."""
    cast.trace.heading("6. guide: the model promises a date; told why not, it writes again")
    before = len(cast.model.requests)
    result = cast.ask("Can you guarantee it's back by Friday?")
    guided = [(d.middleware, d.hook, d.attempt) for d in result.decisions if d.outcome == "guide"]
    cast.check(
        guided == [("no_promises", "model.response", 1)] and cast.model_calls(before) == 2,
        "no_promises refused the promise; the model was asked again",
        f"expected one guide by no_promises and two model calls, got {guided} and "
        f"{cast.model_calls(before)} call(s)",
    )
    told = cast.model.requests[-1].messages[-1]["content"][-1].get("text", "")
    cast.trace.note(f'the second request ends with: "{told}"')
    cast.check(
        told.endswith(NO_PROMISES),
        "the model was told why, at the end of the request that asked again",
        f"the second request did not carry the feedback: it ends with {told!r}",
    )
    history = cast.history_text()
    cast.check(
        result.stop_reason == "end_turn"
        and PROMISE not in history
        and NO_PROMISES not in history
        and result.text in history,
        "the customer got the answer without a promise; the history keeps neither the "
        "promise nor the feedback",
        f"the guided answer went wrong: {result.stop_reason}, {result.text!r}",
    )


def stream_block(cast: Cast) -> None:
    """A staff-only note stops the stream; the caller gets nothing from it on."""
    cast.trace.heading(f"7. stream block: the model starts a {STAFF_ONLY} note")
    prompt = "Can I get a discount for the trouble?"
    cast.trace.note(f'user: "{prompt}"  (read with agent.stream_async)')
    streamed, result = asyncio.run(cast.stream(prompt))
    cast.report(result)
    cast.trace.note(f'the caller received: "{streamed}"')
    halt = result.halt
    cast.check(
        result.stop_reason == "blocked"
        and halt is not None
        and (halt.middleware, halt.hook) == ("stream_guard", "stream.chunk"),
        "the run ended blocked, by stream_guard at stream.chunk",
        f"expected stream_guard to block the stream, got {result.stop_reason} (halt: {halt})",
    )
    cast.check(
        streamed == LEAK_PREFIX and STAFF_ONLY not in cast.history_text(),
        "the caller got the text before the note and nothing from it on; nor did the history",
        f"the caller received {streamed!r}; expected only {LEAK_PREFIX!r} (the note: {LEAK!r})",
    )


def open_middleware_crash(cast: Cast) -> None:
    """An open middleware raises; the trace has the error, the run goes on."""
    cast.trace.heading("8. an open middleware crashes; the run carries on")
    result = cast.ask("Thanks, that's all!")
    crashed = [d for d in result.decisions if d.middleware == "csat_survey" and d.error]
    cast.check(
        len(crashed) == 1 and crashed[0].outcome == "continue",
        "csat_survey's error is in the trace, and its fail mode made it a continue",
        f"expected one csat_survey error settled as continue, got {crashed}",
    )
    cast.check(
        result.stop_reason == "end_turn" and bool(result.text),
        "the customer got an answer anyway",
        f"the run did not survive the crash: {result.stop_reason}",
    )


def summary(cast: Cast) -> None:
    """What the whole story did: every scripted call made, no leak, the right refunds."""
    cast.trace.heading("summary")
    cast.check(
        cast.model.remaining == 0,
        f"the model was called {len(cast.model.requests)} times, as scripted",
        f"{cast.model.remaining} scripted model answer(s) were never asked for",
    )
    leaked = [
        r
        for r in cast.model.requests
        for m in r.messages
        for b in m["content"]
        if EMAIL in b.get("text", "") or CARD in b.get("text", "")
    ]
    cast.check(
        not leaked,
        "no model call ever saw the e-mail address or the card number",
        "a model call was sent the customer's e-mail address or card number",
    )
    allowed = [Refund(*ORDERS["teapot"]), Refund(*ORDERS["jacket"])]
    refunds = ", ".join(f"${r.amount:.2f} on order {r.order_id}" for r in cast.desk.refunds)
    cast.check(
        cast.desk.refunds == allowed,
        f"the desk paid exactly the refunds the policy allowed: {refunds}",
        f"the desk paid {refunds}; the policy allowed {allowed}",
    )
    cast.trace.note(f"{cast.checks} checks; every check passed")


SCENES: Final[tuple[Callable[[Cast], None], ...]] = (
    show_policy,
    baseline_redaction,
    guardrail_block,
    suspend_across_a_restart,
    escalation,
    retry,
    guide,
    stream_block,
    open_middleware_crash,
    summary,
)
"""The scenes, in the order they play."""
