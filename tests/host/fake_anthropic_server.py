"""A scripted Anthropic Messages API server on loopback, for adapter tests.

On the shared plumbing of ``loopback_server``, it serves ``POST /v1/messages`` to the
real ``anthropic`` client over real sockets, on asyncio and trio alike; this module holds
Anthropic's SSE event stream (``event: <type>`` then ``data: <json>``). Each test scripts
the replies and reads back the requests received:

- ``SSEReply``: a stream of events, as the API sends them (``message()`` builds the
  events of a whole message from its blocks);
- ``ErrorReply``: an error status with Anthropic's error body and any headers;
- ``RawReply``: any body (a non-streaming JSON one, broken SSE);
- ``ResetReply``: the connection reset after some events, or before any answer;
- ``HangReply``: some events, then pings until the client hangs up, which the server
  records (``disconnected``), to prove that a cancelled call closes its connection.

Whatever the script, it refuses with the API's 400 what the API always refuses: a
forced ``tool_choice`` with extended thinking on.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, final

from .loopback_server import LoopbackHandler, LoopbackServer

__all__ = [
    "ErrorReply",
    "FakeAnthropicServer",
    "HangReply",
    "RawReply",
    "RecordedRequest",
    "Reply",
    "ResetReply",
    "SSEReply",
    "error_body",
    "message",
    "text_block",
    "thinking_block",
    "tool_block",
]

Event = dict[str, Any]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class SSEReply:
    """A 200 response streaming each event as ``event: <its type>`` and ``data: <it>``."""

    events: list[Event] = field(default_factory=list[Event])


@dataclass(frozen=True)
class ErrorReply:
    """An error response with a JSON body, and any extra headers (``retry-after``)."""

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

    events: list[Event] = field(default_factory=list[Event])
    before_headers: bool = False


@dataclass(frozen=True)
class HangReply:
    """Stream *events*, then a ping every *interval* seconds until the client hangs up."""

    events: list[Event] = field(default_factory=list[Event])
    disconnected: threading.Event = field(default_factory=threading.Event)
    interval: float = 0.01


Reply = SSEReply | ErrorReply | RawReply | ResetReply | HangReply


def error_body(error_type: str, text: str) -> dict[str, Any]:
    """Anthropic's error body (also the data of an ``error`` event)."""
    return {"type": "error", "error": {"type": error_type, "message": text}}


def text_block(text: str) -> list[Event]:
    """The start, deltas and stop of a text block (index filled in by ``message``)."""
    half = len(text) // 2
    return [
        {"type": "content_block_start", "content_block": {"type": "text", "text": ""}},
        *(
            {"type": "content_block_delta", "delta": {"type": "text_delta", "text": part}}
            for part in (text[:half], text[half:])
            if part
        ),
        {"type": "content_block_stop"},
    ]


def tool_block(tool_use_id: str, name: str, tool_input: dict[str, Any]) -> list[Event]:
    """A tool_use block whose input streams as two ``input_json_delta`` fragments."""
    encoded = json.dumps(tool_input)
    half = len(encoded) // 2
    start = {"type": "tool_use", "id": tool_use_id, "name": name, "input": {}}
    return [
        {"type": "content_block_start", "content_block": start},
        {
            "type": "content_block_delta",
            "delta": {"type": "input_json_delta", "partial_json": encoded[:half]},
        },
        {
            "type": "content_block_delta",
            "delta": {"type": "input_json_delta", "partial_json": encoded[half:]},
        },
        {"type": "content_block_stop"},
    ]


def thinking_block(thinking: str, signature: str) -> list[Event]:
    """A thinking block: its text, then its signature, as deltas."""
    start = {"type": "thinking", "thinking": "", "signature": ""}
    return [
        {"type": "content_block_start", "content_block": start},
        {"type": "content_block_delta", "delta": {"type": "thinking_delta", "thinking": thinking}},
        {
            "type": "content_block_delta",
            "delta": {"type": "signature_delta", "signature": signature},
        },
        {"type": "content_block_stop"},
    ]


def message(
    *blocks: list[Event],
    stop_reason: str = "end_turn",
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read: int | None = None,
    cache_write: int | None = None,
    stop: bool = True,
) -> list[Event]:
    """The events of one streamed message: start, the blocks (indexed), delta, stop.

    ``stop=False`` leaves out ``message_stop``, as a stream cut short would.
    """
    usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": 1}
    if cache_read is not None:
        usage["cache_read_input_tokens"] = cache_read
    if cache_write is not None:
        usage["cache_creation_input_tokens"] = cache_write
    events: list[Event] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_test",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        },
        {"type": "ping"},
    ]
    for index, block in enumerate(blocks):
        events += [{**event, "index": index} for event in block]
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        }
    )
    if stop:
        events.append({"type": "message_stop"})
    return events


@final
class FakeAnthropicServer(LoopbackServer[RecordedRequest, Reply]):
    """Serves ``POST /v1/messages`` from a queue of scripted replies."""

    def __init__(self) -> None:
        super().__init__(_Handler)

    @property
    def base_url(self) -> str:
        """The URL to give the client (the SDK adds ``/v1/messages``)."""
        return self.origin

    def take_reply(self, request: RecordedRequest) -> Reply:
        """Record *request* and return the reply scripted for it (called by the handler)."""
        refusal = _refusal(request.body)
        if refusal is not None:
            # Refused as the API refuses it, without using up a scripted reply.
            self.record(request)
            return ErrorReply(400, error_body("invalid_request_error", refusal))
        return super().take_reply(request)

    def unscripted_reply(self) -> Reply:
        return ErrorReply(500, error_body("api_error", "the test scripted no reply for this"))


def _refusal(body: dict[str, Any]) -> str | None:
    """What the API says to a request it refuses whatever the script, or ``None``.

    Extended thinking and a forced tool do not go together: the API accepts only
    ``tool_choice`` ``auto`` (or ``none``) while thinking is on.
    """
    thinking = body.get("thinking")
    forced = (body.get("tool_choice") or {}).get("type") in ("any", "tool")
    if isinstance(thinking, dict) and thinking.get("type") != "disabled" and forced:
        return "Thinking may not be enabled when tool_choice forces tool use."
    return None


class _Handler(LoopbackHandler):
    def do_POST(self) -> None:
        fake = self.fake_as(FakeAnthropicServer)
        body: dict[str, Any] = json.loads(self.read_body() or b"{}")
        request = RecordedRequest(self.path, self.lower_headers(), body)
        if self.path.partition("?")[0] != "/v1/messages":
            self._send_json(404, error_body("not_found_error", f"no route {self.path}"))
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
        self.start_chunked("text/event-stream; charset=utf-8")
        try:
            for event in reply.events:
                self._send_event(event)
            if isinstance(reply, ResetReply):
                self.reset()
                return
            if isinstance(reply, HangReply):
                self._ping_until_gone(reply)
                return
            self.end_chunks()
        except (BrokenPipeError, ConnectionResetError):
            # The client hung up mid-stream: a test stopped reading early, or the client
            # gave up at an error event. Nothing to answer any more. A client that hangs up
            # before the hang's own events are all out has hung up all the same.
            if isinstance(reply, HangReply):
                reply.disconnected.set()
            self.close_connection = True

    def _ping_until_gone(self, reply: HangReply) -> None:
        deadline = time.monotonic() + 30  # A test that never hangs up fails, not hangs.
        try:
            while time.monotonic() < deadline:
                self._send_event({"type": "ping"})
                time.sleep(reply.interval)
        except (BrokenPipeError, ConnectionResetError):
            reply.disconnected.set()
        self.close_connection = True

    def _send_event(self, event: Event) -> None:
        self.send_chunk(
            f"event: {event.get('type', 'unknown')}\ndata: {json.dumps(event)}\n\n".encode()
        )

    def _send_json(
        self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self.send_body(json.dumps(body).encode(), "application/json", status, headers)
