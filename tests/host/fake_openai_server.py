"""A scripted OpenAI-compatible chat-completions server on loopback, for adapter tests.

It serves the real ``openai`` client over real sockets on asyncio and trio alike, on the
shared plumbing of ``loopback_server``; this module holds the OpenAI SSE protocol. Each
test scripts the replies and reads back the requests it received: ``SSEReply`` and
``ErrorReply`` as a well-behaved server sends them, ``RawReply`` (any body: a
non-streaming one, broken SSE) and ``ResetReply`` (the connection reset by the peer) as a
broken one does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, final

from .loopback_server import LoopbackHandler, LoopbackServer

__all__ = [
    "ErrorReply",
    "FakeOpenAIServer",
    "RawReply",
    "RecordedRequest",
    "Reply",
    "ResetReply",
    "SSEReply",
    "chunk",
    "tool_delta",
    "usage_chunk",
]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw_body: bytes = b""


@dataclass(frozen=True)
class SSEReply:
    """A 200 response streaming each item as a ``data:`` event, then ``data: [DONE]``."""

    events: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])


@dataclass(frozen=True)
class ErrorReply:
    """An error response with a JSON body, and any extra headers (``Retry-After``)."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict[str, str])


@dataclass(frozen=True)
class RawReply:
    """A 200 response with exactly this body and content type."""

    body: bytes
    content_type: str = "text/event-stream"


@dataclass(frozen=True)
class ResetReply:
    """The connection reset (TCP RST) after streaming *events*, or before any response."""

    events: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    before_headers: bool = False


Reply = SSEReply | ErrorReply | RawReply | ResetReply


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    """A ``chat.completion.chunk`` with one choice."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def tool_delta(
    index: int, *, id: str | None = None, name: str | None = None, arguments: str | None = None
) -> dict[str, Any]:
    """A delta carrying one tool-call fragment."""
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    call: dict[str, Any] = {"index": index, "function": function}
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    return {"tool_calls": [call]}


def usage_chunk(
    prompt_tokens: int, completion_tokens: int, cached_tokens: int | None = None
) -> dict[str, Any]:
    """The final chunk a server sends for ``stream_options.include_usage``."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "test-model",
        "choices": [],
        "usage": usage,
    }


@final
class FakeOpenAIServer(LoopbackServer[RecordedRequest, Reply]):
    """Serves ``POST /v1/chat/completions`` from a queue of scripted replies."""

    def __init__(self) -> None:
        super().__init__(_Handler)

    @property
    def base_url(self) -> str:
        """The URL to give the client, ending in ``/v1``."""
        return f"{self.origin}/v1"

    def unscripted_reply(self) -> Reply:
        return ErrorReply(500, {"error": {"message": "the test scripted no reply for this"}})


class _Handler(LoopbackHandler):
    def do_POST(self) -> None:
        fake = self.fake_as(FakeOpenAIServer)
        raw_body = self.read_body()
        body: dict[str, Any] = json.loads(raw_body or b"{}")
        request = RecordedRequest(self.path, self.lower_headers(), body, raw_body)
        if self.path.partition("?")[0] != "/v1/chat/completions":
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        reply = fake.take_reply(request)
        if isinstance(reply, ErrorReply):
            self._send_json(reply.status, reply.body, reply.headers)
            return
        if isinstance(reply, RawReply):
            self.send_body(reply.body, reply.content_type)
            return
        if isinstance(reply, ResetReply) and reply.before_headers:
            self.reset()
            return
        self.start_chunked("text/event-stream")
        try:
            for event in reply.events:
                self.send_chunk(f"data: {json.dumps(event)}\n\n".encode())
            if isinstance(reply, ResetReply):
                self.reset()
                return
            self.send_chunk(b"data: [DONE]\n\n")
            self.end_chunks()
        except (BrokenPipeError, ConnectionResetError):
            # The client hung up mid-stream: a test stopped reading early, or the client
            # gave up at an error event. Nothing to answer any more.
            self.close_connection = True

    def _send_json(
        self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self.send_body(json.dumps(body).encode(), "application/json", status, headers)
