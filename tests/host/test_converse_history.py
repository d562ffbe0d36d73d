"""The Converse history check itself: each rule it enforces catches a broken conversation."""

from __future__ import annotations

import pytest

from stageware import Message, Messages

from .converse_history import assert_valid_converse, converse_problems


def user(*blocks: str) -> Message:
    return {"role": "user", "content": [{"text": text} for text in blocks]}


def assistant(text: str) -> Message:
    return {"role": "assistant", "content": [{"text": text}]}


def calling(*ids: str) -> Message:
    return {
        "role": "assistant",
        "content": [{"toolUse": {"toolUseId": i, "name": "t", "input": {}}} for i in ids],
    }


def answering(*ids: str) -> Message:
    return {
        "role": "user",
        "content": [
            {"toolResult": {"toolUseId": i, "content": [{"text": "ok"}], "status": "success"}}
            for i in ids
        ],
    }


def test_a_valid_tool_exchange_passes() -> None:
    assert_valid_converse([user("hi"), calling("a", "b"), answering("b", "a")])


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([user("a"), user("b")], "both user turns"),
        ([user("a"), assistant("x"), assistant("y"), user("b")], "both assistant turns"),
        ([assistant("x"), user("a")], "first turn"),
        ([user("a"), {"role": "assistant", "content": []}, user("b")], "no content"),
        ([user("a"), calling("t1"), user("b")], "the turn before asked for ['t1']"),
        ([user("a"), calling("t1"), answering("t2")], "answers tool calls ['t2']"),
        ([user("a"), assistant("x"), answering("t1")], "answers tool calls ['t1']"),
        ([user("a"), calling("t1")], "have no results"),
        ([user("a"), assistant("x")], "does not end with a user turn"),
        ([], "empty"),
    ],
)
def test_each_rule_catches_its_break(messages: Messages, problem: str) -> None:
    problems = converse_problems(messages)

    assert any(problem in found for found in problems), problems
    with pytest.raises(AssertionError):
        assert_valid_converse(messages)


def test_a_history_may_end_with_tool_calls_the_next_pass_answers() -> None:
    history = [user("hi"), calling("t1")]

    assert converse_problems(history, for_request=False) == []
    assert converse_problems(history) != []
