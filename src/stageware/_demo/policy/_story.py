"""The policy demo's story: one customer's conversation with a refund desk, under a policy.

The policy is data: ``load_policy("policy.yaml", baseline="org.yaml")`` reads the spec and
the org baseline profile shipped beside this module. Each scene prints the policy
decisions of its run and checks what it claims against what the model was sent, what the
refund tool did and what the SQLite session holds; a claim that does not hold raises
``DemoCheckError``, and the command exits non-zero.

1. baseline redaction: the org profile masks the e-mail address and the card number;
2. guardrail: a refund over the limit is blocked before the tool runs;
3. suspend: a high-value refund waits for approval, across a "restart" (a new ``Agent``
   on the same SQLite file), and runs exactly once when approved;
4. escalate: a legal threat goes to the legal queue; the session refuses prompts until a
   person resolves it;
5. retry: a malformed model answer is asked for again;
6. stream block: a staff-only note stops the stream; the caller gets nothing of it;
7. an ``open`` middleware crashes and the run carries on.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import Generator
from contextlib import ExitStack, contextmanager
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import TextIO

from stageware import (
    Agent,
    AgentResult,
    AgentResultEvent,
    Escalation,
    ModelStreamChunkEvent,
    ScriptedModel,
    SessionEscalatedError,
    SQLiteSessionStore,
)
from stageware._demo._errors import DemoCheckError
from stageware._demo._trace import Trace
from stageware.policy import Approval, PolicyEngine, load_policy

from ._decisions import decision_rows
from ._desk import LEAK, LEAK_PREFIX, MALFORMED_ANSWER, ORDERS, Refund, RefundDesk, scripted_model
from ._middleware import STAFF_ONLY

__all__ = ["run_policy_demo"]

SESSION_ID = "refund-desk-7"
SYSTEM_PROMPT = "You are a refund desk agent. Be brief."
EMAIL = "jane.doe@example.com"
CARD = "4111 1111 1111 1111"
APPROVER = "dana"
LEGAL_REVIEWER = "lee"


@contextmanager
def _policy_files() -> Generator[tuple[Path, Path]]:
    """The shipped ``policy.yaml`` and ``org.yaml`` as files, wherever the package lives."""
    here = resources.files("stageware._demo.policy")
    with ExitStack() as stack:
        policy = stack.enter_context(resources.as_file(here / "policy.yaml"))
        org = stack.enter_context(resources.as_file(here / "org.yaml"))
        yield policy, org


def _load() -> PolicyEngine:
    with _policy_files() as (policy, org):
        return load_policy(policy, baseline=org)


def run_policy_demo(out: TextIO, session_dir: Path | None = None) -> None:
    """Run the story, writing the trace to *out*.

    Raises:
        DemoCheckError: If a check of the story's claims fails.
        ImportError: If PyYAML, which reading a policy spec needs, is not installed.
    """
    trace = Trace(out)
    out.write(
        "stageware demo policy: a refund desk agent on a scripted model, under a policy spec\n"
    )
    # The trace prints every decision. The engine logs them too, at WARNING for all but
    # Continue; with no handler configured, Python's last-resort handler would print
    # those records to stderr a second time. A handler here stops that, and leaves the
    # records to any handler the caller configured.
    logger = logging.getLogger("stageware.policy")
    quiet = logging.NullHandler()
    logger.addHandler(quiet)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            story = _Story(trace, (session_dir or Path(scratch)) / "sessions.sqlite")
            story.show_policy()
            story.baseline_redaction()
            story.guardrail_block()
            story.suspend_across_a_restart()
            story.escalation()
            story.retry()
            story.stream_block()
            story.open_middleware_crash()
            story.summary()
    finally:
        logger.removeHandler(quiet)


def _seconds(limit: timedelta | None) -> str:
    return "-" if limit is None else f"{limit.total_seconds():g}s"


class _Story:
    """The scenes, in order, and what they share: the desk, the model and the session."""

    def __init__(self, trace: Trace, database: Path) -> None:
        self.trace = trace
        self.database = database
        self.desk = RefundDesk()
        self.model: ScriptedModel = scripted_model()
        self.store = SQLiteSessionStore(database)
        # A --session-dir kept from an earlier run holds that run's session; start over.
        self.store.delete(SESSION_ID)
        self.engine = _load()
        self.agent = self._agent()
        self.checks = 0

    def _agent(self) -> Agent:
        return Agent(
            self.model,
            tools=self.desk.tools(),
            system_prompt=SYSTEM_PROMPT,
            session_store=SQLiteSessionStore(self.database),
            session_id=SESSION_ID,
            policy=self.engine,
        )

    # -- telling and checking --------------------------------------------------------

    def check(self, holds: bool, claim: str, otherwise: str) -> None:
        """Print *claim* if it *holds*; else fail the demo with *otherwise*."""
        if not holds:
            raise DemoCheckError(otherwise)
        self.checks += 1
        self.trace.note(f"checked: {claim}")

    def ask(self, prompt: str) -> AgentResult:
        self.trace.note(f'user: "{prompt}"')
        return self.report(self.agent(prompt))

    def report(self, result: AgentResult) -> AgentResult:
        for row in decision_rows(result.decisions):
            self.trace.note(f"  {row}")
        self.trace.note(f"-> stop_reason={result.stop_reason}")
        if result.halt is not None:
            halt = result.halt
            self.trace.note(f"   halt: {halt.middleware} at {halt.hook}: {halt.reason}")
        if result.stop_reason == "interrupt":
            for interrupt in result.interrupts:
                self.trace.note(f"   waiting for {interrupt.name!r} (id {interrupt.id})")
        elif result.text:
            self.trace.note(f'   assistant: "{result.text}"')
        return result

    def history_text(self) -> str:
        """Every text of the stored session, as a restarted process would load it."""
        stored = self.store.load(SESSION_ID)
        if stored is None:
            raise DemoCheckError(f"the session {SESSION_ID!r} is not in {self.database.name}")
        return "\n".join(
            block["text"]
            for message in stored.snapshot["messages"]
            for block in message["content"]
            if "text" in block
        )

    def model_calls(self, since: int) -> int:
        return len(self.model.requests) - since

    # -- the scenes ----------------------------------------------------------------------

    def show_policy(self) -> None:
        self.trace.heading('the policy: load_policy("policy.yaml", baseline="org.yaml")')
        for entry in self.engine.entries:
            limit = _seconds(entry.effective_timeout)
            hooks = ", ".join(hook.value for hook in entry.effective_hooks)
            settings = ", ".join(f"{k}={v}" for k, v in (entry.settings or {}).items())
            band, mode = entry.effective_band.value, entry.effective_fail_mode.value
            row = f"{band:<9}  {entry.name:<16}  {mode:<6}  {limit:<5}  {hooks:<14}  {settings}"
            self.trace.note(f"  {row.rstrip()}")
        self.trace.note(
            "each run below prints its result.decisions: hook point, middleware, band, outcome, "
            "the slowest call, what the record says"
        )

    def baseline_redaction(self) -> None:
        order, amount = ORDERS["teapot"]
        self.trace.heading(
            f"1. baseline redaction (org.yaml)  (session {SESSION_ID!r} in {self.database.name})"
        )
        before = len(self.model.requests)
        result = self.ask(
            f"Hi, I'm {EMAIL}. Order {order} arrived broken; please refund the ${amount:.2f} "
            f"to my card {CARD}."
        )
        seen = self.model.requests[before].messages[-1]["content"][0].get("text", "")
        self.trace.note(f'the model read: "{seen}"')
        redacted = [
            d for d in result.decisions if d.middleware == "redact_pii" and d.band == "baseline"
        ]
        self.check(
            bool(redacted) and redacted[0].modified,
            "redact_pii ran in the baseline band and changed the input",
            f"expected a baseline-band redact_pii decision that modified the input, got {redacted}",
        )
        self.check(
            EMAIL not in seen and CARD not in seen and "[email]" in seen and "[card]" in seen,
            "the model saw [email] and [card], never the address or the card number",
            f"the model was sent {seen!r}",
        )
        stored = self.history_text()
        self.check(
            EMAIL not in stored and CARD not in stored,
            f"neither is in the session stored in {self.database.name}",
            "the stored session holds the customer's e-mail address or card number",
        )
        self.check(
            result.stop_reason == "end_turn" and self.desk.refunds == [Refund(order, amount)],
            f"the ${amount:.2f} refund was paid",
            f"expected the small refund to be paid, got {result.stop_reason} and "
            f"{self.desk.refunds}",
        )

    def guardrail_block(self) -> None:
        order, amount = ORDERS["espresso machine"]
        limit = next(e for e in self.engine.entries if e.name == "refund_limit")
        self.trace.heading(
            f"2. guardrail: refund_limit (fail_mode={limit.effective_fail_mode.value}, "
            f"timeout {_seconds(limit.effective_timeout)}) blocks a refund over the limit"
        )
        paid = len(self.desk.refunds)
        result = self.ask(f"Please also refund order {order}, the ${amount:,.0f} espresso machine.")
        halt = result.halt
        self.check(
            result.stop_reason == "blocked"
            and halt is not None
            and (halt.middleware, halt.hook) == ("refund_limit", "tool.before"),
            "the run ended blocked, by refund_limit at tool.before",
            f"expected the ${amount:,.2f} refund to be blocked by refund_limit, got "
            f"stop_reason={result.stop_reason} (halt: {halt})",
        )
        self.check(
            len(self.desk.refunds) == paid
            and not any(d.middleware == "refund_approval" for d in result.decisions),
            "the refund tool never ran, and refund_approval was never asked",
            f"a blocked refund ran, or the sequence went on: {self.desk.refunds}",
        )

    def suspend_across_a_restart(self) -> None:
        order, amount = ORDERS["jacket"]
        self.trace.heading("3. suspend: a high-value refund waits for a person, across a restart")
        first = self.ask(f"And order {order}, the ${amount:.0f} jacket, please.")
        self.check(
            first.stop_reason == "interrupt"
            and [i.name for i in first.interrupts] == ["refund_approval"],
            "the run stopped for refund_approval's question, and the refund did not run",
            f"expected refund_approval to suspend the run, got {first.stop_reason}",
        )
        self.trace.note(
            f"restart: a new Agent, with the policy loaded again, on the same {self.database.name}"
        )
        self.trace.note("         (as a restarted process would build it; the first is dropped)")
        self.engine = _load()
        self.agent = self._agent()
        pending = self.agent.pending_interrupts
        for interrupt in pending:
            self.trace.note(f"  it loaded the pending approval {interrupt.id}")
        self.check(
            [i.id for i in pending] == [i.id for i in first.interrupts],
            "the new Agent found the same approval waiting in the session",
            f"the restarted agent is waiting for {[i.id for i in pending]}",
        )
        approval = Approval(approved=True, approver=APPROVER, comment="long-standing customer")
        self.trace.note(f"{APPROVER} approves: Approval(approved=True, approver={APPROVER!r}, ...)")
        resumed = self.report(
            self.agent(
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
        paid = [r for r in self.desk.refunds if r.order_id == order]
        self.check(
            resumed.stop_reason == "end_turn" and paid == [Refund(order, amount)],
            f"the ${amount:.2f} refund ran exactly once after the approval",
            f"expected one refund on order {order} after the approval, got {paid} "
            f"(stop_reason={resumed.stop_reason})",
        )

    def escalation(self) -> None:
        self.trace.heading("4. escalate: a legal threat goes to a person")
        before = len(self.model.requests)
        result = self.ask("This is taking forever. My lawyer will hear about this.")
        halt = result.halt
        self.check(
            result.stop_reason == "escalated"
            and halt is not None
            and halt.middleware == "legal_escalation"
            and self.model_calls(before) == 0,
            "the run ended escalated before the model was called",
            f"expected legal_escalation to escalate the run, got {result.stop_reason} "
            f"(halt: {halt})",
        )
        waiting = self.store.escalations("legal")
        for escalation in waiting:
            self.trace.note(
                f"store.escalations('legal'): {escalation.status}, session "
                f"{escalation.session_id!r}, {escalation.middleware} at {escalation.hook}: "
                f"{escalation.reason}"
            )
        self.check(
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
            self.agent(prompt)
        except SessionEscalatedError as error:
            refused: Escalation | None = error.escalation
        else:
            refused = None
        self.trace.note(f'user: "{prompt}"  -> SessionEscalatedError')
        self.check(
            refused is not None and refused.id == escalation.id,
            "the session refused the prompt while the escalation was open",
            f"expected the session to refuse a prompt, waiting on {escalation.id}",
        )
        self.store.claim_escalation(escalation.id, by=LEGAL_REVIEWER)
        resolved = self.store.resolve_escalation(
            escalation.id,
            by=LEGAL_REVIEWER,
            resolution="called the customer: no legal matter",
            comment="the refunds stand as paid",
        )
        self.trace.note(
            f"{LEGAL_REVIEWER} claims it, then resolves it: {resolved.resolution!r} "
            f"({resolved.status})"
        )
        self.check(
            resolved.status == "resolved" and self.store.open_escalation(SESSION_ID) is None,
            "nothing holds the session any more",
            f"the escalation is still {resolved.status}",
        )

    def retry(self) -> None:
        self.trace.heading("5. retry: a malformed model answer is asked for again")
        before = len(self.model.requests)
        result = self.ask("OK. When will the refunds reach my card?")
        self.check(
            result.stop_reason != "escalated" and self.model_calls(before) > 0,
            "the session took the prompt, now that the escalation is resolved",
            f"the session did not take a prompt after the escalation: {result.stop_reason}",
        )
        retried = [d for d in result.decisions if d.outcome == "retry"]
        self.check(
            [(d.middleware, d.hook, d.attempt) for d in retried]
            == [("plain_answers", "model.response", 1)]
            and self.model_calls(before) == 2,
            "plain_answers retried the first answer; the model was called twice",
            f"expected one retry by plain_answers and two model calls, got {retried} and "
            f"{self.model_calls(before)} call(s)",
        )
        self.check(
            result.stop_reason == "end_turn"
            and not result.text.startswith("{")
            and MALFORMED_ANSWER not in self.history_text(),
            "the customer got the good answer; the malformed one is not in the history",
            f"the malformed answer got through: {result.text!r}",
        )

    def stream_block(self) -> None:
        self.trace.heading(f"6. stream block: the model starts a {STAFF_ONLY} note")
        prompt = "Can I get a discount for the trouble?"
        self.trace.note(f'user: "{prompt}"  (read with agent.stream_async)')
        streamed, result = asyncio.run(self._stream(prompt))
        self.report(result)
        self.trace.note(f'the caller received: "{streamed}"')
        halt = result.halt
        self.check(
            result.stop_reason == "blocked"
            and halt is not None
            and (halt.middleware, halt.hook) == ("stream_guard", "stream.chunk"),
            "the run ended blocked, by stream_guard at stream.chunk",
            f"expected stream_guard to block the stream, got {result.stop_reason} (halt: {halt})",
        )
        self.check(
            streamed == LEAK_PREFIX and STAFF_ONLY not in self.history_text(),
            "the caller got the text before the note and nothing from it on; nor did the history",
            f"the caller received {streamed!r}; expected only {LEAK_PREFIX!r} (the note: {LEAK!r})",
        )

    async def _stream(self, prompt: str) -> tuple[str, AgentResult]:
        streamed: list[str] = []
        result: AgentResult | None = None
        async for event in self.agent.stream_async(prompt):
            if isinstance(event, ModelStreamChunkEvent):
                delta = event.chunk.get("contentBlockDelta")
                if delta is not None and "text" in delta["delta"]:
                    streamed.append(delta["delta"]["text"])
            elif isinstance(event, AgentResultEvent):
                result = event.result
        if result is None:
            raise DemoCheckError("stream_async ended without a result")
        return "".join(streamed), result

    def open_middleware_crash(self) -> None:
        self.trace.heading("7. an open middleware crashes; the run carries on")
        result = self.ask("Thanks, that's all!")
        crashed = [d for d in result.decisions if d.middleware == "csat_survey" and d.error]
        self.check(
            len(crashed) == 1 and crashed[0].outcome == "continue",
            "csat_survey's error is in the trace, and its fail mode made it a continue",
            f"expected one csat_survey error settled as continue, got {crashed}",
        )
        self.check(
            result.stop_reason == "end_turn" and bool(result.text),
            "the customer got an answer anyway",
            f"the run did not survive the crash: {result.stop_reason}",
        )

    def summary(self) -> None:
        self.trace.heading("summary")
        self.check(
            self.model.remaining == 0,
            f"the model was called {len(self.model.requests)} times, as scripted",
            f"{self.model.remaining} scripted model answer(s) were never asked for",
        )
        leaked = [
            r
            for r in self.model.requests
            for m in r.messages
            for b in m["content"]
            if EMAIL in b.get("text", "") or CARD in b.get("text", "")
        ]
        self.check(
            not leaked,
            "no model call ever saw the e-mail address or the card number",
            "a model call was sent the customer's e-mail address or card number",
        )
        allowed = [Refund(*ORDERS["teapot"]), Refund(*ORDERS["jacket"])]
        refunds = ", ".join(f"${r.amount:.2f} on order {r.order_id}" for r in self.desk.refunds)
        self.check(
            self.desk.refunds == allowed,
            f"the desk paid exactly the refunds the policy allowed: {refunds}",
            f"the desk paid {refunds}; the policy allowed {allowed}",
        )
        self.trace.note(f"{self.checks} checks; every check passed")
