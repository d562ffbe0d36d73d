"""A harness's model call, run through a stack of typed middleware.

Run it with ``python examples/quickstart.py``. The "model" here is a stand-in that
echoes the last user message word by word, so the example needs no network; the
middleware is real and is what a harness would register:

- an Input handler that redacts e-mail addresses before the model sees them,
- a Wrap handler that caches answers per conversation and short-circuits on a hit,
- an Output handler that records token usage from the final result.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import anyio

from stageware import (
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelResult,
    InvokeModelStage,
    InvokeModelWrapHandler,
    Message,
    Messages,
    MiddlewareRegistry,
    ModelStopReason,
    ModelStreamChunkEvent,
    StreamEvent,
    SystemContentBlock,
    ToolChoice,
    ToolSpec,
    Usage,
)

EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")


class EchoModel:
    """Streams the last user message back, one word per chunk, like a model would."""

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: ToolChoice | None = None,
        system_prompt_content: list[SystemContentBlock] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[StreamEvent]:
        text = messages[-1]["content"][0].get("text", "")
        for word in text.split():
            yield {"contentBlockDelta": {"delta": {"text": word + " "}, "contentBlockIndex": 0}}
        yield {"messageStop": {"stopReason": "end_turn"}}


class Harness:
    """The piece of an agent loop that calls the model, with a middleware registry around it."""

    def __init__(self) -> None:
        # What an AgentHandle carries: stage contexts scope interrupt ids by agent_id.
        self.name = "quickstart"
        self.agent_id = "quickstart"
        self.model = EchoModel()
        self.middleware = MiddlewareRegistry()

    async def call_model(self, context: InvokeModelContext) -> AsyncIterator[InvokeModelEvent]:
        """The stage's terminal: stream the model the context names, then the stop reason."""
        text = ""
        async for chunk in context.model.stream(context.messages):
            yield ModelStreamChunkEvent(chunk=chunk)
            delta = chunk.get("contentBlockDelta")
            if delta is not None:
                text += delta["delta"].get("text", "")
        message: Message = {"role": "assistant", "content": [{"text": text.strip()}]}
        usage: Usage = {
            "inputTokens": 4,
            "outputTokens": len(text.split()),
            "totalTokens": 4 + len(text.split()),
        }
        yield ModelStopReason(
            stop_reason="end_turn", message=message, usage=usage, metrics={"latencyMs": 1}
        )

    async def ask(self, prompt: str) -> str:
        context = InvokeModelContext.from_host(
            agent=self,
            messages=[{"role": "user", "content": [{"text": prompt}]}],
            system_prompt="Answer briefly.",
            tool_specs=[],
            tool_choice=None,
            invocation_state={},
            model=self.model,
        )
        answer = ""
        async for event in self.middleware.invoke(InvokeModelStage, context, self.call_model):
            if isinstance(event, ModelStopReason):
                answer = str(event.message["content"][0].get("text", ""))
        return answer


def redact_emails(context: InvokeModelContext) -> InvokeModelContext:
    messages: list[Message] = [
        {
            **message,
            "content": [
                {**block, "text": EMAIL.sub("[email]", block.get("text", ""))}
                for block in message["content"]
            ],
        }
        for message in context.messages
    ]
    print("  input : redacted e-mail addresses")
    return context.replace(messages=messages)


def make_cache() -> InvokeModelWrapHandler:
    answers: dict[str, ModelStopReason] = {}

    async def cache(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        key = repr(context.messages)
        if key in answers:
            print("  wrap  : cache hit, the model is not called")
            yield answers[key]
            return
        print("  wrap  : cache miss, calling the model")
        async for event in next_fn(context):
            if isinstance(event, ModelStopReason):
                answers[key] = event
            yield event

    return cache


usage_log: list[int] = []


def record_usage(result: InvokeModelResult) -> InvokeModelResult:
    tokens = result.result.usage["totalTokens"]
    usage_log.append(tokens)
    print(f"  output: {tokens} tokens used")
    return result


async def main() -> None:
    harness = Harness()
    harness.middleware.add_middleware(InvokeModelStage.Input, redact_emails)
    harness.middleware.add_middleware(InvokeModelStage, make_cache())
    harness.middleware.add_middleware(InvokeModelStage.Output, record_usage)

    for prompt in [
        "Mail ada@example.com about the launch",
        "Mail ada@example.com about the launch",
    ]:
        print(f"> {prompt}")
        print(f"< {await harness.ask(prompt)}")


if __name__ == "__main__":
    anyio.run(main)
