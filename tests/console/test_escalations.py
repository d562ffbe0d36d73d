"""The console's escalations: listing, claiming and resolving, and who may."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html import unescape

from stageware import EscalationPage, EscalationStatus, SessionStore
from tests.host.sessions.stores import DelegatingStore, escalate

from .desk import Browser, form_fields


def listed(html: str) -> list[str]:
    return re.findall(r'<tr class="escalation" data-escalation-id="([^"]*)">', html)


def test_the_listing_filters_by_queue_status_and_age_and_pages(store: SessionStore) -> None:
    now = datetime.now(UTC)
    old = escalate(store, "s-old", created_at=now - timedelta(hours=3))
    new = escalate(store, "s-new", created_at=now - timedelta(minutes=5))
    fraud = escalate(store, "s-fraud", queue="fraud", created_at=now - timedelta(minutes=1))
    browser = Browser(store, page_size=2)

    first = browser.get("/escalations")
    assert first.status_code == 200
    assert '<span id="total">3</span>' in first.text
    assert listed(first.text) == [old.id, new.id]
    match = re.search(r'<a id="next-page" href="([^"]+)"', first.text)
    assert match is not None
    assert listed(browser.get(unescape(match.group(1))).text) == [fraud.id]

    assert listed(browser.get("/escalations?queue=fraud").text) == [fraud.id]
    assert listed(browser.get("/escalations?older_than=60").text) == [old.id]
    assert listed(browser.get("/escalations?status=resolved").text) == []
    assert browser.get("/escalations?status=gone").status_code == 400


def test_an_escalation_is_claimed_and_resolved_as_the_verified_user(store: SessionStore) -> None:
    escalation = escalate(store, "s1")
    browser = Browser(store, "olga", ("ops",))
    page = f"/escalations/{escalation.id}"
    html = unescape(browser.get(page).text)
    assert "a refund for s1 is over the limit" in html
    assert '"amount": 900' in html

    claimed = browser.submit(page, "claim")
    assert claimed.status_code == 303
    found = store.open_escalation("s1")
    assert found is not None
    assert found.claimed_by == "olga"

    resolved = browser.submit(page, "resolve", resolution="refunded by hand", comment="ok")
    assert resolved.status_code == 303
    assert store.open_escalation("s1") is None
    [done] = store.escalations()
    assert (done.resolved_by, done.resolution, done.comment) == ("olga", "refunded by hand", "ok")
    after = browser.get(resolved.headers["location"]).text
    assert '<p id="outcome"' in after
    assert form_fields(after, "resolve") is None
    audit = browser.get("/audit").text
    assert f'data-escalation-id="{escalation.id}"' in audit
    assert '<td class="resolved-by">olga</td>' in audit


def test_the_audit_lists_the_latest_resolved_escalations_first(store: SessionStore) -> None:
    now = datetime.now(UTC)
    escalations = [
        escalate(store, f"s{age}", created_at=now - timedelta(hours=age)) for age in (3, 1, 2)
    ]
    for escalation in escalations:
        store.resolve_escalation(escalation.id, by="olga", resolution="done")
    escalate(store, "s-open")  # unresolved: not in the audit
    browser = Browser(store, page_size=2)

    audit = browser.get("/audit").text
    resolved = re.findall(r'<tr class="resolution" data-escalation-id="([^"]*)">', audit)
    newest_first = sorted(escalations, key=lambda e: e.created_at, reverse=True)
    assert resolved == [e.id for e in newest_first[:2]]
    assert '<span id="escalations-total">3</span>' in audit
    match = re.search(r'<a id="next-escalations" href="([^"]+)"', audit)
    assert match is not None
    rest = browser.get(unescape(match.group(1))).text
    assert re.findall(r'<tr class="resolution" data-escalation-id="([^"]*)">', rest) == [
        newest_first[2].id
    ]


class _NoPaging(DelegatingStore):
    """A store whose listing fails: a page that needs one escalation must not list them."""

    def escalation_page(
        self,
        queue: str | None = None,
        *,
        status: EscalationStatus | None = None,
        created_before: datetime | None = None,
        limit: int = 50,
        after: str | None = None,
        newest_first: bool = False,
    ) -> EscalationPage:
        raise AssertionError("the escalation's page listed the store's escalations")


def test_an_escalations_page_looks_it_up_by_id(store: SessionStore) -> None:
    wanted = escalate(store, "s1")
    for number in range(3):
        escalate(store, f"other{number}")
    browser = Browser(_NoPaging(store))
    html = unescape(browser.get(f"/escalations/{wanted.id}").text)
    assert "a refund for s1 is over the limit" in html
    assert browser.get("/escalations/0123456789abcdef0123456789abcdef").status_code == 404


def test_another_users_claim_is_taken_over_only_when_asked(store: SessionStore) -> None:
    escalation = escalate(store, "s1")
    store.claim_escalation(escalation.id, by="ana")
    page = f"/escalations/{escalation.id}"
    browser = Browser(store, "olga")

    refused = browser.submit(page, "resolve", resolution="done")
    assert refused.status_code == 409
    assert "take_over" in refused.text
    taken = browser.submit(page, "resolve", resolution="done", take_over="1")
    assert taken.status_code == 303
    [done] = store.escalations()
    assert (done.claimed_by, done.resolved_by) == ("ana", "olga")


def test_only_the_resolvers_may_claim_or_resolve(store: SessionStore) -> None:
    escalation = escalate(store, "s1")
    page = f"/escalations/{escalation.id}"
    allowed = Browser(store, "olga", ("ops",), resolvers=["role:ops"])
    assert form_fields(allowed.get(page).text, "resolve") is not None
    outsider = Browser(store, "mallory", ("support",), resolvers=["role:ops"])
    html = outsider.get(page).text
    assert form_fields(html, "resolve") is None
    assert form_fields(html, "claim") is None
    assert 'id="may-not-resolve"' in html
    # A post with a valid token of mallory's own is refused all the same.
    fields = form_fields(allowed.get(page).text, "resolve")
    assert fields is not None
    from stageware._console._csrf import COOKIE, CsrfTokens

    from .desk import SECRET

    outsider.get("/escalations")
    token = CsrfTokens(SECRET).token("mallory", outsider.client.cookies[COOKIE])
    for path in ["/escalations/claim", "/escalations/resolve"]:
        response = outsider.post(path, {**fields, "csrf_token": token, "resolution": "mine now"})
        assert response.status_code == 403
        assert "mallory may not claim or resolve escalations" in response.text
    found = store.open_escalation("s1")
    assert found is not None
    assert (found.status, found.claimed_by) == ("open", None)


def test_an_unknown_escalation_is_404(store: SessionStore) -> None:
    escalate(store, "s1")
    browser = Browser(store)
    assert browser.get("/escalations/0123456789abcdef0123456789abcdef").status_code == 404


def test_a_malformed_id_is_a_400_naming_the_problem(store: SessionStore) -> None:
    escalation = escalate(store, "s1")
    browser = Browser(store)
    fields = form_fields(browser.get(f"/escalations/{escalation.id}").text, "claim")
    assert fields is not None

    response = browser.post("/escalations/claim", {**fields, "escalation_id": "bad\x00id"})

    assert response.status_code == 400
    assert "NUL character" in response.text
    found = store.open_escalation("s1")
    assert found is not None
    assert found.status == "open"
