"""BedrockModel against a fake bedrock-runtime server on loopback, on asyncio and trio.

boto3 makes real, SigV4-signed ConverseStream requests to ``FakeBedrockServer``, which
answers in the AWS event-stream binary framing; the tests check the events the adapter
yields and the request bodies the server received.
"""

from __future__ import annotations

import base64
import copy
import importlib
import json
import sys
from collections.abc import AsyncIterator, Iterator

import pydantic
import pytest

from stageware import Model, OutputSchema
from stageware._generated.payloads import Messages, StreamEvent, SystemContentBlock, ToolSpec
from stageware._host.models import collect_response
from stageware.bedrock import BedrockModel

from .bedrock_helpers import HELLO, collect, make_model, session
from .fake_bedrock_server import (
    ACCESS_KEY,
    SESSION_TOKEN,
    FakeBedrockServer,
    StreamReply,
    blob,
    metadata,
    text_events,
    tool_events,
)

pytestmark = pytest.mark.anyio

WEATHER: ToolSpec = {
    "name": "weather",
    "description": "The weather in a city.",
    "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}},
}


@pytest.fixture
def server() -> Iterator[FakeBedrockServer]:
    fake = FakeBedrockServer()
    fake.start()
    yield fake
    fake.close()


async def test_a_text_answer_streams_as_converse_events(server: FakeBedrockServer) -> None:
    server.reply(StreamReply([*text_events("Hel", "lo!"), metadata(12, 3)]))

    events = await collect(make_model(server))

    assert events == [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "Hel"}, "contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"text": "lo!"}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
        {
            "metadata": {
                "usage": {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15},
                "metrics": {"latencyMs": 42},
            }
        },
    ]


async def test_the_request_is_signed_and_carries_the_conversation(
    server: FakeBedrockServer,
) -> None:
    server.reply(StreamReply([*text_events("ok"), metadata()]))
    model = make_model(
        server,
        params={"inferenceConfig": {"maxTokens": 256, "temperature": 0.5}},
        guardrail={"guardrailIdentifier": "gr-1", "guardrailVersion": "2", "trace": "enabled"},
    )
    history: Messages = [
        {"role": "user", "content": [{"text": "Weather?"}]},
        {
            "role": "assistant",
            "content": [
                {"toolUse": {"toolUseId": "t1", "name": "weather", "input": {"city": "Oslo"}}}
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "t1",
                        "status": "success",
                        "content": [{"text": "sunny"}],
                    }
                },
                {"cachePoint": {"type": "default"}},
            ],
        },
    ]
    before = copy.deepcopy(history)

    await collect(
        model,
        history,
        tool_specs=[WEATHER],
        system_prompt="Be brief.",
        tool_choice={"auto": {}},
    )

    (request,) = server.requests
    assert request.path == "/model/anthropic.claude-test-v1%3A0/converse-stream"
    assert request.model_id == "anthropic.claude-test-v1:0"
    assert request.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/")
    assert "/us-east-1/bedrock/aws4_request" in request.headers["authorization"]
    assert request.headers["x-amz-security-token"] == SESSION_TOKEN
    assert request.body == {
        "messages": history,
        "system": [{"text": "Be brief."}],
        "toolConfig": {"tools": [{"toolSpec": WEATHER}], "toolChoice": {"auto": {}}},
        "inferenceConfig": {"maxTokens": 256, "temperature": 0.5},
        "guardrailConfig": {
            "guardrailIdentifier": "gr-1",
            "guardrailVersion": "2",
            "trace": "enabled",
        },
    }
    assert history == before


async def test_cache_points_pass_through_and_cache_tokens_are_counted(
    server: FakeBedrockServer,
) -> None:
    server.reply(StreamReply([*text_events("ok"), metadata(100, 5, cache_read=80, cache_write=20)]))
    system: list[SystemContentBlock] = [
        {"text": "A long prompt."},
        {"cachePoint": {"type": "default"}},
    ]

    events = await collect(
        make_model(server, cache_tools=True),
        tool_specs=[WEATHER],
        system_prompt="ignored: the content form wins",
        system_prompt_content=system,
    )

    body = server.requests[0].body
    assert body["system"] == system
    assert body["toolConfig"]["tools"] == [
        {"toolSpec": WEATHER},
        {"cachePoint": {"type": "default"}},
    ]
    response = await collect_response(_aiter(events))
    assert response.usage == {
        "inputTokens": 100,
        "outputTokens": 5,
        "totalTokens": 105,
        "cacheReadInputTokens": 80,
        "cacheWriteInputTokens": 20,
    }


async def test_tool_use_streams_with_its_input(server: FakeBedrockServer) -> None:
    server.reply(
        StreamReply(
            [
                ("messageStart", {"role": "assistant"}),
                ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Checking."}}),
                ("contentBlockStop", {"contentBlockIndex": 0}),
                *tool_events("tooluse_1", "weather", '{"ci', 'ty": "Oslo"}', index=1),
                ("messageStop", {"stopReason": "tool_use"}),
                metadata(),
            ]
        )
    )

    response = await collect_response(
        _aiter(await collect(make_model(server), tool_specs=[WEATHER]))
    )

    assert response.stop_reason == "tool_use"
    assert response.message["content"] == [
        {"text": "Checking."},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "weather", "input": {"city": "Oslo"}}},
    ]


async def test_reasoning_streams_and_goes_back_as_bytes(server: FakeBedrockServer) -> None:
    secret_thoughts = b"\x00encrypted\xff"
    server.reply(
        StreamReply(
            [
                ("messageStart", {"role": "assistant"}),
                (
                    "contentBlockDelta",
                    {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Hmm."}}},
                ),
                (
                    "contentBlockDelta",
                    {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig-1"}}},
                ),
                ("contentBlockStop", {"contentBlockIndex": 0}),
                (
                    "contentBlockDelta",
                    {
                        "contentBlockIndex": 1,
                        "delta": {"reasoningContent": {"redactedContent": blob(secret_thoughts)}},
                    },
                ),
                ("contentBlockStop", {"contentBlockIndex": 1}),
                *text_events("Done.", index=2)[1:],
                metadata(),
            ]
        ),
        StreamReply([*text_events("ok"), metadata()]),
    )
    model = make_model(server)

    response = await collect_response(_aiter(await collect(model)))
    redacted = base64.b64encode(secret_thoughts).decode()
    assert response.message["content"] == [
        {"reasoningContent": {"reasoningText": {"text": "Hmm.", "signature": "sig-1"}}},
        {"reasoningContent": {"redactedContent": redacted}},
        {"text": "Done."},
    ]
    image = base64.b64encode(b"\x89PNG fake").decode()
    history: Messages = [
        *HELLO,
        response.message,
        {
            "role": "user",
            "content": [
                {"image": {"format": "png", "source": {"bytes": image}}},
                {"text": "And this?"},
            ],
        },
    ]
    await collect(model, history)

    # botocore sends blobs base64-encoded in the JSON body: the same text the history holds.
    sent = server.requests[1].body["messages"]
    assert sent[1]["content"][1] == {"reasoningContent": {"redactedContent": redacted}}
    assert sent[2]["content"][0] == {"image": {"format": "png", "source": {"bytes": image}}}


async def test_an_image_that_is_not_base64_is_named_before_any_request(
    server: FakeBedrockServer,
) -> None:
    history: Messages = [
        {
            "role": "user",
            "content": [{"text": "Look"}, {"image": {"format": "png", "source": {"bytes": "%%%"}}}],
        }
    ]

    with pytest.raises(
        ValueError, match=r"messages\[0\]\.content\[1\]\.image\.source\.bytes is not base64"
    ):
        await collect(make_model(server), history)
    assert server.requests == []


async def test_a_guardrail_intervention_keeps_its_trace(server: FakeBedrockServer) -> None:
    trace = {
        "guardrail": {
            "inputAssessment": {
                "gr-1": {
                    "topicPolicy": {
                        "topics": [
                            {
                                "name": "Investing",
                                "type": "DENY",
                                "action": "BLOCKED",
                                "detected": True,
                            }
                        ]
                    }
                }
            },
            "actionReason": "Guardrail blocked.",
        }
    }
    server.reply(
        StreamReply(
            [
                *text_events("Sorry, I cannot help with that.", stop_reason="guardrail_intervened"),
                metadata(trace=trace),
            ]
        )
    )

    events = await collect(
        make_model(
            server,
            guardrail={"guardrailIdentifier": "gr-1", "guardrailVersion": "1", "trace": "enabled"},
        )
    )

    assert {"messageStop": {"stopReason": "guardrail_intervened"}} in events
    last = events[-1]
    assert "metadata" in last
    assert dict(last["metadata"])["trace"] == trace


async def test_what_the_payload_types_lack_is_dropped(server: FakeBedrockServer) -> None:
    server.reply(
        StreamReply(
            [
                ("messageStart", {"role": "assistant"}),
                (
                    "contentBlockStart",
                    {"contentBlockIndex": 0, "start": {"image": {"format": "png"}}},
                ),
                ("contentBlockStop", {"contentBlockIndex": 0}),
                (
                    "contentBlockDelta",
                    {"contentBlockIndex": 1, "delta": {"text": "Per the source,"}},
                ),
                (
                    "contentBlockDelta",
                    {
                        "contentBlockIndex": 1,
                        "delta": {
                            "citation": {
                                "title": "Doc",
                                "location": {
                                    "documentChar": {"documentIndex": 0, "start": 0, "end": 5}
                                },
                            }
                        },
                    },
                ),
                ("contentBlockStop", {"contentBlockIndex": 1}),
                (
                    "messageStop",
                    {"stopReason": "end_turn", "additionalModelResponseFields": {"k": 1}},
                ),
                (
                    "metadata",
                    {
                        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                        "metrics": {"latencyMs": 5},
                        "serviceTier": {"type": "default"},
                    },
                ),
            ]
        )
    )

    events = await collect(make_model(server))

    assert events == [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "Per the source,"}, "contentBlockIndex": 1}},
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {"messageStop": {"stopReason": "end_turn", "additionalModelResponseFields": {"k": 1}}},
        {
            "metadata": {
                "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                "metrics": {"latencyMs": 5},
            }
        },
    ]


class City(pydantic.BaseModel):
    """A city and its country."""

    name: str
    country: str


async def test_native_structured_output_sends_the_schema_as_output_config(
    server: FakeBedrockServer,
) -> None:
    server.reply(StreamReply([*text_events('{"name": "Oslo", "country": "Norway"}'), metadata()]))
    schema = OutputSchema.of(City)
    original = copy.deepcopy(schema.json_schema)
    model = make_model(
        server, structured_output="native", params={"outputConfig": {"effort": "low"}}
    )
    assert model.supports_structured_output

    response = await collect_response(_aiter(await collect(model, output_schema=schema)))

    output_config = server.requests[0].body["outputConfig"]
    json_schema = output_config["textFormat"]["structure"]["jsonSchema"]
    assert output_config["effort"] == "low"
    assert output_config["textFormat"]["type"] == "json_schema"
    assert (json_schema["name"], json_schema["description"]) == ("City", "A city and its country.")
    assert json.loads(json_schema["schema"]) == {**original, "additionalProperties": False}
    assert schema.json_schema == original
    assert schema.validate_json(response.message["content"][0]["text"]) == City(
        name="Oslo", country="Norway"
    )


async def test_the_tool_mode_leaves_structured_output_to_the_host(
    server: FakeBedrockServer,
) -> None:
    server.reply(StreamReply([*text_events("ok"), metadata()]))
    model = make_model(server)
    assert not model.supports_structured_output

    await collect(model, output_schema=OutputSchema.of(City))

    assert "outputConfig" not in server.requests[0].body


async def test_it_is_a_model_and_says_which_endpoint_it_calls(server: FakeBedrockServer) -> None:
    model = make_model(server)

    assert isinstance(model, Model)
    assert (
        repr(model)
        == f"BedrockModel(model_id='anthropic.claude-test-v1:0', endpoint={server.endpoint_url!r})"
    )
    assert repr(BedrockModel("m", region_name="eu-west-1")) == (
        "BedrockModel(model_id='m', endpoint='bedrock-runtime in eu-west-1')"
    )


def test_bad_options_are_refused_with_their_name() -> None:
    with pytest.raises(ValueError, match=r"params may not set \['messages', 'system'\]"):
        BedrockModel("m", params={"messages": [], "system": []})
    with pytest.raises(ValueError, match="guardrail lacks \\['guardrailVersion'\\]"):
        BedrockModel("m", guardrail={"guardrailIdentifier": "gr"})
    with pytest.raises(ValueError, match="either client or region_name"):
        BedrockModel("m", client=session().client("bedrock-runtime"), region_name="us-east-1")
    with pytest.raises(ValueError, match="structured_output must be 'native' or 'tool'"):
        BedrockModel("m", structured_output="json")  # type: ignore[arg-type]


async def _aiter(events: list[StreamEvent]) -> AsyncIterator[StreamEvent]:
    for event in events:
        yield event


def test_without_boto3_the_import_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # `import boto3` now fails
    for name in [
        name for name in sys.modules if name.startswith("stageware._host.models._bedrock")
    ]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delitem(sys.modules, "stageware.bedrock")

    with pytest.raises(
        ImportError, match=r"the `bedrock` extra: pip install -e '\.\[bedrock\]' in a clone"
    ):
        importlib.import_module("stageware.bedrock")
