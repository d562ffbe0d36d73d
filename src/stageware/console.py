"""The approvals and escalations console: a web app where humans answer what runs wait on.

Approvers are rarely at a terminal. ``create_app`` serves, for any session store, the
pending policy approvals (what will run if approved, the conversation leading to it, the
policy's reason, who may answer), the open escalations, and an audit of past decisions
with the verified identity of each; approvers approve, deny and resolve with plain HTML
forms. It needs the ``console`` extra::

    pip install 'stageware[console]'
    stageware console --store sqlite:///sessions.db --auth local --user dana

Who a request comes from is decided by a ``ConsoleAuthenticator`` the deployment plugs in:
``LocalAuthenticator`` for development, ``ProxyHeaderAuthenticator`` behind a single-sign-on
proxy, or one of its own. Anyone it admits may read; only those a ``Suspend`` allowed
may answer its approval, through the same checks as every other way of answering (the
answer is final, bound to its step's fingerprint, refused while a worker runs the
session).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

try:
    import jinja2 as _jinja2
    import python_multipart as _multipart
    import starlette as _starlette
except ModuleNotFoundError as _missing:
    raise ImportError(
        "stageware.console needs Starlette, Jinja2 and python-multipart: "
        "pip install 'stageware[console]'"
    ) from _missing

from stageware._console._auth import (
    ConsoleAuthenticator,
    ConsoleRequest,
    LocalAuthenticator,
    ProxyHeaderAuthenticator,
)

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from stageware._host.sessions import SessionStore

__all__ = [
    "ConsoleAuthenticator",
    "ConsoleRequest",
    "LocalAuthenticator",
    "ProxyHeaderAuthenticator",
    "create_app",
]

del _jinja2, _multipart, _starlette


def create_app(
    store: SessionStore,
    *,
    authenticator: ConsoleAuthenticator,
    secret: bytes | None = None,
    dbos_url: str | None = None,
    dbos_schema: str | None = None,
    resolvers: Collection[str] | None = None,
    page_size: int = 50,
) -> Starlette:
    """The console over *store*, as an ASGI app to serve or to mount in one's own.

    Example::

        from stageware import SQLiteSessionStore
        from stageware.console import LocalAuthenticator, create_app

        app = create_app(
            SQLiteSessionStore("sessions.db"),
            authenticator=LocalAuthenticator("dana", roles=["finance"]),
        )
        # uvicorn.run(app, host="127.0.0.1", port=8400)

    Args:
        store: The session store whose approvals and escalations it serves.
        authenticator: Who each request comes from (``LocalAuthenticator``,
            ``ProxyHeaderAuthenticator`` or the deployment's own).
        secret: The key the forms' anti-forgery tokens are signed with, at least 32 bytes;
            ``None`` for a random one (forms then last as long as the process, and every
            process behind one address must share the key).
        dbos_url: The DBOS system database of durable runs, to wake the run an answer or
            a resolution releases at once (default: ``$STAGEWARE_DBOS_URL``; without one,
            the run finds the answer at its next re-check).
        dbos_schema: The schema of DBOS's tables in that database (default:
            ``$STAGEWARE_DBOS_SCHEMA``, else ``dbos``).
        resolvers: Who may claim and resolve escalations: approver ids and
            ``role:<name>`` entries; ``None`` (the default) for anyone admitted.
        page_size: How many rows a listing shows per page, 1 to 500.

    Returns:
        A Starlette application.

    Raises:
        ValueError: *secret* is shorter than 32 bytes, or *page_size* is out of range.
        TypeError: *authenticator* is not callable.
    """
    from stageware._console._app import build_app

    return build_app(
        store,
        authenticator=authenticator,
        secret=secret,
        dbos_url=dbos_url,
        dbos_schema=dbos_schema,
        resolvers=resolvers,
        page_size=page_size,
    )
