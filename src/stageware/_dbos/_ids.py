"""The workflow ids of durable runs: which agent kind, which session, which request.

A request's workflow id is ``stageware:<kind>:<session id>:<32 hex digits>``; the
invocations it runs are child workflows ``<request id>/<n>`` (1, 2, ... in the order they
run). A session id may hold any character, ``:`` and ``/`` included, so an id is read
from both ends: the kind has no ``:`` (``check_kind``), and the unique part is fixed.
"""

from __future__ import annotations

import re
import uuid
from typing import Final, NamedTuple

__all__ = [
    "PREFIX",
    "WorkflowName",
    "check_kind",
    "invocation_id",
    "invocation_workflow_name",
    "parse",
    "request_id",
    "request_workflow_name",
]

PREFIX: Final = "stageware:"

_KIND: Final = re.compile(r"[A-Za-z0-9_.-]{1,100}")
# Kinds whose workflow names or ids another of stageware's workflows has:
# ``stageware.run_durably`` (ids ``stageware:run_durably:...``), and the invocation
# workflow ``stageware.<kind>.invocation`` of every kind.
_RESERVED: Final = frozenset({"run_durably"})
_INVOCATION_SUFFIX: Final = ".invocation"
_TAIL: Final = re.compile(r":([0-9a-f]{32})(?:/([1-9][0-9]*))?\Z")


class WorkflowName(NamedTuple):
    """What a workflow id says: the agent kind, the session, and the invocation (or None)."""

    kind: str
    session_id: str
    invocation: int | None


def check_kind(kind: object) -> str:
    """Return *kind* if it can name an agent kind: 1 to 100 ASCII letters, digits, ``_.-``.

    Raises:
        TypeError: *kind* is not a str.
        ValueError: It holds another character, is empty or is too long.
    """
    if not isinstance(kind, str):
        raise TypeError(f"an agent kind is a str, got {type(kind).__qualname__} {kind!r}")
    if not _KIND.fullmatch(kind):
        raise ValueError(
            f"agent kind {kind!r}: use 1 to 100 ASCII letters, digits, '_', '.' and '-' "
            "(it is part of every workflow id of the agent's runs)"
        )
    if kind in _RESERVED or kind.endswith(_INVOCATION_SUFFIX):
        raise ValueError(
            f"agent kind {kind!r} is reserved: stageware's own workflows use "
            f"{', '.join(repr(name) for name in sorted(_RESERVED))} and the names ending "
            f"in {_INVOCATION_SUFFIX!r} (kind 'x' runs its invocations as "
            f"'stageware.x{_INVOCATION_SUFFIX}'); choose another"
        )
    return kind


def request_id(kind: str, session_id: str) -> str:
    """A new workflow id for one request to *kind* on *session_id*."""
    return f"{PREFIX}{kind}:{session_id}:{uuid.uuid4().hex}"


def invocation_id(request: str, number: int) -> str:
    """The workflow id of the *number*-th invocation (from 1) that *request* runs."""
    return f"{request}/{number}"


def parse(workflow_id: str) -> WorkflowName | None:
    """What *workflow_id* names, or ``None`` if it is not a durable agent run's id."""
    if not workflow_id.startswith(PREFIX):
        return None
    kind, colon, rest = workflow_id[len(PREFIX) :].partition(":")
    tail = _TAIL.search(rest)
    if not colon or not _KIND.fullmatch(kind) or tail is None:
        return None
    session_id = rest[: tail.start()]
    if not session_id:
        return None
    number = tail.group(2)
    return WorkflowName(kind, session_id, None if number is None else int(number))


def request_workflow_name(kind: str) -> str:
    """The name DBOS knows the request workflow of *kind* by (what a client enqueues)."""
    return f"stageware.{kind}"


def invocation_workflow_name(kind: str) -> str:
    """The name DBOS knows the invocation workflow of *kind* by."""
    return f"stageware.{kind}{_INVOCATION_SUFFIX}"
