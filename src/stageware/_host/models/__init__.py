"""Models: the ``Model`` protocol, the errors a model call ends with, and the scripted model.

``_errors`` holds the errors any model may raise and the host acts on; ``_streaming``
assembles a streamed response into a message, for the host and for any model. The
OpenAI-compatible adapter (``_openai``, with ``_openai_convert`` for the payloads and
``_openai_errors`` for what a failure says; ``_credentials`` keeps a password in its URL
out of sight) needs the ``openai`` extra, so it is not imported here;
``stageware.openai`` is its public face. Likewise the Bedrock adapter (``_bedrock``, with
``_bedrock_request``, ``_bedrock_pump``, ``_bedrock_events`` and ``_bedrock_errors``) needs
the ``bedrock`` extra; ``stageware.bedrock`` is its public face.
The Anthropic adapter (``_anthropic``, with
``_anthropic_request``, ``_anthropic_stream`` and ``_anthropic_errors``) needs the
``anthropic`` extra in the same way; ``stageware.anthropic`` is its face. What the HTTP
adapters share lives beside them: ``_http_failures`` (what a failure says, which
messages mean a context-window overflow) and ``_loop_clients`` (SDK clients per event
loop, one SSL context).
"""

from ._errors import (
    ContextWindowOverflowError,
    ModelError,
    ModelThrottledError,
    StreamAssemblyError,
)
from ._output_schema import OutputSchema
from ._protocol import Model, TokenCounter
from ._scripted import (
    ModelRequest,
    Respond,
    ScriptedModel,
    ScriptedToolCall,
    ScriptedTurn,
    ScriptExhaustedError,
)
from ._streaming import CollectedResponse, ResponseAssembler, collect_response

__all__ = [
    "CollectedResponse",
    "ContextWindowOverflowError",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelThrottledError",
    "OutputSchema",
    "Respond",
    "ResponseAssembler",
    "ScriptExhaustedError",
    "ScriptedModel",
    "ScriptedToolCall",
    "ScriptedTurn",
    "StreamAssemblyError",
    "TokenCounter",
    "collect_response",
]
