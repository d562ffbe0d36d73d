"""Who and what the policy demo's scenes share, and how a scene tells its run.

The cast: the refund desk, the scripted model, the SQLite session file and the agent on
it, with the policy loaded from the spec and org profile shipped beside this module. A
scene asks the agent through the cast, which prints the run's decisions, and states each
claim through :meth:`Cast.check`, which prints it if it holds and raises
``DemoCheckError`` if it does not.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from contextlib import ExitStack, contextmanager
from importlib import resources
from pathlib import Path
from typing import Final

from stageware import (
    Agent,
    AgentResult,
    AgentResultEvent,
    ModelStreamChunkEvent,
    ScriptedModel,
    SessionEscalatedError,
    SQLiteSessionStore,
)
from stageware._demo._errors import DemoCheckError
from stageware._demo._trace import Trace
from stageware.policy import PolicyEngine, SignedCredentials, load_policy

from ._decisions import decision_rows
from ._desk import RefundDesk, scripted_model

__all__ = ["SESSION_ID", "Cast"]

SESSION_ID: Final = "refund-desk-7"
SYSTEM_PROMPT: Final = "You are a refund desk agent. Be brief."


@contextmanager
def _policy_files() -> Generator[tuple[Path, Path]]:
    """The shipped ``policy.yaml`` and ``org.yaml`` as files, wherever the package lives."""
    here = resources.files("stageware._demo.policy")
    with ExitStack() as stack:
        policy = stack.enter_context(resources.as_file(here / "policy.yaml"))
        org = stack.enter_context(resources.as_file(here / "org.yaml"))
        yield policy, org


def _load(credentials: SignedCredentials) -> PolicyEngine:
    with _policy_files() as (policy, org):
        return load_policy(policy, baseline=org, authenticator=credentials)


class Cast:
    """The desk, the model, the session and its agent, and how a scene tells and checks.

    Attributes:
        trace: Where the story is told.
        database: The SQLite session file.
        desk: The back office, which counts the refunds paid.
        model: The scripted model, which records every request.
        store: A store on the session file of its own, to read what the agent saved and to
            handle escalations, as an operator's tool would.
        credentials: The authenticator of the policy's approvers: the desk's console issues
            an approver a credential with it, the policy verifies the answers with it.
        engine: The policy the agent runs under.
        agent: The agent serving the session.
        checks: How many claims held so far.
    """

    def __init__(self, trace: Trace, database: Path) -> None:
        self.trace = trace
        self.database = database
        self.desk = RefundDesk()
        self.model: ScriptedModel = scripted_model()
        self.store = SQLiteSessionStore(database)
        # A --session-dir kept from an earlier run holds that run's session; start over.
        self.store.delete(SESSION_ID)
        # A secret of this run only: the demo's credentials are good for nothing else.
        self.credentials = SignedCredentials(os.urandom(32))
        self.engine = _load(self.credentials)
        self.agent = self._agent()
        self.checks = 0

    def restart(self) -> None:
        """Drop the agent; load the policy again and open a new agent on the session file,
        as a restarted process would."""
        # A secret of this run only: the demo's credentials are good for nothing else.
        self.credentials = SignedCredentials(os.urandom(32))
        self.engine = _load(self.credentials)
        self.agent = self._agent()

    def _agent(self) -> Agent:
        return Agent(
            self.model,
            tools=self.desk.tools(),
            system_prompt=SYSTEM_PROMPT,
            session_store=SQLiteSessionStore(self.database),
            session_id=SESSION_ID,
            policy=self.engine,
        )

    def check(self, holds: bool, claim: str, otherwise: str) -> None:
        """Print *claim* if it *holds*; else fail the demo with *otherwise*."""
        if not holds:
            raise DemoCheckError(otherwise)
        self.checks += 1
        self.trace.note(f"checked: {claim}")

    def ask(self, prompt: str) -> AgentResult:
        """Run *prompt* and tell the run.

        Raises:
            DemoCheckError: If the session refuses the prompt for an escalation.
        """
        self.trace.note(f'user: "{prompt}"')
        try:
            result = self.agent(prompt)
        except SessionEscalatedError as error:
            raise DemoCheckError(f"the session refused {prompt!r}: {error}") from error
        return self.report(result)

    def report(self, result: AgentResult) -> AgentResult:
        """Print *result*'s decisions, its stop reason and what the customer read."""
        for row in decision_rows(result.decisions):
            self.trace.note(f"  {row}")
        self.trace.note(f"-> stop_reason={result.stop_reason}")
        if result.halt is not None:
            halt = result.halt
            self.trace.note(f"   halt: {halt.middleware} at {halt.hook}: {halt.reason}")
        if result.stop_reason == "interrupt":
            for interrupt in result.interrupts:
                self.trace.note(f"   waiting for {interrupt.name!r} (id {interrupt.id})")
        elif result.text:
            self.trace.note(f'   assistant: "{result.text}"')
        return result

    def history_text(self) -> str:
        """Every text of the stored session, as a restarted process would load it."""
        stored = self.store.load(SESSION_ID)
        if stored is None:
            raise DemoCheckError(f"the session {SESSION_ID!r} is not in {self.database.name}")
        return "\n".join(
            block["text"]
            for message in stored.snapshot["messages"]
            for block in message["content"]
            if "text" in block
        )

    def model_calls(self, since: int) -> int:
        """Model calls made since the model had *since* requests."""
        return len(self.model.requests) - since

    async def stream(self, prompt: str) -> tuple[str, AgentResult]:
        """Run *prompt* with ``stream_async``; the text the caller received, and the result."""
        streamed: list[str] = []
        result: AgentResult | None = None
        async for event in self.agent.stream_async(prompt):
            if isinstance(event, ModelStreamChunkEvent):
                delta = event.chunk.get("contentBlockDelta")
                if delta is not None and "text" in delta["delta"]:
                    streamed.append(delta["delta"]["text"])
            elif isinstance(event, AgentResultEvent):
                result = event.result
        if result is None:
            raise DemoCheckError("stream_async ended without a result")
        return "".join(streamed), result
