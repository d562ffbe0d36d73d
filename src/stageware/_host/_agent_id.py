"""Agent ids: what scopes an agent's interrupt ids, its sub-agents' session keys and traces.

An id goes into interrupt ids (``v2:middleware_agent_stream:<agent id>:<hash>``, where
``:`` separates the parts), into session keys (``<parent session>/<agent id>``) and into
trace attributes, so it is kept to characters that are plain in all three: ASCII letters,
digits, ``_``, ``-`` and ``.``, at most 128 of them.

The default is derived from the agent's name, not shared by every agent (Strands uses
``"default"``): a shared default is what made two agents running one gate produce one
interrupt id. It is not random either: a process that resumes a stored run must compute
the same ids as the one that stopped it.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MAX_AGENT_ID", "checked_agent_id"]

MAX_AGENT_ID: Final = 128
_VALID: Final = re.compile(r"[A-Za-z0-9_.-]+")
_UNSAFE_RUN: Final = re.compile(r"[^A-Za-z0-9_.-]+")


def checked_agent_id(agent_id: object, name: str) -> str:
    """The agent id to use: *agent_id* once checked, or one derived from *name*.

    The derived id is *name* with every run of other characters replaced by ``_`` (``"My
    agent"`` -> ``"My_agent"``), cut to 128 characters; ``"agent"`` if nothing is left.

    Raises:
        TypeError: If *agent_id* is neither a str nor ``None``.
        ValueError: If *agent_id* is empty, too long, or has a character outside
            ``A-Z a-z 0-9 _ - .``; the message names the value and the first such character.
    """
    if agent_id is None:
        derived = _UNSAFE_RUN.sub("_", name).strip("_")[:MAX_AGENT_ID]
        return derived if derived and derived not in (".", "..") else "agent"
    if not isinstance(agent_id, str):
        raise TypeError(f"agent_id must be a str or None, got {type(agent_id).__name__}")
    if not agent_id:
        raise ValueError("agent_id must not be empty")
    if len(agent_id) > MAX_AGENT_ID:
        raise ValueError(
            f"agent_id {agent_id[:32]!r}... has {len(agent_id)} characters; at most "
            f"{MAX_AGENT_ID} are allowed"
        )
    if not _VALID.fullmatch(agent_id):
        bad = _UNSAFE_RUN.search(agent_id)
        assert bad is not None
        raise ValueError(
            f"agent_id {agent_id!r} has {bad.group()[0]!r} at position {bad.start()}; an agent "
            "id goes into interrupt ids and session keys, so it may use only ASCII letters, "
            "digits, '_', '-' and '.'"
        )
    if agent_id in (".", ".."):
        raise ValueError(f"agent_id {agent_id!r} is not allowed: it reads as a path")
    return agent_id
