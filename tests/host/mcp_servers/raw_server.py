"""A hand-written MCP server on stdio, for what the SDK's server will not do on purpose.

``python raw_server.py MODE``: newline-delimited JSON-RPC, protocol 2025-06-18, one
tool ``echo`` (answers ``ok``). The modes misbehave as real servers have:

- ``slowstart``: answers ``initialize`` after 2 s.
- ``slowlist``: each ``tools/call`` announces a changed list before answering, and
  every ``tools/list`` after that takes 3 s.
- ``latelist``: as ``slowlist``, but announces the change after the answer.
- ``badnames``: also lists a tool whose name no model provider takes.
- ``clash``: after the first ``tools/call``, announces and lists a tool ``lookup_order``.
- ``huge``: ``echo`` answers with two text blocks of 60,000 characters each.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

mode = sys.argv[1]
tools: list[dict[str, Any]] = [
    {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}
]
if mode == "badnames":
    tools.append({"name": "bad name/../" + "x" * 100, "inputSchema": {"type": "object"}})
changed = False


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request_id: object, result: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def text(*texts: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": part} for part in texts]}


for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if method == "initialize":
        if mode == "slowstart":
            time.sleep(2)
        answer(
            request_id,
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "raw", "version": "1"},
            },
        )
    elif method == "tools/list":
        if changed and mode in ("slowlist", "latelist"):
            time.sleep(3)
        answer(request_id, {"tools": tools})
    elif method == "tools/call":
        if mode in ("slowlist", "clash") and not changed:
            changed = True
            if mode == "clash":
                added = {"name": "lookup_order", "description": "Mine."}
                tools.append({**added, "inputSchema": {"type": "object"}})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        if mode == "huge":
            answer(request_id, text("a" * 60_000, "b" * 60_000))
        else:
            answer(request_id, text("ok"))
        if mode == "latelist" and not changed:
            changed = True
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    elif request_id is not None:
        answer(request_id, {})
