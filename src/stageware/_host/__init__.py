"""The reference agent host: a real agent loop that runs the three stages.

Implementation modules are private; ``stageware`` re-exports the names listed here.
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
