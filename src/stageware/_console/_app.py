"""The console's routes: pages to read, forms to answer, each request authenticated first.

Rules every route keeps:

- The authenticator decides who the request comes from before anything is read; a
  request it refuses gets 401 and no data.
- Reading is open to whoever the authenticator admits. Answering an approval is for
  those the ``Suspend`` allowed (``may_answer``), checked again by the shared answer path
  (``_policy._answering``) whatever the page showed; resolving or claiming an escalation
  is for the console's ``resolvers`` (anyone admitted, by default).
- A state change is a POST from one of the console's forms (``_csrf``): a GET never
  writes, and a GET to a form's address is 405.
- A request naming a host the console is not served under gets 400 before anything else
  (``_hosts``, against DNS rebinding).
- Every response carries a Content-Security-Policy that allows no script at all, and
  forbids framing.

The store is blocking (SQLite, psycopg), so its calls run on worker threads.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast, final
from urllib.parse import quote, unquote, urlencode

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stageware._policy._answering import AnswerError, AnswerProblem, record_answer
from stageware._policy._identity import ApprovalRefused, Approver, may_answer

from ._auth import ConsoleAuthenticator, ConsoleRequest, LocalAuthenticator
from ._csrf import COOKIE, FIELD, CsrfTokens, cross_site
from ._hosts import LOOPBACK_HOSTS, AllowedHosts, parse_allowed_hosts
from ._views import approval_view, conversation, escalation_view, older_than, who_may

if TYPE_CHECKING:
    from stageware._host.sessions import EscalationStatus, SessionStore

_T = TypeVar("_T")

__all__ = ["create_app"]

_LOG: Final = logging.getLogger("stageware.console")
_HERE: Final = Path(__file__).parent
_MIN_SECRET_BYTES: Final = 32
_MAX_PAGE: Final = 500
_MAX_FIELDS: Final = 16
# Ten years: an age filter any older would overflow a datetime, and means "all" anyway.
_MAX_MINUTES: Final = 10 * 366 * 24 * 60

_HEADERS: Final = (
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        b"frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"x-content-type-options", b"nosniff"),
    (b"cache-control", b"no-store"),
)

# What the page says after a POST, by the code in its redirect: fixed texts, so that a
# link cannot make the console say anything else.
_OUTCOMES: Final = {
    "approved": "You approved this step; the run goes on.",
    "denied": "You denied this step; the run is blocked.",
    "claimed": "You claimed this escalation.",
    "resolved": "You resolved this escalation; its session takes prompts again.",
}

# The escalation listings by the page's status filter: "any" is every status.
_ESCALATION_LISTINGS: Final[Mapping[str, EscalationStatus | None]] = {
    "open": "open",
    "claimed": "claimed",
    "resolved": "resolved",
    "any": None,
}

# HTTP status by why an answer was refused.
_STATUS: Final[Mapping[AnswerProblem, int]] = {
    "gone": 404,
    "unreadable": 409,
    "forbidden": 403,
    "refused": 409,
    "final": 409,
    "busy": 409,
}


class _Refusal(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@final
@dataclass(frozen=True, slots=True)
class _Settings:
    store: SessionStore
    authenticator: ConsoleAuthenticator
    tokens: CsrfTokens
    resolvers: frozenset[str] | None
    dbos_url: str | None
    dbos_schema: str | None
    templates: Environment
    owner: str
    page_size: int
    hosts: frozenset[str] | None
    secure_cookies: bool


def create_app(
    store: SessionStore,
    *,
    authenticator: ConsoleAuthenticator,
    secret: bytes | None = None,
    dbos_url: str | None = None,
    dbos_schema: str | None = None,
    resolvers: Collection[str] | None = None,
    page_size: int = 50,
    allowed_hosts: Collection[str] | None = None,
    secure_cookies: bool = False,
) -> Starlette:
    """The console over *store*, as an ASGI app to serve or to mount in one's own.

    Example:
        ```python
        from stageware import SQLiteSessionStore
        from stageware.console import LocalAuthenticator, create_app

        app = create_app(
            SQLiteSessionStore("sessions.db"),
            authenticator=LocalAuthenticator("dana", roles=["finance"]),
        )
        # uvicorn.run(app, host="127.0.0.1", port=8400)
        ```

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
        allowed_hosts: The host names or addresses (any port) the console is served
            under: a request whose ``Host`` header names another gets 400, and a form is
            accepted only from a page of one of them, so that a web page whose name was
            re-bound to the console's address (DNS rebinding) cannot use it. ``None`` (the
            default): with a ``LocalAuthenticator``, only ``localhost``, ``127.0.0.1``
            and ``::1``; with any other authenticator, any host, which only a proxy in
            front that serves one name makes safe (give the names people open).
        secure_cookies: Mark the forms' nonce cookie ``Secure`` on every response, for a
            console behind a proxy that terminates TLS (it is marked so anyway on a request
            the server itself sees as https).

    Returns:
        A Starlette application.

    Raises:
        ValueError: *secret* is shorter than 32 bytes, *page_size* is out of range, or
            *allowed_hosts* is empty, holds something not a host name, or names a host
            other than this machine's loopback names for a ``LocalAuthenticator``.
        TypeError: *authenticator* is not callable.
    """
    if secret is None:
        secret = secrets.token_bytes(_MIN_SECRET_BYTES)
    elif len(secret) < _MIN_SECRET_BYTES:
        raise ValueError(
            f"the console's secret must be at least {_MIN_SECRET_BYTES} bytes, got {len(secret)}"
        )
    if not 1 <= page_size <= _MAX_PAGE:
        raise ValueError(f"page_size must be 1 to {_MAX_PAGE}, got {page_size}")
    if not callable(authenticator):
        raise TypeError(f"authenticator must be callable, got {type(authenticator).__name__}")
    hosts = None if allowed_hosts is None else parse_allowed_hosts(allowed_hosts)
    if isinstance(authenticator, LocalAuthenticator):
        if hosts is not None and not hosts <= LOOPBACK_HOSTS:
            # Local mode makes every request the one user: only this machine's own names.
            raise ValueError(
                f"a LocalAuthenticator console is served only as localhost, 127.0.0.1 or "
                f"::1, not {sorted(hosts - LOOPBACK_HOSTS)}"
            )
        hosts = hosts or LOOPBACK_HOSTS
    templates = Environment(
        loader=FileSystemLoader(_HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    templates.filters["q"] = lambda value: quote(str(value), safe="")
    settings = _Settings(
        store=store,
        authenticator=authenticator,
        tokens=CsrfTokens(secret),
        resolvers=None if resolvers is None else frozenset(resolvers),
        dbos_url=dbos_url,
        dbos_schema=dbos_schema,
        templates=templates,
        owner=f"stageware console:{socket.gethostname()}:{os.getpid()}",
        page_size=page_size,
        hosts=hosts,
        secure_cookies=secure_cookies,
    )
    pages = _Pages(settings)
    routes = [
        Route("/", pages.root, methods=["GET"]),
        Route("/approvals", pages.approvals, methods=["GET"]),
        Route("/approvals/answer", pages.answer, methods=["POST"]),
        Route("/approvals/{session_id}/{interrupt_id:path}", pages.approval, methods=["GET"]),
        Route("/escalations", pages.escalations, methods=["GET"]),
        Route("/escalations/claim", pages.claim, methods=["POST"]),
        Route("/escalations/resolve", pages.resolve, methods=["POST"]),
        Route("/escalations/{escalation_id}", pages.escalation, methods=["GET"]),
        Route("/audit", pages.audit, methods=["GET"]),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes)
    if hosts is not None:
        app.add_middleware(AllowedHosts, allowed=hosts)
    app.add_middleware(_SecurityHeaders)
    return app


class _SecurityHeaders:
    """Adds the console's security headers to every response, errors included."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.extend(_HEADERS)
                message["headers"] = headers
            await send(message)

        await self._app(scope, receive, send_with_headers)


class _Pages:
    """The route handlers, over one console's settings."""

    def __init__(self, settings: _Settings) -> None:
        self._s = settings

    # --- helpers ---------------------------------------------------------------------

    def _identify(self, request: Request) -> Approver:
        view = ConsoleRequest(
            method=request.method,
            path=request.url.path,
            headers={name: ", ".join(request.headers.getlist(name)) for name in request.headers},
            client_host=None if request.client is None else request.client.host,
            cookies=dict(request.cookies),
            repeated=frozenset(
                name for name in request.headers if len(request.headers.getlist(name)) > 1
            ),
        )
        try:
            approver = cast(object, self._s.authenticator(view))
        except ApprovalRefused as error:
            raise _Refusal(401, f"You are not signed in to the console: {error}") from None
        if not isinstance(approver, Approver):
            _LOG.error("the console's authenticator returned %r, not an Approver", approver)
            raise _Refusal(500, "The console's authenticator is broken; see the server's log.")
        return approver

    def _render(
        self,
        request: Request,
        template: str,
        user: Approver | None,
        status: int = 200,
        **values: Any,
    ) -> HTMLResponse:
        nonce = request.cookies.get(COOKIE) or CsrfTokens.new_nonce()
        base = str(request.scope.get("root_path", "")).rstrip("/")
        html = self._s.templates.get_template(template).render(
            base=base,
            user=user,
            csrf_field=FIELD,
            csrf_token="" if user is None else self._s.tokens.token(user.id, nonce),
            **values,
        )
        response = HTMLResponse(html, status_code=status)
        if request.cookies.get(COOKIE) != nonce:
            response.set_cookie(
                COOKIE,
                nonce,
                httponly=True,
                samesite="strict",
                secure=self._s.secure_cookies or request.url.scheme == "https",
                path=base or "/",
            )
        return response

    def _error(self, request: Request, refusal: _Refusal, user: Approver | None) -> Response:
        return self._render(request, "error.html", user, refusal.status, message=str(refusal))

    async def _page(self, request: Request, build: Callable[[Approver], Response]) -> Response:
        user: Approver | None = None
        try:
            user = await run_in_threadpool(self._identify, request)
            return await run_in_threadpool(_store_refusals, build, user)
        except _Refusal as refusal:
            return self._error(request, refusal, user)

    async def _post(
        self, request: Request, act: Callable[[Approver, Mapping[str, str]], Response]
    ) -> Response:
        user: Approver | None = None
        try:
            user = await run_in_threadpool(self._identify, request)
            why = cross_site(request.headers, request.headers.get("host"), self._s.hosts)
            if why is not None:
                raise _Refusal(403, f"Refused: {why}; nothing was written.")
            # The console's forms have a handful of text fields and no file.
            form = await request.form(max_files=0, max_fields=_MAX_FIELDS)
            fields = {key: value for key, value in form.items() if isinstance(value, str)}
            if not self._s.tokens.valid(user.id, request.cookies.get(COOKIE), fields.get(FIELD)):
                raise _Refusal(
                    403,
                    "Refused: the form's security token is missing or not valid (reload the "
                    "page and try again); nothing was written.",
                )
            return await run_in_threadpool(_store_refusals, act, user, fields)
        except _Refusal as refusal:
            return self._error(request, refusal, user)

    def _base(self, request: Request) -> str:
        return str(request.scope.get("root_path", "")).rstrip("/")

    # --- approvals -------------------------------------------------------------------

    async def root(self, request: Request) -> Response:
        return RedirectResponse(f"{self._base(request)}/approvals", status_code=303)

    async def approvals(self, request: Request) -> Response:
        def build(user: Approver) -> Response:
            query = request.query_params
            hook = query.get("hook") or None
            middleware = query.get("middleware") or None
            minutes = _minutes(query.get("older_than"))
            after = query.get("after") or None
            page = self._s.store.approvals(
                status="pending",
                hook=hook,
                middleware=middleware,
                asked_before=older_than(minutes),
                limit=self._s.page_size,
                after=after,
            )
            now = datetime.now(UTC)
            filters = {"hook": hook, "middleware": middleware, "older_than": minutes}
            return self._render(
                request,
                "approvals.html",
                user,
                rows=[approval_view(entry, now) for entry in page.entries],
                total=page.total,
                filters=filters,
                next_page=_next(filters, page.next_cursor),
            )

        return await self._page(request, build)

    async def approval(self, request: Request) -> Response:
        def build(user: Approver) -> Response:
            session_id, interrupt_id = _ids(request)
            entry = self._s.store.approval(session_id, interrupt_id)
            if entry is None:
                raise _Refusal(
                    404, f"No approval {interrupt_id!r} in session {session_id!r} is on record."
                )
            view = approval_view(entry)
            stored = self._s.store.load(session_id)
            messages = [] if stored is None else list(stored.snapshot["messages"])
            turns, left_out = conversation(cast(list[Mapping[str, Any]], messages))
            outcome = _OUTCOMES.get(request.query_params.get("outcome", ""))
            return self._render(
                request,
                "approval.html",
                user,
                view=view,
                turns=turns,
                left_out=left_out,
                may_answer=entry.status == "pending" and view.may_answer(user),
                outcome=outcome,
            )

        return await self._page(request, build)

    async def answer(self, request: Request) -> Response:
        def act(user: Approver, form: Mapping[str, str]) -> Response:
            session_id = _field(form, "session_id")
            interrupt_id = _field(form, "interrupt_id")
            decision = form.get("decision")
            if decision not in ("approve", "deny"):
                raise _Refusal(400, "The form must say approve or deny; nothing was written.")
            comment = (form.get("comment") or "").strip() or None
            try:
                done = record_answer(
                    self._s.store,
                    session_id,
                    interrupt_id,
                    approved=decision == "approve",
                    comment=comment,
                    approver=user,
                    owner=self._s.owner,
                )
            except AnswerError as error:
                raise _Refusal(_STATUS[error.problem], str(error)) from None
            if not done.recorded:
                raise _Refusal(
                    409, f"{interrupt_id!r} was answered already; the first answer stands."
                )
            if not done.waiting:
                self._wake(session_id)
            outcome = "approved" if decision == "approve" else "denied"
            where = f"{quote(session_id, safe='')}/{quote(interrupt_id, safe='')}"
            return RedirectResponse(
                f"{self._base(request)}/approvals/{where}?outcome={outcome}", status_code=303
            )

        return await self._post(request, act)

    # --- escalations -----------------------------------------------------------------

    async def escalations(self, request: Request) -> Response:
        def build(user: Approver) -> Response:
            query = request.query_params
            queue = query.get("queue") or None
            status = query.get("status") or "open"
            if status not in _ESCALATION_LISTINGS:
                raise _Refusal(
                    400, f"No escalation status {status!r}: open, claimed, resolved, any."
                )
            minutes = _minutes(query.get("older_than"))
            page = self._s.store.escalation_page(
                queue,
                status=_ESCALATION_LISTINGS[status],
                created_before=older_than(minutes),
                limit=self._s.page_size,
                after=query.get("after") or None,
            )
            now = datetime.now(UTC)
            filters = {"queue": queue, "status": status, "older_than": minutes}
            return self._render(
                request,
                "escalations.html",
                user,
                rows=[escalation_view(e, now) for e in page.entries],
                total=page.total,
                filters=filters,
                next_page=_next(filters, page.next_cursor),
            )

        return await self._page(request, build)

    async def escalation(self, request: Request) -> Response:
        escalation_id = request.path_params["escalation_id"]
        if escalation_id in ("claim", "resolve"):
            return Response(status_code=405, headers={"allow": "POST"})

        def build(user: Approver) -> Response:
            found = _store_refusals(self._s.store.escalation, escalation_id)
            if found is None:
                raise _Refusal(404, f"No escalation {escalation_id!r} is on record.")
            return self._render(
                request,
                "escalation.html",
                user,
                view=escalation_view(found),
                may_resolve=found.status != "resolved" and may_answer(user, self._s.resolvers),
                resolvers=who_may(None if self._s.resolvers is None else sorted(self._s.resolvers)),
                outcome=_OUTCOMES.get(request.query_params.get("outcome", "")),
            )

        return await self._page(request, build)

    async def claim(self, request: Request) -> Response:
        def act(user: Approver, form: Mapping[str, str]) -> Response:
            escalation_id = _field(form, "escalation_id")
            self._may_resolve(user)
            _escalation_call(lambda: self._s.store.claim_escalation(escalation_id, by=user.id))
            return self._to_escalation(request, escalation_id, "claimed")

        return await self._post(request, act)

    async def resolve(self, request: Request) -> Response:
        def act(user: Approver, form: Mapping[str, str]) -> Response:
            escalation_id = _field(form, "escalation_id")
            resolution = (form.get("resolution") or "").strip()
            if not resolution:
                raise _Refusal(400, "Say what was decided (resolution); nothing was written.")
            self._may_resolve(user)
            resolved = _escalation_call(
                lambda: self._s.store.resolve_escalation(
                    escalation_id,
                    by=user.id,
                    resolution=resolution,
                    comment=(form.get("comment") or "").strip() or None,
                    take_over=form.get("take_over") in ("1", "on", "true"),
                )
            )
            self._wake(resolved.session_id)
            return self._to_escalation(request, escalation_id, "resolved")

        return await self._post(request, act)

    def _may_resolve(self, user: Approver) -> None:
        if not may_answer(user, self._s.resolvers):
            raise _Refusal(
                403,
                f"{user.id} may not claim or resolve escalations; they may be resolved by: "
                f"{who_may(sorted(self._s.resolvers or ()))}. Nothing was written.",
            )

    def _to_escalation(self, request: Request, escalation_id: str, outcome: str) -> Response:
        return RedirectResponse(
            f"{self._base(request)}/escalations/{quote(escalation_id, safe='')}?outcome={outcome}",
            status_code=303,
        )

    # --- audit -----------------------------------------------------------------------

    async def audit(self, request: Request) -> Response:
        def build(user: Approver) -> Response:
            query = request.query_params
            answered = self._s.store.approvals(
                status="answered", limit=self._s.page_size, after=query.get("after") or None
            )
            resolved = self._s.store.escalation_page(
                status="resolved",
                limit=self._s.page_size,
                after=query.get("escalations_after") or None,
                newest_first=True,
            )
            now = datetime.now(UTC)
            return self._render(
                request,
                "audit.html",
                user,
                approvals=[approval_view(entry, now) for entry in answered.entries],
                approvals_total=answered.total,
                approvals_next=_next({}, answered.next_cursor),
                escalations=[escalation_view(e, now) for e in resolved.entries],
                escalations_total=resolved.total,
                escalations_next=(
                    None
                    if resolved.next_cursor is None
                    else "?" + urlencode({"escalations_after": resolved.next_cursor})
                ),
            )

        return await self._page(request, build)

    def _wake(self, session_id: str) -> None:
        """Wake a durable run waiting on *session_id*; a failure is logged, not shown: the
        answer is stored, and the run finds it at its next re-check."""
        from stageware._cli._errors import CommandError
        from stageware._cli._wake import wake_session

        try:
            woke = wake_session(self._s.dbos_url, self._s.dbos_schema, session_id, self._s.store)
        except CommandError as error:
            _LOG.warning("%s", error)
            return
        if woke:
            _LOG.info("session %r%s", session_id, woke)


def _field(form: Mapping[str, str], name: str) -> str:
    value = form.get(name)
    if not value:
        raise _Refusal(400, f"The form has no {name}; nothing was written.")
    return value


def _minutes(text: str | None) -> int | None:
    if not text:
        return None
    try:
        minutes = int(text)
    except ValueError:
        raise _Refusal(400, f"older_than must be a whole number of minutes, got {text!r}") from None
    if not 0 <= minutes <= _MAX_MINUTES:
        raise _Refusal(400, f"older_than must be 0 to {_MAX_MINUTES} minutes, got {minutes}")
    return minutes


def _next(filters: Mapping[str, object], cursor: str | None) -> str | None:
    if cursor is None:
        return None
    given = {key: str(value) for key, value in filters.items() if value is not None}
    return "?" + urlencode({**given, "after": cursor})


def _ids(request: Request) -> tuple[str, str]:
    """The session and interrupt ids of an approval's address, each percent-encoded in its
    own segment: read from the raw path, since either may hold a ``/``."""
    raw = cast(bytes, request.scope.get("raw_path") or request.url.path.encode()).decode("latin-1")
    parts = raw.split("?", 1)[0].rsplit("/", 2)
    if len(parts) != 3 or not parts[1] or not parts[2]:
        raise _Refusal(404, "An approval's address is /approvals/<session id>/<interrupt id>.")
    return unquote(parts[1]), unquote(parts[2])


def _store_refusals(call: Callable[..., _T], *arguments: Any) -> _T:
    """*call*'s result; a store's refusal of what the request asked (a malformed id, filter
    or cursor) is a 400 that says why, and a store that did not answer in time a 503."""
    from stageware._host.sessions import SessionError, SessionTimeoutError

    try:
        return call(*arguments)
    except SessionTimeoutError as error:
        raise _Refusal(503, f"The store did not answer in time: {error}") from None
    except SessionError as error:
        raise _Refusal(400, f"The store refused the request: {error}") from None


def _escalation_call(call: Callable[[], _T]) -> _T:
    from stageware._host.sessions import EscalationError

    try:
        return call()
    except EscalationError as error:
        status = 404 if "holds no escalation with that id" in str(error) else 409
        raise _Refusal(status, f"{error}") from None
