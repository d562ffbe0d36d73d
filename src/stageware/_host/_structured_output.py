"""Structured output in the run loop: how a structured run asks the model and reads its reply.

``agent(prompt, output_type=M)`` gives the pass a :class:`StructuredRun`. The rules it
keeps:

- Each model call is asked according to the model that serves it (``context.model``,
  which middleware may replace): a model with a true ``supports_structured_output`` is
  streamed with ``output_schema=`` and its final reply's text is the JSON object; any
  other model is offered the schema's tool (``OutputSchema.tool_spec()``) beside the
  agent's tools, and the tool's input is the object.
- On the tool path, a final reply that does not call the tool gets a user turn asking for
  it, and the next calls force it (``tool_choice={"tool": {"name": ...}}``). The first
  such request is the ordinary way of asking and costs no retry; after that, a forced
  call that still does not call the tool does.
- The output tool never runs through ExecuteTool: its call is answered by the host with a
  tool result ("accepted", or an error listing the validation errors), so every
  ``toolUse`` in the history has its ``toolResult`` and the history stays valid for every
  provider. User tools called in the same turn run as usual.
- A reply that does not validate goes back to the model (an error tool result on the
  tool path, a user message on the native path), at most ``retries`` times in one
  invocation; the next failure raises ``StructuredOutputError`` with the last reply.
- A provider's refusal (``REFUSALS``) ends the run with its stop reason and no output:
  asking again would not correct it.
- A reply cut by the model's output limit (stop reason ``max_tokens``) whose output is
  cut with it (a native reply whose text does not validate, or a reply whose tool calls
  were cut: their input is incomplete and they have no results) raises
  ``StructuredOutputError`` at once, naming ``max_tokens``: asking again for the same
  object would be cut the same way, so no correction is spent on it. A tool-path reply
  cut in prose is asked for the tool as usual.

Importing this module costs no pydantic: the schema is built by :func:`structured_run`
only when a run asks for an output.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, final

from stageware._generated.payloads import Message, ToolChoice, ToolResult, ToolSpec

from ._structured_errors import StructuredOutputError

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

    from .models import OutputSchema

__all__ = [
    "CUT_SHORT",
    "DEFAULT_OUTPUT_RETRIES",
    "REFUSALS",
    "OutputAttempt",
    "StructuredRun",
    "checked_output_retries",
    "schema_fingerprint",
    "structured_run",
    "supports_native_output",
]

DEFAULT_OUTPUT_RETRIES: Final = 2
"""How many replies that fail validation a structured run sends back for correction."""

REFUSALS: Final = frozenset({"content_filtered", "guardrail_intervened", "limit_tool_calls"})
"""Stops that are a provider's refusal (or a limit's: ``CallLimits`` answers for the model
once a run is out of tool calls): asking again is not a correction, so the run ends with
that stop reason and no output."""

CUT_SHORT: Final = "max_tokens"
"""The stop of a reply cut by the model's output limit: its output is incomplete."""

# How much of the validation errors goes back to the model: enough to correct the reply.
_MAX_ERRORS_SHOWN = 20


def checked_output_retries(output_retries: object) -> int:
    """*output_retries* if it is a valid budget.

    Raises:
        TypeError: If it is not an int (a ``bool`` is refused too).
        ValueError: If it is negative.
    """
    if not isinstance(output_retries, int) or isinstance(output_retries, bool):
        raise TypeError(f"output_retries must be an int, got {output_retries!r}")
    if output_retries < 0:
        raise ValueError(f"output_retries must be 0 or more, got {output_retries}")
    return output_retries


def supports_native_output(model: object) -> bool:
    """Whether *model* takes ``output_schema=`` (a true ``supports_structured_output``)."""
    return getattr(model, "supports_structured_output", False) is True


def schema_fingerprint(schema: OutputSchema[Any]) -> str:
    """What identifies a requested output across processes: its name and its JSON schema."""
    encoded = json.dumps(schema.json_schema, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(encoded.encode()).hexdigest()[:16]
    return f"{schema.name}:{digest}"


def structured_run(output_type: type[Any], retries: int, tool_names: list[str]) -> StructuredRun:
    """The structured state of one invocation that asked for *output_type*.

    Raises:
        TypeError: If *output_type* is not a pydantic model or a ``TypedDict``.
        ValueError: If one of the agent's tools has the output tool's name.
    """
    from .models import OutputSchema

    if not isinstance(output_type, type):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(
            f"output_type must be a class (a pydantic model or a TypedDict), got {output_type!r}"
        )
    schema = OutputSchema[Any].of(output_type)
    if schema.name in tool_names:
        raise ValueError(
            f"output_type {output_type.__name__} asks for an output tool named "
            f"{schema.name!r}, but the agent already has a tool of that name; rename the "
            "type or the tool"
        )
    return StructuredRun(schema, retries)


@final
@dataclass(eq=False)
class OutputAttempt:
    """What one reply offered as the output.

    Attributes:
        value: The validated output, or ``None`` when the reply did not validate.
        errors: Why it did not validate (empty when it did, or held no candidate).
        results: On the tool path, the tool result answering each output-tool call of the
            reply, by ``toolUseId``.
    """

    value: Any = None
    errors: list[ErrorDetails] = field(default_factory=list["ErrorDetails"])
    results: dict[str, ToolResult] = field(default_factory=dict[str, ToolResult])

    @property
    def valid(self) -> bool:
        """Whether the reply gave the output."""
        return self.value is not None


@final
class StructuredRun:
    """The structured output one invocation asks for, and the corrections it has spent."""

    __slots__ = ("fingerprint", "forced", "native", "retries", "schema", "spent")

    def __init__(self, schema: OutputSchema[Any], retries: int) -> None:
        self.schema: OutputSchema[Any] = schema
        self.retries: int = retries
        self.fingerprint: str = schema_fingerprint(schema)
        self.spent: int = 0
        # Whether the next calls on the tool path force the output tool.
        self.forced: bool = False
        # Whether the last call went to a model with a native mode.
        self.native: bool = False

    @property
    def output_type(self) -> type[Any]:
        """The type the run asked for."""
        return self.schema.output_type

    def request(
        self, model: object, tool_specs: list[ToolSpec], tool_choice: ToolChoice | None
    ) -> tuple[list[ToolSpec], ToolChoice | None, dict[str, Any]]:
        """The tool specs, tool choice and extra ``stream()`` arguments for a call to *model*."""
        self.native = supports_native_output(model)
        if self.native:
            return tool_specs, tool_choice, {"output_schema": self.schema}
        specs = [*tool_specs, self.schema.tool_spec()]
        choice: ToolChoice | None = (
            {"tool": {"name": self.schema.name}} if self.forced else tool_choice
        )
        return specs, choice, {}

    def calls_output_tool(self, message: Message) -> bool:
        """Whether *message* calls the output tool."""
        name = self.schema.name
        return any(
            "toolUse" in block and block["toolUse"]["name"] == name for block in message["content"]
        )

    def from_calls(self, message: Message) -> OutputAttempt:
        """Validate the output-tool calls of *message*; the first valid one is the output."""
        from pydantic import ValidationError

        attempt = OutputAttempt()
        for block in message["content"]:
            if "toolUse" not in block or block["toolUse"]["name"] != self.schema.name:
                continue
            use = block["toolUse"]
            tool_use_id = use["toolUseId"]
            if attempt.valid:
                attempt.results[tool_use_id] = _result(
                    tool_use_id, "error", "Ignored: an earlier call in this turn gave the output."
                )
                continue
            try:
                attempt.value = self.schema.validate(use["input"])
            except ValidationError as error:
                attempt.errors = error.errors(include_url=False)
                attempt.results[tool_use_id] = _result(
                    tool_use_id,
                    "error",
                    f"The input is not a valid {self.schema.name}: "
                    f"{_describe(attempt.errors)}. Call {self.schema.name} again with "
                    "corrected input.",
                )
                continue
            attempt.results[tool_use_id] = _result(tool_use_id, "success", "Output accepted.")
        return attempt

    def from_text(self, message: Message) -> OutputAttempt:
        """Validate the text of *message*, a native-mode final reply, as the JSON object."""
        from pydantic import ValidationError

        text = "".join(block["text"] for block in message["content"] if "text" in block)
        try:
            return OutputAttempt(value=self.schema.validate_json(text))
        except ValidationError as error:
            return OutputAttempt(errors=error.errors(include_url=False))

    def correction(self, attempt: OutputAttempt) -> Message:
        """The user turn that sends a native reply's validation errors back to the model."""
        return {
            "role": "user",
            "content": [
                {
                    "text": f"Your reply is not a valid {self.schema.name} JSON object: "
                    f"{_describe(attempt.errors)}. Reply with the corrected JSON object only."
                }
            ],
        }

    def ask_for_tool(self) -> Message:
        """The user turn asking a tool-path model that answered in prose for the output."""
        self.forced = True
        return {
            "role": "user",
            "content": [
                {
                    "text": f"Give your final answer now by calling the {self.schema.name} "
                    "tool; do not answer in text."
                }
            ],
        }

    def cut_short(self, reply: Message, errors: list[ErrorDetails]) -> StructuredOutputError:
        """The error for *reply*, whose output the model's output limit cut.

        *errors* are what did not validate in it (empty when a user tool's call was cut).
        """
        if self.native:
            what = f"before its {self.schema.name} JSON object was complete"
        else:
            called = {block["toolUse"]["name"] for block in reply["content"] if "toolUse" in block}
            names = ", ".join(sorted(called))
            what = f"in the middle of its tool calls ({names}), which cannot run"
        return StructuredOutputError(
            f"the model's reply stopped at max_tokens (its output token limit) {what}; "
            "a correction would be cut the same way, so none was sent. Raise the model's "
            "max_tokens or ask for a smaller output. The reply is in .last_reply",
            last_reply=reply,
            errors=errors,
        )

    def spend(self, attempt: OutputAttempt, reply: Message) -> None:
        """Count one reply that gave no valid output, or raise once the budget is spent.

        Raises:
            StructuredOutputError: With *reply* and its errors, when ``retries``
                corrections were already sent.
        """
        if self.spent < self.retries:
            self.spent += 1
            return
        if attempt.errors:
            why = f"did not validate: {_describe(attempt.errors)}"
        else:
            why = f"did not call the {self.schema.name} output tool when told to"
        raise StructuredOutputError(
            f"the model's reply {why}; gave up after {self.retries} correction(s) "
            f"(output_retries={self.retries}). The reply is in .last_reply",
            last_reply=reply,
            errors=attempt.errors,
        )


def _result(tool_use_id: str, status: str, text: str) -> ToolResult:
    return {
        "toolUseId": tool_use_id,
        "status": "success" if status == "success" else "error",
        "content": [{"text": text}],
    }


def _describe(errors: list[ErrorDetails]) -> str:
    """The validation errors as one line a model (and a person) can act on."""
    parts: list[str] = []
    for error in errors[:_MAX_ERRORS_SHOWN]:
        where = ".".join(str(part) for part in error["loc"]) or "(the object)"
        parts.append(f"{where}: {error['msg']}")
    more = len(errors) - _MAX_ERRORS_SHOWN
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)
