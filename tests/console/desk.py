"""A refund desk whose big refunds wait for finance, and a browser-like client of the console.

Approvals are made by a real agent run: a policy middleware suspends refunds over 500
until someone with the ``finance`` role answers. ``Browser`` is Starlette's TestClient
with what a browser does that the console relies on: it keeps the console's cookie, and
posts the forms of the page it last read, with their hidden fields.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import httpx2 as httpx
from starlette.testclient import TestClient

from stageware import Agent, ScriptedModel, SessionStore, tool
from stageware.console import ConsoleAuthenticator, LocalAuthenticator, create_app
from stageware.policy import (
    PRINCIPAL_KEY,
    PolicyEngine,
    PolicyEnv,
    Principal,
    Suspend,
    ToolCallEvent,
    middleware,
)
from tests.host.agent_helpers import calls

__all__ = ["SECRET", "Browser", "Desk", "form_fields", "refund_guard"]

SECRET = b"console tests: a key of thirty-two bytes or more"


@middleware(hooks=["tool.before"], fail_mode="closed", timeout="2s")
async def refund_guard(event: ToolCallEvent, env: PolicyEnv) -> Suspend | None:
    """Refunds over 500 wait for finance."""
    amount = event.input.get("amount", 0)
    if amount > 500:
        return Suspend(
            f"a refund of {amount} needs finance",
            details={"amount": amount, "customer": event.input.get("customer")},
            approvers=["role:finance"],
        )
    return None


class Desk:
    """A refund tool that records its payouts, behind the policy that suspends big ones."""

    def __init__(self) -> None:
        self.paid: list[int] = []

        @tool
        def refund(amount: int, customer: str = "c-1") -> str:
            """Refund an amount.

            Args:
                amount: How much.
                customer: To whom.
            """
            self.paid.append(amount)
            return f"refunded {amount}"

        self.refund = refund

    def agent(self, store: SessionStore, replies: list[Any], session_id: str) -> Agent:
        return Agent(
            ScriptedModel(replies),
            tools=[self.refund],
            policy=PolicyEngine([refund_guard]),
            session_store=store,
            session_id=session_id,
        )

    def suspend(
        self,
        store: SessionStore,
        session_id: str,
        amount: int = 900,
        prompt: str | None = None,
        customer: str = "c-1",
        principal: Principal | None = None,
    ) -> str:
        """Run a turn that asks for a big refund (for *principal*, if given); the id of the
        approval it waits on."""
        turn = calls(("refund", {"amount": amount, "customer": customer}, "t1"))
        state = {} if principal is None else {PRINCIPAL_KEY: principal}
        result = self.agent(store, [turn], session_id)(
            prompt or f"refund {amount}", invocation_state=state
        )
        assert result.stop_reason == "interrupt"
        [interrupt] = result.interrupts
        return interrupt.id


class _Forms(HTMLParser):
    """The named fields of one form of a page, by the form's id."""

    def __init__(self, form_id: str) -> None:
        super().__init__()
        self._id = form_id
        self._inside = False
        self.found = False
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        given = {name: value or "" for name, value in attrs}
        if tag == "form":
            self._inside = given.get("id") == self._id
            self.found = self.found or self._inside
        # As a browser sends them: an unchecked box not at all.
        elif (
            self._inside
            and tag == "input"
            and "name" in given
            and (given.get("type") != "checkbox" or "checked" in given)
        ):
            self.fields[given["name"]] = given.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._inside = False


def form_fields(html: str, form_id: str) -> dict[str, str] | None:
    """The input fields of the form *form_id* in *html*, or ``None`` if it has none."""
    parser = _Forms(form_id)
    parser.feed(html)
    return parser.fields if parser.found else None


class Browser:
    """The console over *store*, as seen from a browser on this machine.

    Args:
        authenticator: Who requests come from; by default *user* with *roles*, locally.
    """

    def __init__(
        self,
        store: SessionStore,
        user: str = "fiona",
        roles: tuple[str, ...] = ("finance",),
        *,
        authenticator: ConsoleAuthenticator | None = None,
        client: tuple[str, int] = ("127.0.0.1", 50000),
        base_url: str = "http://127.0.0.1:8400",
        **options: Any,
    ) -> None:
        chosen = authenticator or LocalAuthenticator(user, roles=roles)
        self.app = create_app(store, authenticator=chosen, secret=SECRET, **options)
        self.client = TestClient(self.app, base_url=base_url, client=client, follow_redirects=False)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.client.get(path, **kwargs)

    def submit(
        self, page: str, form_id: str, button: dict[str, str] | None = None, **values: str
    ) -> httpx.Response:
        """Read *page*, fill in its form *form_id* with *values*, and post it."""
        html = self.get(page).text
        fields = form_fields(html, form_id)
        assert fields is not None, f"no form {form_id!r} on {page}"
        action = re.search(rf'<form id="{form_id}" method="post" action="([^"]+)"', html)
        assert action is not None
        return self.client.post(action.group(1), data={**fields, **(button or {}), **values})

    def post(self, path: str, data: dict[str, str], **kwargs: Any) -> httpx.Response:
        return self.client.post(path, data=data, **kwargs)
