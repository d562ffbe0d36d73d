"""The README's example of shared OpenAI clients runs as written, against the fake server."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from .fake_openai_server import FakeOpenAIServer, SSEReply, chunk

README = Path(__file__).resolve().parents[2] / "README.md"
README_URL = '"http://localhost:11434/v1"'


def _example() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("- **OpenAI clients are shared.**")
    block = text[start:].split("  ```python\n", 1)[1].split("  ```\n", 1)[0]
    return textwrap.dedent(block)


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
    assert README_URL in code
    server.reply(*(SSEReply([chunk({"content": f"answer {n}"}, "stop")]) for n in range(3)))

    exec(compile(code.replace(README_URL, repr(server.base_url)), str(README), "exec"), {})

    assert capsys.readouterr().out.splitlines() == ["answer 0 answer 1", "answer 2"]
    bodies = [request.body for request in server.requests]
    assert [body["model"] for body in bodies] == ["llama3", "llama3:70b", "llama3"]
    assert bodies[1]["temperature"] == 0
    assert "temperature" not in bodies[0]
