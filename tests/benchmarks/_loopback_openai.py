"""A fast, stateless OpenAI-compatible chat-completions server on loopback, for benchmarks.

Run it as its own process with ``python -m tests.benchmarks._loopback_openai``: it binds
127.0.0.1 on a free port, prints that port on one line of stdout, and serves until its
stdin closes (the parent ends, or closes the pipe). Its CPU is therefore never counted in
the CPU time of the framework under test, which runs in another process.

Every request gets one scripted tool round, decided from the request alone so that any
number of agents and conversations can share the server: when the last message is not a
tool result the model asks for the ``echo`` tool (with a call id derived from the
history's length, so ids never repeat within a conversation); when it is, the model answers
with a short text. Streaming requests get the chat-completions SSE wire format (a role
delta, the tool call or the text, the finish reason, the usage chunk when
``stream_options.include_usage`` asks for it, then ``[DONE]``); other requests one
``chat.completion`` JSON body. It speaks HTTP/1.1 with keep-alive, as clients pool
connections.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

TOOL_NAME = "echo"
ANSWER = "Echoed."
_MODEL = "loopback-model"


def _tool_call(call_id: str) -> dict[str, Any]:
    return {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": TOOL_NAME, "arguments": json.dumps({"text": "ping"})},
    }


def _choice_of(messages: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    """The assistant's delta for this history, and its finish reason."""
    if messages and messages[-1].get("role") == "tool":
        return {"content": ANSWER}, "stop"
    return {"tool_calls": [_tool_call(f"call_{len(messages)}")]}, "tool_calls"


def _chunk(delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": _MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def streamed_body(request: dict[str, Any]) -> bytes:
    """The SSE body answering a streaming *request*."""
    delta, finish_reason = _choice_of(request.get("messages", []))
    chunks = [_chunk({"role": "assistant", "content": ""}, None), _chunk(delta, None)]
    chunks.append(_chunk({}, finish_reason))
    if (request.get("stream_options") or {}).get("include_usage"):
        chunks.append({**_chunk({}, None), "choices": [], "usage": _USAGE})
    events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
    events.append("data: [DONE]\n\n")
    return "".join(events).encode()


def whole_body(request: dict[str, Any]) -> bytes:
    """The ``chat.completion`` body answering a non-streaming *request*."""
    delta, finish_reason = _choice_of(request.get("messages", []))
    message: dict[str, Any] = {"role": "assistant", "content": delta.get("content")}
    if "tool_calls" in delta:
        message["tool_calls"] = [
            {key: value for key, value in call.items() if key != "index"}
            for call in delta["tool_calls"]
        ]
    completion = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": _MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": _USAGE,
    }
    return json.dumps(completion).encode()


def _response(status: str, content_type: str, body: bytes) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
    )
    return head.encode() + body


def answer(path: str, body: bytes) -> bytes:
    """The whole HTTP response to a POST of *body* to *path*."""
    if not path.endswith("/chat/completions"):
        error = json.dumps({"error": {"message": f"no route {path}"}}).encode()
        return _response("404 Not Found", "application/json", error)
    request: dict[str, Any] = json.loads(body)
    if request.get("stream"):
        return _response("200 OK", "text/event-stream", streamed_body(request))
    return _response("200 OK", "application/json", whole_body(request))


async def _serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            path = request_line.split(" ")[1]
            length = 0
            for line in header_lines:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            writer.write(answer(path, await reader.readexactly(length)))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass  # The client closed its pooled connection: the normal end.
    except asyncio.CancelledError:
        # The server is stopping with the connection still open. Ending quietly: on
        # Python 3.11 a cancelled connection task is otherwise logged as an error.
        pass
    finally:
        writer.close()


async def _serve() -> None:
    # A deep backlog: 200 agents may open their connections at the same moment.
    server = await asyncio.start_server(_serve_connection, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    loop = asyncio.get_running_loop()
    # Serve until stdin reaches its end: the parent closed the pipe or exited.
    await loop.run_in_executor(None, sys.stdin.buffer.read)
    server.close()


if __name__ == "__main__":
    asyncio.run(_serve())
