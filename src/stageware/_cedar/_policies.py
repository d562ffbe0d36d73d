"""Reading Cedar policy files, and saying where in them a policy is wrong.

cedarpy reports a parse error by its message and a validation error by a generated
policy id (``policy3``), with no file or position. Cedar numbers the policies of a set in
the order they appear, and a policy ends at a ``;`` outside a string or a comment, so this
module splits each file at those, remembers where each policy starts, and turns
``policy3`` back into ``refunds.cedar:12:1``. A file is parsed alone first, so that one
missing ``;`` is reported in its own file and does not join the next file's first policy.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, final

import cedarpy

from ._cedarpy import validate_policies

__all__ = ["CedarPolicyError", "Located", "PolicySource", "read_policies"]

_GENERATED_ID: Final = re.compile(r"^for policy `[^`]*`, ")
_UNKNOWN_ACTION: Final = re.compile(r'unrecognized action `Action::"((?:[^"\\]|\\.)*)"`')


class CedarPolicyError(ValueError):
    """A Cedar policy file does not parse or does not validate against the schema.

    The message names each problem as ``file:line:column: policy: problem``.

    Attributes:
        problems: One line per problem, in that form.
    """

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        count = len(self.problems)
        head = "a Cedar policy is not valid" if count == 1 else f"{count} Cedar policy problems"
        super().__init__(head + ":\n  " + "\n  ".join(self.problems))


@final
@dataclass(frozen=True, slots=True)
class Located:
    """Where a policy starts, and what it is called."""

    file: str
    line: int
    column: int
    annotation_id: str | None

    def name(self, generated: str) -> str:
        """``'no-big-refunds'`` for an ``@id``, else the generated id (``policy3``)."""
        return repr(self.annotation_id) if self.annotation_id else generated

    def where(self) -> str:
        """``file:line:column``."""
        return f"{self.file}:{self.line}:{self.column}"


@final
@dataclass(frozen=True, slots=True)
class PolicySource:
    """The policies of all files as one set, and where each of them came from."""

    text: str
    policies: cedarpy.PolicySet
    located: dict[str, Located]

    def describe(self, generated: str) -> str:
        """How a message names policy *generated*: ``'no-big' (refunds.cedar:4:1)``."""
        found = self.located.get(generated)
        return generated if found is None else f"{found.name(generated)} ({found.where()})"


def read_policies(files: Sequence[tuple[str, str]]) -> PolicySource:
    """One policy set of *files* (``(name, text)`` pairs), each parsed on its own first.

    Raises:
        CedarPolicyError: For each file that does not parse, at the policy that does not.
    """
    problems: list[str] = []
    located: dict[str, Located] = {}
    for name, text in files:
        starts = _policy_starts(text)
        try:
            cedarpy.PolicySet.from_str(text)
        except ValueError as error:
            problems.append(_parse_problem(name, text, starts, str(error)))
            continue
        for line, column, chunk in starts:
            annotation = re.match(r'\s*@id\s*\(\s*"((?:[^"\\]|\\.)*)"', chunk)
            located[f"policy{len(located)}"] = Located(
                name, line, column, None if annotation is None else annotation.group(1)
            )
    if problems:
        raise CedarPolicyError(problems)
    text = "\n".join(text for _, text in files)
    policies = cedarpy.PolicySet.from_str(text)
    if len(policies) != len(located):
        # The split and Cedar disagree (a construct the splitter does not know): keep
        # the generated ids rather than name the wrong lines.
        located = {}
    return PolicySource(text, policies, located)


def validate(source: PolicySource, schema: dict[str, Any]) -> None:
    """Check *source* against *schema*.

    Raises:
        CedarPolicyError: Naming the file, line and column of each policy that fails.
    """
    result = validate_policies(source.text, schema)
    if result.validation_passed:
        return
    problems: list[str] = []
    actions = sorted(schema[""]["actions"])
    for error in result.errors:
        message = _GENERATED_ID.sub("", error.error) + _near_action(error.error, actions)
        found = source.located.get(error.policy_id)
        if found is None:
            problems.append(f"{error.policy_id}: {message}")
        else:
            problems.append(f"{found.where()}: {found.name(error.policy_id)}: {message}")
    raise CedarPolicyError(problems)


def _near_action(message: str, actions: list[str]) -> str:
    """`` (did you mean Action::"tool:refund"?)`` for an action misspelt in *message*."""
    found = _UNKNOWN_ACTION.search(message)
    if found is None:
        return ""
    close = difflib.get_close_matches(found.group(1), actions, n=1)
    return f' (did you mean Action::"{close[0]}"?)' if close else ""


def _parse_problem(name: str, text: str, starts: list[tuple[int, int, str]], message: str) -> str:
    for index, (line, column, chunk) in enumerate(starts):
        try:
            cedarpy.PolicySet.from_str(chunk)
        except ValueError as error:
            return f"{name}:{line}:{column}: policy {index + 1} in the file: {error}"
    return f"{name}:1:1: {message}"


def _policy_starts(text: str) -> list[tuple[int, int, str]]:
    """Each policy's (line, column, text), split at ``;`` outside strings and comments."""
    found: list[tuple[int, int, str]] = []
    line, column = 1, 1
    start: tuple[int, int, int] | None = None  # offset, line, column
    in_string = in_comment = escaped = False
    for offset, char in enumerate(text):
        if in_comment:
            in_comment = char != "\n"
        elif in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == "/" and text.startswith("//", offset):
            in_comment = True
        elif not char.isspace():
            if start is None:
                start = (offset, line, column)
            if char == '"':
                in_string = True
            elif char == ";":
                found.append((start[1], start[2], text[start[0] : offset + 1]))
                start = None
        if char == "\n":
            line, column = line + 1, 1
        else:
            column += 1
    if start is not None:
        # A last policy without its ``;``: Cedar reports it, at this position.
        found.append((start[1], start[2], text[start[0] :]))
    return found
