"""The ``openai`` clients ``OpenAIModel`` shares: one per endpoint, credentials and event loop.

An ``AsyncOpenAI`` with its HTTP client and connection pool costs tens of milliseconds and
most of a megabyte to build; one per model made building an agent slow and a hundred
agents large. Models with the same endpoint and credentials share one instead, and with it
their pooled connections.

Pooled connections belong to the event loop that opened them, so a client serves one loop:
the models of a process share a client per loop, and each synchronous ``agent(...)`` call
(which runs a loop of its own) gets a fresh one. A client is closed when its loop ends:
the first client a loop uses (for a request, or read as ``model.client`` in it) parks an
async generator there, and asyncio (``asyncio.run``, ``anyio.run``) and trio both close
the async generators still suspended when their run ends, while the loop can still run
the close. So no socket outlives its loop and nothing warns "unclosed" at exit. (A loop
closed without that step, by hand and without ``shutdown_asyncgens()``, keeps its
clients until the process ends.) A client built before any loop ran (``model.client``
read outside one) is adopted by the first loop that uses it. All clients use the SSL
context every adapter shares; the parking and the context come from ``_loop_clients``.

Nothing counts the models that use a client, so a loop keeps every client it made until
it ends: on a long-lived loop, each distinct key or endpoint costs a client for good (the
agents guide says so, and to pass a client of one's own there).
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncGenerator
from typing import NamedTuple, final

import openai

from stageware._host._running_loop import running_loop

from ._credentials import split_credentials
from ._loop_clients import park_in_running_loop, shared_ssl_context

__all__ = ["ClientSettings", "SharedClients", "shared_clients"]

# Where `openai` sends requests when given no base URL.
_OPENAI_BASE_URL = "https://api.openai.com/v1"


class ClientSettings(NamedTuple):
    """What makes two models' clients interchangeable.

    Attributes:
        base_url: The endpoint as given, credentials included (``None``: ``openai``'s).
        api_key: The API key as given (``None``: ``OPENAI_API_KEY``).
        environment: The ``OPENAI_*`` environment variables ``openai`` reads when it
            builds a client (the key, organization, project, ...), as they were when the
            model was built.
    """

    base_url: str | None
    api_key: str | None
    environment: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, base_url: str | None, api_key: str | None) -> ClientSettings:
        """The settings for *base_url* and *api_key*, with the environment as it is now.

        Raises:
            openai.OpenAIError: No API key was given and ``OPENAI_API_KEY`` is not set
                (as ``openai`` raises it when it builds the client).
        """
        environment = tuple(
            sorted(item for item in os.environ.items() if item[0].startswith("OPENAI_"))
        )
        if api_key is None and not dict(environment).get("OPENAI_API_KEY"):
            raise openai.OpenAIError(
                "The api_key client option must be set either by passing api_key to the "
                "client or by setting the OPENAI_API_KEY environment variable"
            )
        return cls(base_url, api_key, environment)

    @property
    def endpoint(self) -> str:
        """The URL requests go to, without credentials, as ``openai`` writes it (with ``/``).

        For ``repr()``, without building a client.
        """
        url = _OPENAI_BASE_URL if self.base_url is None else split_credentials(self.base_url)[0]
        return url if url.endswith("/") else f"{url}/"

    def __repr__(self) -> str:
        # Not the fields: a traceback that shows locals would print the key and password.
        return f"ClientSettings(endpoint={self.endpoint!r})"


@final
class _LoopClients:
    """The clients one event loop uses, and the generator that closes them when it ends."""

    __slots__ = ("clients", "closer")

    def __init__(self) -> None:
        self.clients: dict[ClientSettings, openai.AsyncOpenAI] = {}
        self.closer: AsyncGenerator[None, None] | None = None


@final
class SharedClients:
    """The clients of a process, by settings and event loop. Safe to use from any thread."""

    __slots__ = ("_by_loop", "_lock", "_unbound")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_loop: dict[object, _LoopClients] = {}
        # Clients built outside any loop, waiting for the first loop that uses them.
        self._unbound: dict[ClientSettings, openai.AsyncOpenAI] = {}

    def peek(self, settings: ClientSettings) -> openai.AsyncOpenAI:
        """The client a request with *settings* would use now, built if there is none.

        Inside a loop it is that loop's client, made now if no request made one: a client
        used by hand on a loop (``await model.client.models.list()``) holds connections of
        that loop, so it must be closed with it, never adopted by another. Outside any
        loop it is a client no loop has used yet. Either way it is shared: do not close it.
        """
        loop = running_loop()
        with self._lock:
            if loop is None:
                client = self._unbound.get(settings)
                if client is None:
                    client = self._unbound[settings] = self._build(settings)
                return client
            return self._bound_client(loop, settings)

    async def for_running_loop(self, settings: ClientSettings) -> openai.AsyncOpenAI:
        """The client for requests with *settings* on the running loop.

        Raises:
            RuntimeError: No asyncio or trio loop is running in this thread.
        """
        loop = running_loop()
        if loop is None:
            raise RuntimeError("OpenAIModel sends requests only from a running event loop")
        entry = self._by_loop.get(loop)
        if entry is not None:
            client = entry.clients.get(settings)
            if client is not None:
                return client
        with self._lock:
            return self._bound_client(loop, settings)

    def _bound_client(self, loop: object, settings: ClientSettings) -> openai.AsyncOpenAI:
        """The client of *loop* (the running one) for *settings*; called with the lock held.

        A loop's first client starts the generator that closes its clients when it ends.
        """
        entry = self._by_loop.get(loop)
        if entry is None:
            entry = self._by_loop[loop] = _LoopClients()
            entry.closer = self._close_at_loop_end(loop, entry)
            park_in_running_loop(entry.closer)
        client = entry.clients.get(settings) or self._unbound.pop(settings, None)
        if client is None:
            client = self._build(settings)
        entry.clients[settings] = client
        return client

    async def _close_at_loop_end(self, loop: object, entry: _LoopClients) -> AsyncGenerator[None]:
        try:
            yield
        finally:
            with self._lock:
                if self._by_loop.get(loop) is entry:
                    del self._by_loop[loop]
                clients = list(entry.clients.values())
                entry.clients.clear()
            # Each in its own try: one that fails to close must not leave the rest open.
            errors: list[Exception] = []
            for client in clients:
                try:
                    await client.close()
                except Exception as error:
                    errors.append(error)
            if errors:
                for other in errors[1:]:
                    errors[0].add_note(f"closing another client failed too: {other!r}")
                raise errors[0]

    def _build(self, settings: ClientSettings) -> openai.AsyncOpenAI:
        """A client for *settings*.

        Its HTTP client is a plain one, not ``openai``'s default wrapper: that wrapper
        closes itself on garbage collection by scheduling the close on whatever event loop
        is running then, which for a client left behind on a finished loop is the wrong
        one and fails there, in somebody else's code.

        Credentials in the base URL become the HTTP client's basic auth, which is what
        ``httpx`` makes of them in a URL anyway, so that no request URL (logged whole by
        ``httpx``) carries them. Called with the lock held.
        """
        environment = dict(settings.environment)
        bare_url, credentials = (
            (None, None) if settings.base_url is None else split_credentials(settings.base_url)
        )
        auth = None if credentials is None else (credentials.username, credentials.password)
        http_client = openai.DefaultAsyncHttpxClient(verify=shared_ssl_context(), auth=auth)
        api_key = (
            environment.get("OPENAI_API_KEY") if settings.api_key is None else settings.api_key
        )
        # The key, organization and project the settings recorded, where they recorded one.
        return openai.AsyncOpenAI(
            base_url=bare_url,
            api_key=api_key,
            organization=environment.get("OPENAI_ORG_ID"),
            project=environment.get("OPENAI_PROJECT_ID"),
            http_client=http_client,
        )


shared_clients = SharedClients()
"""The process's shared clients."""
