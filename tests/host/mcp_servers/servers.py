"""Starting the test MCP server: over stdio (the client starts it), or over HTTP here."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stageware.mcp import MCPClient

SERVER = Path(__file__).with_name("tools_server.py")


def stdio_client(
    record: Path | None = None,
    *,
    name: str = "test-tools",
    prefix: str | None = None,
    call_timeout: float | None = None,
) -> MCPClient:
    """A client that runs the test server as its subprocess."""
    args = [str(SERVER), "--name", name]
    if record is not None:
        args += ["--record", str(record)]
    return MCPClient.stdio(sys.executable, args, prefix=prefix, call_timeout=call_timeout)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def http_server(record: Path | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The test server on streamable HTTP on loopback: its URL and its process."""
    port = _free_port()
    command = [sys.executable, str(SERVER), "--http", str(port)]
    if record is not None:
        command += ["--record", str(record)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP MCP server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def alive(pid: int) -> bool:
    """Whether process *pid* runs (a zombie, exited but not reaped, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def records(directory: Path, kind: str) -> list[str]:
    """What the server wrote to *directory* for *kind* ("call", "cancelled"), in order."""
    return [path.read_text() for path in sorted(directory.glob(f"{kind}-*"))]
