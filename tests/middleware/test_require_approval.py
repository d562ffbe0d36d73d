"""require_approval: a person approves each call of the listed tools, through the policy
layer's Suspend, on a real Agent.

The tools count their runs, so "ran once" and "never ran" are observed on the tool. The
approvals are answered as the policy layer lets them be: with a credential the engine's
authenticator verifies, and through the command line (``main([...])``, as the console
script runs it) as the operating-system account, on an SQLite session that a second
``Agent`` object resumes, as a restarted process would.
"""

from __future__ import annotations

import os
import pwd
import re
from pathlib import Path
from typing import Any, Literal

import pytest

from stageware import Agent, AgentTool, ScriptedModel, SQLiteSessionStore, tool
from stageware.middleware import require_approval
from stageware.policy import ApprovalRefused, MiddlewareDef, PolicyEngine, SignedCredentials
from stageware_codegen.cli import main
from tests.host.agent_helpers import calls

SECRET = b"require_approval tests: a secret nowhere else"


class Desk:
    """A refund tool and a lookup tool that count their runs."""

    def __init__(self) -> None:
        self.refunds: list[int] = []
        self.lookups: list[int] = []

        @tool
        def refund(order_id: int, amount: int) -> str:
            """Refund an amount on an order."""
            self.refunds.append(order_id)
            return f"refunded {amount} on {order_id}"

        @tool
        def lookup_order(order_id: int) -> str:
            """Look up an order."""
            self.lookups.append(order_id)
            return "shipped"

        self.tools: list[AgentTool] = [refund, lookup_order]

    def agent(
        self,
        script: list[Any],
        *gates: MiddlewareDef,
        backend: Literal["asyncio", "trio"] = "asyncio",
        **options: Any,
    ) -> Agent:
        engine = PolicyEngine(
            list(gates) or [require_approval(tools=["refund"])],
            authenticator=options.pop("authenticator", SignedCredentials(SECRET)),
        )
        return Agent(
            ScriptedModel(script),
            tools=self.tools,
            policy=engine,
            backend=backend,
            **options,
        )


def answer(interrupt_id: str, *, approved: bool, who: str = "dana") -> list[dict[str, Any]]:
    token = SignedCredentials(SECRET).issue(who, ttl=300)
    response = {"approved": approved, "credential": token}
    return [{"interruptResponse": {"interruptId": interrupt_id, "response": response}}]


REFUND = calls(("refund", {"order_id": 7, "amount": 40}, "t1"))


@pytest.mark.anyio
async def test_only_the_listed_tools_wait_for_approval() -> None:
    desk = Desk()
    agent = desk.agent([calls(("lookup_order", {"order_id": 7}, "t0")), REFUND, "done"])

    result = await agent.invoke_async("look up 7, then refund it")

    assert result.stop_reason == "interrupt"
    # The lookup ran without asking; the refund waits.
    assert (desk.lookups, desk.refunds) == ([7], [])
    [interrupt] = result.interrupts
    assert interrupt.id.startswith("v2:policy:tool.before:require_approval:t1#")
    reason = interrupt.reason
    assert reason["reason"] == "refund needs approval"
    assert reason["details"] == {"tool": "refund", "input": {"order_id": 7, "amount": 40}}
    assert reason["step"] == {"tool": "refund", "input": {"order_id": 7, "amount": 40}}


@pytest.mark.anyio
async def test_an_approval_with_a_valid_credential_runs_the_tool_once() -> None:
    desk = Desk()
    agent = desk.agent([REFUND, "Refunded."])
    waiting = (await agent.invoke_async("refund order 7")).interrupts[0].id

    result = await agent.invoke_async(answer(waiting, approved=True))

    assert (result.stop_reason, result.text) == ("end_turn", "Refunded.")
    assert desk.refunds == [7]
    [resolved] = [d for d in result.decisions if d.approver is not None]
    assert resolved.approver == "dana"


@pytest.mark.anyio
async def test_a_denial_blocks_the_tool() -> None:
    desk = Desk()
    agent = desk.agent([REFUND, "never"])
    waiting = (await agent.invoke_async("refund order 7")).interrupts[0].id

    result = await agent.invoke_async(answer(waiting, approved=False))

    assert result.stop_reason == "blocked"
    assert result.halt is not None
    assert result.halt.middleware == "require_approval"
    assert desk.refunds == []


@pytest.mark.anyio
async def test_an_answer_in_a_prompt_without_an_authenticator_is_refused() -> None:
    desk = Desk()
    agent = desk.agent([REFUND, "never"], authenticator=None)
    waiting = (await agent.invoke_async("refund order 7")).interrupts[0].id

    with pytest.raises(ApprovalRefused, match="cannot be answered in a prompt") as refused:
        await agent.invoke_async(answer(waiting, approved=True))

    assert desk.refunds == []
    # This agent keeps no session store, so no console could answer it: the refusal says
    # what it needs rather than sending the reader to a command with nothing to open.
    message = str(refused.value)
    assert "Configure PolicyEngine(authenticator=...)" in message
    assert "give the agent a session store (session_store=, session_id=)" in message
    assert "Record the answer" not in message


@pytest.mark.anyio
async def test_who_may_answer_and_the_question_are_the_gates() -> None:
    desk = Desk()
    gate = require_approval(tools=["refund"], approvers=["role:finance"], reason="Pay it?")
    agent = desk.agent([REFUND, "Refunded."], gate)
    [interrupt] = (await agent.invoke_async("refund order 7")).interrupts
    assert (interrupt.reason["reason"], interrupt.reason["approvers"]) == (
        "Pay it?",
        ["role:finance"],
    )

    # dana has no finance role: refused, and nothing ran.
    with pytest.raises(ApprovalRefused, match="role:finance"):
        await agent.invoke_async(answer(interrupt.id, approved=True))
    assert desk.refunds == []

    token = SignedCredentials(SECRET).issue("fin", roles=["finance"], ttl=300)
    approval = {"approved": True, "credential": token}
    result = await agent.invoke_async(
        [{"interruptResponse": {"interruptId": interrupt.id, "response": approval}}]
    )
    assert (result.stop_reason, desk.refunds) == ("end_turn", [7])


@pytest.mark.anyio
async def test_when_decides_per_call() -> None:
    desk = Desk()
    gate = require_approval(tools=["refund"], when=lambda call: call["amount"] > 100)
    small = calls(("refund", {"order_id": 1, "amount": 40}, "t1"))
    large = calls(("refund", {"order_id": 2, "amount": 400}, "t2"))
    agent = desk.agent([small, large, "done"], gate)

    result = await agent.invoke_async("refund both")

    assert result.stop_reason == "interrupt"
    assert desk.refunds == [1]
    assert result.interrupts[0].reason["details"]["input"]["amount"] == 400


@pytest.mark.anyio
async def test_a_when_that_raises_blocks_the_call() -> None:
    desk = Desk()
    gate = require_approval(tools=["refund"], when=lambda call: call["missing"] > 0)
    agent = desk.agent([REFUND, "never"], gate)

    result = await agent.invoke_async("refund order 7")

    # Fail mode closed: a gate that cannot decide does not let the refund through.
    assert result.stop_reason == "blocked"
    assert desk.refunds == []


def _cli(*arguments: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    status = main(["policy", "approvals", *arguments])
    return status, capsys.readouterr().out


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_command_line_approves_and_a_second_agent_resumes_after_a_restart(
    backend: Literal["asyncio", "trio"],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("STAGEWARE_APPROVAL_AUTHENTICATOR", "STAGEWARE_APPROVAL_CREDENTIAL"):
        monkeypatch.delenv(name, raising=False)
    database = tmp_path / "sessions.db"
    desk = Desk()
    store = SQLiteSessionStore(database)
    first = desk.agent(
        [REFUND, "never: the second agent's model answers"],
        backend=backend,
        authenticator=None,
        session_store=store,
        session_id="customer-7",
    )
    waiting = first("refund order 7").interrupts[0].id
    store.close()

    status, listed = _cli("--store", str(database), capsys=capsys)
    assert status == 0
    assert waiting in listed
    status, _ = _cli("--store", str(database), "--approve", waiting, capsys=capsys)
    assert status == 0

    # Another process would build a new Agent on the same session: it resumes the run.
    reopened = SQLiteSessionStore(database)
    try:
        second = desk.agent(
            ["Refunded."],
            backend=backend,
            authenticator=None,
            session_store=reopened,
            session_id="customer-7",
        )
        result = second()
    finally:
        reopened.close()

    assert (result.stop_reason, result.text) == ("end_turn", "Refunded.")
    assert desk.refunds == [7]
    [resolved] = [d for d in result.decisions if d.approver is not None]
    assert resolved.approver == pwd.getpwuid(os.geteuid()).pw_name


@pytest.mark.parametrize(
    ("tools", "error", "message"),
    [
        ("refund", TypeError, re.escape("not the string 'refund'; write tools=['refund']")),
        ([], ValueError, "tools is empty"),
        (["refund", 3], TypeError, r"tools\[1\] is 3, not a tool name"),
        (["refund", " "], ValueError, r"tools\[1\] is an empty name"),
        ({"refund": 1}, TypeError, "must be a list of tool names"),
    ],
)
def test_bad_tools_are_refused_with_what_is_wrong(
    tools: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        require_approval(tools=tools)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def test_bad_approvers_when_and_name_are_refused() -> None:
    with pytest.raises(TypeError, match="approvers must be a collection"):
        require_approval(tools=["refund"], approvers="ana")
    with pytest.raises(ValueError, match="at least one approver"):
        require_approval(tools=["refund"], approvers=[])
    with pytest.raises(TypeError, match="when must be a callable"):
        require_approval(tools=["refund"], when=True)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match="not a dotted identifier"):
        require_approval(tools=["refund"], name="two words")


def test_it_is_a_closed_tool_before_declaration() -> None:
    gate = require_approval(tools=["refund", "wire"])

    assert (gate.name, gate.hooks, gate.fail_mode.value) == (
        "require_approval",
        ("tool.before",),
        "closed",
    )
    assert gate.description == "Calls of refund, wire wait for a person's approval."
    # Two gates on one engine need two names.
    PolicyEngine([gate, require_approval(tools=["wire"], name="wire_approval")])
    with pytest.raises(ValueError, match="installed twice"):
        PolicyEngine([gate, require_approval(tools=["wire"])])
