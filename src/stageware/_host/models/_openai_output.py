"""Structured output as chat completions asks for it: ``response_format`` with a JSON schema.

OpenAI's strict mode (``"strict": true``) guarantees the reply fits the schema, but only
for a subset of JSON Schema: every object must list all of its properties in
``required`` and say ``"additionalProperties": false``. Making an optional field
required would change what the caller's type means (the model would have to send a
value, or a null that the type may not accept), so the schema is never rewritten that
way. Instead:

- every object that does not say otherwise gets ``"additionalProperties": false``, which
  only tells the model not to invent keys (pydantic's own schema says ``true`` where the
  type accepts extra keys, and that is kept);
- the request is strict exactly when every object of the schema already requires all of
  its properties, which is the common case of a type whose fields have no defaults;
  otherwise it is sent with ``"strict": false``, which OpenAI follows on a best-effort
  basis and which local servers (vLLM, llama.cpp, Ollama) enforce with a grammar anyway.

The host validates the reply either way, and sends it back with the errors if it does
not fit. The caller's schema is never changed: the transform (``_closed_schema``, shared
with Bedrock) works on a copy.
"""

from __future__ import annotations

from typing import Any

from ._closed_schema import close_objects
from ._output_schema import OutputSchema

__all__ = ["response_format"]


def response_format(schema: OutputSchema[Any]) -> dict[str, Any]:
    """The ``response_format`` field that asks for *schema*'s JSON object."""
    closed = close_objects(schema.json_schema)
    return {
        "type": "json_schema",
        "json_schema": {
            "name": schema.name,
            "description": schema.description,
            "schema": closed.schema,
            "strict": closed.all_required,
        },
    }
