"""Joining a pass's input to the history so that the history stays one providers accept.

Converse-style providers reject a conversation in which two user turns follow each other
or a ``toolUse`` has no ``toolResult`` in the next turn. An invocation that ends early
can leave either behind: a failed, cancelled or limited run ends on a user turn the
model never answered (the prompt, or a tool round's results), and a run cut short in a
tool round ends on an assistant turn whose tool calls have no results. Nothing is
rewritten when the invocation ends (it may be resumed as it is: ``agent()`` with no prompt
asks the model again); the next pass repairs the seam when it appends its input:

- unanswered tool calls get error results, which lead the input's first user message
  or, without one, form a user message of their own (a round an interrupt stored for
  replay is not unanswered: the resume runs it);
- a trailing user turn absorbs the input's first user message: one user turn holding the
  old content, then the new. Nothing is dropped and nothing is made up (Strands 1.62
  instead leaves both turns and has its Bedrock model insert an assistant turn between
  them in each request).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from stageware._generated.payloads import ContentBlock, Message, Messages

from .tools import error_result

__all__ = ["InputJoin", "join_input"]


@final
@dataclass(frozen=True, slots=True)
class InputJoin:
    """How a pass's input joins the history.

    Attributes:
        merged_last: The message that replaces the history's last one, or ``None`` to
            leave it as it is.
        appended: The messages to append after it.
    """

    merged_last: Message | None
    appended: Messages


def join_input(history: Messages, messages: Messages, *, round_stored: bool) -> InputJoin:
    """Plan how *messages*, a pass's input, join *history*.

    *round_stored* says that an interrupt stored the last tool round for replay, so its
    calls are not unanswered. New message dicts are built where content changes: the
    input's own may be a middleware's constant, the history's may be shared.
    """
    appended = list(messages)
    if not history:
        return InputJoin(None, appended)
    last = history[-1]
    if last["role"] == "assistant":
        results = [] if round_stored else _unanswered_tool_results(last)
        if not results:
            return InputJoin(None, appended)
        if appended and appended[0]["role"] == "user":
            first = appended[0]
            appended[0] = {**first, "content": [*results, *first["content"]]}
        else:
            appended.insert(0, {"role": "user", "content": results})
        return InputJoin(None, appended)
    if appended and appended[0]["role"] == "user":
        first = appended.pop(0)
        return InputJoin({**last, "content": [*last["content"], *first["content"]]}, appended)
    return InputJoin(None, appended)


def _unanswered_tool_results(message: Message) -> list[ContentBlock]:
    return [
        {
            "toolResult": error_result(
                block["toolUse"]["toolUseId"],
                "The tool call did not finish: the run ended before it produced a result.",
            )
        }
        for block in message["content"]
        if "toolUse" in block
    ]
