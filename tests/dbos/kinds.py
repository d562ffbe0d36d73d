"""The durable agent kinds the tests run, in the test process and in worker processes.

Both import this module, so both register the same DBOS workflows, under the application
version the tests fix (``APP_VERSION``): DBOS recovers only a version's own workflows.

``SETUP`` says which store the agents use and where each tool run is logged: a file, one
line per run, so that runs in a worker process that died are counted too. The model
decides its answer from the conversation (a refund call, then a reply once the refund's
result is in), so that a process taking over mid-run answers as the first one would.
With ``SETUP.crash`` set, the process exits at once (``os._exit``, as ``kill -9`` would
end it) at that point: ``"model:2"`` when the second model call starts, ``"tool"`` when
the tool has run and logged, before its result is returned, ``"after-save"`` once the
invocation's final save is made, before its workflow records its end, ``"factory"``
when the agent is built, before anything of the invocation ran. With ``"cancel"`` the
tool cancels its own invocation's workflow while it runs (DBOS then raises its cancel
error, a ``BaseException``, at the tool's step).

Run as a program, it is a worker that starts one request and crashes as told:

    python -m tests.dbos.kinds SETUP_JSON PROMPT SESSION_ID
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from dbos import DBOS, DBOSConfig

from stageware import (
    AfterInvocationEvent,
    Agent,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    tool,
)
from stageware._host.models import ModelError
from stageware._host.models._scripted import ModelRequest
from stageware._host.sessions import SessionStore
from stageware.dbos import DurableAgent, launch, shutdown
from stageware.policy import (
    Block,
    Escalate,
    PolicyEngine,
    PolicyEnv,
    Suspend,
    ToolCallEvent,
)
from stageware.policy import middleware as policy_middleware
from tests.host.sessions.stores import StoreSpec, close_store, open_store

APP_VERSION: Final = "stageware-tests"
EXIT_CRASHED: Final = 9


@dataclass
class Setup:
    """What the agents of this process use; the fields travel to a worker as JSON."""

    store_spec: str = ""
    dbos_url: str = ""
    executor_id: str = ""
    tool_log: str = ""
    crash: str = ""
    lease_seconds: float = 1.0
    model_calls: list[int] = field(default_factory=list[int])
    store: SessionStore | None = None

    def to_json(self) -> str:
        data = asdict(self)
        del data["store"], data["model_calls"]
        return json.dumps(data)

    def dbos_config(self) -> DBOSConfig:
        return {"log_level": "WARNING", "application_version": APP_VERSION}

    def tool_runs(self) -> list[str]:
        path = Path(self.tool_log)
        return path.read_text(encoding="utf-8").split() if path.exists() else []


SETUP = Setup()


@tool
def refund(amount: int) -> str:
    """Refund an amount to the customer.

    Args:
        amount: In euros.
    """
    with open(SETUP.tool_log, "a", encoding="utf-8") as log:
        log.write(f"refund:{amount}\n")
        log.flush()
        os.fsync(log.fileno())
    if SETUP.crash == "tool":
        os._exit(EXIT_CRASHED)
    if SETUP.crash == "cancel":
        workflow_id = DBOS.workflow_id
        assert workflow_id is not None  # the tool runs in its invocation's step
        DBOS.cancel_workflow(workflow_id)
    return f"refunded {amount} EUR"


def _respond(request: ModelRequest) -> ScriptedTurn | str:
    SETUP.model_calls.append(len(request.messages))
    if SETUP.crash == "model:2" and len(SETUP.model_calls) == 2:
        os._exit(EXIT_CRASHED)
    last = request.messages[-1]
    if any("toolResult" in block for block in last["content"]):
        return "Refunded 30 EUR."
    return ScriptedTurn(tool_calls=[ScriptedToolCall("refund", {"amount": 30})])


def _store() -> SessionStore:
    assert SETUP.store is not None, "the test sets SETUP.store before it runs an agent"
    return SETUP.store


def _after_invocation(event: AfterInvocationEvent) -> None:
    # The hook runs once the final save is made: the workflow has not recorded its end.
    if SETUP.crash == "after-save":
        os._exit(EXIT_CRASHED)


def build_support(session_id: str) -> Agent:
    if SETUP.crash == "factory":
        os._exit(EXIT_CRASHED)
    agent = Agent(
        ScriptedModel([_respond] * 20),
        tools=[refund],
        session_store=_store(),
        session_id=session_id,
        session_lease=SETUP.lease_seconds,
    )
    agent.add_hook(_after_invocation, AfterInvocationEvent)
    return agent


def _refund_guard(timeout: str | None = None, on_timeout: Block | Escalate | None = None) -> Any:
    """A policy that suspends every refund for a manager's approval, expiring as given."""

    @policy_middleware(hooks=["tool.before"], fail_mode="closed", name="refund_guard")
    async def refund_guard(event: ToolCallEvent, env: PolicyEnv) -> Suspend:
        return Suspend("a refund needs a manager", timeout=timeout, on_timeout=on_timeout)

    return refund_guard


def _guarded(guard: Any) -> Callable[[str], Agent]:
    """A factory of the support agent with *guard* as its policy."""

    def build(session_id: str) -> Agent:
        return Agent(
            ScriptedModel([_respond] * 20),
            tools=[refund],
            policy=PolicyEngine([guard]),
            session_store=_store(),
            session_id=session_id,
            session_lease=SETUP.lease_seconds,
        )

    return build


build_approved = _guarded(_refund_guard())


_builds: dict[str, int] = {}


def build_resumed_meanwhile(session_id: str) -> Agent:
    """``build_approved``; its third build for a session (the continuation's, after the
    request found the answered cycle open) first resumes the run as an application
    would, with ``agent()`` and no prompt, to its end."""
    _builds[session_id] = _builds.get(session_id, 0) + 1
    if _builds[session_id] == 3:
        build_approved(session_id)()
    return build_approved(session_id)


def build_failing(session_id: str) -> Agent:
    return Agent(
        ScriptedModel([ModelError("the provider is down")]),
        session_store=_store(),
        session_id=session_id,
    )


def build_storeless(session_id: str) -> Agent:
    return Agent(ScriptedModel(["hi"]))


support = DurableAgent("test-support", build_support)
approved = DurableAgent("test-approved", build_approved)
unwaited = DurableAgent("test-unwaited", build_approved, wait_for_approvals=False)
resumed_meanwhile = DurableAgent("test-resumed-meanwhile", build_resumed_meanwhile)
failing = DurableAgent("test-failing", build_failing)
storeless = DurableAgent("test-storeless", build_storeless)
# Approvals nobody gives: each expires after a second, into a block or an escalation.
expiring_into_block = DurableAgent(
    "test-expiring-block",
    _guarded(_refund_guard("1s", Block("nobody approved the refund in time"))),
)
expiring_into_escalate = DurableAgent(
    "test-expiring-escalate",
    _guarded(_refund_guard("1s", Escalate("refund approval expired", queue="refunds"))),
)


def history(setup: Setup, session_id: str) -> list[str]:
    """The stored history, one word per message: user, tool_use, tool_result, text."""
    assert setup.store is not None
    stored = setup.store.load(session_id)
    assert stored is not None
    kinds: list[str] = []
    for message in stored.snapshot["messages"]:
        blocks = message["content"]
        if any("toolUse" in block for block in blocks):
            kinds.append("tool_use")
        elif any("toolResult" in block for block in blocks):
            kinds.append("tool_result")
        else:
            kinds.append(message["role"])
    return kinds


def launch_for_tests() -> None:
    """Launch DBOS as ``SETUP`` says, with its store open."""
    SETUP.store = open_store(StoreSpec.from_json(SETUP.store_spec))
    launch(
        name="stageware-tests",
        database_url=SETUP.dbos_url,
        executor_id=SETUP.executor_id or None,
        config=SETUP.dbos_config(),
    )


def shutdown_for_tests() -> None:
    shutdown()
    if SETUP.store is not None:
        close_store(SETUP.store)
        SETUP.store = None


def main(setup: str, prompt: str, session_id: str) -> None:
    for name, value in json.loads(setup).items():
        setattr(SETUP, name, value)
    launch_for_tests()
    handle = support.start(prompt, session_id=session_id)
    print(handle.workflow_id, flush=True)
    handle.get_result()
    shutdown_for_tests()


if __name__ == "__main__":
    main(*sys.argv[1:])
