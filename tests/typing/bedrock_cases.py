"""BedrockModel: a ``Model`` an agent takes, with options a checker can check."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, assert_type

from stageware import Agent, Model
from stageware.bedrock import BedrockModel

model = BedrockModel(
    "anthropic.claude-sonnet-4-5",
    region_name="us-east-1",
    params={"inferenceConfig": {"maxTokens": 512}},
    guardrail={"guardrailIdentifier": "gr", "guardrailVersion": "1", "trace": "enabled"},
    structured_output="native",
)
as_model: Model = model
agent = Agent(model)
assert_type(model.supports_structured_output, bool)
assert_type(model.params, Mapping[str, Any])
assert_type(model.model_id, str)

BedrockModel("m", structured_output="json")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
BedrockModel("m", guardrail={"guardrailVersion": 1})  # type: ignore[dict-item]  # pyright: ignore[reportArgumentType]
BedrockModel("m", region="us-east-1")  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
