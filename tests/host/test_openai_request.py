"""The request ``OpenAIModel`` posts is byte for byte the one ``chat.completions.create`` sends.

The adapter encodes the body itself (``_openai_request``) instead of letting ``openai``
transform the whole history on every call; these tests send the same request both ways
to the fake server and compare what arrived.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import openai
import pytest

from stageware._generated.payloads import Messages, ToolSpec
from stageware._host.models._openai_convert import (
    convert_messages,
    convert_tool_choice,
    convert_tool_specs,
)
from stageware._host.models._openai_request import RequestEncoder
from stageware.openai import OpenAIModel

from .fake_openai_server import ErrorReply, FakeOpenAIServer, RecordedRequest, SSEReply, chunk

pytestmark = pytest.mark.anyio

CONVERSATION: Messages = [
    {"role": "user", "content": [{"text": "Weather in Zürich and Paris? «quickly»"}]},
    {
        "role": "assistant",
        "content": [
            {"text": "Looking."},
            {"toolUse": {"toolUseId": "c1", "name": "weather", "input": {"city": "Zürich"}}},
            {"toolUse": {"toolUseId": "c2", "name": "weather", "input": "{not json"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"toolResult": {"toolUseId": "c1", "status": "success", "content": [{"text": "4°C"}]}},
            {"toolResult": {"toolUseId": "c2", "status": "error", "content": [{"json": {"a": 1}}]}},
        ],
    },
]
SYSTEM = "You are terse."


def weather_spec(description: str = "The weather in a city.") -> ToolSpec:
    return {
        "name": "weather",
        "description": description,
        "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}},
    }


PARAMS: dict[str, Any] = {
    "temperature": 0.25,
    "max_completion_tokens": 64,
    "service_tier": "auto",
    "metadata": {"team": "ünïcode"},
    "stop": ["END"],
    "extra_headers": {"x-trace": "t1"},
    "extra_query": {"api-version": "2"},
    # One new field, one that replaces a field the params set.
    "extra_body": {"top_k": 5, "temperature": 0.5},
}


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer()
    fake.start()
    yield fake
    fake.close()


@pytest.fixture
async def client(server: FakeOpenAIServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=server.base_url, api_key="test", max_retries=0, timeout=30.0
    ) as client:
        yield client


def ok() -> SSEReply:
    return SSEReply([chunk({"content": "ok"}, "stop")])


async def through_the_model(
    server: FakeOpenAIServer, model: OpenAIModel, tool_specs: list[ToolSpec] | None, **kwargs: Any
) -> RecordedRequest:
    server.reply(ok())
    async for _ in model.stream(CONVERSATION, tool_specs, SYSTEM, **kwargs):
        pass
    return server.requests[-1]


async def through_create(
    server: FakeOpenAIServer,
    client: openai.AsyncOpenAI,
    tool_specs: list[ToolSpec] | None,
    params: dict[str, Any],
    **kwargs: Any,
) -> RecordedRequest:
    server.reply(ok())
    tool_choice = kwargs.get("tool_choice")
    stream = await client.chat.completions.create(
        model="test-model",
        messages=convert_messages(CONVERSATION, SYSTEM),
        stream=True,
        stream_options={"include_usage": True},
        tools=convert_tool_specs(tool_specs) if tool_specs else openai.omit,
        tool_choice=convert_tool_choice(tool_choice)
        if tool_specs and tool_choice is not None
        else openai.omit,
        **params,
    )
    async with stream:
        async for _ in stream:
            pass
    return server.requests[-1]


@pytest.mark.parametrize(
    ("params", "tool_specs", "kwargs"),
    [
        ({}, None, {}),
        ({}, [weather_spec()], {"tool_choice": {"tool": {"name": "weather"}}}),
        (PARAMS, [weather_spec()], {"tool_choice": {"any": {}}}),
        (PARAMS, None, {}),
    ],
    ids=["plain", "tools", "params-and-tools", "params"],
)
async def test_the_body_and_headers_are_what_create_sends(
    server: FakeOpenAIServer,
    client: openai.AsyncOpenAI,
    params: dict[str, Any],
    tool_specs: list[ToolSpec] | None,
    kwargs: dict[str, Any],
) -> None:
    model = OpenAIModel("test-model", client=client, params=params)

    ours = await through_the_model(server, model, tool_specs, **kwargs)
    theirs = await through_create(server, client, tool_specs, params, **kwargs)

    assert ours.raw_body == theirs.raw_body
    assert ours.path == theirs.path
    varying = {"x-stainless-read-timeout"}  # may differ by rounding of the same timeout
    assert {k: v for k, v in ours.headers.items() if k not in varying} == {
        k: v for k, v in theirs.headers.items() if k not in varying
    }


async def test_a_tool_list_changed_in_place_is_sent_as_it_is_now(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    model = OpenAIModel("test-model", client=client)
    specs = [weather_spec()]
    await through_the_model(server, model, specs)

    specs[0]["description"] = "Changed."
    changed = await through_the_model(server, model, specs)
    specs.append({**weather_spec(), "name": "time"})
    grown = await through_the_model(server, model, specs)

    assert changed.body["tools"][0]["function"]["description"] == "Changed."
    assert [tool["function"]["name"] for tool in grown.body["tools"]] == ["weather", "time"]


def test_params_create_does_not_take_are_refused_when_the_model_is_built() -> None:
    with pytest.raises(ValueError, match=r"params has \['top_k'\].*extra_body"):
        OpenAIModel("m", api_key="test", params={"top_k": 5})


def test_params_that_are_not_json_are_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match=r"params field 'metadata' is not JSON data"):
        OpenAIModel("m", api_key="test", params={"metadata": {"when": object()}})
    with pytest.raises(ValueError, match=r"extra_body field 'top_k' is not JSON data"):
        OpenAIModel("m", api_key="test", params={"extra_body": {"top_k": float("nan")}})


async def test_openai_s_own_retries_send_the_same_body_again(server: FakeOpenAIServer) -> None:
    throttled = ErrorReply(429, {"error": {"message": "slow down"}}, {"retry-after-ms": "1"})
    server.reply(throttled, ok())
    async with openai.AsyncOpenAI(
        base_url=server.base_url, api_key="test", max_retries=1, timeout=30.0
    ) as client:
        model = OpenAIModel("test-model", client=client)
        async for _ in model.stream(CONVERSATION, [weather_spec()], SYSTEM):
            pass

    first, retry = server.requests
    assert retry.raw_body == first.raw_body
    assert [first.headers["x-stainless-retry-count"], retry.headers["x-stainless-retry-count"]] == [
        "0",
        "1",
    ]


def test_a_model_shared_by_agents_in_two_threads_sends_each_its_own_tools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two agents with different tools call one model from two threads (``agent(...)``
    from a thread pool). The second thread's call is run at the worst moment for the
    first: while the first stores the tool list it has just encoded."""
    encoder = RequestEncoder("test-model", {})
    first: list[ToolSpec] = [weather_spec()]
    second: list[ToolSpec] = [{**weather_spec(), "name": "time"}]
    real_deepcopy = copy.deepcopy
    interleaved: list[bytes] = []

    def deepcopy_after_the_other_thread(value: Any, *args: Any) -> Any:
        if value == first and not interleaved:
            with ThreadPoolExecutor(1) as pool:
                interleaved.append(pool.submit(encoder.encode, [], second, None).result())
        return real_deepcopy(value, *args)

    # Wraps the real one, which the module calls through `copy`.
    monkeypatch.setattr(copy, "deepcopy", deepcopy_after_the_other_thread)
    sent_first = encoder.encode([], first, None)
    monkeypatch.undo()

    def tool_names(body: bytes) -> list[str]:
        return [tool["function"]["name"] for tool in json.loads(body)["tools"]]

    assert tool_names(interleaved[0]) == ["time"]
    assert tool_names(sent_first) == ["weather"]
    # The cache pairs each list with its own encoding.
    assert tool_names(encoder.encode([], first, None)) == ["weather"]
    assert tool_names(encoder.encode([], second, None)) == ["time"]
