"""``PolicyEngine``: which middleware run at each hook point, in which order, and how a
policy is installed on an agent.

The engine is immutable configuration; ``install`` gives each agent its own
``AgentPolicy`` (``_agent_policy``), which registers stage middleware on the agent's
registry and keeps the state of the agent's runs.

Order at a hook point: inbound hooks run the bands outermost first (baseline,
guardrail, platform, app), outbound hooks innermost first (app, ..., baseline); within a
band, middleware run in spec order, the baseline profile's entries first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, cast, final

from stageware._generated.policy_points import BANDS, HOOK_POINTS, Direction, HookPoint
from stageware._host.models import Model

from ._agent_policy import AgentPolicy
from ._approval import Approval
from ._attached import Attached
from ._choices import choose
from ._declare import MiddlewareDef
from ._entries import PolicyEntry, declared_middleware
from ._identity import ApprovalRefused, Approver, Authenticator
from ._outcomes import Retry
from ._rules import ALLOWED, DEFAULT_RETRY_BUDGET

if TYPE_CHECKING:
    from stageware._host._core import AgentCore

__all__ = ["DEFAULT_BLOCKED_MESSAGE", "DEFAULT_ESCALATED_MESSAGE", "PolicyEngine"]

DEFAULT_BLOCKED_MESSAGE: Final = "This request was blocked by policy."
DEFAULT_ESCALATED_MESSAGE: Final = (
    "This request needs a person's review; it has been passed to a human reviewer."
)


@final
class PolicyEngine:
    """The middleware a policy installs, ordered per hook point, and how it acts.

    Build it with ``load_policy("policy.yaml", baseline="org.yaml")``, or in code from
    entries or declared middleware:

    ```python
    engine = PolicyEngine([PolicyEntry(no_weekend_refunds, band=Band.GUARDRAIL)])
    agent = Agent(model, tools=[refund], policy=engine)
    ```

    Args:
        entries: The middleware, in spec order (``MiddlewareDef`` for a declaration as it
            is, ``PolicyEntry`` to place or configure it).
        retry_budgets: Retries of one step allowed per hook point, ``Retry`` and
            ``Guide`` together; hook points that allow ``Retry`` default to
            ``DEFAULT_RETRY_BUDGET`` (2).
        blocked_message: The text of the assistant message a blocked run ends with.
        escalated_message: The text of the assistant message an escalated run ends with.
        models: Models ``route.select`` may route a call to, by the ``model_id`` a
            middleware names.
        authenticator: Turns the ``credential`` of an answer given in a prompt into the
            verified ``Approver`` (``SignedCredentials``, or the application's own). Without
            one, no answer in a prompt is accepted: approvals are recorded in the session
            store, with ``stageware console`` or ``stageware policy approvals``.

    Raises:
        TypeError: If an entry is not a ``MiddlewareDef`` or ``PolicyEntry`` (a function
            or class not decorated with ``@middleware(...)``, a string, ...), or if
            *entries* is a single one rather than a list.
        SpecError: If an entry is invalid.
        ValueError: If a middleware is installed twice, or for a retry budget at a hook
            point that does not allow ``Retry``, or a negative one.
    """

    __slots__ = (
        "_attached",
        "_budgets",
        "_entries",
        "_order",
        "authenticator",
        "blocked_message",
        "escalated_message",
        "models",
    )

    def __init__(
        self,
        entries: Iterable[PolicyEntry | MiddlewareDef] = (),
        *,
        retry_budgets: Mapping[HookPoint | str, int] | None = None,
        blocked_message: str = DEFAULT_BLOCKED_MESSAGE,
        escalated_message: str = DEFAULT_ESCALATED_MESSAGE,
        models: Mapping[str, Model] | None = None,
        authenticator: Authenticator | None = None,
    ) -> None:
        if authenticator is not None and not callable(authenticator):
            raise TypeError(
                f"authenticator must be a callable (credential) -> Approver, got {authenticator!r}"
            )
        given = cast(object, entries)  # untyped callers exist
        if isinstance(given, str | MiddlewareDef | PolicyEntry):
            raise TypeError(
                f"PolicyEngine takes a list of middleware, got one: {given!r:.80}; "
                "write PolicyEngine([...])"
            )
        resolved = [
            entry
            if isinstance(entry, PolicyEntry)
            else PolicyEntry(declared_middleware(entry, f"PolicyEngine entry {index}"))
            for index, entry in enumerate(entries)
        ]
        seen: set[str] = set()
        for entry in resolved:
            if entry.name in seen:
                raise ValueError(f"middleware {entry.name!r} is installed twice")
            seen.add(entry.name)
        self._entries: tuple[PolicyEntry, ...] = tuple(resolved)
        self._order: Mapping[HookPoint, tuple[PolicyEntry, ...]] = MappingProxyType(
            {point: _ordered(point, self._entries) for point in HookPoint}
        )
        # Resolved once here, not on every call of every run (``_attached``).
        self._attached: Mapping[HookPoint, tuple[Attached, ...]] = MappingProxyType(
            {
                point: tuple(Attached.at(point, entry) for entry in ordered)
                for point, ordered in self._order.items()
            }
        )
        budgets: dict[HookPoint, int] = {
            point: DEFAULT_RETRY_BUDGET for point in HookPoint if Retry in ALLOWED[point]
        }
        for key, budget in (retry_budgets or {}).items():
            point = choose(HookPoint, key, "hook point")
            if point not in budgets:
                raise ValueError(f"{point.value} does not allow Retry, so it has no retry budget")
            given = cast(object, budget)  # a spec file or untyped code may pass anything
            if isinstance(given, bool) or not isinstance(given, int) or given < 0:
                raise ValueError(
                    f"the retry budget at {point.value} must be a whole number >= 0, got {budget!r}"
                )
            budgets[point] = budget
        self._budgets: Mapping[HookPoint, int] = MappingProxyType(budgets)
        self.blocked_message: str = blocked_message
        self.escalated_message: str = escalated_message
        self.models: Mapping[str, Model] = MappingProxyType(dict(models or {}))
        self.authenticator: Authenticator | None = authenticator

    @property
    def entries(self) -> tuple[PolicyEntry, ...]:
        """The installed middleware, in spec order."""
        return self._entries

    def order(self, point: HookPoint) -> tuple[PolicyEntry, ...]:
        """The middleware that run at *point*, in the order they run."""
        return self._order[point]

    def attached(self, point: HookPoint) -> tuple[Attached, ...]:
        """The middleware that run at *point*, in order, as they are called there."""
        return self._attached[point]

    def retry_budget(self, point: HookPoint) -> int:
        """Retries of one step allowed at *point* (0 where ``Retry`` is not allowed)."""
        return self._budgets.get(point, 0)

    def identify(self, interrupt_id: str, answer: Approval, *, stored: bool = True) -> Approver:
        """Who gives *answer*, given in a prompt: the approver its credential proves.

        Args:
            interrupt_id: The approval answered.
            answer: The answer, with the credential that says who gives it.
            stored: Whether the agent keeps its session in a store, where an approver
                can answer outside the prompt; the refusal says what to do either way.

        Raises:
            ApprovalRefused: Without an authenticator, without a credential, or when the
                authenticator refuses it.
        """
        if self.authenticator is None:
            refused = (
                f"policy approval {interrupt_id!r} cannot be answered in a prompt: this "
                "policy has no authenticator, so an answer there proves nobody's identity. "
            )
            if not stored:
                # The console and the command line answer in a store; this agent has none.
                raise ApprovalRefused(
                    refused + "Configure PolicyEngine(authenticator=...) (SignedCredentials, "
                    "say), or give the agent a session store (session_store=, session_id=) "
                    "so that an approver answers with `stageware console` or `stageware "
                    "policy approvals --approve/--deny ID`"
                )
            raise ApprovalRefused(
                refused + "Record the answer with `stageware console` or `stageware policy "
                "approvals --approve/--deny ID` and continue the run with agent() and no "
                "prompt, or configure PolicyEngine(authenticator=...)"
            )
        if answer.credential is None:
            raise ApprovalRefused(
                f"the answer to policy approval {interrupt_id!r} carries no 'credential'; "
                "the policy's authenticator needs one to know who answers"
            )
        # Checked: an application's authenticator may be untyped.
        approver = cast(object, self.authenticator(answer.credential))
        if not isinstance(approver, Approver):
            raise TypeError(
                f"the authenticator returned {type(approver).__name__}, not an Approver"
            )
        return approver

    def install(self, core: AgentCore) -> None:
        """Install the policy on an agent (``Agent(policy=...)`` calls this)."""
        AgentPolicy(self, core).install()

    def __repr__(self) -> str:
        names = ", ".join(entry.name for entry in self._entries)
        return f"PolicyEngine([{names}])"


def _ordered(point: HookPoint, entries: Sequence[PolicyEntry]) -> tuple[PolicyEntry, ...]:
    bands = BANDS if HOOK_POINTS[point].direction is Direction.INBOUND else BANDS[::-1]
    rank = {band: index for index, band in enumerate(bands)}
    attached = [entry for entry in entries if point in entry.effective_hooks]
    # sorted() is stable: spec order within a band.
    return tuple(sorted(attached, key=lambda entry: rank[entry.effective_band]))
