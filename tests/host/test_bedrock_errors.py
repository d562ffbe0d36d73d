"""BedrockModel's failures, each as the service (or a broken network) produces it.

Error responses carry ``x-amzn-ErrorType`` and a JSON body, as bedrock-runtime sends
them; mid-stream exceptions are event-stream messages of type ``exception``; broken
streams are cut short, reset, truncated or corrupted on the wire.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from botocore.config import Config

from stageware import ContextWindowOverflowError, ModelError, ModelThrottledError
from stageware._generated.payloads import StreamEvent
from stageware.bedrock import BedrockModel

from .bedrock_helpers import collect, make_model, session
from .fake_bedrock_server import (
    ACCESS_KEY,
    SECRET_KEY,
    SESSION_TOKEN,
    ErrorReply,
    FakeBedrockServer,
    Item,
    RawReply,
    ResetReply,
    StreamException,
    StreamReply,
    event_message,
    metadata,
    text_events,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[FakeBedrockServer]:
    fake = FakeBedrockServer()
    fake.start()
    yield fake
    fake.close()


def _assert_names_the_model(error: ModelError, server: FakeBedrockServer) -> None:
    assert error.model_id == "anthropic.claude-test-v1:0"
    assert error.base_url == server.endpoint_url
    assert str(error).startswith(f"model 'anthropic.claude-test-v1:0' at {server.endpoint_url}: ")


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (429, "ThrottlingException"),
        (503, "ServiceUnavailableException"),
        (429, "ModelNotReadyException"),
        (429, "TooManyRequestsException"),
    ],
)
async def test_throttling_answers_are_throttled_errors(
    server: FakeBedrockServer, status: int, error_type: str
) -> None:
    server.reply(
        ErrorReply(status, error_type, "Too many requests, please wait.", {"Retry-After": "7"})
    )

    with pytest.raises(ModelThrottledError) as caught:
        await collect(make_model(server))

    error = caught.value
    _assert_names_the_model(error, server)
    assert (error.status_code, error.retry_after) == (status, 7.0)
    assert f"{error_type} HTTP {status}: Too many requests, please wait." in str(error)
    assert "(request id req-error-1)" in str(error)


async def test_a_throttling_answer_without_retry_after_has_no_wait(
    server: FakeBedrockServer,
) -> None:
    server.reply(ErrorReply(429, "ThrottlingException", "Rate exceeded"))

    with pytest.raises(ModelThrottledError) as caught:
        await collect(make_model(server))

    assert caught.value.retry_after is None


@pytest.mark.parametrize(
    "message",
    [
        "Input is too long for requested model.",
        "The model returned the following errors: input length and `max_tokens` exceed "
        "context limit",
        "The model returned the following errors: prompt is too long: 210000 tokens > "
        "200000 maximum",
    ],
)
async def test_an_input_too_long_is_a_context_window_overflow(
    server: FakeBedrockServer, message: str
) -> None:
    server.reply(ErrorReply(400, "ValidationException", message))

    with pytest.raises(ContextWindowOverflowError) as caught:
        await collect(make_model(server))

    _assert_names_the_model(caught.value, server)
    assert caught.value.status_code == 400
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("status", "error_type", "message"),
    [
        (400, "ValidationException", "The provided model identifier is invalid."),
        (
            403,
            "AccessDeniedException",
            "You don't have access to the model with the specified model ID.",
        ),
        (404, "ResourceNotFoundException", "Model not found."),
        (500, "InternalServerException", "Internal failure."),
        (424, "ModelErrorException", "The model failed."),
    ],
)
async def test_other_error_answers_are_model_errors_with_their_status(
    server: FakeBedrockServer, status: int, error_type: str, message: str
) -> None:
    server.reply(ErrorReply(status, error_type, message))

    with pytest.raises(ModelError) as caught:
        await collect(make_model(server))

    error = caught.value
    assert type(error) is ModelError
    _assert_names_the_model(error, server)
    assert error.status_code == status
    assert f"{error_type} HTTP {status}: {message}" in str(error)


async def test_botocore_retries_throttling_first_when_configured_to(
    server: FakeBedrockServer,
) -> None:
    server.reply(
        ErrorReply(429, "ThrottlingException", "Rate exceeded"),
        StreamReply([*text_events("after a retry"), metadata()]),
    )

    events = await collect(make_model(server, attempts=2))

    assert {
        "contentBlockDelta": {"delta": {"text": "after a retry"}, "contentBlockIndex": 0}
    } in events
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    "exception_type",
    ["throttlingException", "serviceUnavailableException"],
)
async def test_throttling_mid_stream_is_a_throttled_error(
    server: FakeBedrockServer, exception_type: str
) -> None:
    server.reply(
        StreamReply(
            [
                text_events("partial")[0],
                text_events("partial")[1],
                StreamException(exception_type, "Slow down."),
            ]
        )
    )
    events: list[StreamEvent] = []

    with pytest.raises(ModelThrottledError) as caught:
        await _collect_into(events, make_model(server))

    assert len(events) == 2  # What arrived before the exception was passed on.
    error = caught.value
    _assert_names_the_model(error, server)
    assert error.status_code is None
    assert f"{exception_type} in the response stream: Slow down." in str(error)


@pytest.mark.parametrize(
    ("exception_type", "expected"),
    [
        ("validationException", ModelError),
        ("modelStreamErrorException", ModelError),
        ("internalServerException", ModelError),
    ],
)
async def test_other_exceptions_mid_stream_are_model_errors(
    server: FakeBedrockServer, exception_type: str, expected: type[ModelError]
) -> None:
    server.reply(StreamReply([text_events("x")[0], StreamException(exception_type, "It broke.")]))

    with pytest.raises(ModelError) as caught:
        await collect(make_model(server))

    assert type(caught.value) is expected
    assert f"{exception_type} in the response stream: It broke." in str(caught.value)


async def test_a_stream_closed_before_its_end_is_an_error(server: FakeBedrockServer) -> None:
    server.reply(StreamReply(text_events("cut")[:2]), StreamReply(text_events("no metadata")))
    model = make_model(server)

    with pytest.raises(ModelError, match="ended early, without messageStop and metadata"):
        await collect(model)
    with pytest.raises(ModelError, match=r"ended early, without metadata$"):
        await collect(model)


async def test_a_reset_connection_mid_stream_is_an_error(server: FakeBedrockServer) -> None:
    server.reply(ResetReply(text_events("cut")[:2]))

    with pytest.raises(ModelError, match=r"connection failed: .*ConnectionResetError") as caught:
        await collect(make_model(server))

    _assert_names_the_model(caught.value, server)


async def test_a_truncated_frame_is_an_error(server: FakeBedrockServer) -> None:
    start = event_message("messageStart", {"role": "assistant"})
    server.reply(
        RawReply(
            start
            + event_message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x"}})[
                :-5
            ]
        )
    )

    with pytest.raises(ModelError, match="ended early, without messageStop and metadata"):
        await collect(make_model(server))


async def test_a_frame_with_a_bad_crc_is_an_error(server: FakeBedrockServer) -> None:
    frame = bytearray(event_message("messageStart", {"role": "assistant"}))
    frame[-6] ^= 0xFF  # A byte of the payload: the message CRC no longer matches.
    server.reply(RawReply(bytes(frame)))

    with pytest.raises(ModelError, match="malformed response stream: ChecksumMismatch"):
        await collect(make_model(server))


@pytest.mark.parametrize(
    ("stop_reason", "expected", "text"),
    [
        (
            "model_context_window_exceeded",
            ContextWindowOverflowError,
            "filled the model's context window",
        ),
        ("malformed_model_output", ModelError, "output was malformed"),
        ("malformed_tool_use", ModelError, "tool call was malformed"),
    ],
)
async def test_stop_reasons_the_host_cannot_continue_from_are_errors(
    server: FakeBedrockServer, stop_reason: str, expected: type[ModelError], text: str
) -> None:
    server.reply(StreamReply([*text_events("x", stop_reason=stop_reason), metadata()]))

    with pytest.raises(ModelError, match=text) as caught:
        await collect(make_model(server))

    assert type(caught.value) is expected


_START = ("messageStart", {"role": "assistant"})
_TEXT = ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x"}})
_STOP = ("messageStop", {"stopReason": "end_turn"})


@pytest.mark.parametrize(
    ("items", "problem"),
    [
        (
            [_START, ("contentBlockDelta", {"delta": {"text": "x"}}), _STOP, metadata()],
            "a contentBlockDelta event lacks a field or has one of the wrong type "
            "(KeyError: 'contentBlockIndex')",
        ),
        (
            [_START, _TEXT, ("messageStop", {}), metadata()],
            "a messageStop event lacks a field or has one of the wrong type "
            "(KeyError: 'stopReason')",
        ),
        (
            [_START, _TEXT, ("messageStop", {"stopReason": 7}), metadata()],
            "a messageStop event lacks a field or has one of the wrong type "
            "(TypeError: stopReason is 7, not a string)",
        ),
        (
            [_START, ("contentBlockStop", {"contentBlockIndex": "0"}), _STOP, metadata()],
            "a contentBlockStop event lacks a field or has one of the wrong type",
        ),
        (
            [
                _START,
                ("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {}}}),
                _STOP,
                metadata(),
            ],
            "a contentBlockStart event lacks a field or has one of the wrong type "
            "(KeyError: 'toolUseId')",
        ),
        ([_TEXT, _STOP, metadata()], "a contentBlockDelta event before messageStart"),
        ([_START, _START, _TEXT, _STOP, metadata()], "a second messageStart"),
        ([_START, _TEXT, _STOP, _STOP, metadata()], "a messageStop event after messageStop"),
        ([_START, _STOP, _TEXT, metadata()], "a contentBlockDelta event after messageStop"),
        ([_START, _TEXT, metadata(), _STOP], "a metadata event before messageStop"),
        ([_START, _TEXT, _STOP, metadata(), metadata()], "a second metadata event"),
    ],
)
async def test_a_malformed_or_out_of_order_stream_is_an_error(
    server: FakeBedrockServer, items: list[Item], problem: str
) -> None:
    server.reply(StreamReply(items))

    with pytest.raises(ModelError) as caught:
        await collect(make_model(server))

    assert type(caught.value) is ModelError
    assert f"malformed response stream: {problem}" in str(caught.value)
    _assert_names_the_model(caught.value, server)


async def test_a_refused_connection_is_an_error() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    model = BedrockModel(
        "m",
        boto_session=session(),
        endpoint_url=f"http://127.0.0.1:{port}",
        boto_client_config=Config(retries={"total_max_attempts": 1}),
    )

    with pytest.raises(ModelError, match=r"connection failed: .*ConnectionRefusedError"):
        await collect(model)


async def test_request_parameters_botocore_refuses_are_an_error(server: FakeBedrockServer) -> None:
    model = make_model(server, params={"inferenceConfig": {"maxTokens": "many"}})

    with pytest.raises(ModelError, match=r"not valid for ConverseStream: .*maxTokens"):
        await collect(model)
    assert server.requests == []


async def test_no_credential_ever_shows(
    server: FakeBedrockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    server.reply(
        ErrorReply(
            403,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        ),
        StreamReply([text_events("x")[0], StreamException("throttlingException", "Slow down.")]),
        ErrorReply(400, "ValidationException", "Input is too long for requested model."),
    )
    from_environment = BedrockModel(
        "anthropic.claude-test-v1:0", region_name="us-east-1", endpoint_url=server.endpoint_url
    )
    from_session = make_model(server)
    errors: list[ModelError] = []
    for model in (from_environment, from_session, from_session):
        with pytest.raises(ModelError) as caught:
            await collect(model)
        errors.append(caught.value)

    assert (
        server.requests[0]
        .headers["authorization"]
        .startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/")
    )
    shown = [repr(from_environment), repr(from_session)]
    for error in errors:
        shown += [str(error), repr(error), repr(vars(error)), str(error.__cause__)]
    for text in shown:
        assert SECRET_KEY not in text
        assert SESSION_TOKEN not in text


async def _collect_into(events: list[StreamEvent], model: BedrockModel) -> None:
    async for event in model.stream([{"role": "user", "content": [{"text": "Hi"}]}]):
        events.append(event)
