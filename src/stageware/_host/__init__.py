"""The reference agent host: a real agent loop that runs the three stages.

Implementation modules are private; ``stageware`` re-exports the names listed here.

The core loop, from the outside in:

- ``_agent``: ``Agent``, its configuration and the sync/async entry points;
  ``_agent_state``: ``AgentState``, its JSON key-value state. ``_agent_id``: agent ids
  (``Agent(agent_id=...)``), which scope interrupt ids. ``_agent_as_tool``:
  ``agent.as_tool()``, a sub-agent as a tool, and the routing of answers to it.
- ``_session``: the agent's side of a stored session: the claim under a lease, its
  renewal (by the store's one renewer), a checkpoint of each message as it enters the
  history, the release.
- ``_invocation``: one ``agent(...)`` call; the AgentStream chain and its run loop;
  ``_task_stream``: the task a ``stream_async`` run lives in (or a durable engine's
  workflow, for ``stageware.dbos.run_durably``).
- ``_event_loop``: one pass, the AgentStream terminal: model turns and tool rounds;
  ``_history``: how a pass's input joins a history an earlier ending left; ``_limits``:
  the model-call limit.
- ``_model_call``: the InvokeModel chain, its terminal and the model-call hooks;
  ``_model_retry``: when a throttled model call is tried again; ``_history_copies``: the
  copies of the history handlers see, kept from one model call to the next;
  ``_tool_specs``: the tool specs every model call offers, and the copies handlers see;
  ``_input_tokens``: the call's ``projected_input_tokens`` and its calibration, on
  ``_token_estimate``, the documented estimate.
- ``_tool_executor``: a tool round, concurrently, through hooks and the ExecuteTool chain;
  ``_agent_tools``: the agent's tools and tool providers by name, read per model call.
- ``_interrupt_state``: what waits for a human, and how long answers live;
  ``_interrupt_records``: its stored shape, checked when a session restores it.
- ``_journal``: the journal a durable-execution engine (``stageware.dbos``) records an
  invocation's model and tool calls in, one step each; ``_journal_step``: a step that
  streams while it runs; ``_journal_data``: what a step records, as JSON data (errors and
  interrupts included); ``_journal_session``: what a durable invocation leaves in its
  session (its key in the lease and the final save), read back on a replay.
- ``_cancel``: the cancel signal; ``_cancel_watch``: the deadlines that cut what does not
  stop after ``cancel()``.
- ``_core``: the state those modules share; ``_hooks`` / ``_hook_events``: lifecycle hooks
  (``agent.add_hook``).
- ``_prompt``, ``_agent_result``: small pieces they use; ``_running_loop`` (asyncio or
  trio) and ``_shorten`` (quoting in error messages), shared by them and the
  sub-packages.

What the loop plugs in, each in its own sub-package:

- ``models/``: the ``Model`` protocol, the model errors, ``ScriptedModel`` and the
  OpenAI-compatible adapter (public as ``stageware.openai``).
- ``tools/``: the ``AgentTool`` protocol, ``ToolContext`` and ``@tool``; ``ToolProvider``,
  and an MCP server's tools (public as ``stageware.mcp``).
- ``sessions/``: snapshots, the ``SessionStore`` protocol and its stores.
"""

from ._agent import Agent, ConcurrentInvocationError
from ._agent_as_tool import AgentAsTool
from ._agent_result import AgentMetrics, AgentResult, AgentResultEvent
from ._cancel import CancelToken
from ._hook_events import (
    AfterInvocationEvent,
    AfterModelCallEvent,
    AfterToolCallEvent,
    BeforeInvocationEvent,
    BeforeModelCallEvent,
    BeforeToolCallEvent,
    LifecycleEvent,
    MessageAddedEvent,
    ModelStopResponse,
)
from ._interrupt_state import InterruptAnsweredError
from ._model_retry import ModelRetryStrategy
from ._prompt import Prompt
from ._structured_errors import StructuredOutputError
from ._token_estimate import estimate_tokens
from .models import (
    ContextWindowOverflowError,
    Model,
    ModelError,
    ModelRequest,
    ModelThrottledError,
    OutputSchema,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    ScriptExhaustedError,
    StreamAssemblyError,
    TokenCounter,
)
from .sessions import (
    ApprovalEntry,
    ApprovalPage,
    ApprovalStatus,
    Escalation,
    EscalationError,
    EscalationPage,
    EscalationStatus,
    Lease,
    MemorySessionStore,
    SessionConflictError,
    SessionError,
    SessionEscalatedError,
    SessionLeasedError,
    SessionSnapshot,
    SessionStore,
    SessionTimeoutError,
    SessionUnfinishedError,
    SQLiteSessionStore,
    StoredSession,
)
from .tools import AgentTool, FunctionTool, ToolContext, ToolProvider, tool

__all__ = [
    "AfterInvocationEvent",
    "AfterModelCallEvent",
    "AfterToolCallEvent",
    "Agent",
    "AgentAsTool",
    "AgentMetrics",
    "AgentResult",
    "AgentResultEvent",
    "AgentTool",
    "ApprovalEntry",
    "ApprovalPage",
    "ApprovalStatus",
    "BeforeInvocationEvent",
    "BeforeModelCallEvent",
    "BeforeToolCallEvent",
    "CancelToken",
    "ConcurrentInvocationError",
    "ContextWindowOverflowError",
    "Escalation",
    "EscalationError",
    "EscalationPage",
    "EscalationStatus",
    "FunctionTool",
    "InterruptAnsweredError",
    "Lease",
    "LifecycleEvent",
    "MemorySessionStore",
    "MessageAddedEvent",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelRetryStrategy",
    "ModelStopResponse",
    "ModelThrottledError",
    "OutputSchema",
    "Prompt",
    "SQLiteSessionStore",
    "ScriptExhaustedError",
    "ScriptedModel",
    "ScriptedToolCall",
    "ScriptedTurn",
    "SessionConflictError",
    "SessionError",
    "SessionEscalatedError",
    "SessionLeasedError",
    "SessionSnapshot",
    "SessionStore",
    "SessionTimeoutError",
    "SessionUnfinishedError",
    "StoredSession",
    "StreamAssemblyError",
    "StructuredOutputError",
    "TokenCounter",
    "ToolContext",
    "ToolProvider",
    "estimate_tokens",
    "tool",
]
