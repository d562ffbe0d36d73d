"""RedactPII: personal data never reaches the model, the history or the stream.

The patterns are checked on their own (a match and a look-alike for each), then the
middleware on a real Agent with a scripted model that records every request and streams
its answer in small chunks, so that a match straddles chunk boundaries.
"""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stageware import (
    Agent,
    InvokeModelStage,
    ModelStreamChunkEvent,
    ScriptedModel,
    ScriptedTurn,
    tool,
)
from stageware.middleware import PIIPattern, RedactPII
from tests.host.agent_helpers import calls

EMAIL = "ana.berg@example.com"
CARD = "4111 1111 1111 1111"


@pytest.mark.parametrize(
    ("name", "found", "left"),
    [
        (
            "email",
            ["ana.berg+x@mail.example.co.uk", "a@b.io", "ana\uff20example.com"],
            ["a@b", "@example.com", "ana@"],
        ),
        (
            "credit_card",
            [
                "4111 1111 1111 1111",
                "4111-1111-1111-1111",
                "4111.1111.1111.1111",
                "5500005555555559",
                "378282246310005",
            ],
            ["4111 1111 1111 1112", "4111.1111.1111.1112", "1234567890123", "order 12345678"],
        ),
        (
            "iban",
            [
                "GB82 WEST 1234 5698 7654 32",
                "DE89370400440532013000",
                "de89 3704 0044 0532 0130 00",
                "gb82west12345698765432",
            ],
            [
                "GB82 WEST 1234 5698 7654 33",
                "de89370400440532013001",
                # mod-97 valid, but 23 characters where a German IBAN has 22: in lower
                # case, where hex ids are common, the length must be the country's too.
                "de543704004405320130001",
            ],
        ),
        (
            "us_ssn",
            ["123-45-6789", "078 05 1120"],
            ["000-12-3456", "123-00-4567", "666-12-3456", "078051120", "078 05 11200"],
        ),
        ("ipv4", ["10.0.0.1", "192.168.255.254"], ["256.1.1.1", "1.2.3", "v1.2.3.4.5"]),
        (
            "phone",
            ["+47 22 33 44 55", "+1 (555) 123-4567", "555-123-4567", "0049 30 1234567"],
            ["2024-01-15", "12 34", "+47 1234", "version 10.20"],
        ),
    ],
)
def test_each_builtin_pattern_finds_its_kind_and_leaves_look_alikes(
    name: Any, found: list[str], left: list[str]
) -> None:
    redact = RedactPII([name])
    for value in found:
        assert redact.redact(f"x {value} y") == f"x [{name}] y", value
    for value in left:
        assert redact.redact(f"x {value} y") == f"x {value} y", value


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("SSN: 078051120.", "SSN: [us_ssn]."),
        ("ssn#078051120", "ssn#[us_ssn]"),
        ("Her social security number is 078051120", "Her social security number is [us_ssn]"),
        # Unlabelled, nine digits are as likely an order number.
        ("order 078051120", "order 078051120"),
        ("SSN: 666051120", "SSN: 666051120"),
        # A sentence's full stop is not part of the card number.
        ("Card 4111.1111.1111.1111.", "Card [credit_card]."),
    ],
)
def test_a_bare_ssn_only_after_its_label_and_a_card_before_a_full_stop(
    text: str, redacted: str
) -> None:
    assert RedactPII().redact(text) == redacted


def test_the_defaults_tell_a_card_from_a_phone_and_label_each() -> None:
    text = f"Mail {EMAIL}, card {CARD}, call +47 22 33 44 55 from 10.1.2.3."

    assert RedactPII().redact(text) == "Mail [email], card [credit_card], call [phone] from [ipv4]."


def test_mask_and_hash_replacements() -> None:
    masked = RedactPII(["email"], replacement="mask").redact(f"to {EMAIL}")
    assert masked == "to " + "*" * len(EMAIL)

    hashing = RedactPII(["email"], replacement="hash", hash_key=b"k" * 32)
    first, second, again = (
        hashing.redact(text) for text in (EMAIL, "bo@example.com", f"again {EMAIL}")
    )
    assert re.fullmatch(r"\[email:[0-9a-f]{8}\]", first)
    # Stable for one address, different for another: the model can tell them apart.
    assert again == f"again {first}"
    assert second != first
    # Another object, another key: the hash is not a lookup of the address.
    assert RedactPII(["email"], replacement="hash").redact(EMAIL) != first


def test_custom_patterns_with_and_without_a_check() -> None:
    customer = PIIPattern("customer_id", r"\bC-\d{6}\b")
    even = PIIPattern("even", re.compile(r"\b\d+\b"), check=lambda value: int(value) % 2 == 0)
    redact = RedactPII([customer, even, "email"])

    assert redact.redact(f"C-123456 wrote 4 times, 3 from {EMAIL}") == (
        "[customer_id] wrote [even] times, 3 from [email]"
    )
    assert [pattern.name for pattern in redact.patterns] == ["customer_id", "even", "email"]


def test_bad_configuration_is_refused_with_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="no built-in pattern named 'emial'"):
        RedactPII(["emial"])  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="not the string 'email'"):
        RedactPII("email")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match="patterns is empty"):
        RedactPII([])
    with pytest.raises(ValueError, match="replacement must be one of label, mask, hash"):
        RedactPII(replacement="blur")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match="every target is switched off"):
        RedactPII(model_input=False, model_output=False, tool_results=False)
    with pytest.raises(ValueError, match="must be lower case"):
        PIIPattern("Customer ID", r"C-\d+")
    with pytest.raises(ValueError, match="bad regex"):
        PIIPattern("broken", r"(")
    with pytest.raises(ValueError, match="matches the empty string"):
        PIIPattern("empty", r"\d*")


def _requests_text(model: ScriptedModel) -> str:
    return json.dumps([[request.messages, request.system_prompt] for request in model.requests])


@pytest.mark.anyio
async def test_the_model_never_reads_the_users_data_but_the_history_keeps_it() -> None:
    model = ScriptedModel(["Noted."])
    agent = Agent(model, system_prompt=f"Escalate to {EMAIL}.")
    RedactPII(system_prompt=True).install(agent)

    await agent.invoke_async(f"I am {EMAIL}, card {CARD}.")

    [request] = model.requests
    assert request.messages[0]["content"] == [{"text": "I am [email], card [credit_card]."}]
    assert request.system_prompt == "Escalate to [email]."
    # What the user wrote stays the agent's own; only the model's copy is redacted.
    assert agent.messages[0]["content"] == [{"text": f"I am {EMAIL}, card {CARD}."}]


@pytest.mark.anyio
async def test_reasoning_is_sent_back_as_the_model_signed_it() -> None:
    reasoning = f"The user wrote from {EMAIL}."
    model = ScriptedModel([ScriptedTurn(text=f"Hello {EMAIL}.", reasoning=reasoning), "Bye."])
    agent = Agent(model)
    RedactPII().install(agent)

    await agent.invoke_async("hi")
    await agent.invoke_async("bye")

    # The answer's text is redacted; the reasoning is not (a provider refuses reasoning
    # changed after it was signed), in the history and in what goes back to the model.
    [reasoning_block, text_block] = agent.messages[1]["content"]
    assert reasoning_block["reasoningContent"]["reasoningText"]["text"] == reasoning
    assert text_block == {"text": "Hello [email]."}
    assert model.requests[1].messages[1]["content"][0] == reasoning_block


@pytest.mark.anyio
async def test_the_system_prompt_is_left_alone_by_default() -> None:
    model = ScriptedModel(["Noted."])
    agent = Agent(model, system_prompt=f"Escalate to {EMAIL}.")
    RedactPII().install(agent)

    await agent.invoke_async("hi")

    assert model.requests[0].system_prompt == f"Escalate to {EMAIL}."


@pytest.mark.anyio
async def test_the_models_output_is_redacted_across_chunk_boundaries() -> None:
    answer = f"Write to {EMAIL} or pay with {CARD}, thanks."
    model = ScriptedModel([answer], chunk_size=3)
    agent = Agent(model)
    RedactPII().install(agent)

    texts: list[str] = []
    async for event in agent.stream_async("contact?"):
        if isinstance(event, ModelStreamChunkEvent):
            delta = event.chunk.get("contentBlockDelta")
            if delta is not None and "text" in delta["delta"]:
                texts.append(delta["delta"]["text"])

    expected = "Write to [email] or pay with [credit_card], thanks."
    # The block's text reaches the reader whole, redacted: no fragment of a match.
    assert texts == [expected]
    assert agent.messages[-1]["content"] == [{"text": expected}]
    assert EMAIL not in json.dumps(agent.messages)


@pytest.mark.anyio
async def test_tool_results_are_redacted_before_the_model_reads_them() -> None:
    @tool
    def customer(order_id: int) -> dict[str, object]:
        """Who ordered."""
        return {"name": "Ana", "contact": {"email": EMAIL, "phones": ["+47 22 33 44 55"]}}

    @tool
    def note(order_id: int) -> str:
        """The order's note."""
        return f"Call back on 555-123-4567 or {EMAIL}."

    model = ScriptedModel(
        [calls(("customer", {"order_id": 1}, "t1"), ("note", {"order_id": 1}, "t2")), "Done."]
    )
    agent = Agent(model, tools=[customer, note])
    RedactPII(model_input=False, model_output=False).install(agent)

    await agent.invoke_async("who ordered 1?")

    results = [
        block["toolResult"]["content"][0]
        for block in agent.messages[2]["content"]
        if "toolResult" in block
    ]
    assert results == [
        {"json": {"name": "Ana", "contact": {"email": "[email]", "phones": ["[phone]"]}}},
        {"text": "Call back on [phone] or [email]."},
    ]
    assert EMAIL not in _requests_text(model)


@pytest.mark.anyio
async def test_each_target_can_be_switched_off() -> None:
    model = ScriptedModel([f"Mail {EMAIL}."])
    agent = Agent(model)
    redact = RedactPII(model_output=False, tool_results=False)
    redact.install(agent)

    await agent.invoke_async(f"I am {EMAIL}")

    assert EMAIL not in _requests_text(model)
    # Output redaction is off: the model's own text is kept.
    assert agent.messages[-1]["content"] == [{"text": f"Mail {EMAIL}."}]
    # Only the handlers of the switched-on targets were registered.
    assert "RedactPII([email, credit_card, iban, us_ssn, ipv4, phone]" in repr(redact)
    assert "targets: model_input)" in repr(redact)


@pytest.mark.anyio
async def test_the_handlers_register_one_by_one_with_add_middleware() -> None:
    model = ScriptedModel([ScriptedTurn(text=f"Hi {EMAIL}")], chunk_size=2)
    agent = Agent(model)
    redact = RedactPII(["email"])
    agent.add_middleware(InvokeModelStage.Wrap, redact.redact_output)

    result = await agent.invoke_async("hi")

    assert result.text == "Hi [email]"


@settings(max_examples=30, deadline=None)
@given(
    pieces=st.lists(
        st.sampled_from([EMAIL, CARD, "+47 22 33 44 55", "ok.", "C-1", "\n", "x@", "(call)"]),
        max_size=8,
    ),
    chunk_size=st.integers(min_value=1, max_value=7),
)
def test_whatever_the_chunking_the_reader_and_the_history_get_the_redacted_text(
    pieces: list[str], chunk_size: int
) -> None:
    # Words apart, as in text: data glued to a word (`x@ana@...`) is another question.
    answer = " ".join(pieces) or "empty"
    redact = RedactPII()
    model = ScriptedModel([answer], chunk_size=chunk_size)
    agent = Agent(model)
    redact.install(agent)
    streamed: list[str] = []

    async def read() -> None:
        async for event in agent.stream_async("go"):
            if isinstance(event, ModelStreamChunkEvent):
                delta = event.chunk.get("contentBlockDelta")
                if delta is not None and "text" in delta["delta"]:
                    streamed.append(delta["delta"]["text"])

    anyio.run(read)

    assert "".join(streamed) == redact.redact(answer)
    assert agent.messages[-1]["content"] == [{"text": redact.redact(answer)}]
    for secret in (EMAIL, CARD, "22 33 44 55"):
        assert secret not in json.dumps(agent.messages[-1]) + "".join(streamed)
