"""What an MCP server answers a tool call with, as a Converse tool result.

- Text content becomes text blocks; images in a format a model takes (PNG, JPEG, GIF,
  WebP) become image blocks (both carry base64); anything else a block can't carry (audio,
  a binary resource, another image format) becomes a text block saying what was left
  out, so the model knows there was more.
- Structured content becomes a json block, first. A server that sends structured content
  is asked by the protocol to send the same JSON as text too; that text copy is dropped,
  so the model does not read the answer twice.
- ``isError`` makes an error result, with the same content.
- Past ``max_chars`` characters of text and JSON (the client's ``max_result_chars``), the
  result is cut: the block that crosses the limit keeps its beginning (a JSON block as
  text), later text and JSON blocks are left out, and a last text block tells the model
  how much it got of how much. Images are not counted: providers bound them themselves.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types

from stageware._generated.payloads import ImageFormat, ToolResult, ToolResultContent

__all__ = ["tool_result"]

_IMAGE_FORMATS: dict[str, ImageFormat] = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}


def tool_result(
    tool_use_id: str, result: mcp_types.CallToolResult, *, max_chars: int | None = None
) -> ToolResult:
    """The Converse result for *result*, the answer to the call *tool_use_id*."""
    content: list[ToolResultContent] = []
    structured = result.structured_content
    if structured is not None:
        content.append({"json": structured})
    for block in result.content:
        if structured is not None and _is_copy_of(block, structured):
            continue
        content.append(_block(block))
    return {
        "toolUseId": tool_use_id,
        "status": "error" if result.is_error else "success",
        "content": content if max_chars is None else _cut(content, max_chars),
    }


def _cut(content: list[ToolResultContent], max_chars: int) -> list[ToolResultContent]:
    """*content* with at most *max_chars* characters of text and JSON, and a note if cut."""
    kept: list[ToolResultContent] = []
    left, total = max_chars, 0
    for block in content:
        if "text" in block:
            text = block["text"]
        elif "json" in block:
            text = json.dumps(block["json"], ensure_ascii=False)
        else:
            kept.append(block)
            continue
        total += len(text)
        if len(text) <= left:
            kept.append(block)
            left -= len(text)
        elif left > 0:
            kept.append({"text": text[:left]})
            left = 0
    if total > max_chars:
        kept.append(
            {
                "text": f"[the result was cut: these are the first {max_chars} of its "
                f"{total} characters]"
            }
        )
    return kept


def _is_copy_of(block: mcp_types.ContentBlock, structured: Any) -> bool:
    if not isinstance(block, mcp_types.TextContent):
        return False
    try:
        copy: object = json.loads(block.text)
    except ValueError:
        return False
    return bool(copy == structured)


def _block(block: mcp_types.ContentBlock) -> ToolResultContent:
    if isinstance(block, mcp_types.TextContent):
        return {"text": block.text}
    if isinstance(block, mcp_types.ImageContent):
        image_format = _IMAGE_FORMATS.get(block.mime_type.lower())
        if image_format is not None:
            return {"image": {"format": image_format, "source": {"bytes": block.data}}}
        return {"text": f"[an image of type {block.mime_type} was left out]"}
    if isinstance(block, mcp_types.AudioContent):
        return {"text": f"[audio of type {block.mime_type} was left out]"}
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return {"text": resource.text}
        kind = resource.mime_type or "unknown type"
        return {"text": f"[binary resource {resource.uri} ({kind}) was left out]"}
    # A resource link: the model can't open it, but it can name it.
    return {"text": f"[resource link: {block.uri}]"}
