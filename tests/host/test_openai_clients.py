"""Clients ``OpenAIModel`` shares: by endpoint, credentials and event loop; closed with the loop.

Real ``openai`` clients against the fake server on loopback; loops run to their end with
``anyio.run`` on asyncio and on trio, and a subprocess checks that nothing warns
"unclosed" when the interpreter exits.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import traceback
from collections.abc import Iterator
from pathlib import Path

import anyio
import openai
import pytest

from stageware import Agent
from stageware._generated.payloads import Messages
from stageware._host.models._openai_clients import ClientSettings
from stageware.openai import OpenAIModel

from .fake_openai_server import FakeOpenAIServer, SSEReply, chunk

BACKENDS = ["asyncio", "trio"]
HELLO: Messages = [{"role": "user", "content": [{"text": "Hello"}]}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer()
    fake.start()
    yield fake
    fake.close()


def ok() -> SSEReply:
    return SSEReply([chunk({"content": "ok"}, "stop")])


async def clients_used(*models: OpenAIModel) -> list[openai.AsyncOpenAI]:
    """Each model's client on this loop, after a request made with it."""
    for model in models:
        async for _ in model.stream(HELLO):
            pass
    return [model.client for model in models]


@pytest.mark.parametrize("backend", BACKENDS)
def test_models_with_the_same_endpoint_and_key_share_a_client(
    server: FakeOpenAIServer, backend: str
) -> None:
    first = OpenAIModel("a", base_url=server.base_url, api_key="k1")
    same = OpenAIModel("b", base_url=server.base_url, api_key="k1")
    other_key = OpenAIModel("a", base_url=server.base_url, api_key="k2")
    server.reply(ok(), ok(), ok())

    clients = anyio.run(clients_used, first, same, other_key, backend=backend)

    assert clients[0] is clients[1]
    assert clients[2] is not clients[0]
    assert [request.headers["authorization"] for request in server.requests] == [
        "Bearer k1",
        "Bearer k1",
        "Bearer k2",
    ]


def test_a_different_endpoint_or_environment_gets_another_client(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def run() -> list[openai.AsyncOpenAI]:
        base = OpenAIModel("a", base_url=server.base_url, api_key="k")
        other_url = OpenAIModel("a", base_url=server.base_url + "/", api_key="k")
        clients = await clients_used(base, other_url)
        monkeypatch.setenv("OPENAI_ORG_ID", "org-2")
        other_org = OpenAIModel("a", base_url=server.base_url, api_key="k")
        return [*clients, *await clients_used(other_org)]

    server.reply(ok(), ok(), ok())
    clients = anyio.run(run)

    assert len({id(client) for client in clients}) == 3
    assert server.requests[2].headers["openai-organization"] == "org-2"
    assert "openai-organization" not in server.requests[0].headers


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_shared_client_is_closed_when_its_loop_ends_and_the_next_loop_gets_a_new_one(
    server: FakeOpenAIServer, backend: str
) -> None:
    model = OpenAIModel("a", base_url=server.base_url, api_key="k")
    server.reply(ok(), ok())

    [first] = anyio.run(clients_used, model, backend=backend)
    [second] = anyio.run(clients_used, model, backend=backend)

    assert first.is_closed()
    assert second.is_closed()
    assert second is not first
    assert len(server.requests) == 2


def test_synchronous_calls_each_run_on_a_loop_of_their_own(
    server: FakeOpenAIServer,
) -> None:
    agent = Agent(model=OpenAIModel("a", base_url=server.base_url, api_key="k"))
    server.reply(ok(), ok())

    results = [str(agent("one")), str(agent("two"))]

    # The second call would fail on the first loop's dead connections.
    assert results == ["ok", "ok"]


def test_a_client_built_before_any_loop_is_adopted_by_the_first(server: FakeOpenAIServer) -> None:
    model = OpenAIModel("a", base_url=server.base_url, api_key="k")
    before = model.client
    server.reply(ok())

    [used] = anyio.run(clients_used, model)

    assert used is before
    assert used.is_closed()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_client_passed_in_is_used_and_never_closed(
    server: FakeOpenAIServer, backend: str
) -> None:
    async def run() -> bool:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="mine", max_retries=0)
        async with OpenAIModel("a", client=client) as model:
            [used] = await clients_used(model)
        assert used is client
        closed = client.is_closed()
        await client.close()
        return closed

    server.reply(ok())

    assert anyio.run(run, backend=backend) is False
    assert server.requests[0].headers["authorization"] == "Bearer mine"


def test_a_missing_api_key_is_an_error_when_the_model_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(openai.OpenAIError, match="OPENAI_API_KEY"):
        OpenAIModel("a", base_url="http://127.0.0.1:9/v1")


_EXIT_SCRIPT = """
import asyncio, sys, gc
import anyio, trio
from stageware import Agent
from stageware._generated.payloads import Messages
from stageware.openai import OpenAIModel
from tests.host.fake_openai_server import FakeOpenAIServer, SSEReply, chunk

server = FakeOpenAIServer()
server.start()
server.reply(*[SSEReply([chunk({"content": "ok"}, "stop")]) for _ in range(4)])
model = OpenAIModel("a", base_url=server.base_url, api_key="k")
agent = Agent(model=model)
agent("sync on a loop of its own")

async def main():
    await agent.invoke_async("async")

asyncio.run(main())
trio.run(main)
anyio.run(main, backend="trio")
del agent, model
gc.collect()
server.close()
print("requests", len(server.requests))
"""


def test_no_connection_is_left_unclosed_at_exit(tmp_path: Path) -> None:
    script = tmp_path / "agent_script.py"
    script.write_text(textwrap.dedent(_EXIT_SCRIPT))
    root = Path(__file__).resolve().parents[2]
    # ResourceWarnings are hidden by default; "always" shows each "unclosed transport"
    # and "unclosed socket".
    done = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "requests 4"
    # (trio also warns about async generators inside `openai`'s stream that it leaves
    # unexhausted after `[DONE]`; those hold no connection.)
    assert "ResourceWarning: unclosed" not in done.stderr, done.stderr


def test_client_settings_show_no_secret_in_their_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    """A traceback that shows locals (``capture_locals``, pytest's ``--showlocals``, error
    trackers) prints them with ``repr()``."""
    monkeypatch.setenv("OPENAI_API_KEY", "env-secret")
    settings = ClientSettings.of("https://user:url-secret@proxy.example/v1", "key-secret")

    def fail(settings: ClientSettings) -> None:
        raise RuntimeError("failed")

    with pytest.raises(RuntimeError) as raised:
        fail(settings)
    shown = "".join(
        traceback.TracebackException.from_exception(raised.value, capture_locals=True).format()
    )

    assert "ClientSettings(endpoint='https://proxy.example/v1/')" in shown
    for secret in ("env-secret", "url-secret", "key-secret"):
        assert secret not in shown
        assert secret not in str(settings)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_client_used_by_hand_in_a_loop_is_closed_with_it_not_adopted_by_the_next(
    server: FakeOpenAIServer, backend: str
) -> None:
    model = OpenAIModel("a", base_url=server.base_url, api_key="k")
    server.reply(ok(), ok())

    async def by_hand() -> openai.AsyncOpenAI:
        # Before any request of the model's own on this loop.
        client = model.client
        stream = await client.chat.completions.create(model="a", messages=[], stream=True)
        async for _ in stream:
            pass
        return client

    used_by_hand = anyio.run(by_hand, backend=backend)
    [next_loops] = anyio.run(clients_used, model, backend=backend)

    assert used_by_hand.is_closed()
    assert next_loops is not used_by_hand
    assert len(server.requests) == 2


def test_a_client_that_fails_to_close_leaves_no_other_open(server: FakeOpenAIServer) -> None:
    first = OpenAIModel("a", base_url=server.base_url, api_key="k1")
    second = OpenAIModel("a", base_url=server.base_url, api_key="k2")
    server.reply(ok(), ok())
    reported: list[BaseException | None] = []

    async def run() -> list[openai.AsyncOpenAI]:
        asyncio.get_running_loop().set_exception_handler(
            lambda loop, context: reported.append(context.get("exception"))
        )
        clients = await clients_used(first, second)
        close = clients[0].close

        async def close_and_fail() -> None:
            await close()
            raise OSError("closing failed")

        clients[0].close = close_and_fail  # type: ignore[method-assign]
        return clients

    failing, other = asyncio.run(run())

    assert failing.is_closed()
    assert other.is_closed()
    # Still reported, where asyncio reports what fails as a loop ends.
    assert [str(error) for error in reported] == ["closing failed"]
