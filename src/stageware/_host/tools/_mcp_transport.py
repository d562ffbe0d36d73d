"""An MCP transport whose end is seen: the server's side closed while the client still ran.

The SDK fails the calls waiting when a server's stream ends (a stdio server that exited),
but keeps the session object, so later calls fail one by one and the tools it listed are
still offered. Wrapping the transport's read stream lets the client notice the end of
stream itself, when it happens, and end the session (``_mcp_client`` then drops the
tools and says that the server exited).
"""

from __future__ import annotations

from types import TracebackType
from typing import Self, final

import anyio
from mcp.client import Transport

# The types the SDK's public Transport protocol is written in; they have no public alias.
from mcp.client._transport import ReadStream, TransportStreams
from mcp.shared.message import SessionMessage

__all__ = ["WatchedTransport"]


@final
class WatchedTransport:
    """*transport*, with ``ended`` set once the server's side of it has ended."""

    __slots__ = ("_transport", "ended")

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self.ended = anyio.Event()

    async def __aenter__(self) -> TransportStreams:
        read, write = await self._transport.__aenter__()
        return _WatchedRead(read, self.ended), write

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        return await self._transport.__aexit__(exc_type, exc, traceback)


@final
class _WatchedRead:
    """A read stream that sets *ended* at its end of stream."""

    __slots__ = ("_ended", "_stream")

    def __init__(self, stream: ReadStream[SessionMessage | Exception], ended: anyio.Event):
        self._stream = stream
        self._ended = ended

    @property
    def last_context(self) -> object:
        # The SDK reads the sender's context from the stream it iterates, if it has one.
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._ended.set()
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self._stream.__anext__()
        except (StopAsyncIteration, anyio.ClosedResourceError):
            self._ended.set()
            raise

    async def __aenter__(self) -> Self:
        await self._stream.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        return await self._stream.__aexit__(exc_type, exc_val, exc_tb)
