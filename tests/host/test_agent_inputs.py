"""What callers pass in: prompts, resumes and hook registrations, and the errors for mistakes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from stageware import (
    Agent,
    AgentStreamStage,
    BeforeModelCallEvent,
    LifecycleEvent,
    MemorySessionStore,
    Message,
    MessageAddedEvent,
    Messages,
    ScriptedModel,
    StreamEvent,
    ToolContext,
    ToolSpec,
    tool,
)
from stageware._host.models._openai_convert import convert_messages

from .agent_helpers import answer, calls, seed_session

pytestmark = pytest.mark.anyio


@tool
async def confirm(context: ToolContext) -> str:
    """Ask a human to confirm."""
    return str(context.interrupt("confirm", reason="ok?"))


async def test_a_resume_may_be_a_tuple() -> None:
    agent = Agent(ScriptedModel([calls(("confirm", {}, "t1")), "done"]), tools=[confirm])
    first = await agent.invoke_async("go")

    done = await agent.invoke_async(tuple(answer((first.interrupts[0].id, "yes"))))

    assert done.text == "done"


async def test_interrupt_responses_when_nothing_waits_are_refused_not_sent_to_the_model() -> None:
    model = ScriptedModel(["unused"])
    agent = Agent(model)

    with pytest.raises(RuntimeError, match="not waiting"):
        await agent.invoke_async(tuple(answer(("v1:tool_call:x:y", "yes"))))

    assert model.requests == []
    assert agent.messages == []


async def test_an_unknown_content_block_names_where_it_is() -> None:
    agent = Agent(ScriptedModel(["unused"]))

    with pytest.raises(TypeError, match=r"prompt\[0\]\['content'\]\[1\].*got \['txt'\]"):
        await agent.invoke_async([{"role": "user", "content": [{"text": "hi"}, {"txt": "typo"}]}])
    with pytest.raises(TypeError, match=r"prompt\[0\] must be a content block"):
        await agent.invoke_async([{"text": "hi", "image": "both"}])


async def test_an_unknown_interrupt_id_reads_as_a_sentence() -> None:
    agent = Agent(ScriptedModel([calls(("confirm", {}, "t1"))]), tools=[confirm])
    await agent.invoke_async("go")

    with pytest.raises(KeyError) as raised:
        await agent.invoke_async(answer(("v1:tool_call:t1:nope", "yes")))

    assert str(raised.value).startswith("no interrupt with id 'v1:tool_call:t1:nope'")


async def test_a_hook_on_a_base_class_hears_every_event_in_registration_order() -> None:
    heard: list[str] = []
    agent = Agent(ScriptedModel(["hi"]))
    agent.add_hook(lambda e: heard.append(f"model:{type(e).__name__}"), BeforeModelCallEvent)
    agent.add_hook(lambda e: heard.append(f"any:{type(e).__name__}"), LifecycleEvent)
    agent.add_hook(lambda e: heard.append(f"message:{type(e).__name__}"), MessageAddedEvent)

    await agent.invoke_async("hello")

    assert heard == [
        "any:BeforeInvocationEvent",
        "any:MessageAddedEvent",
        "message:MessageAddedEvent",
        "model:BeforeModelCallEvent",
        "any:BeforeModelCallEvent",
        "any:AfterModelCallEvent",
        "any:MessageAddedEvent",
        "message:MessageAddedEvent",
        "any:AfterInvocationEvent",
    ]


def test_constructor_messages_and_state_survive_an_empty_stored_session() -> None:
    store = MemorySessionStore()
    seed_session(
        store,
        "s",
        {
            "version": 1,
            "messages": [],
            "state": {},
            "model_state": {},
            "interrupt_state": {
                "activated": False,
                "interrupts": [],
                "pending_tool_execution": None,
            },
        },
    )
    given: list[Message] = [{"role": "user", "content": [{"text": "earlier"}]}]

    agent = Agent(
        ScriptedModel([]),
        messages=given,
        state={"plan": "pro"},
        session_store=store,
        session_id="s",
    )

    assert agent.messages == given
    assert agent.state == {"plan": "pro"}


def test_an_error_result_reaches_chat_completions_with_one_error_prefix() -> None:
    converted = convert_messages(
        [
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "t1",
                            "status": "error",
                            "content": [{"text": "Error: boom"}],
                        }
                    }
                ],
            }
        ]
    )

    assert converted == [{"role": "tool", "tool_call_id": "t1", "content": "Error: boom"}]


def test_a_model_that_is_not_a_model_is_refused_at_construction() -> None:
    with pytest.raises(TypeError, match="model must be a Model"):
        Agent("gpt-4o-mini")  # type: ignore[arg-type]


async def test_a_tuple_of_strings_is_explained() -> None:
    agent = Agent(ScriptedModel(["unused"]))

    with pytest.raises(TypeError, match=r"prompt\[0\] is a str"):
        await agent.invoke_async(("hi",))  # type: ignore[arg-type]


async def test_a_cancel_from_the_before_model_hook_sends_no_request() -> None:
    model = ScriptedModel(["never sent"])
    agent = Agent(model)
    agent.add_hook(lambda event: agent.cancel(), BeforeModelCallEvent)

    result = await agent.invoke_async("hello")

    assert result.stop_reason == "cancelled"
    assert model.requests == []
    assert model.remaining == 1


async def test_the_model_receives_the_invocation_state_an_agent_stream_handler_set() -> None:
    seen: list[object] = []
    inner = ScriptedModel(["ok"])

    class StateReadingModel:
        def stream(
            self,
            messages: Messages,
            tool_specs: list[ToolSpec] | None = None,
            system_prompt: str | None = None,
            **kwargs: Any,
        ) -> AsyncIterator[StreamEvent]:
            seen.append(kwargs["invocation_state"])
            return inner.stream(messages, tool_specs, system_prompt)

    agent = Agent(StateReadingModel())
    agent.add_middleware(
        AgentStreamStage.Input, lambda c: c.replace(invocation_state={"tenant": "acme"})
    )

    await agent.invoke_async("hello", invocation_state={"tenant": "other"})

    assert seen == [{"tenant": "acme"}]
