"""The agents guide's example of shared OpenAI clients runs as written, against the fake server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.readme import first_block, page_of

from .fake_openai_server import FakeOpenAIServer, SSEReply, chunk

HEADING = "## Running an agent\n"
SHOWN_URL = '"http://localhost:11434/v1"'


def _example() -> str:
    return first_block(HEADING, "- **OpenAI clients are shared.**")


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer()
    fake.start()
    yield fake
    fake.close()


def test_the_shared_clients_example_runs(
    server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _example()
    assert SHOWN_URL in code
    server.reply(*(SSEReply([chunk({"content": f"answer {n}"}, "stop")]) for n in range(3)))

    exec(compile(code.replace(SHOWN_URL, repr(server.base_url)), page_of(HEADING), "exec"), {})

    assert capsys.readouterr().out.splitlines() == ["answer 0 answer 1", "answer 2"]
    bodies = [request.body for request in server.requests]
    assert [body["model"] for body in bodies] == ["llama3", "llama3:70b", "llama3"]
    assert bodies[1]["temperature"] == 0
    assert "temperature" not in bodies[0]
