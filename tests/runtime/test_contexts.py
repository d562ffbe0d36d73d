"""Generated contexts: typed replace(), copy rules when a host builds them, read-only fields."""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio
import pytest

from stageware import (
    AgentStreamContext,
    ExecuteToolContext,
    InvokeModelContext,
    Message,
    ToolUse,
)


class _Agent:
    name = "tester"
    agent_id = "tester"


class _Model:
    def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> Any:
        raise NotImplementedError


def _invoke_model_context() -> tuple[InvokeModelContext, dict[str, Any]]:
    source: dict[str, Any] = {
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "system_prompt": [{"text": "Be kind."}],
        "tool_specs": [{"name": "t", "description": "d", "inputSchema": {"json": {}}}],
        "tool_choice": {"auto": {}},
        "invocation_state": {"request": 1},
    }
    context = InvokeModelContext.from_host(agent=_Agent(), model=_Model(), **source)
    return context, source


def test_from_host_deep_copies_collections_and_shares_references() -> None:
    context, source = _invoke_model_context()

    for name in ("messages", "system_prompt", "tool_specs", "tool_choice"):
        assert getattr(context, name) == source[name]
        assert getattr(context, name) is not source[name], name
    context.messages[0]["content"][0]["text"] = "changed"
    assert source["messages"][0]["content"][0]["text"] == "hi"  # deep: nested dicts copied too
    assert context.invocation_state is source["invocation_state"]  # shared by reference


def test_tool_use_is_a_shallow_copy_whose_input_is_shared() -> None:
    tool_input = {"query": "x"}
    tool_use: ToolUse = {"toolUseId": "t1", "name": "search", "input": tool_input}
    context = ExecuteToolContext.from_host(
        agent=_Agent(),
        tool=None,
        tool_use=tool_use,
        invocation_state={},
        cancel_signal=anyio.Event(),
    )

    assert context.tool_use == tool_use
    assert context.tool_use is not tool_use
    assert context.tool_use["input"] is tool_input


def test_agent_stream_messages_are_deep_copies_and_replaceable() -> None:
    messages: list[Message] = [{"role": "user", "content": [{"text": "hi"}]}]
    context = AgentStreamContext.from_host(agent=_Agent(), messages=messages, invocation_state={})

    assert context.messages == messages
    assert context.messages is not messages
    assert context.messages[0] is not messages[0]
    replacement: list[Message] = [{"role": "user", "content": [{"text": "bye"}]}]
    assert context.replace(messages=replacement).messages is replacement


def test_replace_keeps_omitted_fields_as_the_same_objects() -> None:
    context, _ = _invoke_model_context()

    replaced = context.replace(system_prompt="Be brief.")

    assert replaced.system_prompt == "Be brief."
    assert context.system_prompt == [{"text": "Be kind."}]
    for field in dataclasses.fields(context):
        if field.name != "system_prompt":
            assert getattr(replaced, field.name) is getattr(context, field.name), field.name


def test_an_explicit_none_is_a_replacement() -> None:
    context, _ = _invoke_model_context()

    assert context.replace(tool_choice=None).tool_choice is None
    assert context.replace(system_prompt=None).system_prompt is None
    assert context.replace().tool_choice == {"auto": {}}


def test_defaults_apply_when_a_host_omits_optional_fields() -> None:
    context, _ = _invoke_model_context()

    assert context.projected_input_tokens is None
    assert context.dynamic_trailing_blocks == 0


def test_non_replaceable_fields_are_not_replace_parameters() -> None:
    context, _ = _invoke_model_context()
    tool = ExecuteToolContext.from_host(
        agent=_Agent(),
        tool=None,
        tool_use={"toolUseId": "t", "name": "n", "input": {}},
        invocation_state={},
        cancel_signal=anyio.Event(),
    )
    stream = AgentStreamContext.from_host(agent=_Agent(), messages=[], invocation_state={})
    replace: Any = context.replace

    with pytest.raises(TypeError, match="agent"):
        replace(agent=_Agent())
    with pytest.raises(TypeError, match="cancel_signal"):
        tool.replace(cancel_signal=anyio.Event())  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="agent"):
        stream.replace(agent=_Agent())  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        replace([])  # keyword-only


def test_contexts_are_read_only() -> None:
    context, _ = _invoke_model_context()

    with pytest.raises(dataclasses.FrozenInstanceError):
        context.system_prompt = "x"  # type: ignore[misc]


def test_model_state_is_excluded_from_the_context() -> None:
    context, _ = _invoke_model_context()

    assert "model_state" not in {field.name for field in dataclasses.fields(context)}
    assert "model_state" in (InvokeModelContext.__doc__ or "")
