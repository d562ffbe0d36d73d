"""The agents guide's Bedrock example runs as written, against the fake server.

The example is what a user writes; the test points boto3 at the fake server the way a
user would point it at a VPC endpoint, through the environment
(``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``), with static credentials and no config files.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.readme import first_block, page_of

from .fake_bedrock_server import (
    ACCESS_KEY,
    SECRET_KEY,
    FakeBedrockServer,
    StreamReply,
    metadata,
    text_events,
)

HEADING = "## Running an agent"


def _example() -> str:
    return first_block(HEADING, "- **Bedrock.**")


@pytest.fixture
def server() -> Iterator[FakeBedrockServer]:
    fake = FakeBedrockServer()
    fake.start()
    yield fake
    fake.close()


@pytest.fixture
def environment(server: FakeBedrockServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """boto3 pointed at *server* through the environment, with no config files."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.endpoint_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))


@pytest.mark.usefixtures("environment")
def test_the_bedrock_example_runs(
    server: FakeBedrockServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.reply(StreamReply([*text_events("It has shipped."), metadata(cache_read=9)]))

    exec(compile(_example(), page_of(HEADING), "exec"), {})

    assert capsys.readouterr().out.splitlines() == ["end_turn It has shipped. 9"]
    (request,) = server.requests
    assert request.model_id == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert request.body["inferenceConfig"] == {"maxTokens": 1024}
    assert request.body["guardrailConfig"]["trace"] == "enabled"
    assert request.body["system"] == [{"text": "Be brief."}]


@pytest.mark.usefixtures("environment")
def test_the_bedrock_example_runs_when_nothing_was_read_from_the_cache(
    server: FakeBedrockServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.reply(StreamReply([*text_events("It has shipped."), metadata()]))

    exec(compile(_example(), page_of(HEADING), "exec"), {})

    assert capsys.readouterr().out.splitlines() == ["end_turn It has shipped. 0"]
