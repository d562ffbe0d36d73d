"""Random conversations for the conversation managers' property tests, and what to check.

``histories()`` draws conversations that the host's own rules accept (the checker is
``tests/host/converse_history.py``): user turns of text and images, assistant turns of
reasoning, text and 1-3 tool calls, each answered by the next user turn's results. Each
ends as a model request does: on a fresh prompt or on a round of tool results.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from stageware import (
    Agent,
    ContentBlock,
    InvokeModelContext,
    Message,
    Messages,
    ScriptedModel,
    estimate_tokens,
)

_TEXT = st.text(alphabet="abcdefghij klmnopqrstuvwxyz.", min_size=1, max_size=400)
_IMAGE: ContentBlock = {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}}


@st.composite
def _user_prompt(draw: st.DrawFn) -> Message:
    content: list[ContentBlock] = [{"text": draw(_TEXT)}]
    if draw(st.integers(0, 9)) == 0:
        content.append(_IMAGE)
    return {"role": "user", "content": content}


@st.composite
def _tool_round(draw: st.DrawFn, number: int) -> tuple[Message, Message]:
    calls = draw(st.integers(1, 3))
    ids = [f"t{number}_{index}" for index in range(calls)]
    content: list[ContentBlock] = []
    if draw(st.booleans()):
        content.append({"reasoningContent": {"reasoningText": {"text": draw(_TEXT)}}})
    if draw(st.booleans()):
        content.append({"text": draw(_TEXT)})
    content.extend(
        {"toolUse": {"toolUseId": tool_id, "name": "lookup", "input": {"q": draw(_TEXT)}}}
        for tool_id in ids
    )
    results: list[ContentBlock] = [
        {
            "toolResult": {
                "toolUseId": tool_id,
                "status": "success",
                "content": [{"text": draw(_TEXT) * draw(st.integers(1, 8))}],
            }
        }
        for tool_id in ids
    ]
    return {"role": "assistant", "content": content}, {"role": "user", "content": results}


@st.composite
def histories(draw: st.DrawFn) -> Messages:
    """A valid conversation ending on a user turn, as a model request's messages do."""
    messages: Messages = []
    number = 0
    for _ in range(draw(st.integers(1, 12))):
        messages.append(draw(_user_prompt()))
        for _ in range(draw(st.integers(0, 3))):
            number += 1
            messages.extend(draw(_tool_round(number)))
        messages.append({"role": "assistant", "content": [{"text": draw(_TEXT)}]})
    if draw(st.booleans()):
        messages.append(draw(_user_prompt()))
    else:
        # End mid-run: the last exchange's answer replaced by a round the model reads next.
        messages.pop()
        number += 1
        messages.extend(draw(_tool_round(number)))
    return messages


def current_turn_start(messages: Messages) -> int:
    """Where the current turn starts: the last user message without tool results."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message["role"] == "user" and not any("toolResult" in b for b in message["content"]):
            return index
    return 0


def context_for(
    messages: Messages, *, agent: Agent | None = None, system_prompt: str | None = None
) -> InvokeModelContext:
    """An InvokeModel context as the host builds it for *messages*."""
    model = ScriptedModel([])
    return InvokeModelContext(
        agent=agent if agent is not None else Agent(model),
        messages=messages,
        system_prompt=system_prompt,
        tool_specs=[],
        tool_choice=None,
        invocation_state={},
        model=model,
    )


def request_tokens(context: InvokeModelContext) -> int:
    """The estimate of the request *context* describes."""
    return estimate_tokens(
        context.messages, system_prompt=context.system_prompt, tool_specs=context.tool_specs
    )


def per_message_tokens(messages: Messages) -> int:
    """The managers' own count: each message's estimate, summed."""
    return sum(estimate_tokens((message,)) for message in messages)


def text_of(message: Message) -> str:
    """All text blocks of *message*, joined."""
    return " ".join(block["text"] for block in message["content"] if "text" in block)


def as_any(value: object) -> Any:
    """*value* typed as Any, for the one place a test passes a wrong type on purpose."""
    return value
