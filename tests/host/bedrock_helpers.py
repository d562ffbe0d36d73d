"""Shared pieces of the BedrockModel tests: a model pointed at the fake server, collecting."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

from stageware._generated.payloads import Messages, StreamEvent
from stageware.bedrock import BedrockModel

from .fake_bedrock_server import ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, FakeBedrockServer

__all__ = ["HELLO", "collect", "make_model", "session"]

HELLO: Messages = [{"role": "user", "content": [{"text": "Hello"}]}]


def session() -> boto3.Session:
    """A session with static credentials, so that no test reads the machine's own."""
    return boto3.Session(
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        aws_session_token=SESSION_TOKEN,
        region_name="us-east-1",
    )


def make_model(server: FakeBedrockServer, *, attempts: int = 1, **kwargs: Any) -> BedrockModel:
    """A model on *server*, botocore retrying *attempts* - 1 times, failing fast otherwise."""
    config = Config(
        retries={"total_max_attempts": attempts, "mode": "standard"},
        connect_timeout=5,
        read_timeout=10,
    )
    return BedrockModel(
        "anthropic.claude-test-v1:0",
        boto_session=session(),
        endpoint_url=server.endpoint_url,
        boto_client_config=config,
        **kwargs,
    )


async def collect(
    model: BedrockModel, messages: Messages = HELLO, **kwargs: Any
) -> list[StreamEvent]:
    return [event async for event in model.stream(messages, **kwargs)]
