"""What a Converse-style provider accepts as a conversation, as one test assertion.

Providers that take Converse messages (Bedrock's Converse API, and the OpenAI and
Anthropic APIs once converted) reject a request whose turns do not alternate, whose
first turn is not the user's, that has an empty turn, or in which a ``toolUse`` is not
answered by a ``toolResult`` in the very next (user) turn, or a ``toolResult`` answers
no ``toolUse`` of the turn before it.
"""

from __future__ import annotations

from stageware import Message, Messages


def converse_problems(messages: Messages, *, for_request: bool = True) -> list[str]:
    """Everything a Converse-style provider would reject in *messages*, in order.

    With *for_request*, the conversation must also end with a user turn, as the messages
    of a model request do. Without it (an agent's history between invocations), a last
    assistant turn may still have unanswered tool calls: the next pass answers them.
    """
    problems: list[str] = []
    if not messages:
        return ["the conversation is empty"] if for_request else []
    if messages[0]["role"] != "user":
        problems.append("the first turn is not the user's")
    unanswered: list[str] = []
    for index, message in enumerate(messages):
        role = message["role"]
        if not message["content"]:
            problems.append(f"message {index} ({role}) has no content")
        if index > 0 and messages[index - 1]["role"] == role:
            problems.append(f"messages {index - 1} and {index} are both {role} turns")
        results = _ids(message, "toolResult")
        if role == "user":
            if sorted(results) != sorted(unanswered):
                problems.append(
                    f"message {index} answers tool calls {sorted(results)}, "
                    f"the turn before asked for {sorted(unanswered)}"
                )
        elif results:
            problems.append(f"message {index} is an assistant turn with tool results")
        unanswered = _ids(message, "toolUse") if role == "assistant" else []
        if role == "user" and _ids(message, "toolUse"):
            problems.append(f"message {index} is a user turn with tool calls")
    if for_request and unanswered:
        problems.append(f"the last turn's tool calls {sorted(unanswered)} have no results")
    if for_request and messages[-1]["role"] != "user":
        problems.append("the request does not end with a user turn")
    return problems


def assert_valid_converse(messages: Messages, *, for_request: bool = True) -> None:
    """Fail, listing every problem, unless a Converse-style provider accepts *messages*."""
    problems = converse_problems(messages, for_request=for_request)
    roles = [message["role"] for message in messages]
    assert not problems, f"invalid Converse conversation {roles}: " + "; ".join(problems)


def _ids(message: Message, kind: str) -> list[str]:
    ids: list[str] = []
    for block in message["content"]:
        if kind == "toolUse" and "toolUse" in block:
            ids.append(block["toolUse"]["toolUseId"])
        elif kind == "toolResult" and "toolResult" in block:
            ids.append(block["toolResult"]["toolUseId"])
    return ids
