"""Who the console believes a request comes from: the shipped authenticators and one's own."""

from __future__ import annotations

from html import unescape
from typing import cast

import pytest

from stageware import SessionStore
from stageware._console._csrf import cross_site
from stageware._console._hosts import LOOPBACK_HOSTS as LOOPBACK
from stageware.console import (
    ConsoleRequest,
    LocalAuthenticator,
    ProxyHeaderAuthenticator,
    create_app,
)
from stageware.policy import ApprovalRefused, Approver

from .desk import Browser, Desk, form_fields
from .test_approvals import detail

PROXY = ProxyHeaderAuthenticator(trusted_proxies=["10.0.0.5", "192.168.7.0/24"])


def request(client_host: str | None, **headers: str) -> ConsoleRequest:
    return ConsoleRequest(method="GET", path="/approvals", headers=headers, client_host=client_host)


def test_the_proxy_is_believed_only_from_a_trusted_address() -> None:
    sent = {"x-forwarded-user": "dana@example.com", "x-forwarded-groups": "finance, staff"}
    for trusted in ["10.0.0.5", "192.168.7.20", "::ffff:10.0.0.5"]:
        assert PROXY(request(trusted, **sent)) == Approver(
            "dana@example.com", frozenset({"finance", "staff"}), "proxy-header"
        )
    for untrusted in ["10.0.0.6", "127.0.0.1", "evil", None]:
        with pytest.raises(ApprovalRefused, match="not a trusted proxy"):
            PROXY(request(untrusted, **sent))
    with pytest.raises(ApprovalRefused, match="no user in the x-forwarded-user header"):
        PROXY(request("10.0.0.5"))
    with pytest.raises(ApprovalRefused, match="names more than one user"):
        PROXY(request("10.0.0.5", **{"x-forwarded-user": "mallory, dana"}))
    with pytest.raises(ApprovalRefused, match="not a valid id"):
        PROXY(request("10.0.0.5", **{"x-forwarded-user": "role:finance"}))


def test_a_proxy_authenticator_needs_valid_trusted_addresses() -> None:
    with pytest.raises(ValueError, match="at least one trusted proxy"):
        ProxyHeaderAuthenticator(trusted_proxies=[])
    with pytest.raises(ValueError, match=r"'proxy\.local' is not an IP address or network"):
        ProxyHeaderAuthenticator(trusted_proxies=["proxy.local"])


def test_headers_from_an_untrusted_address_get_401_and_no_data(store: SessionStore) -> None:
    interrupt_id = Desk().suspend(store, "s1")
    headers = {"X-Forwarded-User": "fiona", "X-Forwarded-Groups": "finance"}
    outsider = Browser(store, authenticator=PROXY, client=("203.0.113.9", 4000))

    for path in ["/approvals", "/audit", "/escalations"]:
        response = outsider.get(path, headers=headers)
        assert response.status_code == 401
        assert "not a trusted proxy" in response.text
        assert "s1" not in response.text
    assert (
        outsider.post("/approvals/answer", {"decision": "approve"}, headers=headers).status_code
        == 401
    )

    proxied = Browser(store, authenticator=PROXY, client=("10.0.0.5", 4000))
    # A proxy that adds its header to the one the browser sent: neither is believed.
    doubled = [("X-Forwarded-User", "mallory"), ("X-Forwarded-User", "fiona")]
    assert proxied.get("/approvals", headers=doubled).status_code == 401
    page = proxied.get(f"/approvals/s1/{interrupt_id.replace('#', '%23')}", headers=headers)
    assert page.status_code == 200
    assert "verified via proxy-header" in unescape(page.text)
    assert form_fields(page.text, "answer") is not None


def test_a_roles_header_a_proxy_appends_to_the_browsers_is_refused(store: SessionStore) -> None:
    # A proxy that adds its headers to the browser's: the browser claims "finance", the
    # proxy names mallory with her own group. Merged, mallory would approve as finance.
    sent = {"x-forwarded-user": "mallory", "x-forwarded-groups": "finance, staff"}
    twice = ConsoleRequest(
        method="GET",
        path="/approvals",
        headers=sent,
        client_host="10.0.0.5",
        repeated=frozenset({"x-forwarded-groups"}),
    )
    with pytest.raises(ApprovalRefused, match="x-forwarded-groups header was sent more than"):
        PROXY(twice)
    # Sent once, the same comma-separated groups are the proxy's own.
    assert PROXY(request("10.0.0.5", **sent)).roles == frozenset({"finance", "staff"})

    interrupt_id = Desk().suspend(store, "s1")
    proxied = Browser(store, authenticator=PROXY, client=("10.0.0.5", 4000))
    appended = [
        ("X-Forwarded-Groups", "finance"),
        ("X-Forwarded-User", "mallory"),
        ("X-Forwarded-Groups", "staff"),
    ]
    link = f"/approvals/s1/{interrupt_id.replace('#', '%23')}"
    for path in ["/approvals", link, "/audit"]:
        response = proxied.get(path, headers=appended)
        assert response.status_code == 401
        assert "sent more than once" in response.text
    # Even with a form signed for mallory (fetched through a well-behaved request), the
    # appended headers do not get her answer recorded.
    fields = form_fields(
        proxied.get(
            link, headers={"X-Forwarded-User": "mallory", "X-Forwarded-Groups": "finance"}
        ).text,
        "answer",
    )
    assert fields is not None
    refused = proxied.post("/approvals/answer", {**fields, "decision": "approve"}, headers=appended)
    assert refused.status_code == 401
    entry = store.approval("s1", interrupt_id)
    assert entry is not None
    assert entry.status == "pending"


def test_a_site_rebound_to_this_machine_can_neither_read_nor_answer(store: SessionStore) -> None:
    # DNS rebinding: rebind.attacker.example re-resolves to 127.0.0.1, so its page is
    # same-origin with itself and its requests come from the loopback interface. Local
    # mode is served only as localhost, 127.0.0.1 and ::1: the page sees nothing, gets no
    # token, and a post it makes with a token from elsewhere is refused.
    interrupt_id = Desk().suspend(store, "s1")
    browser = Browser(store)
    evil = {"host": "rebind.attacker.example:8400"}
    for path in ["/approvals", detail("s1", interrupt_id), "/audit", "/escalations"]:
        response = browser.get(path, headers=evil)
        assert response.status_code == 400
        assert "s1" not in response.text
        assert "csrf" not in response.text
    fields = form_fields(browser.get(detail("s1", interrupt_id)).text, "answer")
    assert fields is not None
    forged = browser.post(
        "/approvals/answer",
        {**fields, "decision": "approve"},
        headers={
            **evil,
            "origin": "http://rebind.attacker.example:8400",
            "sec-fetch-site": "same-origin",
        },
    )
    assert forged.status_code == 400
    entry = store.approval("s1", interrupt_id)
    assert entry is not None
    assert entry.status == "pending"
    # This machine's own names, any port, are served.
    for host in ["localhost:8400", "127.0.0.1:9000", "[::1]:8400", "LOCALHOST"]:
        assert browser.get("/approvals", headers={"host": host}).status_code == 200
    for host in ["evil.example@127.0.0.1", "127.0.0.1:x", "127.0.0.1/x", ""]:
        assert browser.get("/approvals", headers={"host": host}).status_code == 400
    # A form is accepted only from a page of an allowed host, whatever Host it names.
    assert (
        cross_site({"origin": "http://rebind.example:8400"}, "rebind.example:8400", LOOPBACK)
        == "the form was sent from http://rebind.example:8400, not a host the console is "
        "served under"
    )
    assert cross_site({"origin": "http://localhost:8400"}, "localhost:8400", LOOPBACK) is None


def test_allowed_hosts_are_host_names_and_local_mode_allows_only_loopback(
    store: SessionStore,
) -> None:
    local = LocalAuthenticator("fiona")
    with pytest.raises(ValueError, match=r"served only as localhost.*\['console\.example\.com'\]"):
        create_app(store, authenticator=local, allowed_hosts=["console.example.com"])
    for wrong in [[], ["console.example.com:443"], ["https://console.example.com"], [""]]:
        with pytest.raises(ValueError, match="allowed"):
            create_app(store, authenticator=PROXY, allowed_hosts=wrong)
    proxied = Browser(
        store, authenticator=PROXY, client=("10.0.0.5", 4000), allowed_hosts=["Console.Example.com"]
    )
    signed_in = {"x-forwarded-user": "fiona"}
    served = proxied.get("/approvals", headers={**signed_in, "host": "console.example.com"})
    assert served.status_code == 200
    other = proxied.get("/approvals", headers={**signed_in, "host": "10.0.3.20:8400"})
    assert other.status_code == 400


def test_local_mode_admits_only_this_machine(store: SessionStore) -> None:
    local = LocalAuthenticator("fiona", roles=["finance"])
    assert local(request("127.0.0.1")) == Approver("fiona", frozenset({"finance"}), "console-local")
    assert local(request("::1")).id == "fiona"
    with pytest.raises(ApprovalRefused, match="admits only this machine"):
        local(request("192.168.1.4"))
    remote = Browser(store, client=("192.168.1.4", 4000))
    assert remote.get("/approvals").status_code == 401


def test_a_deployments_own_authenticator_decides(store: SessionStore) -> None:
    def by_cookie(seen: ConsoleRequest) -> Approver:
        if seen.cookies.get("session") != "good":
            raise ApprovalRefused("no session cookie")
        return Approver("gina", frozenset({"finance"}), "sso-cookie")

    browser = Browser(store, authenticator=by_cookie)
    assert browser.get("/approvals").status_code == 401
    browser.client.cookies.set("session", "good")
    page = browser.get("/approvals")
    assert page.status_code == 200
    assert "verified via sso-cookie" in page.text


def test_an_authenticator_that_returns_no_approver_is_a_500_not_a_login(
    store: SessionStore,
) -> None:
    def broken(_request: ConsoleRequest) -> Approver:
        # An untyped authenticator could return anything.
        return cast(Approver, "admin")

    browser = Browser(store, authenticator=broken)
    response = browser.get("/approvals")
    assert response.status_code == 500
    assert "authenticator is broken" in response.text
