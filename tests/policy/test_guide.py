"""Guide: the step is refused, the model is told why, and the run goes on.

At ``tool.before`` the call's result is an error carrying the feedback; at
``model.response`` and ``stream.chunk`` the model is asked again with the feedback at the
end of the request, which the history never keeps. Each test checks what the model was
sent, that the run finished, and that the history is valid for the next turn and after a
session reload.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stageware import (
    Agent,
    InvokeModelStage,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    SessionStore,
)
from stageware.conformance import Check, check_middleware
from stageware.middleware import MemoryCache, ResponseCache
from stageware.policy import (
    Guide,
    HookPoint,
    ModelResponseEvent,
    Outcome,
    PolicyEngine,
    PolicyEnv,
    Retry,
    Suspend,
    ToolCallEvent,
    middleware,
)
from tests.host.converse_history import assert_valid_converse
from tests.host.sessions.stores import StoreSpec, close_store, open_store
from tests.telemetry.tracing_helpers import Recorder, attributes, is_error

from .approvers import answer
from .policy_helpers import Ledger, deciding, refund_agent

CAP = "refunds over 200 need a manager; offer 200 or less, or a callback"
PLAIN = "answer in sentences for the customer, not JSON"
SESSION = "guided"


def _refused(feedback: str, middleware: str = "decider") -> str:
    return f"The tool call was refused by policy {middleware} and did not run: {feedback}"


def _asked_again(feedback: str, middleware: str = "decider") -> str:
    return f"Your previous response was refused by policy {middleware} and discarded: {feedback}"


def _cap(event: ToolCallEvent, env: PolicyEnv) -> Guide | None:
    amount = event.input.get("amount") if isinstance(event.input, dict) else None
    return Guide(CAP) if isinstance(amount, int) and amount > 200 else None


def _plain(event: ModelResponseEvent, env: PolicyEnv) -> Guide | None:
    text = "".join(block.get("text", "") for block in event.message["content"])
    return Guide(PLAIN) if text.startswith("{") else None


def _refund(amount: int, call_id: str) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedToolCall("refund", {"amount": amount}, id=call_id)])


@pytest.fixture
def store(shared_spec: StoreSpec) -> Iterator[SessionStore]:
    opened = open_store(shared_spec)
    yield opened
    close_store(opened)


def test_a_refused_tool_call_is_an_error_result_and_the_model_tries_something_else(
    store: SessionStore,
) -> None:
    agent, ledger, model = refund_agent(
        deciding("tool.before", _cap, name="refund_cap"),
        script=[_refund(500, "t1"), _refund(200, "t2"), "I refunded 200."],
        store=store,
        session_id=SESSION,
    )
    result = agent("Refund my 500 order")

    assert result.stop_reason == "end_turn"
    assert ledger.payouts == [200]  # the refused call never ran; the model's next one did
    [refused] = model.requests[1].messages[-1]["content"]
    assert refused == {
        "toolResult": {
            "toolUseId": "t1",
            "status": "error",
            "content": [{"text": _refused(CAP, "refund_cap")}],
        }
    }
    assert [(d.hook, d.outcome, d.reason) for d in result.decisions] == [
        ("tool.before", "guide", CAP),
        ("tool.before", "continue", None),
    ]
    assert result.halt is None
    history = agent.messages
    assert_valid_converse(history, for_request=False)
    assert history[2]["content"] == [refused]  # the history keeps what the model read

    # A worker that loads the session sees the same history, and goes on from it.
    again, _, next_model = refund_agent(
        deciding("tool.before", _cap, name="refund_cap"),
        script=["Anything else?"],
        store=store,
        session_id=SESSION,
    )
    assert again.messages == history
    assert again("thanks").stop_reason == "end_turn"
    [request] = next_model.requests
    assert request.messages[:-1] == history
    assert_valid_converse(request.messages)


def test_a_refused_call_leaves_the_other_calls_of_its_round_running() -> None:
    agent, ledger, model = refund_agent(
        deciding("tool.before", _cap, name="refund_cap"),
        script=[
            ScriptedTurn(
                tool_calls=[
                    ScriptedToolCall("refund", {"amount": 900}, id="big"),
                    ScriptedToolCall("refund", {"amount": 40}, id="small"),
                ]
            ),
            "Refunded 40; the rest needs a manager.",
        ],
    )
    result = agent("Refund both orders")

    assert result.stop_reason == "end_turn"
    assert ledger.payouts == [40]
    results = {
        block["toolResult"]["toolUseId"]: block["toolResult"]
        for block in model.requests[1].messages[-1]["content"]
    }
    assert results["big"]["status"] == "error"
    assert results["big"]["content"] == [{"text": _refused(CAP, "refund_cap")}]
    assert results["small"]["status"] == "success"
    assert_valid_converse(agent.messages, for_request=False)


def test_a_refused_answer_is_asked_again_with_the_feedback_in_the_request_only(
    store: SessionStore,
) -> None:
    agent, _, model = refund_agent(
        deciding("model.response", _plain, name="plain_answers"),
        script=['{"refund": 50}', "Your refund of 50 is on its way."],
        store=store,
        session_id=SESSION,
    )
    result = agent("Where is my refund?")

    assert result.stop_reason == "end_turn"
    assert result.message["content"] == [{"text": "Your refund of 50 is on its way."}]
    first, second = model.requests
    assert first.messages == [{"role": "user", "content": [{"text": "Where is my refund?"}]}]
    # The same user turn, with the feedback after what the user wrote.
    assert second.messages == [
        {
            "role": "user",
            "content": [
                {"text": "Where is my refund?"},
                {"text": _asked_again(PLAIN, "plain_answers")},
            ],
        }
    ]
    assert_valid_converse(second.messages)
    assert [(d.outcome, d.attempt) for d in result.decisions] == [("guide", 1), ("continue", 2)]
    # The history keeps neither the refused answer nor what was said of it.
    history = agent.messages
    assert history == [first.messages[0], result.message]
    reloaded, _, _ = refund_agent(script=[], store=store, session_id=SESSION)
    assert reloaded.messages == history


def test_feedback_follows_the_tool_results_and_ends_when_an_answer_is_accepted() -> None:
    attempts: list[int] = []

    def plain(event: ModelResponseEvent, env: PolicyEnv) -> Guide | None:
        text = "".join(block.get("text", "") for block in event.message["content"])
        if not text.startswith("{"):
            return None
        attempts.append(env.attempt)
        return Guide(f"{PLAIN} (attempt {env.attempt})")

    agent, ledger, model = refund_agent(
        deciding("model.response", plain, name="plain_answers"),
        script=[
            _refund(50, "t1"),
            "{}",
            '{"done": true}',
            "Done: 50 refunded.",
            _refund(5, "t2"),
            "Done: 5 more.",
        ],
    )
    result = agent("Refund 50")

    assert result.stop_reason == "end_turn"
    assert ledger.payouts == [50]
    assert attempts == [1, 2]
    told = [_asked_again(f"{PLAIN} (attempt {n})", "plain_answers") for n in (1, 2)]
    tool_turn = model.requests[1].messages[-1]
    assert [list(block) for block in tool_turn["content"]] == [["toolResult"]]
    # Each later attempt carries all the feedback given for this model call, in order,
    # after the tool result in the same user turn.
    assert model.requests[2].messages[-1]["content"] == [*tool_turn["content"], {"text": told[0]}]
    assert model.requests[3].messages[-1]["content"] == [*tool_turn["content"], *map(_text, told)]
    assert_valid_converse(model.requests[3].messages)
    assert len(agent.messages) == 4
    assert agent.messages[2] == tool_turn
    # The accepted answer ends the call's feedback: the next turn's request has none.
    agent("And 5 more")
    last = model.requests[4].messages
    assert last[:-1] == agent.messages[:4]
    assert all(text not in str(last) for text in told)


def _text(text: str) -> dict[str, str]:
    return {"text": text}


def test_a_guided_stream_chunk_redoes_the_call_and_the_caller_sees_the_new_attempt() -> None:
    seen: list[str] = []

    def no_json(event: Any, env: PolicyEnv) -> Guide | None:
        delta = event.chunk.get("contentBlockDelta", {}).get("delta", {})
        text = delta.get("text", "")
        seen.append(text)
        return Guide(PLAIN) if text.startswith("{") else None

    agent, _, model = refund_agent(
        deciding("stream.chunk", no_json, name="plain_answers"),
        script=['{"refund": 50}', "It is on its way."],
    )
    result = agent("Where is my refund?")

    assert result.stop_reason == "end_turn"
    assert result.message["content"] == [{"text": "It is on its way."}]
    assert model.requests[1].messages[-1]["content"][-1] == _text(
        _asked_again(PLAIN, "plain_answers")
    )
    assert agent.messages == [model.requests[0].messages[0], result.message]


def test_a_response_cache_never_serves_the_refused_response_to_the_guided_request() -> None:
    # The first agent's run fills the cache with the JSON answer; the second agent asks the
    # same question, gets it from the cache, guides it, and the guided request (another
    # key) goes to the model.
    cache = ResponseCache(MemoryCache(max_entries=10))
    model = ScriptedModel(['{"refund": 50}', "It is on its way."])
    first = Agent(model)
    first.add_middleware(InvokeModelStage, cache)
    assert first("Where is my refund?").text == '{"refund": 50}'

    agent = Agent(model, policy=PolicyEngine([deciding("model.response", _plain)]))
    agent.add_middleware(InvokeModelStage, cache)
    result = agent("Where is my refund?")

    assert result.text == "It is on its way."
    assert cache.hits == 1
    assert len(model.requests) == 2
    assert model.requests[1].messages[-1]["content"][-1] == _text(_asked_again(PLAIN))


def test_guide_past_the_retry_budget_blocks_and_names_the_budget() -> None:
    agent, ledger, model = refund_agent(
        deciding("model.response", lambda event, env: Guide(PLAIN), name="plain_answers"),
        script=['{"a": 1}', '{"a": 2}', '{"a": 3}'],
        retry_budgets={"model.response": 1},
    )
    result = agent("refund")

    assert result.stop_reason == "blocked"
    assert result.halt is not None
    assert result.halt.reason == (
        f"retry budget of 1 at model.response spent; the last guide said: {PLAIN}"
    )
    assert len(model.requests) == 2
    assert [(d.outcome, d.attempt) for d in result.decisions] == [("guide", 1), ("guide", 2)]
    assert ledger.payouts == []
    assert_valid_converse(agent.messages, for_request=False)
    assert all(PLAIN not in str(message) for message in agent.messages)


def test_retry_and_guide_share_the_budget_and_only_guide_speaks_to_the_model() -> None:
    outcomes: list[Outcome] = [Retry("malformed"), Guide(PLAIN), Guide("still JSON")]
    agent, _, model = refund_agent(
        deciding("model.response", lambda event, env: outcomes[env.attempt - 1]),
        script=['{"a": 1}', '{"a": 2}', '{"a": 3}'],
    )
    result = agent("refund")

    assert result.stop_reason == "blocked"
    assert result.halt is not None
    assert result.halt.reason.startswith("retry budget of 2 at model.response spent")
    assert [d.outcome for d in result.decisions] == ["retry", "guide", "guide"]
    assert [len(request.messages[-1]["content"]) for request in model.requests] == [1, 1, 2]


def test_a_guided_answer_then_an_approval_resumes_with_a_clean_history(
    store: SessionStore,
) -> None:
    def approve_refunds(event: ToolCallEvent, env: PolicyEnv) -> Suspend:
        return Suspend("approve the refund?")

    entries = (
        deciding("model.response", _plain, name="plain_answers"),
        deciding("tool.before", approve_refunds, name="gate"),
    )
    agent, ledger, model = refund_agent(
        *entries,
        script=['{"refund": 50}', _refund(50, "t1"), "Refunded 50."],
        store=store,
        session_id=SESSION,
    )
    [interrupt] = agent("Refund 50").interrupts
    assert interrupt.id.startswith("v2:policy:tool.before:gate:t1#")

    # Another worker answers: the session holds no trace of the feedback.
    worker, _, _ = refund_agent(
        *entries, script=["Refunded 50."], ledger=ledger, store=store, session_id=SESSION
    )
    assert all(PLAIN not in str(message) for message in worker.messages)
    resumed = worker(answer(interrupt.id, by="dana"))
    assert resumed.stop_reason == "end_turn"
    assert ledger.payouts == [50]
    assert len(model.requests) == 2
    assert_valid_converse(worker.messages, for_request=False)


def test_a_refused_call_beside_a_suspended_one_is_not_decided_again_on_the_resume(
    store: SessionStore,
) -> None:
    def cap_or_ask(event: ToolCallEvent, env: PolicyEnv) -> Outcome | None:
        amount = event.input.get("amount", 0) if isinstance(event.input, dict) else 0
        if amount > 200:
            return Guide(CAP)
        return Suspend("approve the refund?") if amount > 100 else None

    script: list[Any] = [
        ScriptedTurn(
            tool_calls=[
                ScriptedToolCall("refund", {"amount": 500}, id="big"),
                ScriptedToolCall("refund", {"amount": 150}, id="mid"),
            ]
        ),
        "Refunded 150; the rest needs a manager.",
    ]
    agent, ledger, _ = refund_agent(
        deciding("tool.before", cap_or_ask), script=script, store=store, session_id=SESSION
    )
    first = agent("Refund both")
    [interrupt] = first.interrupts
    assert [(d.outcome, d.reason) for d in first.decisions] == [
        ("guide", CAP),
        ("suspend", "approve the refund?"),
    ]
    assert ledger.payouts == []

    # Another worker resumes: the refused call keeps its result, the approved one runs.
    worker, _, model = refund_agent(
        deciding("tool.before", cap_or_ask),
        script=script[1:],
        ledger=ledger,
        store=store,
        session_id=SESSION,
    )
    resumed = worker(answer(interrupt.id, by="dana"))
    assert resumed.stop_reason == "end_turn"
    assert ledger.payouts == [150]
    assert [d.outcome for d in resumed.decisions] == ["continue"]  # the approval, for "mid"
    [request] = model.requests
    results = {
        block["toolResult"]["toolUseId"]: block["toolResult"]
        for block in request.messages[-1]["content"]
    }
    assert results["big"]["content"] == [{"text": _refused(CAP)}]
    assert results["big"]["status"] == "error"
    assert results["mid"]["status"] == "success"
    assert_valid_converse(worker.messages, for_request=False)


def test_an_approval_of_the_request_that_carries_the_feedback_holds_on_the_resume() -> None:
    # Every request waits for a person; the first answer is guided. The resume redoes the
    # model call from its first attempt: each request, as approved, is released by its own
    # answer, and the guided request is sent with its feedback; nobody is asked a third time.
    agent, _, model = refund_agent(
        deciding("model.request", lambda event, env: Suspend("send it?"), name="gate"),
        deciding("model.response", _plain, name="plain_answers"),
        script=['{"refund": 50}', '{"refund": 50}', "It is on its way."],
    )

    def approve(result: Any) -> Any:
        [interrupt] = result.interrupts
        return agent(answer(interrupt.id, by="dana"))

    plain_request = approve(agent("Where is my refund?"))
    assert plain_request.stop_reason == "interrupt"
    [asked] = plain_request.interrupts
    # The approver is shown the request the model will get: the feedback at its end.
    shown = asked.reason["step"]["messages"][-1]["content"]
    assert shown[-1] == {"text": _asked_again(PLAIN, "plain_answers")}

    done = approve(plain_request)
    assert done.stop_reason == "end_turn"
    assert [(d.hook, d.outcome) for d in done.decisions] == [
        ("model.request", "continue"),
        ("model.response", "guide"),
        ("model.request", "continue"),
        ("model.response", "continue"),
    ]
    assert model.requests[-1].messages[-1]["content"][-1] == shown[-1]
    assert agent.messages == [model.requests[0].messages[0], done.message]


@pytest.mark.parametrize("feedback", ["", "   ", None, 3])
def test_guide_needs_feedback(feedback: Any) -> None:
    with pytest.raises(ValueError, match="Guide needs feedback for the model"):
        Guide(feedback)


@pytest.mark.parametrize("point", ["tool.after", "output.final", "model.request"])
def test_guide_where_the_table_refuses_it_blocks_a_fail_closed_middleware(point: str) -> None:
    agent, ledger, _ = refund_agent(deciding(point, lambda event, env: Guide(PLAIN)))
    result = agent("refund")

    assert result.stop_reason == "blocked"
    assert result.halt is not None
    assert f"returned Guide, which {point} does not allow" in result.halt.reason
    [decision] = [d for d in result.decisions if d.hook == point]
    assert decision.outcome == "block"
    assert decision.error is not None
    assert_valid_converse(agent.messages, for_request=False)
    if point == "model.request":
        assert ledger.payouts == []


@pytest.mark.anyio
async def test_a_refused_call_is_a_guide_decision_span_and_an_event_not_an_error() -> None:
    recorder = Recorder.start()
    ledger = Ledger()
    agent = Agent(
        ScriptedModel([_refund(500, "t1"), "Only a manager can do that."]),
        tools=[ledger.tool],
        policy=PolicyEngine([deciding("tool.before", _cap, name="refund_cap")]),
        tracer_provider=recorder.provider,
    )

    result = await agent.invoke_async("refund 500")

    assert result.stop_reason == "end_turn"
    tree = recorder.tree()
    decision = tree.one("policy tool.before")
    assert attributes(decision)["stageware.policy.outcome"] == "guide"
    assert attributes(decision)["stageware.policy.reason"] == CAP
    assert not is_error(decision)
    handler = tree.parent_of(decision)
    assert [event.name for event in handler.events] == ["refused"]
    assert not is_error(handler)
    assert attributes(tree.parent_of(handler))["stageware.tool.status"] == "error"


@pytest.mark.anyio
async def test_a_guided_model_call_is_a_retry_event_with_the_feedback() -> None:
    recorder = Recorder.start()
    agent = Agent(
        ScriptedModel(['{"a": 1}', "Fine."]),
        policy=PolicyEngine([deciding("model.response", _plain, name="plain_answers")]),
        tracer_provider=recorder.provider,
    )

    assert (await agent.invoke_async("hi")).stop_reason == "end_turn"
    tree = recorder.tree()
    guided, accepted = tree.named("policy model.response")
    assert attributes(guided)["stageware.policy.outcome"] == "guide"
    assert attributes(accepted)["stageware.policy.outcome"] == "continue"
    handler = tree.parent_of(guided)
    [event] = handler.events
    assert event.name == "retry"
    assert dict(event.attributes or {}) == {
        "stageware.reason": PLAIN,
        "stageware.feedback": _asked_again(PLAIN, "plain_answers"),
    }
    assert not is_error(handler)


@middleware(hooks=["tool.before"], fail_mode="closed", timeout="1s")
async def refund_cap(event: ToolCallEvent, env: PolicyEnv) -> Guide | None:
    return _cap(event, env)


@middleware(hooks=["tool.after"], fail_mode="closed")
async def guides_after_the_tool(event: Any, env: PolicyEnv) -> Outcome:
    return Guide("that result was not for you")


def test_the_conformance_suite_passes_a_guide_and_refuses_one_out_of_place() -> None:
    assert check_middleware(refund_cap) == []
    [failure] = check_middleware(guides_after_the_tool)
    assert (failure.hook, failure.check) == (HookPoint.TOOL_AFTER, Check.OUTCOME)
    assert failure.message == (
        "returned Guide, which tool.after does not allow "
        "(allowed there: Continue, Block, Escalate, Retry)"
    )
