"""InvokeModel's messages are deep copies wherever a handler can see them.

The spec's rule is that a handler cannot change the agent's history by mutating the
context's messages; what it does to them still reaches the model. Each test here takes one
route a handler could use to get hold of a message and mutates what it got. The model
records the very list and message objects it was handed, so the tests also show where
nothing is copied: with no Input or Wrap handler, the model gets the agent's own list, as
in Strands. The copies are kept from one model call to the next while they still equal
the history (``HistoryCopies``); the last tests show that a changed copy is not reused.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from stageware import (
    Agent,
    ContentBlock,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelResult,
    InvokeModelStage,
    Message,
    Messages,
    StreamEvent,
)

from .agent_helpers import texts

pytestmark = pytest.mark.anyio

MARK = "handler was here"


def mark() -> ContentBlock:
    return {"text": MARK}


class RecordingModel:
    """Answers "ok" and keeps the objects it was given, not copies of them."""

    def __init__(self) -> None:
        self.received: list[Messages] = []

    def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        self.received.append(messages)
        return self._events()

    async def _events(self) -> AsyncIterator[StreamEvent]:
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockDelta": {"delta": {"text": "ok"}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


def conversation() -> Messages:
    """A history with a tool round, so that nested dicts and lists are in it."""
    return [
        {"role": "user", "content": [{"text": "Look it up."}]},
        {
            "role": "assistant",
            "content": [
                {"toolUse": {"toolUseId": "t1", "name": "lookup", "input": {"query": "q"}}}
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "t1",
                        "status": "success",
                        "content": [{"json": {"found": ["a", "b"]}}],
                    }
                }
            ],
        },
        {"role": "assistant", "content": [{"text": "Found a and b."}]},
    ]


def agent_with_history() -> tuple[Agent, RecordingModel, Messages, Messages]:
    """The agent, its model, its history's message objects, and a deep snapshot of them."""
    model = RecordingModel()
    agent = Agent(model)
    agent.messages = conversation()
    originals = list(agent.messages)
    return agent, model, originals, copy.deepcopy(originals)


def assert_history_untouched(agent: Agent, originals: Messages, snapshot: Messages) -> None:
    """The history still holds the same message objects, unchanged, and then the run's two."""
    history = agent.messages
    assert len(history) == len(originals) + 2
    assert all(kept is original for kept, original in zip(history, originals, strict=False))
    assert history[: len(originals)] == snapshot
    assert texts(history[-2]) == ["go"]
    assert texts(history[-1]) == ["ok"]


def extended(plain: Messages, messages: Messages) -> Messages:
    plain.extend(messages)
    return plain


def slice_assigned(plain: Messages, messages: Messages) -> Messages:
    plain[:] = messages
    return plain


def mark_all(messages: Any) -> None:
    for message in messages:
        message["content"].append(mark())


def mark_nested(messages: Any) -> None:
    """Mutate deep inside: a tool's input and a tool result's JSON."""
    for message in messages:
        for block in message["content"]:
            if "toolUse" in block:
                block["toolUse"]["input"]["query"] = "changed"
            if "toolResult" in block:
                block["toolResult"]["content"][0]["json"]["found"].append("c")


# Each route gets hold of the context's messages in one way; the mutations it makes through
# what it got are, as with a deep copy of the whole list, the context's (so the model's).
ROUTES: dict[str, Callable[[Messages], Any]] = {
    "index": lambda messages: [messages[index] for index in range(len(messages))],
    "negative index": lambda messages: [messages[-index] for index in range(1, len(messages) + 1)],
    "iteration": lambda messages: [message for message in messages],  # noqa: C416 - the route
    "list()": list,
    "unpacking": lambda messages: [*messages],
    "slice": lambda messages: messages[:],
    "step slice": lambda messages: messages[::-1],
    "copy()": lambda messages: messages.copy(),
    "copy.copy": copy.copy,
    "reversed": lambda messages: list(reversed(messages)),
    "tuple()": tuple,
    "sorted": lambda messages: sorted(messages, key=lambda message: message["role"]),
    "enumerate": lambda messages: [message for _, message in enumerate(messages)],
    "plain + messages": lambda messages: [] + messages,  # noqa: RUF005
    "messages + plain": lambda messages: messages + [],  # noqa: RUF005
    "messages * 1": lambda messages: messages * 1,
    "1 * messages": lambda messages: 1 * messages,
    "sum": lambda messages: sum([messages], []),  # noqa: RUF017
    "extend a plain list": lambda messages: extended([], messages),
    "assign to a plain slice": lambda messages: slice_assigned([], messages),
}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("mutate", [mark_all, mark_nested])
async def test_a_mutation_reaches_the_model_but_never_the_history(
    route: str, mutate: Callable[[Any], None]
) -> None:
    agent, model, originals, snapshot = agent_with_history()

    def handler(context: InvokeModelContext) -> InvokeModelContext:
        mutate(ROUTES[route](context.messages))
        return context

    agent.add_middleware(InvokeModelStage.Input, handler)
    await agent.invoke_async("go")

    assert_history_untouched(agent, originals, snapshot)
    [sent] = model.received
    expected = copy.deepcopy([*snapshot, {"role": "user", "content": [{"text": "go"}]}])
    mutate(expected)
    assert sent == expected
    assert not any(message is original for message in sent for original in originals)


async def test_messages_validated_by_pydantic_in_a_handler_never_reach_the_history() -> None:
    import pydantic

    agent, _model, originals, snapshot = agent_with_history()
    adapter = pydantic.TypeAdapter(list[dict[str, Any]])

    def handler(context: InvokeModelContext) -> InvokeModelContext:
        # As a handler that logs or forwards the request through a model of its own would.
        mark_all(adapter.validate_python(context.messages))
        return context

    agent.add_middleware(InvokeModelStage.Input, handler)
    await agent.invoke_async("go")

    assert_history_untouched(agent, originals, snapshot)


@pytest.mark.parametrize(
    "detach",
    [
        copy.deepcopy,
        lambda messages: pickle.loads(pickle.dumps(messages)),
    ],
    ids=["copy.deepcopy", "pickle"],
)
async def test_a_detached_copy_reaches_neither_the_model_nor_the_history(
    detach: Callable[[Messages], Messages],
) -> None:
    agent, model, originals, snapshot = agent_with_history()

    def handler(context: InvokeModelContext) -> InvokeModelContext:
        detached = detach(context.messages)
        assert type(detached) is list
        mark_all(detached)
        mark_nested(detached)
        return context

    agent.add_middleware(InvokeModelStage.Input, handler)
    await agent.invoke_async("go")

    assert_history_untouched(agent, originals, snapshot)
    [sent] = model.received
    assert sent[: len(originals)] == snapshot
    assert not any(message is original for message in sent for original in originals)


async def test_the_messages_a_handler_changed_reach_the_model_and_the_rest_unchanged() -> None:
    agent, model, originals, snapshot = agent_with_history()

    def handler(context: InvokeModelContext) -> InvokeModelContext:
        context.messages[-1]["content"].append(mark())  # the run's prompt
        context.messages[1]["content"][0]["toolUse"]["input"]["query"] = "changed"
        return context

    agent.add_middleware(InvokeModelStage.Input, handler)
    await agent.invoke_async("go")

    assert_history_untouched(agent, originals, snapshot)
    [sent] = model.received
    assert type(sent) is list
    assert [sent[0], sent[2], sent[3]] == [snapshot[0], snapshot[2], snapshot[3]]
    assert sent[1]["content"][0]["toolUse"]["input"] == {"query": "changed"}
    assert sent[-1]["content"] == [{"text": "go"}, mark()]


async def test_pop_append_insert_and_delete_reach_the_model_but_not_the_history() -> None:
    agent, model, originals, snapshot = agent_with_history()
    added: Message = {"role": "user", "content": [{"text": "added"}]}

    def handler(context: InvokeModelContext) -> InvokeModelContext:
        messages = context.messages
        prompt = messages.pop()
        prompt["content"].append(mark())
        del messages[0]
        messages.insert(0, {"role": "user", "content": [{"text": "inserted"}]})
        messages.append(prompt)
        messages.append(added)
        messages.sort(key=lambda message: message["role"] == "user")  # stable: moves none
        messages.reverse()
        messages.reverse()
        return context

    agent.add_middleware(InvokeModelStage.Input, handler)
    await agent.invoke_async("go")

    assert_history_untouched(agent, originals, snapshot)
    [sent] = model.received
    # Sorted: the assistant's two turns first, then the user's, each in their order.
    assert [texts(message) for message in sent] == [
        [],
        ["Found a and b."],
        ["inserted"],
        [],
        ["go", MARK],
        ["added"],
    ]
    # The handler's own message is the handler's object.
    assert sent[-1] is added


async def test_a_wrap_handler_replacing_the_messages_reaches_the_model() -> None:
    agent, model, originals, snapshot = agent_with_history()

    async def wrap(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        messages = context.messages
        messages[0]["content"][0]["text"] = "edited in place"
        shorter = [messages[0], *messages[-2:]]
        shorter[-1]["content"].append(mark())
        async for event in next_fn(context.replace(messages=shorter)):
            yield event

    agent.add_middleware(InvokeModelStage.Wrap, wrap)
    await agent.invoke_async("go")

    assert_history_untouched(agent, originals, snapshot)
    [sent] = model.received
    assert [texts(message) for message in sent] == [
        ["edited in place"],
        ["Found a and b."],
        ["go", MARK],
    ]
    assert sent[1] is not originals[3]
    assert sent[1] == snapshot[3]


async def test_an_input_handler_and_a_wrap_handler_share_one_copy() -> None:
    agent, model, originals, snapshot = agent_with_history()

    def first(context: InvokeModelContext) -> InvokeModelContext:
        context.messages[0]["content"].append(mark())
        return context

    seen: list[Message] = []

    async def second(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        seen.append(context.messages[0])
        async for event in next_fn(context):
            yield event

    agent.add_middleware(InvokeModelStage.Input, first)
    agent.add_middleware(InvokeModelStage.Wrap, second)
    await agent.invoke_async("go")

    assert_history_untouched(agent, originals, snapshot)
    [sent] = model.received
    assert texts(seen[0]) == ["Look it up.", MARK]
    assert sent[0] is seen[0]


async def test_without_a_handler_the_model_gets_the_agents_own_messages() -> None:
    agent, model, originals, snapshot = agent_with_history()

    await agent.invoke_async("go")

    assert_history_untouched(agent, originals, snapshot)
    [sent] = model.received
    # The agent's own list, as in Strands: it has the answer appended by now.
    assert sent is agent.messages


async def test_with_only_an_output_handler_the_model_gets_the_agents_own_messages() -> None:
    agent, model, originals, snapshot = agent_with_history()
    outputs: list[InvokeModelResult] = []

    def output(result: InvokeModelResult) -> InvokeModelResult:
        outputs.append(result)
        return result

    agent.add_middleware(InvokeModelStage.Output, output)
    await agent.invoke_async("go")

    assert_history_untouched(agent, originals, snapshot)
    [sent] = model.received
    assert type(sent) is list
    assert all(message is original for message, original in zip(sent, originals, strict=False))
    assert len(outputs) == 1


async def test_each_model_call_gets_a_fresh_copy() -> None:
    model = RecordingModel()
    agent = Agent(model)
    calls: list[Messages] = []

    def handler(context: InvokeModelContext) -> InvokeModelContext:
        calls.append(context.messages)
        context.messages[-1]["content"].append(mark())
        return context

    agent.add_middleware(InvokeModelStage.Input, handler)
    await agent.invoke_async("one")
    await agent.invoke_async("two")

    assert [texts(message) for message in agent.messages] == [["one"], ["ok"], ["two"], ["ok"]]
    assert [texts(message) for message in model.received[1]] == [
        ["one"],
        ["ok"],
        ["two", MARK],
    ]
    assert calls[0] is not calls[1]


async def test_copies_are_reused_while_they_equal_the_history_and_made_again_once_changed() -> None:
    model = RecordingModel()
    agent = Agent(model)
    agent.messages = conversation()
    seen: list[Messages] = []
    change = True

    def handler(context: InvokeModelContext) -> InvokeModelContext:
        seen.append(context.messages)
        if change:
            context.messages[2]["content"][0]["toolResult"]["status"] = "error"
        return context

    agent.add_middleware(InvokeModelStage.Input, handler)
    await agent.invoke_async("one")
    change = False
    await agent.invoke_async("two")
    await agent.invoke_async("three")

    first, second, third = seen
    # The copy changed in the first call was made again; the others were handed out again.
    assert second[2] is not first[2]
    assert second[2] == agent.messages[2]
    assert second[0] is first[0]
    # Unchanged since: every copy the second call had is the third's too, and none is the
    # agent's own.
    assert all(a is b for a, b in zip(second, third, strict=False))
    assert not any(copied is message for copied in third for message in agent.messages)
    assert third == agent.messages[:-1]


async def test_a_history_replaced_between_calls_is_copied_afresh() -> None:
    model = RecordingModel()
    agent = Agent(model)
    agent.messages = conversation()
    seen: list[Messages] = []

    def handler(context: InvokeModelContext) -> InvokeModelContext:
        seen.append(context.messages)
        return context

    agent.add_middleware(InvokeModelStage.Input, handler)
    await agent.invoke_async("one")
    agent.messages = [
        {"role": "user", "content": [{"text": "fresh start"}]},
        {"role": "assistant", "content": [{"text": "ok"}]},
    ]
    await agent.invoke_async("two")

    assert [texts(message) for message in seen[1]] == [["fresh start"], ["ok"], ["two"]]
    assert not any(copied is message for copied in seen[1] for message in agent.messages)
