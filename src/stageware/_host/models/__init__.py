"""Models: the ``Model`` protocol and the scripted model for tests and demos.

``_streaming`` assembles a streamed response into a message, for the host and for any
model. The OpenAI-compatible adapter (``_openai``, ``_openai_convert``) needs the
``openai`` extra, so it is not imported here; ``stageware.openai`` is its public face.
"""

from ._protocol import Model
from ._scripted import (
    ModelRequest,
    Respond,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    ScriptExhaustedError,
)
from ._streaming import CollectedResponse, ResponseAssembler, StreamAssemblyError, collect_response

__all__ = [
    "CollectedResponse",
    "Model",
    "ModelRequest",
    "Respond",
    "ResponseAssembler",
    "ScriptExhaustedError",
    "ScriptedModel",
    "ScriptedToolCall",
    "ScriptedTurn",
    "StreamAssemblyError",
    "collect_response",
]
