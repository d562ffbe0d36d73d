"""Stopping a BedrockModel stream early: cancellation and ``aclose()``, on asyncio and trio.

The fake server sends a few events and then hangs, so a read is blocked in the pump's
thread when the stream is stopped. Stopping must close the HTTP response (the server
sees the client hang up) and end that thread, instead of leaving it blocked.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import anyio
import pytest

from stageware._generated.payloads import StreamEvent

from .bedrock_helpers import HELLO, make_model
from .fake_bedrock_server import FakeBedrockServer, StreamReply, metadata, text_events

pytestmark = pytest.mark.anyio

_PUMP_THREAD = "stageware-bedrock-stream"


@pytest.fixture
def server() -> Iterator[FakeBedrockServer]:
    fake = FakeBedrockServer()
    fake.start()
    yield fake
    fake.close()


def _pump_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == _PUMP_THREAD]


async def _assert_stopped(server: FakeBedrockServer) -> None:
    """The server saw the hang-up and no pump thread is left, within a few seconds."""
    with anyio.fail_after(5):
        while not server.hung_up.is_set() or _pump_threads():
            await anyio.sleep(0.01)


async def test_cancelling_mid_stream_closes_the_response_and_ends_the_thread(
    server: FakeBedrockServer,
) -> None:
    server.reply(StreamReply(text_events("partial")[:2], hang=True))
    events: list[StreamEvent] = []

    with anyio.CancelScope() as scope:
        async for event in make_model(server).stream(HELLO):
            events.append(event)
            if len(events) == 2:
                # The next read blocks in the pump's thread; cancel while it waits.
                scope.deadline = anyio.current_time() + 0.2

    assert scope.cancelled_caught
    assert len(events) == 2
    await _assert_stopped(server)


async def test_cancelling_before_the_first_event_stops_the_read(server: FakeBedrockServer) -> None:
    server.reply(StreamReply([], hang=True))

    with anyio.move_on_after(0.5) as scope:
        async for _ in make_model(server).stream(HELLO):
            pytest.fail("the server sent no event")

    assert scope.cancelled_caught
    await _assert_stopped(server)


async def test_aclose_mid_stream_closes_the_response_and_ends_the_thread(
    server: FakeBedrockServer,
) -> None:
    server.reply(StreamReply(text_events("partial")[:2], hang=True))
    stream = make_model(server).stream(HELLO)

    assert await anext(stream) == {"messageStart": {"role": "assistant"}}
    await stream.aclose()

    await _assert_stopped(server)


async def test_the_model_streams_again_after_a_cancelled_call(server: FakeBedrockServer) -> None:
    server.reply(
        StreamReply(text_events("partial")[:2], hang=True),
        StreamReply([*text_events("whole"), metadata()]),
    )
    model = make_model(server)

    with anyio.CancelScope() as scope:
        async for _ in model.stream(HELLO):
            # Cancelled once the first request has its answer: a request still on its
            # way could reach the server after the second and take its scripted reply.
            scope.cancel()
    events = [event async for event in model.stream(HELLO)]

    assert {"messageStop": {"stopReason": "end_turn"}} in events
    await _assert_stopped(server)


async def test_aclose_closes_the_client_the_model_built_and_a_new_call_builds_another(
    server: FakeBedrockServer,
) -> None:
    server.reply(
        StreamReply([*text_events("one"), metadata()]),
        StreamReply([*text_events("two"), metadata()]),
    )
    async with make_model(server) as model:
        first = [event async for event in model.stream(HELLO)]
    second = [event async for event in model.stream(HELLO)]
    await model.aclose()

    assert {"contentBlockDelta": {"delta": {"text": "one"}, "contentBlockIndex": 0}} in first
    assert {"contentBlockDelta": {"delta": {"text": "two"}, "contentBlockIndex": 0}} in second
    assert len(server.requests) == 2
