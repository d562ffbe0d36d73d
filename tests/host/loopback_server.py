"""The plumbing the scripted loopback servers share, whatever protocol they speak.

``fake_openai_server``, ``fake_anthropic_server`` and ``fake_bedrock_server`` each script a
provider's streaming API for the real SDK. What they have in common lives here: the stdlib
``ThreadingHTTPServer`` on ``127.0.0.1`` (a free port) in a daemon thread, which serves
over real sockets on asyncio and trio alike; the queue of scripted replies and the record
of the requests received (``LoopbackServer``); and the handler's wire helpers
(``LoopbackHandler``): reading the request, chunked streaming, a whole body, a TCP reset.
Each fake keeps only its own protocol: its routes, reply types and framing.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, TypeVar

__all__ = ["LoopbackHTTPServer", "LoopbackHandler", "LoopbackServer"]

RequestT = TypeVar("RequestT")
ReplyT = TypeVar("ReplyT")
FakeT = TypeVar("FakeT")


class LoopbackServer(Generic[RequestT, ReplyT]):
    """Serves requests with *handler* from a queue of scripted replies, recording them.

    A subclass says what a request finds when the test scripted no reply for it
    (``unscripted_reply``) and names its URL as its client wants it.
    """

    def __init__(self, handler: type[LoopbackHandler]) -> None:
        self._lock = threading.Lock()
        self._replies: deque[ReplyT] = deque()
        self._requests: list[RequestT] = []
        self._http = LoopbackHTTPServer(self, handler)
        # A short poll interval keeps `close()` (which waits for the serve loop) fast.
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>``, without a path."""
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    @property
    def requests(self) -> list[RequestT]:
        """The requests received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def reply(self, *replies: ReplyT) -> None:
        """Queue replies for the next requests, in order."""
        with self._lock:
            self._replies.extend(replies)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()

    def record(self, request: RequestT) -> None:
        """Record a request that is refused before it takes a scripted reply."""
        with self._lock:
            self._requests.append(request)

    def take_reply(self, request: RequestT) -> ReplyT:
        """Record *request* and return the reply scripted for it (called by the handler)."""
        with self._lock:
            self._requests.append(request)
            if self._replies:
                return self._replies.popleft()
        return self.unscripted_reply()

    def unscripted_reply(self) -> ReplyT:
        """The reply to a request the test scripted none for: a server error, so it fails."""
        raise NotImplementedError


class LoopbackHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: LoopbackServer[Any, Any], handler: type[LoopbackHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        # The handler reaches the scripted replies through the server it is given.
        self.fake = fake


class LoopbackHandler(BaseHTTPRequestHandler):
    """A handler's wire helpers; a subclass writes ``do_POST`` for its protocol."""

    # HTTP/1.1 with chunked bodies, as real servers stream; the client keeps the connection.
    protocol_version = "HTTP/1.1"

    def fake_as(self, kind: type[FakeT]) -> FakeT:
        """The scripted server this handler answers for, checked to be a *kind*."""
        assert isinstance(self.server, LoopbackHTTPServer)
        fake = self.server.fake
        assert isinstance(fake, kind)
        return fake

    def read_body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def lower_headers(self) -> dict[str, str]:
        return {name.lower(): value for name, value in self.headers.items()}

    def start_chunked(self, content_type: str, headers: dict[str, str] | None = None) -> None:
        """Send a 200's headers for a body streamed in chunks (``send_chunk``)."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def send_chunk(self, data: bytes) -> None:
        # Flushed at once, so the client sees each event as it is sent.
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def end_chunks(self) -> None:
        """The last chunk: the streamed body is complete."""
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def send_body(
        self,
        data: bytes,
        content_type: str,
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> None:
        """A whole response with a ``Content-Length``."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def reset(self) -> None:
        """Reset the connection, whatever was sent so far."""
        # SO_LINGER with a zero timeout makes close() send a TCP RST instead of a FIN:
        # the client sees "connection reset by peer", as when a proxy dies.
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass  # Keep test output clean.
