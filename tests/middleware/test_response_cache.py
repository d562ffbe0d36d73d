"""ResponseCache answers a repeated request from its cache, and only a request it has seen.

Through real ``Agent``s with scripted models (which record every request they get, so a
hit is a request the model never saw), on asyncio and trio.
"""

from __future__ import annotations

import pickle
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from stageware import (
    Agent,
    InvokeModelContext,
    InvokeModelEvent,
    InvokeModelNext,
    InvokeModelStage,
    ModelError,
    ModelStreamChunkEvent,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    tool,
)
from stageware.middleware import CacheBackend, CachedResponse, MemoryCache, ResponseCache

pytestmark = pytest.mark.anyio


def cached_agent(model: ScriptedModel, cache: ResponseCache, **options: Any) -> Agent:
    agent = Agent(model, **options)
    agent.add_middleware(InvokeModelStage, cache)
    return agent


def stored(cache: ResponseCache) -> int:
    assert isinstance(cache.backend, MemoryCache)
    return len(cache.backend)


# --- hits and misses ---------------------------------------------------------------------


async def test_a_repeated_request_is_answered_without_calling_the_model() -> None:
    model = ScriptedModel(["Paris."])
    cache = ResponseCache()

    first = await cached_agent(model, cache).invoke_async("Capital of France?")
    second = await cached_agent(model, cache).invoke_async("Capital of France?")

    assert (first.text, second.text) == ("Paris.", "Paris.")
    assert len(model.requests) == 1
    assert (cache.hits, cache.misses) == (1, 1)


async def test_a_hit_streams_the_stored_chunks_and_costs_no_tokens() -> None:
    model = ScriptedModel(["A long enough answer to arrive in several chunks."], chunk_size=8)
    cache = ResponseCache()
    first = await cached_agent(model, cache).invoke_async("Q")

    chunks: list[dict[str, Any]] = []
    async for event in cached_agent(model, cache).stream_async("Q"):
        if isinstance(event, ModelStreamChunkEvent):
            chunks.append(dict(event.chunk))
    second = await cached_agent(model, cache).invoke_async("Q")

    deltas = [c["contentBlockDelta"]["delta"]["text"] for c in chunks if "contentBlockDelta" in c]
    assert "".join(deltas) == "A long enough answer to arrive in several chunks."
    assert len(deltas) > 1
    zero = {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}
    assert [c["metadata"]["usage"] for c in chunks if "metadata" in c] == [zero]
    assert first.metrics.usage["totalTokens"] > 0
    assert second.metrics.usage == zero
    assert second.metrics.model_calls == 1  # the stage ran; the model did not
    assert len(model.requests) == 1


async def test_a_replayed_tool_call_gets_a_fresh_id_and_runs_the_tool_again() -> None:
    runs: list[str] = []

    @tool
    def lookup(order_id: int) -> str:
        """Look up an order.

        Args:
            order_id: The order.
        """
        runs.append(str(order_id))
        return "shipped"

    call = ScriptedTurn(tool_calls=[ScriptedToolCall("lookup", {"order_id": 7}, id="call_1")])
    model = ScriptedModel([call, "Shipped.", "Shipped, again."])
    cache = ResponseCache()

    first = cached_agent(model, cache, tools=[lookup])
    second = cached_agent(model, cache, tools=[lookup])
    await first.invoke_async("Where is 7?")
    result = await second.invoke_async("Where is 7?")

    # The tool call came from the cache, with a fresh id; so the history after it differs
    # from the first agent's, and the answer after it is the model's.
    assert runs == ["7", "7"]
    assert result.text == "Shipped, again."
    assert len(model.requests) == 3
    replayed = second.messages[1]["content"][0]["toolUse"]["toolUseId"]
    assert replayed != "call_1"
    assert second.messages[2]["content"][0]["toolResult"]["toolUseId"] == replayed


# --- what the key holds -------------------------------------------------------------------


def context_for(**changes: Any) -> InvokeModelContext:
    fields: dict[str, Any] = {
        "agent": None,
        "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
        "system_prompt": "Be brief.",
        "tool_specs": [{"name": "t", "description": "A tool.", "inputSchema": {"json": {}}}],
        "tool_choice": None,
        "invocation_state": {},
        "model": ScriptedModel([], model_id="m"),
    }
    fields.update(changes)
    return InvokeModelContext(**fields)


class Answer(BaseModel):
    text: str


class OtherAnswer(BaseModel):
    text: str
    sure: bool


@pytest.mark.parametrize(
    "change",
    [
        {"messages": [{"role": "user", "content": [{"text": "Hi!"}]}]},
        {"system_prompt": "Be long."},
        {"system_prompt": [{"text": "Be brief."}]},
        {"tool_specs": []},
        {"tool_specs": [{"name": "t", "description": "Another.", "inputSchema": {"json": {}}}]},
        {"tool_choice": {"any": {}}},
        {"model": ScriptedModel([], model_id="other")},
        {"structured_output_model": Answer},
    ],
    ids=lambda change: next(iter(change)),
)
def test_a_changed_request_has_another_key(change: dict[str, Any]) -> None:
    cache = ResponseCache()
    assert cache.key(context_for()) != cache.key(context_for(**change))


def test_the_key_is_stable_and_ignores_what_does_not_shape_the_answer() -> None:
    cache = ResponseCache()
    key = cache.key(context_for())
    assert key is not None
    assert len(key) == 64
    assert key == ResponseCache().key(
        context_for(invocation_state={"user": "u1"}, model=ScriptedModel(["x"], model_id="m"))
    )
    assert cache.key(context_for(structured_output_model=Answer)) != cache.key(
        context_for(structured_output_model=OtherAnswer)
    )
    assert key != ResponseCache(namespace="v2").key(context_for())


def test_a_request_with_bytes_is_keyed_and_one_with_other_objects_is_not() -> None:
    image = {"image": {"format": "png", "source": {"bytes": b"\x89PNG"}}}
    other = {"image": {"format": "png", "source": {"bytes": b"\x89PNH"}}}
    cache = ResponseCache()
    with_image = cache.key(context_for(messages=[{"role": "user", "content": [image]}]))
    assert with_image is not None
    assert with_image != cache.key(context_for(messages=[{"role": "user", "content": [other]}]))
    odd = [{"role": "user", "content": [{"text": object()}]}]
    assert cache.key(context_for(messages=odd)) is None


async def test_a_changed_system_prompt_or_model_misses_through_the_agent() -> None:
    model = ScriptedModel(["One.", "Two.", "Three."], model_id="a")
    other = ScriptedModel(["Other."], model_id="b")
    cache = ResponseCache()

    await cached_agent(model, cache, system_prompt="Be brief.").invoke_async("Q")
    await cached_agent(model, cache, system_prompt="Be long.").invoke_async("Q")
    answer = (await cached_agent(other, cache, system_prompt="Be brief.").invoke_async("Q")).text

    assert answer == "Other."
    assert (len(model.requests), cache.hits) == (2, 0)


# --- what is not stored -------------------------------------------------------------------


async def test_a_failed_call_is_not_stored() -> None:
    model = ScriptedModel(
        [ScriptedTurn(text="Half", error=ModelError("reset"), error_after_chunks=3), "Whole."]
    )
    cache = ResponseCache()
    agent = cached_agent(model, cache, retry_strategy=None)

    with pytest.raises(ModelError):
        await agent.invoke_async("Q")
    assert stored(cache) == 0
    assert (await cached_agent(model, cache).invoke_async("Q")).text == "Whole."


async def test_a_cut_short_answer_is_not_stored_unless_asked() -> None:
    cut = ScriptedTurn(text="Trunc", stop_reason="max_tokens")
    model = ScriptedModel([cut, cut])
    default, keeps_all = ResponseCache(), ResponseCache(stop_reasons=["max_tokens"])

    await cached_agent(model, default).invoke_async("Q")
    await cached_agent(model, keeps_all).invoke_async("Q")

    assert (stored(default), stored(keeps_all)) == (0, 1)


async def test_a_cancelled_call_is_not_stored() -> None:
    model = ScriptedModel(["A slow answer, one chunk at a time."], chunk_size=2, chunk_delay=0.01)
    cache = ResponseCache()
    agent = cached_agent(model, cache)

    with anyio.move_on_after(0.05) as scope:
        await agent.invoke_async("Q")

    assert scope.cancelled_caught
    assert stored(cache) == 0


# Not under a journal: the middleware leaves the cache's generator to asyncio's garbage
# finalizer, which closes each generator of the chain in a task of its own, and a journal
# step's close awaits its task (``_journal_step``): two finalizer tasks then close one
# generator at once.
@pytest.mark.no_journal
async def test_a_reader_that_stops_early_stores_nothing() -> None:
    cache = ResponseCache()

    async def first_chunk_only(
        context: InvokeModelContext, next_fn: InvokeModelNext
    ) -> AsyncIterator[InvokeModelEvent]:
        async for event in cache(context, next_fn):
            yield event
            break
        raise ModelError("gave up after one chunk")

    agent = Agent(ScriptedModel(["Answer."]), retry_strategy=None)
    agent.add_middleware(InvokeModelStage, first_chunk_only)
    with pytest.raises(ModelError):
        await agent.invoke_async("Q")
    assert stored(cache) == 0


# --- backends -----------------------------------------------------------------------------


async def test_the_memory_cache_evicts_the_least_recently_used() -> None:
    model = ScriptedModel(["A1", "B1", "A2-unused", "C1", "B2"])
    cache = ResponseCache(MemoryCache(max_entries=2))

    for prompt in ("A", "B", "A", "C", "B"):  # A is used again, so B is the one evicted
        await cached_agent(model, cache).invoke_async(prompt)

    asked = [request.messages[-1]["content"][0]["text"] for request in model.requests]
    assert asked == ["A", "B", "C", "B"]


async def test_the_memory_cache_forgets_after_its_ttl() -> None:
    now = [100.0]
    model = ScriptedModel(["First.", "Second."])
    cache = ResponseCache(MemoryCache(ttl=timedelta(seconds=60), timer=lambda: now[0]))

    answers = [(await cached_agent(model, cache).invoke_async("Q")).text]
    now[0] += 59.9
    answers.append((await cached_agent(model, cache).invoke_async("Q")).text)
    now[0] += 0.1
    answers.append((await cached_agent(model, cache).invoke_async("Q")).text)

    assert answers == ["First.", "First.", "Second."]


class PickledBackend:
    """A backend of one's own: keeps pickled bytes, as a Redis-backed one would."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    async def get(self, key: str) -> CachedResponse | None:
        stored = self.data.get(key)
        loaded: CachedResponse | None = None if stored is None else pickle.loads(stored)
        return loaded

    async def set(self, key: str, value: CachedResponse) -> None:
        self.data[key] = pickle.dumps(value)


async def test_a_custom_backend_stores_and_serves_responses() -> None:
    backend = PickledBackend()
    model = ScriptedModel(["Stored."])
    assert isinstance(backend, CacheBackend)

    await cached_agent(model, ResponseCache(backend)).invoke_async("Q")
    again = await cached_agent(model, ResponseCache(backend)).invoke_async("Q")

    assert again.text == "Stored."
    assert len(backend.data) == 1
    assert len(model.requests) == 1


def test_bad_options_are_refused() -> None:
    with pytest.raises(TypeError, match="is not a CacheBackend"):
        ResponseCache(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_entries must be at least 1, got 0"):
        MemoryCache(0)
    with pytest.raises(ValueError, match="ttl must be a positive duration or None, got -1"):
        MemoryCache(ttl=-1)


# --- review fixes: model settings, fresh ids, failing backends, threads ------------------


def adapter_pairs() -> list[tuple[object, object]]:
    from stageware.anthropic import AnthropicModel
    from stageware.bedrock import BedrockModel
    from stageware.openai import OpenAIModel

    def bedrock(**options: Any) -> BedrockModel:
        return BedrockModel("anthropic.claude-3", region_name="us-east-1", **options)

    def anthropic(**options: Any) -> AnthropicModel:
        return AnthropicModel("claude-sonnet-4-5", api_key="k", **options)

    def openai(**options: Any) -> OpenAIModel:
        return OpenAIModel("gpt-4o", api_key="k", **options)

    guardrail = {"guardrailIdentifier": "gr-1", "guardrailVersion": "1"}
    return [
        (bedrock(), bedrock(guardrail=guardrail)),
        (bedrock(), bedrock(structured_output="native")),
        (bedrock(), bedrock(params={"inferenceConfig": {"maxTokens": 64}})),
        (bedrock(), bedrock(cache_tools=True)),
        (anthropic(), anthropic(max_tokens=64)),
        (anthropic(), anthropic(structured_output="tool")),
        (anthropic(), anthropic(params={"stop_sequences": ["END"]})),
        (openai(), openai(structured_output="tool")),
        (openai(), openai(params={"temperature": 0.1})),
    ]


@pytest.mark.parametrize("pair", range(9))
def test_every_adapter_setting_that_shapes_the_request_is_in_the_key(pair: int) -> None:
    plain, changed = adapter_pairs()[pair]
    cache = ResponseCache()
    assert cache.key(context_for(model=plain)) != cache.key(context_for(model=changed))


def test_credentials_and_endpoint_are_not_in_the_key() -> None:
    from stageware.anthropic import AnthropicModel

    cache = ResponseCache()
    one = AnthropicModel("claude-sonnet-4-5", api_key="k1", base_url="https://a.example")
    two = AnthropicModel("claude-sonnet-4-5", api_key="k2", base_url="https://b.example")
    assert cache.key(context_for(model=one)) == cache.key(context_for(model=two))


def test_the_structured_output_mode_of_a_plain_model_is_in_the_key() -> None:
    native = ScriptedModel([], model_id="m", structured_output=True)
    cache = ResponseCache()
    assert cache.key(context_for()) != cache.key(context_for(model=native))


class Anonymous:
    """A model of one's own with neither ``model_id`` nor ``cache_identity()``."""

    async def stream(self, *args: object, **kwargs: object) -> AsyncIterator[dict[str, Any]]:
        yield {"messageStart": {"role": "assistant"}}


def test_a_model_that_cannot_be_identified_is_cached_only_under_a_namespace() -> None:
    assert ResponseCache().key(context_for(model=Anonymous())) is None
    assert ResponseCache(namespace="my-model").key(context_for(model=Anonymous())) is not None


def tool_use_ids(agent: Agent) -> list[str]:
    return [
        block["toolUse"]["toolUseId"]
        for message in agent.messages
        for block in message["content"]
        if "toolUse" in block
    ]


async def test_a_replayed_tool_call_gets_a_fresh_id_behind_a_conversation_manager() -> None:
    from stageware.middleware import SlidingWindow

    @tool
    def weather(city: str) -> str:
        """The weather.

        Args:
            city: The city.
        """
        return "Sunny"

    turn = ScriptedTurn(tool_calls=[ScriptedToolCall("weather", {"city": "Paris"}, id="tu_X")])
    model = ScriptedModel([turn, "Sunny in Paris.", "Still sunny."])
    window = SlidingWindow(max_messages=1, trim_to=1.0)
    agent = cached_agent(model, ResponseCache(), tools=[weather], conversation_manager=window)
    await agent.invoke_async("Weather in Paris?")

    replayed: list[str] = []
    async for event in agent.stream_async("Weather in Paris?"):
        if isinstance(event, ModelStreamChunkEvent):
            start = event.chunk.get("contentBlockStart")
            if start is not None and "toolUse" in start["start"]:
                replayed.append(start["start"]["toolUse"]["toolUseId"])

    # The window sent only the new question: the first call's answer came back from the
    # cache, but its id is fresh, in the stream and in the history alike.
    ids = tool_use_ids(agent)
    assert ids[0] == "tu_X"
    assert len(ids) == len(set(ids)) == 2
    assert replayed == [ids[1]]
    results = [
        b["toolResult"]["toolUseId"]
        for m in agent.messages
        for b in m["content"]
        if "toolResult" in b
    ]
    assert results == ids


class DownBackend:
    """A Redis that is down: every call fails, with its address in the message."""

    def __init__(self, *, get_fails: bool) -> None:
        self.get_fails = get_fails

    async def get(self, key: str) -> CachedResponse | None:
        if self.get_fails:
            raise ConnectionError("redis://:hunter2@cache:6379 refused")
        return None

    async def set(self, key: str, value: CachedResponse) -> None:
        raise ConnectionError("redis://:hunter2@cache:6379 refused")


@pytest.mark.parametrize("get_fails", [True, False])
async def test_a_failing_backend_does_not_fail_the_call(
    get_fails: bool, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedModel(["Paris."])
    cache = ResponseCache(DownBackend(get_fails=get_fails))

    with caplog.at_level("WARNING", logger="stageware.middleware"):
        result = await cached_agent(model, cache).invoke_async("Capital of France?")

    assert result.text == "Paris."
    assert len(model.requests) == 1
    assert "ConnectionError" in caplog.text
    assert "hunter2" not in caplog.text
    assert len(caplog.records) == (2 if get_fails else 1)


class SyncBackend:
    def get(self, key: str) -> CachedResponse | None:
        return None

    def set(self, key: str, value: CachedResponse) -> None:
        pass


def test_a_backend_with_sync_methods_is_refused() -> None:
    with pytest.raises(TypeError, match=r"SyncBackend is not a CacheBackend.*async def"):
        ResponseCache(SyncBackend())  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def test_a_single_stop_reason_string_is_refused() -> None:
    with pytest.raises(TypeError, match=r"stop_reasons .* got the string 'end_turn'"):
        ResponseCache(stop_reasons="end_turn")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def test_the_memory_cache_may_be_shared_by_threads() -> None:
    import sys
    import threading

    cache = MemoryCache(max_entries=2)
    value = CachedResponse(chunks=(), result=None)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        async def run() -> None:
            for i in range(3000):
                await cache.set(str(i % 3), value)
                await cache.get(str((i + n) % 3))

        try:
            anyio.run(run)
        except BaseException as error:  # collected for the assertion
            errors.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
