"""Durable approvals: the interrupt a ``Suspend`` raises, and the answer it waits for.

The interrupt id is ``v1:policy:<hook point>:<middleware>:<step key>``: the same step of
a resumed run asks with the same id, which is how the answer finds it. The step key is the
tool call's ``toolUseId`` at tool hooks, ``turn-<n>`` at model hooks and ``run-<n>`` at the
run's own hooks, where ``n`` is the number of messages in the history when the step came
up (a suspended step adds none, so the resumed step counts the same).
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._errors import problem_lines

__all__ = ["INTERRUPT_PREFIX", "Approval", "check_answer", "interrupt_id", "parse_interrupt_id"]

INTERRUPT_PREFIX: Final = "v1:policy:"


@final
class Approval(BaseModel):
    """An approver's answer to a suspended step: resume with it as the interrupt's response.

    Example::

        agent([{"interruptResponse": {
            "interruptId": result.interrupts[0].id,
            "response": {"approved": True, "approver": "dana@example.com"},
        }}])
    """

    # Built on first use, like the hook events: importing the policy layer stays cheap.
    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    approved: bool = Field(strict=True)
    """Whether the step may go ahead; ``False`` blocks it."""
    approver: str = Field(min_length=1)
    """Who decided."""
    comment: str | None = None
    """Why, if they said."""


def interrupt_id(hook: str, middleware: str, step_key: str) -> str:
    """The deterministic id of the approval a middleware asks for at one step."""
    return f"{INTERRUPT_PREFIX}{hook}:{middleware}:{step_key}"


def parse_interrupt_id(value: str) -> tuple[str, str, str] | None:
    """``(hook, middleware, step key)`` of a policy interrupt id, or ``None`` for another id."""
    if not value.startswith(INTERRUPT_PREFIX):
        return None
    parts = value[len(INTERRUPT_PREFIX) :].split(":", 2)
    if len(parts) != 3:
        return None
    hook, middleware, step = parts
    return hook, middleware, step


def check_answer(interrupt: str, response: Any) -> Approval | None:
    """Validate the answer to a policy interrupt; other interrupts' answers pass as ``None``.

    Raises:
        ValueError: Naming the interrupt and what is wrong with the answer.
    """
    if parse_interrupt_id(interrupt) is None:
        return None
    try:
        return Approval.model_validate(response)
    except ValidationError as error:
        problems = "; ".join(problem_lines(error, "the answer"))
        raise ValueError(
            f"the answer to policy approval {interrupt!r} is not an approval: {problems}. "
            "Answer with {'approved': true or false, 'approver': '<who>', 'comment': ...}"
        ) from None
