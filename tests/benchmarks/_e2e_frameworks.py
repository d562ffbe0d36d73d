"""How each framework of the end-to-end comparison makes an agent and runs one turn.

Each framework gets the same agent: a system prompt, one tool (``echo``, whose result is
2 KB of text), an OpenAI-compatible model on the loopback server with the same maximum
number of tokens, and a conversation that grows with every turn. A framework is imported
only when its agent is first made, so a worker process loads the one framework it
measures. Strands and Pydantic AI come with the ``benchmarks`` extra; they are imported by
name, so the type checkers, which do not see them, treat them as ``Any``.

An agent is made "as shipped" (``client=None``: the framework's default way of making an
OpenAI-compatible model from a URL and a key) or on a ``client`` shared between agents:
stageware's ``OpenAIModel(client=...)``, Strands 1.62's ``OpenAIModel(client=...)`` (as
shipped, Strands builds a new ``AsyncOpenAI`` for every request; given a client, it reuses
it) and Pydantic AI's ``OpenAIProvider(openai_client=...)``.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any

import openai

FRAMEWORKS = ("stageware", "strands", "pydantic_ai")
MODEL_ID = "loopback-model"
API_KEY = "unused"
SYSTEM_PROMPT = "You are a benchmark agent. Call the echo tool, then answer briefly."
PROMPT = "Echo ping, please."
MAX_TOKENS = 256
TOOL_RESULT_BYTES = 2048

Turn = Callable[[str], Awaitable[None]]
"""One agent bound to its conversation: awaiting it with a prompt runs one invocation."""


def echo_result(text: str) -> str:
    """The tool's result: *text* repeated to 2 KB."""
    return ((text + " ") * TOOL_RESULT_BYTES)[:TOOL_RESULT_BYTES]


def shared_client(base_url: str) -> openai.AsyncOpenAI:
    """One client for many agents, as an application that shares its pool would make."""
    return openai.AsyncOpenAI(base_url=base_url, api_key=API_KEY)


def _stageware_agent(base_url: str, client: openai.AsyncOpenAI | None) -> Turn:
    from stageware import Agent, tool
    from stageware.openai import OpenAIModel

    @tool
    def echo(text: str) -> str:
        """Echo the text back, padded to 2 KB.

        Args:
            text: What to echo.
        """
        return echo_result(text)

    params = {"max_tokens": MAX_TOKENS}
    model = (
        OpenAIModel(MODEL_ID, base_url=base_url, api_key=API_KEY, params=params)
        if client is None
        else OpenAIModel(MODEL_ID, client=client, params=params)
    )
    agent = Agent(model, tools=[echo], system_prompt=SYSTEM_PROMPT)

    async def turn(prompt: str) -> None:
        await agent.invoke_async(prompt)

    return turn


def _strands_agent(base_url: str, client: openai.AsyncOpenAI | None) -> Turn:
    strands: Any = importlib.import_module("strands")
    strands_openai: Any = importlib.import_module("strands.models.openai")
    managers: Any = importlib.import_module("strands.agent.conversation_manager")

    @strands.tool  # type: ignore[untyped-decorator]
    def echo(text: str) -> str:
        """Echo the text back, padded to 2 KB.

        Args:
            text: What to echo.
        """
        return echo_result(text)

    params = {"max_tokens": MAX_TOKENS}
    model = (
        strands_openai.OpenAIModel(
            client_args={"base_url": base_url, "api_key": API_KEY},
            model_id=MODEL_ID,
            params=params,
        )
        if client is None
        else strands_openai.OpenAIModel(client=client, model_id=MODEL_ID, params=params)
    )
    # Every framework sends the whole conversation: Strands' default manager would cut it to
    # its last 40 messages, so its requests would not be the ones the others send.
    agent = strands.Agent(
        model=model,
        tools=[echo],
        system_prompt=SYSTEM_PROMPT,
        callback_handler=None,
        conversation_manager=managers.NullConversationManager(),
    )

    async def turn(prompt: str) -> None:
        await agent.invoke_async(prompt)

    return turn


def _pydantic_ai_agent(base_url: str, client: openai.AsyncOpenAI | None) -> Turn:
    pydantic_ai: Any = importlib.import_module("pydantic_ai")
    models: Any = importlib.import_module("pydantic_ai.models.openai")
    providers: Any = importlib.import_module("pydantic_ai.providers.openai")

    def echo(text: str) -> str:
        """Echo the text back, padded to 2 KB.

        Args:
            text: What to echo.
        """
        return echo_result(text)

    provider = (
        providers.OpenAIProvider(base_url=base_url, api_key=API_KEY)
        if client is None
        else providers.OpenAIProvider(openai_client=client)
    )
    model = models.OpenAIChatModel(MODEL_ID, provider=provider)
    agent = pydantic_ai.Agent(
        model,
        tools=[echo],
        system_prompt=SYSTEM_PROMPT,
        model_settings={"max_tokens": MAX_TOKENS},
    )
    # Pydantic AI keeps no conversation in the agent: the caller passes it to each run.
    history: list[Any] = []

    async def drain(_context: Any, events: Any) -> None:
        # With a handler the model's answers are streamed, as the other two stream them.
        async for _event in events:
            pass

    async def turn(prompt: str) -> None:
        result = await agent.run(prompt, message_history=history, event_stream_handler=drain)
        history[:] = result.all_messages()

    return turn


_MAKERS: dict[str, Callable[[str, openai.AsyncOpenAI | None], Turn]] = {
    "stageware": _stageware_agent,
    "strands": _strands_agent,
    "pydantic_ai": _pydantic_ai_agent,
}


def make_agent(framework: str, base_url: str, client: openai.AsyncOpenAI | None = None) -> Turn:
    """A new agent of *framework* on the server at *base_url*, as shipped or on *client*."""
    return _MAKERS[framework](base_url, client)
