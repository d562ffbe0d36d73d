"""``MCPClient``: an MCP server's tools for an agent, over stdio or streamable HTTP.

Built on the official ``mcp`` SDK (``mcp.Client``), which negotiates the protocol version
(the 2026 revision, or the initialize handshake with an older server), frames the
messages and stops a stdio server's process. What this module adds is the lifetime:

- The session lives in an event loop of its own, in a daemon thread (``_mcp_thread``),
  because the agent runs on many loops: ``agent(prompt)`` starts a new one per call, and
  ``invoke_async`` runs on the caller's, asyncio or trio. One client serves them all, and
  any number of agents, and a tool call waits on the caller's loop without blocking it.
- ``with client:`` / ``async with client:`` connect on entry and, however the block ends
  (an exception, a cancellation), cancel the calls still running, close the session and
  stop the server's process on exit. Used without a block, the client connects at an
  agent's first model call, and closes with ``close()`` or when the interpreter exits.
- Nothing blocks the caller's event loop. Reading the tools (``current_tools()``, at
  every model call and tool lookup) returns the last list at once and never connects; the
  agent awaits ``refresh_tools()`` before each model call, which connects a new client
  in a worker thread and waits, asynchronously and cancellably, for a list the server
  has announced.
- ``notifications/tools/list_changed`` (on the 2026 revision, through a
  ``subscriptions/listen`` stream the client opens) makes the client list the tools
  again. One that reaches the client before a tool call's answer is acted on before the
  answer is handed back, and ``refresh_tools()`` waits (up to ``_REFRESH_WAIT``) for a
  list the server announced, so the agent's next model call offers it. The 2026 protocol
  orders nothing between the listen stream and a call's answer: a change a server
  announces later reaches a later model call.
- A server tool whose name a model provider would refuse (``^[a-zA-Z0-9_-]{1,64}$``,
  with the prefix) is left out with a WARNING naming the server, so one bad name does not
  make every model call fail.
- A session that ends on its own (the server exited, the connection dropped for good)
  marks the client failed: its tools are dropped with a WARNING, and a call says that the
  server exited. ``start()`` connects again.
- Over HTTP, a redirect is followed only within the endpoint's origin (the client's own
  request hook checks every request, whatever the SDK's version does), so the headers and
  credentials given for one server, and the tool calls, never reach another; a redirect
  elsewhere fails the request, naming where it led.
- Nothing secret is shown: the client is named by the command's program and script, or
  by the URL without its password and query, never by its environment or headers.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import math
import os
import re
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from types import TracebackType
from typing import Any, cast, final
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.lowlevel
import anyio.to_thread
import httpx2
import mcp_types
from anyio.abc import TaskStatus
from mcp import StdioServerParameters, stdio_client
from mcp.client import Client, IncomingMessage, Transport
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from stageware._host.models._credentials import redact_url, split_credentials
from stageware._version import __version__

from ._mcp_errors import MCPConnectionError, MCPUnavailableError
from ._mcp_thread import LoopThread, LoopThreadClosedError
from ._mcp_tool import MCPTool
from ._mcp_transport import WatchedTransport

__all__ = ["MCPClient"]

_log = logging.getLogger("stageware.mcp")

_DEFAULT_STARTUP_TIMEOUT = 30.0

# A tool call that has not answered in five minutes is taken as hung: long enough for a
# slow search or build, and the SDK's own read timeout for an HTTP server's stream.
_DEFAULT_CALL_TIMEOUT = 300.0

# About 25k tokens: a long document fits, a runaway dump does not fill the context window.
_DEFAULT_MAX_RESULT_CHARS = 100_000

# What model providers accept as a tool name (Bedrock, Anthropic, OpenAI agree).
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")

# How long reading the tools waits for a list the server said has changed; past it, the
# agent gets the old list rather than a stalled run.
_REFRESH_WAIT = 10.0


@dataclass(frozen=True)
class _Stdio:
    """A server run as a subprocess."""

    command: str
    args: tuple[str, ...]
    env: dict[str, str] | None
    cwd: str | None

    def label(self) -> str:
        """The program and its first argument (usually the script or package).

        Never the environment or the later arguments, which may carry tokens.
        """
        shown = [os.path.basename(self.command), *(os.path.basename(a) for a in self.args[:1])]
        return f"stdio {' '.join(shown)!r}"


@dataclass(frozen=True)
class _Http:
    """A server reached over streamable HTTP."""

    url: str
    headers: dict[str, str] | None

    def label(self) -> str:
        """The URL without its password, query and fragment."""
        parts = urlsplit(redact_url(self.url))
        return urlunsplit(parts._replace(query="", fragment=""))


@final
class MCPClient:
    """A connection to one MCP server, whose tools an agent can call.

    Build one with ``stdio`` or ``http``, and pass it in an agent's tools:

    ```python
    with MCPClient.stdio("python", ["weather_server.py"]) as weather:
        agent = Agent(model, tools=[weather, lookup_order])
        agent("What is the weather in Oslo?")
    ```

    The agent reads the client's tools at every model call, so a server that changes its
    tools is seen at the next call. Tool names must be unique across an agent's tools:
    give a client a ``prefix`` to keep two servers (or a server and a ``@tool``) apart.
    """

    __slots__ = (
        "__weakref__",
        "_call_timeout",
        "_client",
        "_fresh",
        "_listed",
        "_lock",
        "_max_result_chars",
        "_prefix",
        "_refreshing",
        "_server",
        "_stale",
        "_startup_timeout",
        "_state",
        "_thread",
        "_tools",
        "_wake",
    )

    def __init__(
        self,
        server: _Stdio | _Http,
        *,
        prefix: str | None,
        startup_timeout: float,
        call_timeout: float | None,
        max_result_chars: int | None,
    ) -> None:
        """Use ``stdio`` or ``http``."""
        # Room for "_" and at least one character of the server's name.
        if prefix is not None and (not prefix or _TOOL_NAME.fullmatch(f"{prefix}_x") is None):
            raise ValueError(
                "prefix must be letters, digits, '_' or '-' (at most 62 of them), as model "
                f"providers require of tool names, or None; got {prefix!r}"
            )
        if max_result_chars is not None and not _positive_int(max_result_chars):
            raise ValueError(
                f"max_result_chars must be a positive int or None, got {max_result_chars!r}"
            )
        if not startup_timeout > 0:
            raise ValueError(f"startup_timeout must be positive, got {startup_timeout!r}")
        if call_timeout is not None and not call_timeout > 0:
            raise ValueError(f"call_timeout must be positive or None, got {call_timeout!r}")
        self._server = server
        self._prefix = prefix
        self._startup_timeout = startup_timeout
        self._call_timeout = call_timeout
        self._max_result_chars = max_result_chars
        self._lock = threading.Lock()
        self._state = "new"
        self._thread = LoopThread(f"stageware-mcp {server.label()}")
        self._tools: tuple[MCPTool, ...] = ()
        # Cleared from a list_changed notification until the new list is in.
        self._fresh = threading.Event()
        self._fresh.set()
        # Owned by the session's loop.
        self._client: Client | None = None
        self._stale = False
        self._wake: anyio.Event | None = None
        self._refreshing: anyio.Lock | None = None
        # Set whenever _fresh is; waited on in the session's loop by refresh_tools().
        self._listed: anyio.Event | None = None

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        prefix: str | None = None,
        startup_timeout: float = _DEFAULT_STARTUP_TIMEOUT,
        call_timeout: float | None = _DEFAULT_CALL_TIMEOUT,
        max_result_chars: int | None = _DEFAULT_MAX_RESULT_CHARS,
    ) -> MCPClient:
        """A server run as a subprocess, spoken to over its stdin and stdout.

        The process is the client's: it is started on connect and stopped on close (stdin
        closed, then SIGTERM, then SIGKILL, as the SDK does).

        Args:
            command: The program to run (``"python"``, ``"npx"``, ...).
            args: Its arguments.
            env: Environment variables for the server, over the SDK's safe defaults
                (``PATH``, ``HOME``, ...); the rest of this process's environment is not
                passed on.
            cwd: The server's working directory.
            prefix: Offer the tools as ``<prefix>_<name>``.
            startup_timeout: Seconds to start the server and open the session.
            call_timeout: Seconds a tool call may take before it ends in an error result
                (and is cancelled on the server); ``None``: no limit.
            max_result_chars: The most characters of text and JSON a tool result brings
                into the history; past it the result is cut, with a note saying so that
                the model reads. ``None``: no limit.

        Raises:
            TypeError: If *args* is a single string.
            ValueError: For an empty command, a prefix that is not a valid tool-name
                part, or a timeout or limit that is not positive.
        """
        if isinstance(args, str):
            raise TypeError(f"args must be a list of strings, not one string: [{args!r}]")
        if not command:
            raise ValueError("command must not be empty")
        server = _Stdio(
            command,
            tuple(args),
            None if env is None else dict(env),
            None if cwd is None else os.fspath(cwd),
        )
        return cls(
            server,
            prefix=prefix,
            startup_timeout=startup_timeout,
            call_timeout=call_timeout,
            max_result_chars=max_result_chars,
        )

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        prefix: str | None = None,
        startup_timeout: float = _DEFAULT_STARTUP_TIMEOUT,
        call_timeout: float | None = _DEFAULT_CALL_TIMEOUT,
        max_result_chars: int | None = _DEFAULT_MAX_RESULT_CHARS,
    ) -> MCPClient:
        """A server spoken to over streamable HTTP at *url*.

        A user name and password in the URL are sent as basic auth, not in the URL.

        Args:
            url: The server's MCP endpoint (``http://127.0.0.1:8000/mcp``).
            headers: Headers sent with every request (``Authorization``, ...).
            prefix: Offer the tools as ``<prefix>_<name>``.
            startup_timeout: Seconds to connect and open the session.
            call_timeout: Seconds a tool call may take before it ends in an error result
                (and is cancelled on the server); ``None``: no limit.
            max_result_chars: The most characters of text and JSON a tool result brings
                into the history; past it the result is cut, with a note saying so that
                the model reads. ``None``: no limit.

        Raises:
            ValueError: For a URL that is not http(s), a prefix that is not a valid
                tool-name part, or a timeout or limit that is not positive.
        """
        if urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"url must be an http:// or https:// URL, got {redact_url(url)!r}")
        server = _Http(url, None if headers is None else dict(headers))
        return cls(
            server,
            prefix=prefix,
            startup_timeout=startup_timeout,
            call_timeout=call_timeout,
            max_result_chars=max_result_chars,
        )

    # -- lifetime ----------------------------------------------------------------------

    def start(self) -> None:
        """Connect, open the session and list the tools; nothing if already open.

        Blocks until the session is open. A closed client may be started again.

        Raises:
            MCPConnectionError: If the server cannot be started or reached, or the session
                cannot be opened within ``startup_timeout``.
        """
        with self._lock:
            if self._state == "open":
                return
            if self._state == "failed":
                self._thread.stop()  # joins the thread whose session ended
            try:
                self._thread.start(self._serve, self._startup_timeout + 5.0, self._ended)
            except Exception as error:
                self._thread.stop()
                raise MCPConnectionError(
                    f"MCP server {self.label}: could not open a session: {_reason(error)}"
                ) from error
            except BaseException:
                self._thread.stop()
                raise
            self._state = "open"
            _open_clients.add(self)

    def close(self) -> None:
        """Cancel running calls, close the session and stop the server; idempotent."""
        with self._lock:
            if self._state not in ("open", "failed"):
                return
            self._state = "closed"
            _open_clients.discard(self)
            self._thread.stop()

    def __enter__(self) -> MCPClient:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> MCPClient:
        # Connecting blocks: in a worker thread, so the caller's loop runs on. The thread
        # is not abandoned if the caller is cancelled meanwhile: the session that opened
        # anyway is closed before the cancellation goes on.
        try:
            await anyio.to_thread.run_sync(self.start)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.close)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.close)

    # -- what the agent reads ----------------------------------------------------------

    @property
    def label(self) -> str:
        """The server as messages name it: the transport and program, or the URL."""
        return self._server.label()

    def current_tools(self) -> Sequence[MCPTool]:
        """The server's tools as last listed (``ToolProvider``); never blocks.

        The same tuple while the list is unchanged; empty before the client is started
        (``refresh_tools()`` or ``start()`` connects it) and after its server exited.

        Raises:
            RuntimeError: If the client was closed.
        """
        if self._state == "closed":
            raise RuntimeError(
                f"MCPClient {self.label} is closed: its tools are gone; use the agent inside "
                "`with client:`, or start() the client again"
            )
        return self._tools

    async def refresh_tools(self) -> None:
        """Get the tools ready for a model call (``RefreshingToolProvider``).

        Connects a new client (in a worker thread, so the caller's loop runs on; a
        cancelled caller leaves the connecting to finish in the background), and, when
        the server has said that its tools changed, waits for the new list, at most
        ``_REFRESH_WAIT`` seconds (then the old list is offered). Cancelling the caller
        ends the wait at once.

        Raises:
            MCPConnectionError: If a new client cannot connect.
        """
        if self._state == "new":
            await anyio.to_thread.run_sync(self.start, abandon_on_cancel=True)
        if self._state != "open" or self._fresh.is_set():
            return
        with anyio.move_on_after(_REFRESH_WAIT):
            # Closed or ended meanwhile: current_tools() says which.
            with contextlib.suppress(LoopThreadClosedError):
                await self._thread.call(self._wait_listed)

    @property
    def tool_names(self) -> list[str]:
        """The names the agent offers the server's tools by; connects a new client."""
        if self._state == "new":
            self.start()
        return [tool.tool_name for tool in self.current_tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call the server's tool *name* (its own name, without the prefix).

        From any event loop or thread; cancelling the caller cancels the call on the
        server.

        Raises:
            MCPConnectionError: If the client is not open, or was closed during the call.
            mcp.shared.exceptions.MCPError: For an error the server answered, a timeout,
                or a connection that closed during the call.
        """

        async def call() -> mcp_types.CallToolResult:
            return await self._call_in_session(name, arguments)

        try:
            return await self._thread.call(call)
        except LoopThreadClosedError as error:
            reason = "its server exited" if self._state == "failed" else "the client is closed"
            raise MCPUnavailableError(self.label, reason) from error

    def __repr__(self) -> str:
        return f"MCPClient({self.label}, {self._state})"

    # -- in the session's loop ---------------------------------------------------------

    async def _serve(self, serve_portal: Callable[[], Awaitable[None]]) -> None:
        self._stale = False
        self._fresh.set()
        self._listed = anyio.Event()
        self._listed.set()
        self._wake = anyio.Event()
        self._refreshing = anyio.Lock()
        with anyio.CancelScope(deadline=anyio.current_time() + self._startup_timeout) as startup:
            async with AsyncExitStack() as stack:
                transport = WatchedTransport(await self._transport(stack))
                client = Client(
                    transport,
                    message_handler=self._on_message,
                    client_info=mcp_types.Implementation(name="stageware", version=__version__),
                    # The client keeps the list itself, refreshed on list_changed.
                    cache=None,
                )
                self._client = await stack.enter_async_context(client)
                try:
                    await self._run(self._client, startup, serve_portal, transport.ended)
                finally:
                    self._client = None
        if startup.cancelled_caught:
            raise TimeoutError(f"not ready within {self._startup_timeout:g} s")

    async def _run(
        self,
        client: Client,
        startup: anyio.CancelScope,
        serve_portal: Callable[[], Awaitable[None]],
        ended: anyio.Event,
    ) -> None:
        self._tools = await self._list_tools(client)
        async with anyio.create_task_group() as background:
            background.start_soon(self._refresh_when_woken)
            capability = client.server_capabilities.tools
            modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
            if modern and capability is not None and capability.list_changed:
                # Started (acknowledged by the server) before the client is ready, so
                # no change after that is missed.
                await background.start(self._listen, client)
            startup.deadline = math.inf
            with anyio.CancelScope() as serving:
                # The server's side ended (a stdio server exited): the session is over,
                # and returning ends the thread, which reports it (_ended).
                background.start_soon(_cancel_when_set, ended, serving)
                try:
                    await serve_portal()
                finally:
                    background.cancel_scope.cancel()

    async def _transport(self, stack: AsyncExitStack) -> Transport:
        server = self._server
        if isinstance(server, _Stdio):
            parameters = StdioServerParameters(
                command=server.command, args=list(server.args), env=server.env, cwd=server.cwd
            )
            return stdio_client(parameters)
        url, credentials = split_credentials(server.url)
        auth = None if credentials is None else httpx2.BasicAuth(*credentials)
        http_client = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=server.headers,
                auth=auth,
                # The SDK's own client timeouts: a long read for the server's event stream.
                timeout=httpx2.Timeout(30.0, read=300.0),
                # Redirects are followed within the endpoint's origin only (a server mounted
                # at /mcp/ answers /mcp with one), so the headers, credentials and tool calls
                # given for one server never reach another: httpx drops only Authorization
                # on a cross-origin redirect, and mcp before 2.3 followed any redirect.
                follow_redirects=True,
                event_hooks={"request": [_same_origin_as(httpx2.URL(url))]},
            )
        )
        return streamable_http_client(url, http_client=http_client)

    async def _list_tools(self, client: Client) -> tuple[MCPTool, ...]:
        listed: list[mcp_types.Tool] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        tools: list[MCPTool] = []
        for tool in listed:
            name = tool.name if self._prefix is None else f"{self._prefix}_{tool.name}"
            if _TOOL_NAME.fullmatch(name) is None:
                shown = name if len(name) <= 80 else f"{name[:77]}..."
                _log.warning(
                    "MCP server %s: tool %r left out: model providers take tool names of "
                    "1 to 64 letters, digits, '_' or '-'",
                    self.label,
                    shown,
                )
                continue
            tools.append(
                MCPTool(self, tool, prefix=self._prefix, max_result_chars=self._max_result_chars)
            )
        return tuple(tools)

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            # Marked before anything awaits: a tool call whose result came after this
            # notification finds the mark and waits for the new list.
            self._stale = True
            self._fresh.clear()
            if self._listed is not None and self._listed.is_set():
                self._listed = anyio.Event()
            if self._wake is not None:
                self._wake.set()
        elif isinstance(message, Exception):
            _log.warning("MCP server %s: %s", self.label, _reason(message))
        await anyio.lowlevel.checkpoint()

    async def _refresh_when_woken(self) -> None:
        while True:
            assert self._wake is not None
            await self._wake.wait()
            self._wake = anyio.Event()
            await self._refresh_if_stale()

    async def _refresh_if_stale(self) -> None:
        client, refreshing = self._client, self._refreshing
        if client is None or refreshing is None:
            return
        async with refreshing:
            if not self._stale:
                return
            self._stale = False
            try:
                self._tools = await self._list_tools(client)
            except Exception as error:
                # The old list stays; the next notification tries again.
                _log.warning("MCP server %s: listing its tools failed: %s", self.label, error)
            finally:
                if not self._stale:
                    self._fresh.set()
                    if self._listed is not None:
                        self._listed.set()

    async def _wait_listed(self) -> None:
        while not self._fresh.is_set() and self._listed is not None:
            await self._listed.wait()

    async def _listen(
        self, client: Client, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        # The 2026 revision sends list_changed only on a listen stream; its events also
        # reach _on_message, which does the work.
        started = False
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                task_status.started()
                started = True
                async for _ in subscription:
                    pass
        except Exception as error:
            _log.warning("MCP server %s: no list_changed stream: %s", self.label, _reason(error))
        if not started:
            task_status.started()

    async def _call_in_session(
        self, name: str, arguments: dict[str, Any]
    ) -> mcp_types.CallToolResult:
        client = self._client
        if client is None:
            raise LoopThreadClosedError("the session is closed")
        result = await client.call_tool(name, arguments, read_timeout_seconds=self._call_timeout)
        # Let a list_changed notification that came before the result be marked, then
        # hand the result back only with the new list in place.
        await anyio.lowlevel.checkpoint()
        if self._stale:
            await self._refresh_if_stale()
        return result

    def _ended(self, error: BaseException | None) -> None:
        """In the session's thread, when the session ended without ``stop()``."""
        if self._state != "open":
            return
        self._state = "failed"
        self._tools = ()
        self._fresh.set()
        why = "its server exited" if error is None else _reason(error)
        _log.warning(
            "MCP server %s: the session ended (%s); its tools are dropped until start()",
            self.label,
            why,
        )


def _positive_int(value: object) -> bool:
    # A float would cut mid-character count; a bool is an int only by accident.
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


async def _cancel_when_set(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def _reason(error: BaseException) -> str:
    """The first real error in *error*, unwrapping the exception groups of task groups."""
    inner = _members(error)
    while inner:
        error = inner[0]
        inner = _members(error)
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _members(error: BaseException) -> tuple[BaseException, ...]:
    if isinstance(error, BaseExceptionGroup):
        return cast("BaseExceptionGroup[BaseException]", error).exceptions
    return ()


# Clients used without a block, closed when the interpreter exits so that no server
# process outlives it.
_open_clients: weakref.WeakSet[MCPClient] = weakref.WeakSet()


@atexit.register
def _close_open_clients() -> None:
    for client in list(_open_clients):
        client.close()


class _RedirectRefusedError(RuntimeError):
    """A redirect that would have taken an MCP request to another origin."""


def _same_origin_as(
    endpoint: httpx2.URL,
) -> Callable[[httpx2.Request], Awaitable[None]]:
    """A request hook that refuses any request outside *endpoint*'s origin."""
    origin = (endpoint.scheme, endpoint.host, endpoint.port)

    async def check(request: httpx2.Request) -> None:
        url = request.url
        if (url.scheme, url.host, url.port) != origin:
            elsewhere = redact_url(str(url.copy_with(query=None)))
            raise _RedirectRefusedError(
                f"a redirect to {elsewhere} was not followed: it leaves the server's origin"
            )

    return check
