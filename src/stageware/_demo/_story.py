"""The demo's story: a refund request through a stack of typed middleware, with a restart.

1. A customer asks for a refund. Redaction hides their e-mail address from the model, the
   order lookup times out once and is retried, and the refund stops at an approval gate:
   the run ends with ``stop_reason="interrupt"`` and the session is saved.
2. The process "restarts": a new ``Agent`` loads the session from SQLite and sees the
   pending interrupt. A human approves; the agent resumes, the refund runs (the model is
   not asked again for the tool call) and the model confirms.
3. The customer asks a policy question twice; the second answer comes from the cache.

Every claim the trace makes is checked at the end against what the model was actually
sent and what the tools actually did; a failed check makes the demo exit non-zero.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TextIO

from stageware import (
    AfterModelCallEvent,
    AfterToolCallEvent,
    Agent,
    AgentResult,
    AgentStreamContext,
    AgentStreamInputHandler,
    AgentStreamStage,
    BeforeModelCallEvent,
    ExecuteToolStage,
    InvokeModelStage,
    MessageAddedEvent,
    ScriptedModel,
    SQLiteSessionStore,
)

from ._errors import DemoCheckError
from ._middleware import REDACTED, ResponseCache, redactor, refund_gate, retrier
from ._support_desk import POLICY_ANSWER, SupportDesk, scripted_model
from ._trace import Trace

__all__ = ["DemoCheckError", "run_demo"]

SESSION_ID = "support-42"
SYSTEM_PROMPT = "You are a support agent. Be brief."
CUSTOMER = "Hi, I'm jane.doe@example.com. Order 1042 arrived broken, please refund it."
POLICY_QUESTION = "What is your refund policy?"


def run_demo(out: TextIO, session_dir: Path | None = None) -> None:
    """Run the story, writing the trace to *out*.

    Raises:
        DemoCheckError: If a check of the story's claims fails.
    """
    trace = Trace(out)
    model = scripted_model()
    desk = SupportDesk()
    cache = ResponseCache(trace)
    out.write("stageware demo: a support agent on a scripted model, through typed middleware\n")
    with tempfile.TemporaryDirectory() as scratch:
        database = (session_dir or Path(scratch)) / "sessions.sqlite"
        trace.heading(
            f"1. a customer asks for a refund  (session {SESSION_ID!r} in {database.name})"
        )
        store = SQLiteSessionStore(database)
        # A --session-dir kept from an earlier run holds that run's session; start over.
        store.delete(SESSION_ID)
        agent = _build_agent(model, desk, cache, trace, store)
        trace.note(f'user: "{CUSTOMER}"')
        first = agent(CUSTOMER)
        _report(trace, first)
        if first.stop_reason != "interrupt":
            raise DemoCheckError(
                f"expected the refund to stop for approval, got {first.stop_reason}"
            )

        trace.heading("2. a new Agent loads the session, as a restarted process would")
        # Only the Agent is rebuilt here (the model, tools and cache objects stay), but
        # everything it knows comes from the SQLite file, not from the first Agent.
        agent = _build_agent(model, desk, cache, trace, SQLiteSessionStore(database))
        pending = agent.pending_interrupts
        trace.note(f"it loaded {len(agent.messages)} messages and is waiting for:")
        for interrupt in pending:
            trace.note(f"  {interrupt.name}: {interrupt.reason}  (id {interrupt.id})")
        answers = [
            {"interruptResponse": {"interruptId": i.id, "response": "approve"}} for i in pending
        ]
        trace.note('a human approves: agent([{"interruptResponse": {"interruptId": ...,')
        trace.note('                                "response": "approve"}}])')
        # Said here, where it shows: this gate is not how the front door's approvals work.
        trace.note("   (this demo's own middleware gate takes a plain answer from whoever resumes;")
        trace.note("    a policy approval is bound to the step and to a verified approver:")
        trace.note("    `stageware demo policy` shows those)")
        requests_before = len(model.requests)
        second = agent(answers)
        _report(trace, second)
        trace.note(
            f"   model calls in this step: {len(model.requests) - requests_before} (the "
            "refund call was replayed from the stored tool round, not asked for again)"
        )

        trace.heading("3. the same policy question, twice")
        answers_given: list[AgentResult] = []
        for _ in range(2):
            trace.note(f'user: "{POLICY_QUESTION}"')
            answers_given.append(agent(POLICY_QUESTION))
            _report(trace, answers_given[-1])

    _check(model, desk, trace, second, answers_given)
    counts = trace.counts
    trace.heading("summary")
    trace.note(
        f"model requests {len(model.requests)} (the cache answered "
        f"{counts['cache hits']} more), "
        f"tool retries {counts['retries']}, interrupts {counts['interrupts']}, "
        f"refunds issued {len(desk.refunds)}; every check passed"
    )


def _build_agent(
    model: ScriptedModel,
    desk: SupportDesk,
    cache: ResponseCache,
    trace: Trace,
    store: SQLiteSessionStore,
) -> Agent:
    agent = Agent(
        model,
        tools=desk.tools(),
        system_prompt=SYSTEM_PROMPT,
        session_store=store,
        session_id=SESSION_ID,
    )
    # Registration order does not decide the phases: Input runs before Wrap, whatever
    # the order here. Within a phase, the first registered handler is outermost.
    agent.add_middleware(InvokeModelStage.Input, redactor(trace))
    agent.add_middleware(InvokeModelStage.Wrap, cache)
    agent.add_middleware(ExecuteToolStage.Wrap, refund_gate(trace))
    agent.add_middleware(ExecuteToolStage.Wrap, retrier(trace))
    agent.add_middleware(AgentStreamStage.Input, _pass_start(trace))

    def model_called(event: BeforeModelCallEvent) -> None:
        trace.line("hook BeforeModelCall", "model call starting")

    def model_answered(event: AfterModelCallEvent) -> None:
        if event.stop_response is not None:
            response = event.stop_response
            calls = [b["toolUse"]["name"] for b in response.message["content"] if "toolUse" in b]
            detail = f" -> {', '.join(calls)}" if calls else ""
            text = " ".join(b["text"] for b in response.message["content"] if "text" in b)
            trace.line("hook AfterModelCall", f"stop_reason={response.stop_reason}{detail}")
            if text:
                trace.line("", f"model said: {text}")

    def tool_finished(event: AfterToolCallEvent) -> None:
        status = event.result["status"]
        shown = [
            c["text"] if "text" in c else json.dumps(c.get("json")) for c in event.result["content"]
        ]
        trace.line("hook AfterToolCall", f"{event.tool_use['name']}: {status} {' '.join(shown)}")

    def message_added(event: MessageAddedEvent) -> None:
        kinds = sorted({key for block in event.message["content"] for key in block})
        trace.line("hook MessageAdded", f"{event.message['role']} message ({', '.join(kinds)})")

    agent.add_hook(model_called, BeforeModelCallEvent)
    agent.add_hook(model_answered, AfterModelCallEvent)
    agent.add_hook(tool_finished, AfterToolCallEvent)
    agent.add_hook(message_added, MessageAddedEvent)
    return agent


def _pass_start(trace: Trace) -> AgentStreamInputHandler:
    def note_pass(context: AgentStreamContext) -> AgentStreamContext:
        what = f"{len(context.messages)} new message(s)" if context.messages else "a resume"
        trace.line("AgentStream.Input", f"agent pass starts with {what}")
        return context

    return note_pass


def _report(trace: Trace, result: AgentResult) -> None:
    trace.note(f"-> stop_reason={result.stop_reason}")
    if result.stop_reason == "interrupt":
        for interrupt in result.interrupts:
            trace.note(f"   waiting for {interrupt.name!r}: {interrupt.reason}")
    elif result.text:
        trace.note(f'   assistant: "{result.text}"')


def _check(
    model: ScriptedModel,
    desk: SupportDesk,
    trace: Trace,
    resumed: AgentResult,
    policy_answers: list[AgentResult],
) -> None:
    """Hold the trace to its claims."""
    sent = [repr(request.messages) for request in model.requests]
    if any("@example.com" in text for text in sent):
        raise DemoCheckError("an e-mail address reached the model")
    if not any(REDACTED in text for text in sent):
        raise DemoCheckError("the redaction marker never reached the model")
    # Four model calls: lookup, refund, confirmation, the first policy answer. The resume
    # replays the stored tool call without the model, and the second policy answer is
    # the cache's.
    if len(model.requests) != 4 or model.remaining != 0:
        raise DemoCheckError(f"expected 4 model calls, saw {len(model.requests)}")
    if desk.lookups != 2 or trace.counts["retries"] != 1:
        raise DemoCheckError(f"expected one retried lookup, saw {desk.lookups} lookups")
    if len(desk.refunds) != 1:
        raise DemoCheckError(f"expected exactly one refund, saw {desk.refunds}")
    if resumed.stop_reason != "end_turn":
        raise DemoCheckError(f"the resumed run ended with {resumed.stop_reason}")
    if [r.text for r in policy_answers] != [POLICY_ANSWER] * 2 or trace.counts["cache hits"] != 1:
        raise DemoCheckError(
            "the policy question was not answered once by the model, once by the cache"
        )
