"""AnthropicModel's typed surface: a Model for Agent, its options checked by both checkers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, assert_type

from stageware import Agent, Model
from stageware.anthropic import AnthropicModel, ModelThrottledError

model = AnthropicModel("claude-sonnet-4-5", max_tokens=1024, structured_output="tool")


def it_is_a_model_an_agent_takes() -> None:
    as_model: Model = model
    Agent(as_model)
    Agent(AnthropicModel("claude-sonnet-4-5"))


def its_attributes_are_typed() -> None:
    assert_type(model.model_id, str)
    assert_type(model.max_tokens, int)
    assert_type(model.supports_structured_output, bool)
    assert_type(model.params, Mapping[str, Any])


def its_errors_are_the_shared_ones(error: ModelThrottledError) -> None:
    assert_type(error.retry_after, float | None)


def an_unknown_structured_output_mode_is_rejected() -> None:
    AnthropicModel("m", structured_output="json")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def a_misspelled_option_is_rejected() -> None:
    AnthropicModel("m", max_token=5)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


def max_tokens_is_a_number() -> None:
    AnthropicModel("m", max_tokens="5")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
