"""The conversation the scaling benchmarks grow: rounds with a realistic 2 KB tool result.

One shape for every benchmark that measures cost against history length (the agent, the
session stores, the scripted model), so their lengths mean the same conversation.
"""

from __future__ import annotations

from stageware import Messages

TOOL_RESULT = "x" * 2048
"""What the ``lookup`` tool answers: about 2 KB, as a database row or a page excerpt."""


def turn(index: int) -> Messages:
    """One round of four messages: a question, a tool call, its 2 KB result, an answer."""
    tool_use_id = f"history_{index}"
    return [
        {"role": "user", "content": [{"text": f"Question {index}?"}]},
        {
            "role": "assistant",
            "content": [
                {"toolUse": {"toolUseId": tool_use_id, "name": "lookup", "input": {"query": "q"}}}
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": tool_use_id,
                        "status": "success",
                        "content": [{"text": TOOL_RESULT}],
                    }
                }
            ],
        },
        {"role": "assistant", "content": [{"text": f"Answer {index}."}]},
    ]


def conversation(length: int) -> Messages:
    """A valid conversation of exactly *length* messages: whole rounds, then short notes.

    No round is cut, so no tool call is left without its result for an agent to repair.
    """
    messages: Messages = []
    index = 0
    while len(messages) + 4 <= length:
        messages += turn(index)
        index += 1
    while len(messages) < length:
        note = f"Note {len(messages)}."
        if len(messages) % 2 == 0:
            messages.append({"role": "user", "content": [{"text": note}]})
        else:
            messages.append({"role": "assistant", "content": [{"text": note}]})
    return messages
