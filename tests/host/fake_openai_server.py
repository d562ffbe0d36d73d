"""A scripted OpenAI-compatible chat-completions server on loopback, for adapter tests.

It runs the stdlib ``ThreadingHTTPServer`` in a daemon thread, so it serves the real
``openai`` client over real sockets on asyncio and trio alike. Each test scripts the
replies and reads back the requests it received: ``SSEReply`` and ``ErrorReply`` as a
well-behaved server sends them, ``RawReply`` (any body: a non-streaming one, broken SSE)
and ``ResetReply`` (the connection reset by the peer) as a broken one does.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, final

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
class FakeOpenAIServer:
    """Serves ``POST /v1/chat/completions`` from a queue of scripted replies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._replies: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._http = _HTTPServer(self)
        # A short poll interval keeps `close()` (which waits for the serve loop) fast.
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """The URL to give the client, ending in ``/v1``."""
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """The requests received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def reply(self, *replies: Reply) -> None:
        """Queue replies for the next requests, in order."""
        with self._lock:
            self._replies.extend(replies)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()

    def take_reply(self, request: RecordedRequest) -> Reply:
        """Record *request* and return the reply scripted for it (called by the handler)."""
        with self._lock:
            self._requests.append(request)
            if self._replies:
                return self._replies.popleft()
        return ErrorReply(500, {"error": {"message": "the test scripted no reply for this"}})


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeOpenAIServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        # The handler reaches the scripted replies through the server it is given.
        self.fake = fake


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 with chunked bodies, as real servers stream; the client keeps the connection.
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        assert isinstance(self.server, _HTTPServer)
        fake = self.server.fake
        length = int(self.headers.get("Content-Length", "0"))
        raw_body = self.rfile.read(length)
        body: dict[str, Any] = json.loads(raw_body or b"{}")
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = RecordedRequest(self.path, headers, body, raw_body)
        if self.path.partition("?")[0] != "/v1/chat/completions":
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        reply = fake.take_reply(request)
        if isinstance(reply, ErrorReply):
            self._send_json(reply.status, reply.body, reply.headers)
            return
        if isinstance(reply, RawReply):
            self._send_body(reply.body, reply.content_type)
            return
        if isinstance(reply, ResetReply) and reply.before_headers:
            self._reset()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for event in reply.events:
                self._send_chunk(f"data: {json.dumps(event)}\n\n".encode())
            if isinstance(reply, ResetReply):
                self._reset()
                return
            self._send_chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            # The client hung up mid-stream: a test stopped reading early, or the client
            # gave up at an error event. Nothing to answer any more.
            self.close_connection = True

    def _reset(self) -> None:
        # SO_LINGER with a zero timeout makes close() send a TCP RST instead of a FIN:
        # the client sees "connection reset by peer", as when a proxy dies.
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(
        self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self._send_body(json.dumps(body).encode(), "application/json", status, headers)

    def _send_body(
        self,
        data: bytes,
        content_type: str,
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # Keep test output clean.
