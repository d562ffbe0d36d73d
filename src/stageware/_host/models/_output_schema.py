"""What a structured run asks a model for: one JSON object of a declared shape.

``agent(prompt, output_type=T)`` turns *T* (a pydantic model or a ``TypedDict``) into an
``OutputSchema`` once per invocation. The host reads it in two ways, depending on the model:

- A model whose ``supports_structured_output`` attribute is true is given the schema as
  ``stream(..., output_schema=schema)`` and constrains its final reply itself (a provider's
  native JSON-schema mode); the text of that reply is the JSON object.
- Any other model is given ``schema.tool_spec()`` as one more tool and is made to call it;
  the tool call's input is the object.

Either way the host validates the object with ``OutputSchema.validate``. The schema is
plain data for adapters: they never need pydantic to read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, final

from stageware._generated.payloads import ToolSpec

if TYPE_CHECKING:
    import pydantic

__all__ = ["OutputSchema"]

OutputT = TypeVar("OutputT")

# What every provider accepts as a tool or schema name (Bedrock and Anthropic: 64
# characters of this alphabet; OpenAI: the same).
_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


@final
@dataclass(frozen=True, eq=False)
class OutputSchema(Generic[OutputT]):
    """The structured output one invocation asks for, and how to check a reply against it.

    Attributes:
        output_type: The type the caller asked for (a pydantic model or a ``TypedDict``).
        name: A name every provider accepts for a tool or a schema (letters, digits, ``_``
            and ``-``; at most 64 characters), from the type's name.
        description: What the object is: the type's docstring, or a sentence naming it.
        json_schema: The JSON Schema of the object (pydantic's, draft 2020-12, with
            ``$defs`` for nested types). Adapters adapt it to their provider's dialect;
            they never change this dict.
    """

    output_type: type[OutputT]
    name: str
    description: str
    json_schema: dict[str, Any]
    _adapter: pydantic.TypeAdapter[OutputT] = field(repr=False)

    @classmethod
    def of(cls, output_type: type[OutputT]) -> OutputSchema[OutputT]:
        """The schema of *output_type*, a pydantic model or a ``TypedDict``.

        Raises:
            TypeError: *output_type* is not a type pydantic can build an object schema for
                (a JSON object: providers accept nothing else as structured output).
        """
        # Imported here: `import stageware` (and the agent) must not load pydantic.
        import pydantic

        try:
            adapter = pydantic.TypeAdapter(output_type)
            json_schema = adapter.json_schema()
        except pydantic.PydanticUserError as error:
            raise TypeError(f"output_type={output_type!r} has no JSON schema: {error}") from error
        if json_schema.get("type") != "object":
            raise TypeError(
                f"output_type={output_type!r} is not an object type (a pydantic model or a "
                "TypedDict): providers accept only a JSON object as structured output"
            )
        type_name = getattr(output_type, "__name__", "") or "Output"
        name = _NAME_UNSAFE.sub("_", type_name)[:64]
        doc = (getattr(output_type, "__doc__", None) or "").strip()
        # pydantic copies a model's docstring into the schema; a TypedDict's default
        # docstring is not a description worth sending.
        description = json_schema.get("description") or doc or f"The {type_name} to answer with."
        return cls(output_type, name, str(description), json_schema, adapter)

    def tool_spec(self) -> ToolSpec:
        """The tool a model without a native mode is made to call with the object."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": {"json": self.json_schema},
        }

    def validate(self, data: object) -> OutputT:
        """Check *data* (a decoded JSON object) against the schema and build the output.

        Raises:
            pydantic.ValidationError: *data* does not fit; its ``errors()`` say where.
        """
        return self._adapter.validate_python(data)

    def validate_json(self, text: str | bytes) -> OutputT:
        """Parse *text* as JSON and check it, as ``validate`` does.

        Raises:
            pydantic.ValidationError: *text* is not JSON, or does not fit.
        """
        return self._adapter.validate_json(text)
