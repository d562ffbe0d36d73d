"""``require_approval``: a person approves each call of the listed tools, in one line.

It is a declared policy middleware (``tool.before``, fail mode closed) that returns
``Suspend`` for the listed tools and nothing for the others, so everything the policy
layer guarantees for a ``Suspend`` holds here too: the run stops durably, the answer is
identity-checked (the engine's authenticator, the ``approvers`` given here), bound to the
call by its fingerprint, final, and releases the call exactly once. There is no second
approval mechanism in this module; it only decides when to ask.

The tool names are checked here (a list of non-empty strings, at least one), not against
an agent's tools: a declared middleware knows no agent (one engine can serve many, and an
MCP server's tools are known only once it is connected), and a policy decides on the
call it is shown.

The policy layer (pydantic) is imported when ``require_approval`` is called, so that
``import stageware.middleware`` stays as cheap as the agent's own import.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Set
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from stageware.policy import MiddlewareDef, PolicyEnv, Suspend, ToolCallEvent

__all__ = ["ApprovalCondition", "require_approval"]

ApprovalCondition = Callable[[Mapping[str, Any]], bool]
"""``when(tool_input) -> bool``: whether a call with this input needs approval."""


def require_approval(
    tools: list[str] | tuple[str, ...] | Set[str],
    *,
    approvers: Collection[str] | None = None,
    reason: str | None = None,
    when: ApprovalCondition | None = None,
    name: str = "require_approval",
) -> MiddlewareDef:
    """A policy middleware that suspends each call of *tools* until a person approves it.

    Install it like any declared middleware:

    ```python
    policy = PolicyEngine([require_approval(tools=["refund"])], authenticator=credentials)
    agent = Agent(model, tools=[lookup_order, refund], policy=policy)
    ```

    A call of a listed tool stops the run with ``stop_reason="interrupt"``; approved, the
    call runs once; denied, it is blocked (``stop_reason="blocked"``). Calls of other
    tools run as they would without it.

    Args:
        tools: The names of the tools whose calls need approval (a list, tuple or set;
            not a single string).
        approvers: Who may answer: approver ids and ``"role:<name>"`` entries; ``None``,
            any approver the engine's authenticator (or the command line) verifies.
        reason: The question the approver is asked; by default
            ``"<tool> needs approval"``.
        when: ``when(tool_input)`` decides per call (``lambda i: i["amount"] > 100``); a
            call for which it returns ``False`` runs without approval. It runs under the
            middleware's fail mode (closed): if it raises, the call is blocked.
        name: The middleware's name in interrupt ids, traces and the engine (two
            ``require_approval`` gates on one engine need different names).

    Raises:
        TypeError: *tools* is a string or holds something other than strings; *when* is
            not callable.
        ValueError: *tools* is empty or holds an empty name; *approvers* is empty or holds
            an empty entry; *name* is not a dotted identifier.
    """
    from stageware.policy import Suspend, middleware

    gated = _tool_names(tools)
    if when is not None and not callable(cast(object, when)):
        raise TypeError(f"require_approval: when must be a callable (input) -> bool, got {when!r}")
    # Checked now, by the Suspend's own rules, rather than at the first gated call.
    allowed = Suspend("", approvers=approvers).approvers
    listed = ", ".join(sorted(gated))

    async def gate(event: ToolCallEvent, env: PolicyEnv) -> Suspend | None:
        if event.tool_name not in gated:
            return None
        tool_input = _as_mapping(event.input)
        if when is not None and not when(tool_input):
            env.note(f"{event.tool_name}: when= decided no approval is needed")
            return None
        question = reason if reason is not None else f"{event.tool_name} needs approval"
        return Suspend(
            question,
            details={"tool": event.tool_name, "input": event.input},
            approvers=allowed,
        )

    gate.__doc__ = f"Calls of {listed} wait for a person's approval."
    return middleware(hooks=["tool.before"], fail_mode="closed", name=name)(gate)


def _tool_names(tools: object) -> frozenset[str]:
    if isinstance(tools, str):
        raise TypeError(
            f"require_approval: tools must be a list of tool names, not the string {tools!r}; "
            f"write tools=[{tools!r}]"
        )
    if not isinstance(tools, list | tuple | Set):
        raise TypeError(f"require_approval: tools must be a list of tool names, got {tools!r}")
    names = cast("Collection[object]", tools)
    if not names:
        raise ValueError("require_approval: tools is empty; name at least one tool")
    for index, item in enumerate(names):
        if not isinstance(item, str):
            raise TypeError(
                f"require_approval: tools[{index}] is {item!r}, not a tool name (a string); "
                "pass the tool's name, e.g. refund.tool_name"
            )
        if not item.strip():
            raise ValueError(f"require_approval: tools[{index}] is an empty name")
    return frozenset(cast("Collection[str]", names))


def _as_mapping(value: object) -> Mapping[str, Any]:
    # A model may send a tool input that is not an object; `when` still gets a mapping.
    if isinstance(value, Mapping):
        return cast("Mapping[str, Any]", value)
    return {}
