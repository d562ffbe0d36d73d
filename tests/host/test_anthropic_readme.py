"""The agents guide's AnthropicModel example runs as written, against the fake server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.readme import first_block, page_of

from .fake_anthropic_server import (
    FakeAnthropicServer,
    SSEReply,
    message,
    text_block,
    thinking_block,
    tool_block,
)

HEADING = "## Running an agent"


def _example() -> str:
    return first_block(HEADING, "- **Anthropic.**")


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer()
    fake.start()
    yield fake
    fake.close()


def test_the_anthropic_example_runs(
    server: FakeAnthropicServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The example reads the key and the endpoint from the environment, as the SDK does.
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    server.reply(
        SSEReply(
            message(
                thinking_block("Use the tool.", "sig"),
                tool_block("toolu_1", "weather", {"city": "Oslo"}),
                stop_reason="tool_use",
                cache_write=1200,
            )
        ),
        SSEReply(message(text_block("Sunny in Oslo."), cache_read=1200)),
    )

    exec(compile(_example(), page_of(HEADING), "exec"), {})

    assert capsys.readouterr().out.splitlines() == ["Sunny in Oslo. 1200"]
    first, second = (request.body for request in server.requests)
    assert first["model"] == "claude-sonnet-4-6"
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert second["messages"][1]["content"][0]["type"] == "thinking"
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"
