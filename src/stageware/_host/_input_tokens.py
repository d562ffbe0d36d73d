"""``InvokeModelContext.projected_input_tokens``: what the next model call will cost in input.

A conversation manager (InvokeModel middleware) reads the projection to shorten the
history before the call, rather than after the provider refused it. The host fills it
only where an InvokeModel Input or Wrap handler can see the context; elsewhere nobody
can read it, and counting would be pure cost. Its value, for the request as the host
built it (messages, system prompt, tool specs; before middleware and before a
structured run's output tool):

- a model with ``count_tokens`` (``TokenCounter``) counts it itself; a count that
  fails falls back to the estimate below, with a warning;
- otherwise ``estimate_tokens`` (one token per four characters), **calibrated**: every
  response reports the input tokens the provider counted, so after each call the host
  divides that by its estimate of the request actually sent (after middleware) and
  scales the next projection by the ratio. A tokenizer that runs denser or looser than
  four characters a token is corrected from the second call on, at no cost. The ratio
  is kept within ``RATIO_LIMITS`` (a report far outside is not comparable: a server
  that reports no usage, say), is taken from the last call only, and applies only
  while the agent's model is the one it was measured on (a call another model served
  sets it for that model, and the agent's model starts again at 1).

The reported input is ``inputTokens`` plus the prompt cache's ``cacheReadInputTokens``
and ``cacheWriteInputTokens``, as Converse, Bedrock and Anthropic report them (their
``inputTokens`` leaves the cached part out).

Cost per call, by design O(new messages), not O(history): the messages are the
host's history copies, counted with ``RunningCharacters`` (one comparison in C, then
only what changed); the tool specs' characters are kept while the specs are the same;
the sent request is counted the same way, so a window a manager slides is counted once
per call, never the history behind it.
"""

from __future__ import annotations

import logging
import math
from typing import Final, final

from stageware._generated.payloads import Messages, SystemContentBlock, ToolSpec, Usage

from ._token_estimate import RunningCharacters, request_characters, tokens_for_characters
from .models import Model, TokenCounter

__all__ = ["RATIO_LIMITS", "InputTokens"]

logger = logging.getLogger(__name__)

RATIO_LIMITS: Final = (0.25, 4.0)
"""The smallest and largest calibration ratio applied to the estimate."""


@final
class _SpecCharacters:
    """The characters of a list of tool specs, kept while the specs are the same."""

    __slots__ = ("_characters", "_specs")

    def __init__(self) -> None:
        self._specs: list[ToolSpec] = []
        self._characters = 0

    def count(self, specs: list[ToolSpec]) -> int:
        # The spec copies stay the same objects from call to call: one comparison in C.
        if specs != self._specs:
            self._specs = list(specs)
            self._characters = request_characters(tool_specs=specs)
        return self._characters


@final
class InputTokens:
    """One agent's projection of its model calls' input tokens, and its calibration."""

    __slots__ = ("_history", "_model", "_ratio", "_sent", "_sent_specs", "_specs")

    def __init__(self) -> None:
        self._history = RunningCharacters()
        self._specs = _SpecCharacters()
        self._sent = RunningCharacters()
        self._sent_specs = _SpecCharacters()
        self._model: Model | None = None
        self._ratio = 1.0

    async def project(
        self,
        model: Model,
        messages: Messages,
        tool_specs: list[ToolSpec],
        system_prompt: str | None,
        system_prompt_content: list[SystemContentBlock] | None,
    ) -> int:
        """The projected input tokens of a call of *model* with this request."""
        if isinstance(model, TokenCounter):
            try:
                return await model.count_tokens(
                    messages,
                    tool_specs,
                    system_prompt,
                    system_prompt_content=system_prompt_content,
                )
            except Exception as error:
                # A count is an aid to the call, not part of it: estimate instead.
                logger.warning(
                    "count_tokens of %s failed, estimating the input tokens instead: %r",
                    type(model).__name__,
                    error,
                )
        characters = self._history.count(messages) + self._specs.count(tool_specs)
        characters += request_characters(system_prompt=system_prompt_content or system_prompt)
        estimate = tokens_for_characters(characters)
        if model is not self._model:
            return estimate
        return math.ceil(estimate * self._ratio)

    def estimate_sent(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None,
        system_prompt: str | None,
        system_prompt_content: list[SystemContentBlock] | None,
    ) -> int:
        """The estimate of the request the terminal sends, to calibrate against."""
        characters = self._sent.count(messages) + self._sent_specs.count(tool_specs or [])
        characters += request_characters(system_prompt=system_prompt_content or system_prompt)
        return tokens_for_characters(characters)

    def calibrate(self, model: Model, estimate: int, usage: Usage) -> None:
        """Learn the ratio of what *model* reported in *usage* to the *estimate* of its request."""
        reported = (
            usage["inputTokens"]
            + usage.get("cacheReadInputTokens", 0)
            + usage.get("cacheWriteInputTokens", 0)
        )
        if reported <= 0 or estimate <= 0:
            return  # no report to learn from (a server that sends no usage)
        low, high = RATIO_LIMITS
        self._model = model
        self._ratio = min(high, max(low, reported / estimate))
