"""The reference agent host: a real agent loop that runs the three stages.

Implementation modules are private; ``stageware`` re-exports the names listed here.

How the modules fit together, from the outside in:

- ``_agent``: ``Agent``, its configuration, the sync/async entry points and sessions.
- ``_invocation``: one ``agent(...)`` call; the AgentStream chain and its run loop.
- ``_event_loop``: one pass, the AgentStream terminal: model turns and tool rounds.
- ``_model_call``: the InvokeModel chain, its terminal and the model-call hooks.
- ``_tool_executor``: a tool round, concurrently, through hooks and the ExecuteTool chain.
- ``_interrupt_state``: what waits for a human, and how long answers live.
- ``_core``: the state those modules share; ``_hooks`` / ``_hook_events``: lifecycle hooks.
- ``_prompt``, ``_agent_result``, ``_cancel``, ``_tool_results``: small pieces they use.
- Models: ``_scripted_model`` (with ``_streaming``, which assembles a streamed message),
  ``_openai_model`` and ``_openai_convert`` (public as ``stageware.openai``).
- Tools: ``_tool_decorator`` and ``_tool_spec``. Sessions: ``_session_store``,
  ``_sqlite_store``.
"""

from ._agent import Agent, ConcurrentInvocationError
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
from ._prompt import Prompt
from ._scripted_model import (
    ModelRequest,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    ScriptExhaustedError,
)
from ._session_store import MemorySessionStore, SessionError, SessionSnapshot, SessionStore
from ._sqlite_store import SQLiteSessionStore
from ._tool_decorator import FunctionTool, tool

__all__ = [
    "AfterInvocationEvent",
    "AfterModelCallEvent",
    "AfterToolCallEvent",
    "Agent",
    "AgentMetrics",
    "AgentResult",
    "AgentResultEvent",
    "BeforeInvocationEvent",
    "BeforeModelCallEvent",
    "BeforeToolCallEvent",
    "CancelToken",
    "ConcurrentInvocationError",
    "FunctionTool",
    "LifecycleEvent",
    "MemorySessionStore",
    "MessageAddedEvent",
    "ModelRequest",
    "ModelStopResponse",
    "Prompt",
    "SQLiteSessionStore",
    "ScriptExhaustedError",
    "ScriptedModel",
    "ScriptedToolCall",
    "ScriptedTurn",
    "SessionError",
    "SessionSnapshot",
    "SessionStore",
    "tool",
]
