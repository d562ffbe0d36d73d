"""One blocking ConverseStream call, run in a thread, its events handed to the event loop.

boto3 is synchronous: the request (signing, sending, botocore's own retries) and every
read of the event stream block. :class:`EventPump` runs them in a thread of its own and
queues the decoded events; the event loop takes whatever has arrived without leaving the
loop, and waits in an anyio worker thread only when the queue is empty.

Why this shape, measured roughly on a loaded two-core machine: a hop to a worker thread
and back (``anyio.to_thread.run_sync``) costs 0.2-0.5 ms on asyncio and on trio, a wake-up
from a thread (``anyio.from_thread.run_sync``) about as much. One hop per event would add
that to each of the hundreds of events a long answer streams, even when they arrive
faster than the loop takes them. Here events that are already queued cost no hop at all;
a hop is paid only when the loop has caught up with the network, where it waits anyway.

Stopping: :meth:`EventPump.close` (on cancellation, on ``aclose()``, at the end) marks the
pump closed, wakes a waiting worker, and shuts the HTTP response's socket down for
reading, which ends a read blocked in the pump's thread at once; the thread then closes
the response. A close that comes while the request itself is still being sent cannot cut
it short (botocore holds that socket); the thread closes the response as soon as the call
returns, within botocore's connect and read timeouts.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, final

import anyio.to_thread

__all__ = ["EventPump"]

_THREAD_NAME: Final = "stageware-bedrock-stream"


@final
class EventPump:
    """Runs *call* in a thread and queues the events of the stream it returns.

    *call* makes the ConverseStream request and returns botocore's response, whose
    ``"stream"`` is the iterable ``EventStream``.
    """

    __slots__ = (
        "_call",
        "_closed",
        "_condition",
        "_error",
        "_events",
        "_finished",
        "_stream",
        "thread",
    )

    def __init__(self, call: Callable[[], Mapping[str, Any]]) -> None:
        self._call = call
        self._condition = threading.Condition()
        self._events: deque[Mapping[str, Any]] = deque()
        self._finished = False
        self._closed = False
        self._error: BaseException | None = None
        self._stream: Any = None
        self.thread = threading.Thread(target=self._run, name=_THREAD_NAME, daemon=True)
        """The thread the call runs in (tests check that it ends)."""

    def start(self) -> None:
        self.thread.start()

    async def next_batch(self) -> list[Mapping[str, Any]] | None:
        """The events that arrived since the last batch, waiting for one if none has.

        ``None`` when the stream has ended and every event was taken.

        Raises:
            BaseException: What the call or the stream raised, once its events are taken.
        """
        while True:
            batch = self._take()
            if batch is None or batch:
                return batch
            # Abandoned on cancellation: `close()` then wakes the worker, so it never
            # outlives the call.
            await anyio.to_thread.run_sync(self._wait, abandon_on_cancel=True)

    def close(self) -> None:
        """Stop the pump: no more reads, and the response closed by the pump's thread."""
        with self._condition:
            self._closed = True
            self._events.clear()
            stream = self._stream
            self._condition.notify_all()
        if stream is not None:
            _shut_down(stream)

    def _take(self) -> list[Mapping[str, Any]] | None:
        with self._condition:
            if self._events:
                batch = list(self._events)
                self._events.clear()
                return batch
            if not self._finished:
                return []
            error, self._error = self._error, None
        if error is not None:
            raise error
        return None

    def _wait(self) -> None:
        with self._condition:
            self._condition.wait_for(lambda: self._events or self._finished or self._closed)

    def _run(self) -> None:
        stream: Any = None
        try:
            response = self._call()
            stream = response["stream"]
            with self._condition:
                if self._closed:
                    return
                self._stream = stream
            events: Iterable[Mapping[str, Any]] = stream
            for event in events:
                with self._condition:
                    if self._closed:
                        return
                    self._events.append(event)
                    self._condition.notify_all()
        except BaseException as error:  # Handed to the loop, which raises it there.
            with self._condition:
                if not self._closed:
                    self._error = error
        finally:
            with self._condition:
                self._finished = True
                self._condition.notify_all()
            if stream is not None:
                stream.close()


def _shut_down(stream: Any) -> None:
    """End any read blocked on *stream*'s socket, from another thread.

    botocore's ``EventStream`` reads a urllib3 response (its ``_raw_stream``); closing a
    socket does not wake a thread blocked reading it, shutting it down does, and urllib3
    (2.3 and later) does exactly that in ``HTTPResponse.shutdown()``. With an older urllib3
    the read ends at botocore's read timeout instead.
    """
    shutdown = getattr(getattr(stream, "_raw_stream", None), "shutdown", None)
    if callable(shutdown):
        # The response already closed or released by the pump's thread (urllib3 says so
        # with a ValueError or a RuntimeError): no read is left to wake.
        with contextlib.suppress(OSError, ValueError, RuntimeError):
            shutdown()
