"""An MCP server for the tests, on the SDK's ``MCPServer``: ``python tools_server.py``.

Runs over stdio, or over streamable HTTP with ``--http PORT`` (on 127.0.0.1). Its tools
cover what the client must handle: text and structured results, an image, a tool error,
a slow call (which records whether it was cancelled), a crash mid-call, a tool that adds
another (list_changed), and a call counter for exactly-once checks. ``--record DIR``
names a directory where calls and cancellations are written, one file each, so a test
can read what the server saw after it has exited.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.utilities.types import Image
from pydantic import BaseModel

parser = argparse.ArgumentParser()
parser.add_argument("--http", type=int, default=None)
parser.add_argument("--record", type=Path, default=None)
parser.add_argument("--name", default="test-tools")
options = parser.parse_args()

server: MCPServer[Any] = MCPServer(options.name)

# A one-pixel PNG.
_PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJ"
    "RU5ErkJggg=="
)


def _record(kind: str, text: str) -> None:
    if options.record is not None:
        name = f"{kind}-{time.monotonic_ns()}-{os.getpid()}"
        # Written aside and renamed, so a test that reads the directory meanwhile never
        # sees the file before its text.
        partial = options.record / f".{name}"
        partial.write_text(text, encoding="utf-8")
        partial.replace(options.record / name)


class Forecast(BaseModel):
    city: str
    celsius: float


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    _record("call", f"add {a} {b}")
    return a + b


@server.tool()
def forecast(city: str) -> Forecast:
    """The forecast for a city."""
    return Forecast(city=city, celsius=21.5)


@server.tool()
def pixel() -> Image:
    """A one-pixel image."""
    return Image(data=base64.b64decode(_PIXEL), format="png")


@server.tool()
def refuse(reason: str) -> str:
    """Fail with *reason*."""
    raise ValueError(reason)


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer; a cancellation is recorded."""
    _record("call", f"slow {seconds}")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        _record("cancelled", "slow")
        raise
    return "slept"


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    sys.stdout.flush()
    os._exit(3)


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool ``double`` and tell the client the list changed."""
    server.add_tool(_double, name="double", description="Double a number.")
    await ctx.notify_tools_changed()
    # The 2026 revision sends the change on the listen stream, which nothing orders
    # before this call's answer: give it the time to go out first.
    await anyio.sleep(0.2)
    return "added double"


def _double(x: int) -> int:
    return 2 * x


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


if __name__ == "__main__":
    if options.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=options.http)
