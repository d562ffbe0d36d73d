"""A scripted bedrock-runtime server on loopback that speaks ConverseStream, for adapter tests.

It answers ``POST /model/{modelId}/converse-stream`` as the service does: a 200 response
whose body is the AWS event-stream binary framing (each message a prelude with its total
and header lengths, the prelude's CRC32, typed headers, a JSON payload and the message's
CRC32), which botocore decodes; or an error response with ``x-amzn-ErrorType`` and a JSON
body. boto3 sends it real, SigV4-signed requests. It runs on the shared plumbing of
``loopback_server``, so it serves on asyncio and trio alike; this module holds the AWS
event-stream protocol.

Replies: ``StreamReply`` (events, and exception messages mid-stream, then optionally a
hang until the client hangs up), ``ErrorReply``, ``RawReply`` (any bytes as the stream: a
truncated frame, a bad CRC) and ``ResetReply`` (the connection reset mid-stream). Like the
service, it refuses a conversation with tool use or tool results and no ``toolConfig``
(a ``ValidationException``) before taking a reply.
"""

from __future__ import annotations

import base64
import json
import select
import socket
import struct
import threading
import zlib
from dataclasses import dataclass, field
from typing import Any, final
from urllib.parse import unquote

from .loopback_server import LoopbackHandler, LoopbackServer

__all__ = [
    "ACCESS_KEY",
    "SECRET_KEY",
    "SESSION_TOKEN",
    "ErrorReply",
    "FakeBedrockServer",
    "Item",
    "RawReply",
    "RecordedRequest",
    "Reply",
    "ResetReply",
    "StreamException",
    "StreamReply",
    "blob",
    "event_message",
    "exception_message",
    "metadata",
    "text_events",
    "tool_events",
]

_STRING_HEADER = 7


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    path: str
    model_id: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class StreamException:
    """An exception message in the event stream (``:message-type: exception``)."""

    exception_type: str
    message: str


Item = tuple[str, dict[str, Any]] | StreamException


@dataclass(frozen=True)
class StreamReply:
    """A 200 event stream of *items*; with *hang*, then silence until the client hangs up."""

    items: list[Item] = field(default_factory=list[Item])
    hang: bool = False


@dataclass(frozen=True)
class ErrorReply:
    """An error response as the service sends one: status, error type header, JSON body."""

    status: int
    error_type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict[str, str])


@dataclass(frozen=True)
class RawReply:
    """A 200 event-stream response whose body is exactly *body* (then the stream ends)."""

    body: bytes


@dataclass(frozen=True)
class ResetReply:
    """The connection reset (TCP RST) after streaming *items*."""

    items: list[Item] = field(default_factory=list[Item])


Reply = StreamReply | ErrorReply | RawReply | ResetReply


def _header(name: str, value: str) -> bytes:
    encoded_name, encoded_value = name.encode(), value.encode()
    return (
        struct.pack(">B", len(encoded_name))
        + encoded_name
        + struct.pack(">BH", _STRING_HEADER, len(encoded_value))
        + encoded_value
    )


def _message(headers: dict[str, str], payload: bytes) -> bytes:
    header_bytes = b"".join(_header(name, value) for name, value in headers.items())
    total = 12 + len(header_bytes) + len(payload) + 4
    prelude = struct.pack(">II", total, len(header_bytes))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + header_bytes + payload
    return body + struct.pack(">I", zlib.crc32(body))


def event_message(event_type: str, payload: dict[str, Any]) -> bytes:
    """One event of the stream, framed."""
    return _message(
        {
            ":event-type": event_type,
            ":content-type": "application/json",
            ":message-type": "event",
        },
        json.dumps(payload).encode(),
    )


def exception_message(exception_type: str, message: str) -> bytes:
    """One exception message of the stream, framed, as the service sends a mid-stream error."""
    return _message(
        {
            ":exception-type": exception_type,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        json.dumps({"message": message}).encode(),
    )


def _frame(item: Item) -> bytes:
    if isinstance(item, StreamException):
        return exception_message(item.exception_type, item.message)
    return event_message(*item)


def metadata(
    input_tokens: int = 10,
    output_tokens: int = 5,
    *,
    cache_read: int | None = None,
    cache_write: int | None = None,
    trace: dict[str, Any] | None = None,
    latency_ms: int = 42,
) -> Item:
    """The closing ``metadata`` event."""
    usage: dict[str, Any] = {
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "totalTokens": input_tokens + output_tokens,
    }
    if cache_read is not None:
        usage["cacheReadInputTokens"] = cache_read
    if cache_write is not None:
        usage["cacheWriteInputTokens"] = cache_write
    payload: dict[str, Any] = {"usage": usage, "metrics": {"latencyMs": latency_ms}}
    if trace is not None:
        payload["trace"] = trace
    return ("metadata", payload)


def text_events(*pieces: str, stop_reason: str = "end_turn", index: int = 0) -> list[Item]:
    """A whole text answer streamed in *pieces*, up to its ``messageStop``."""
    return [
        ("messageStart", {"role": "assistant"}),
        *[
            ("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": piece}})
            for piece in pieces
        ],
        ("contentBlockStop", {"contentBlockIndex": index}),
        ("messageStop", {"stopReason": stop_reason}),
    ]


def tool_events(tool_use_id: str, name: str, *input_pieces: str, index: int = 0) -> list[Item]:
    """One tool-use block (without the message's start and stop)."""
    return [
        (
            "contentBlockStart",
            {
                "contentBlockIndex": index,
                "start": {"toolUse": {"toolUseId": tool_use_id, "name": name}},
            },
        ),
        *[
            (
                "contentBlockDelta",
                {"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}},
            )
            for piece in input_pieces
        ],
        ("contentBlockStop", {"contentBlockIndex": index}),
    ]


def blob(data: bytes) -> str:
    """A blob member as it travels in an event's JSON payload."""
    return base64.b64encode(data).decode("ascii")


@final
class FakeBedrockServer(LoopbackServer[RecordedRequest, Reply]):
    """Serves ``POST /model/{modelId}/converse-stream`` from a queue of scripted replies."""

    def __init__(self) -> None:
        super().__init__(_Handler)
        self.hung_up = threading.Event()
        """Set when a client hangs up on a hanging ``StreamReply``."""

    @property
    def endpoint_url(self) -> str:
        return self.origin

    def unscripted_reply(self) -> Reply:
        return ErrorReply(500, "InternalServerException", "the test scripted no reply for this")


def _validation_error(body: dict[str, Any]) -> ErrorReply | None:
    """The ``ValidationException`` Bedrock answers a request it refuses, if it would.

    Bedrock refuses a conversation that holds tool use or tool results when the request
    defines no tools, whatever the model; a request is checked for that before it takes
    a scripted reply, so that a test fails where the real service would.
    """
    blocks = [
        block
        for message in body.get("messages", [])
        for block in message.get("content", [])
        if isinstance(block, dict)
    ]
    uses_tools = any("toolUse" in block or "toolResult" in block for block in blocks)
    tools = body.get("toolConfig", {}).get("tools")
    if uses_tools and not tools:
        return ErrorReply(
            400,
            "ValidationException",
            "The toolConfig field must be defined when using toolUse and toolResult "
            "content blocks.",
        )
    return None


class _Handler(LoopbackHandler):
    def do_POST(self) -> None:
        fake = self.fake_as(FakeBedrockServer)
        raw_body = self.read_body()
        parts = self.path.partition("?")[0].split("/")
        if len(parts) != 4 or parts[1] != "model" or parts[3] != "converse-stream":
            self._send_error(ErrorReply(404, "UnknownOperationException", f"no route {self.path}"))
            return
        request = RecordedRequest(
            self.path, unquote(parts[2]), self.lower_headers(), json.loads(raw_body or b"{}")
        )
        refusal = _validation_error(request.body)
        if refusal is not None:
            fake.record(request)
            self._send_error(refusal)
            return
        reply = fake.take_reply(request)
        if isinstance(reply, ErrorReply):
            self._send_error(reply)
            return
        self.start_chunked(
            "application/vnd.amazon.eventstream", {"x-amzn-RequestId": "req-stream-1"}
        )
        try:
            if isinstance(reply, RawReply):
                self.send_chunk(reply.body)
            else:
                for item in reply.items:
                    self.send_chunk(_frame(item))
            if isinstance(reply, ResetReply):
                self.reset()
                return
            if isinstance(reply, StreamReply) and reply.hang:
                self._wait_for_hang_up(fake)
                return
            self.end_chunks()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _wait_for_hang_up(self, fake: FakeBedrockServer) -> None:
        # The client closing its end makes the socket readable with nothing to read.
        while True:
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable and not self.connection.recv(1, socket.MSG_PEEK):
                fake.hung_up.set()
                self.close_connection = True
                return

    def _send_error(self, reply: ErrorReply) -> None:
        headers = {
            "x-amzn-ErrorType": (
                f"{reply.error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/"
            ),
            "x-amzn-RequestId": "req-error-1",
            **reply.headers,
        }
        self.send_body(
            json.dumps({"message": reply.message}).encode(),
            "application/json",
            reply.status,
            headers,
        )


# Static credentials for the signed requests; tests check that the secret never leaks.
ACCESS_KEY = "AKIDSTAGEWARETEST"
SECRET_KEY = "sEcReT/stageware+never-shown-0123456789"
SESSION_TOKEN = "tOkEn-stageware-never-shown-9876543210"
