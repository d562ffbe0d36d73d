"""The ConverseStream request for a conversation, with no I/O.

The history is Converse-shaped already, so a request is mostly the conversation as it
is: ``messages``, ``system``, ``toolConfig``, plus what the model was configured with
(``params``: ``inferenceConfig``, ``additionalModelRequestFields`` and the other request
fields; ``guardrailConfig``) and, in a structured run with the native mode, an
``outputConfig.textFormat`` JSON schema. Three things do change on the way: images and
redacted reasoning are base64 text in the history and raw bytes for botocore, which
encodes blobs itself; a call without tools whose history holds tool use gets stub specs
of the tools it used (Bedrock refuses the one without the other); and the messages are
copied, never changed in place, because they may be the agent's own history.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from collections.abc import Mapping
from typing import Any, Final

from stageware._generated.payloads import (
    ContentBlock,
    ImageBlock,
    Messages,
    SystemContentBlock,
    ToolChoice,
    ToolResultContent,
    ToolSpec,
)

from ._closed_schema import close_objects
from ._output_schema import OutputSchema

__all__ = ["RESERVED_PARAMS", "build_request", "native_schema"]

# The tool named when a history holds tool results but none of their uses.
_STUB_NAME: Final = "unavailable_tool"
# Request fields the adapter sets itself from the call and the model's options.
RESERVED_PARAMS: Final = frozenset(
    {"modelId", "messages", "system", "toolConfig", "guardrailConfig"}
)


def build_request(
    model_id: str,
    messages: Messages,
    *,
    system_prompt: str | None,
    system_prompt_content: list[SystemContentBlock] | None,
    tool_specs: list[ToolSpec] | None,
    tool_choice: ToolChoice | None,
    cache_tools: bool,
    params: Mapping[str, Any],
    guardrail: Mapping[str, str] | None,
    output_schema: OutputSchema[Any] | None,
) -> dict[str, Any]:
    """The keyword arguments of ``client.converse_stream`` for one call.

    When both system forms are given, ``system_prompt_content`` wins, as the host passes
    the same prompt in both.

    Raises:
        ValueError: A block that cannot be sent (an image or redacted reasoning whose
            base64 text does not decode), named by its position.
    """
    request: dict[str, Any] = {
        # `params` is deep-copied: botocore may hold on to what it is given, and a later
        # call must not see an earlier one's changes.
        **copy.deepcopy(dict(params)),
        "modelId": model_id,
        "messages": [
            {"role": message["role"], "content": _blocks(message["content"], f"messages[{n}]")}
            for n, message in enumerate(messages)
        ],
    }
    system = _system(system_prompt, system_prompt_content)
    if system:
        request["system"] = system
    if tool_specs:
        tools: list[dict[str, Any]] = [{"toolSpec": dict(spec)} for spec in tool_specs]
        if cache_tools:
            tools.append({"cachePoint": {"type": "default"}})
        tool_config: dict[str, Any] = {"tools": tools}
        if tool_choice is not None:
            tool_config["toolChoice"] = dict(tool_choice)
        request["toolConfig"] = tool_config
    elif _uses_tools(messages):
        # Bedrock refuses tool use or tool results in the conversation when the request
        # defines no tools ("The toolConfig field must be defined ..."). A history keeps
        # them after the tools are gone: a structured run's output tool, or an agent
        # whose tools changed. So the tools the history used are named again, as stubs.
        request["toolConfig"] = {"tools": [{"toolSpec": spec} for spec in _stub_specs(messages)]}
    if guardrail is not None:
        request["guardrailConfig"] = dict(guardrail)
    if output_schema is not None:
        output_config = dict(request.get("outputConfig") or {})
        output_config["textFormat"] = {
            "type": "json_schema",
            "structure": {
                "jsonSchema": {
                    # The service takes the schema as a JSON document in a string.
                    "schema": json.dumps(native_schema(output_schema.json_schema)),
                    "name": output_schema.name,
                    "description": output_schema.description,
                }
            },
        }
        request["outputConfig"] = output_config
    return request


def _uses_tools(messages: Messages) -> bool:
    return any(
        "toolUse" in block or "toolResult" in block
        for message in messages
        for block in message["content"]
    )


def _stub_specs(messages: Messages) -> list[dict[str, Any]]:
    """A spec for each tool the history used, in order, that accepts any object."""
    names = dict.fromkeys(
        block["toolUse"]["name"]
        for message in messages
        for block in message["content"]
        if "toolUse" in block
    )
    # Tool results whose uses are no longer in the history still need one tool defined.
    return [
        {
            "name": name,
            "description": "A tool used earlier in this conversation; it is no longer available.",
            "inputSchema": {"json": {"type": "object", "properties": {}}},
        }
        for name in names or [_STUB_NAME]
    ]


def native_schema(json_schema: Mapping[str, Any]) -> dict[str, Any]:
    """*json_schema* in the dialect Bedrock's JSON-schema mode accepts, as a new dict.

    Bedrock requires ``"additionalProperties": false`` on every object schema (its
    constrained decoding cannot leave an object open); pydantic writes it only for
    ``extra="forbid"``. Only subschemas are closed, never data such as a ``default``;
    everything else pydantic emits (``$defs`` and ``$ref``, ``anyOf``, ``enum``,
    ``required``) passes as it is.
    """
    return close_objects(json_schema).schema


def _system(
    system_prompt: str | None, system_prompt_content: list[SystemContentBlock] | None
) -> list[dict[str, Any]]:
    if system_prompt_content is not None:
        return [dict(block) for block in system_prompt_content]
    return [{"text": system_prompt}] if system_prompt else []


def _blocks(blocks: list[ContentBlock], where: str) -> list[dict[str, Any]]:
    converted: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        at = f"{where}.content[{index}]"
        if "image" in block:
            converted.append({"image": _image(block["image"], f"{at}.image")})
        elif "toolResult" in block:
            result = block["toolResult"]
            converted.append(
                {
                    "toolResult": {
                        "toolUseId": result["toolUseId"],
                        "status": result["status"],
                        "content": [
                            _tool_result_content(item, f"{at}.toolResult.content[{n}]")
                            for n, item in enumerate(result["content"])
                        ],
                    }
                }
            )
        elif "reasoningContent" in block and "redactedContent" in block["reasoningContent"]:
            redacted = block["reasoningContent"]["redactedContent"]
            converted.append(
                {
                    "reasoningContent": {
                        "redactedContent": _decode(redacted, f"{at}.reasoningContent")
                    }
                }
            )
        else:
            # Text, tool use, reasoning text and cache points are Converse already; a
            # shallow copy is enough, as botocore only reads them.
            converted.append(dict(block))
    return converted


def _tool_result_content(item: ToolResultContent, where: str) -> dict[str, Any]:
    if "image" in item:
        return {"image": _image(item["image"], f"{where}.image")}
    return dict(item)


def _image(image: ImageBlock, where: str) -> dict[str, Any]:
    return {
        "format": image["format"],
        "source": {"bytes": _decode(image["source"]["bytes"], f"{where}.source.bytes")},
    }


def _decode(text: str, where: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ValueError(f"{where} is not base64 text: {error}") from None
