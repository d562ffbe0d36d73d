"""The console's approvals: listing, what each would run, answering it, and what is refused.

Every test runs on the memory, SQLite and Postgres stores, with approvals a real agent
suspended, through Starlette's TestClient (a real ASGI app, forms posted as a browser
posts them).
"""

from __future__ import annotations

import re
import time
from html import unescape
from urllib.parse import quote

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from stageware import Agent, ScriptedModel, SessionStore
from stageware._console._csrf import COOKIE, CsrfTokens
from stageware._host._interrupt_state import InterruptState
from stageware._policy._approval import read_record
from stageware.console import LocalAuthenticator, create_app
from stageware.policy import InputEvent, PolicyEngine, PolicyEnv, Principal, Suspend, middleware

from .desk import SECRET, Browser, Desk, form_fields


def detail(session_id: str, interrupt_id: str) -> str:
    return f"/approvals/{quote(session_id, safe='')}/{quote(interrupt_id, safe='')}"


def rows(html: str) -> list[tuple[str, str]]:
    """The (session, interrupt) of each approval row of a listing."""
    found = re.findall(
        r'<tr class="approval" data-session-id="([^"]*)" data-interrupt-id="([^"]*)">', html
    )
    return [(s, i) for s, i in found]


def total(html: str) -> int:
    match = re.search(r'<span id="total">(\d+)</span>', html)
    assert match is not None
    return int(match.group(1))


def answer_form(browser: Browser, session_id: str, interrupt_id: str) -> dict[str, str]:
    """The fields of the approval's answer form, as the page gives them."""
    fields = form_fields(browser.get(detail(session_id, interrupt_id)).text, "answer")
    assert fields is not None
    return fields


def stored_record(store: SessionStore, session_id: str, interrupt_id: str) -> object:
    stored = store.load(session_id)
    assert stored is not None
    state = InterruptState.from_dict(stored.snapshot["interrupt_state"])
    return state.interrupts[interrupt_id].response


def version(store: SessionStore, session_id: str) -> int:
    stored = store.load(session_id)
    assert stored is not None
    return stored.version


def test_the_root_goes_to_the_approvals(store: SessionStore) -> None:
    response = Browser(store).get("/")
    assert response.status_code == 303
    assert response.headers["location"] == "/approvals"


def test_the_listing_shows_the_pending_approvals_filtered_and_paged(store: SessionStore) -> None:
    desk = Desk()
    ids = [desk.suspend(store, f"s{n}", amount=600 + n) for n in range(3)]
    browser = Browser(store, page_size=2)

    first = browser.get("/approvals")

    assert first.status_code == 200
    assert total(first.text) == 3
    assert len(rows(first.text)) == 2
    assert "a refund of 600 needs finance" in first.text
    match = re.search(r'<a id="next-page" href="([^"]+)"', first.text)
    assert match is not None
    second = browser.get(match.group(1).replace("&amp;", "&"))
    assert total(second.text) == 3
    assert 'id="next-page"' not in second.text
    listed = rows(first.text) + rows(second.text)
    assert sorted(listed) == sorted(zip(["s0", "s1", "s2"], ids, strict=True))

    assert total(browser.get("/approvals?hook=tool.before").text) == 3
    assert total(browser.get("/approvals?hook=model.before").text) == 0
    assert total(browser.get("/approvals?middleware=refund_guard").text) == 3
    assert total(browser.get("/approvals?middleware=other").text) == 0
    # Asked a moment ago: none is older than an hour.
    assert total(browser.get("/approvals?older_than=60").text) == 0
    assert total(browser.get("/approvals?older_than=0").text) == 3
    bad = browser.get("/approvals?older_than=soon")
    assert bad.status_code == 400
    assert "older_than must be a whole number of minutes" in bad.text
    for minutes in ["-1", "99999999999999"]:
        assert browser.get(f"/approvals?older_than={minutes}").status_code == 400
    forged = browser.get("/approvals?after=not-a-cursor")
    assert forged.status_code == 400
    assert "The store refused the request" in forged.text


def test_an_approval_shows_whom_the_run_acts_for(store: SessionStore) -> None:
    # The answer is not bound to the principal (a resume may act for someone else), so
    # the approver is shown whom the suspended run was acting for.
    erin = Principal("erin@example.com", frozenset({"support", "emea"}))
    interrupt_id = Desk().suspend(store, "s1", principal=erin)
    html = unescape(Browser(store).get(detail("s1", interrupt_id)).text)
    assert '<dd id="acts-for">erin@example.com (emea, support)</dd>' in html


def test_an_approval_shows_what_runs_the_conversation_and_who_may_answer(
    store: SessionStore,
) -> None:
    desk = Desk()
    interrupt_id = desk.suspend(store, "s1", amount=900, prompt="please refund my order")

    page = Browser(store, "fiona", ("finance",)).get(detail("s1", interrupt_id))

    assert page.status_code == 200
    html = unescape(page.text)
    assert '<code id="tool">refund</code>' in html
    assert re.search(r'<pre id="tool-input">\{\s*"amount": 900,\s*"customer": "c-1"\s*\}', html)
    assert '<dd id="reason">a refund of 900 needs finance</dd>' in html
    assert '"amount": 900' in html  # the details
    assert '<dd id="who-may-answer">role:finance</dd>' in html
    assert '<dd id="acts-for">nobody named (the application passed no principal)</dd>' in html
    assert "please refund my order" in html  # the conversation
    assert "Signed in as <strong>fiona</strong>" in html
    assert "console-local" in html
    fields = form_fields(html, "answer")
    assert fields is not None
    assert fields["session_id"] == "s1"
    assert fields["interrupt_id"] == interrupt_id
    assert fields["csrf_token"]
    assert '<button id="approve" name="decision" value="approve"' in html
    assert '<button id="deny" name="decision" value="deny"' in html
    assert 'id="may-not-answer"' not in html


def test_an_approval_in_the_page_is_recorded_with_the_verified_identity_and_the_run_goes_on(
    store: SessionStore,
) -> None:
    desk = Desk()
    interrupt_id = desk.suspend(store, "s1")
    browser = Browser(store, "fiona", ("finance", "staff"))
    page = detail("s1", interrupt_id)

    response = browser.submit(page, "answer", {"decision": "approve"}, comment="checked")

    assert response.status_code == 303
    assert response.headers["location"] == f"{page}?outcome=approved"
    after = browser.get(response.headers["location"]).text
    assert '<p id="outcome"' in after
    assert 'id="verdict"' in after
    assert "fiona" in after
    assert 'id="answer"' not in after  # answered: no form any more
    record = read_record(stored_record(store, "s1", interrupt_id))
    assert record is not None
    assert (record.approved, record.approver, record.roles, record.via, record.comment) == (
        True,
        "fiona",
        ("finance", "staff"),
        "console-local",
        "checked",
    )
    entry = store.approval("s1", interrupt_id)
    assert entry is not None
    assert (entry.status, entry.answered_by, entry.via) == ("approved", "fiona", "console-local")
    audit = browser.get("/audit").text
    assert f'data-interrupt-id="{interrupt_id}"' in audit
    assert '<td class="answered-by">fiona</td>' in audit
    assert '<td class="via">console-local</td>' in audit
    assert total(browser.get("/approvals").text) == 0

    result = desk.agent(store, ["Refunded."], "s1")()
    assert result.text == "Refunded."
    assert desk.paid == [900]


def test_a_denial_in_the_page_blocks_the_step(store: SessionStore) -> None:
    desk = Desk()
    interrupt_id = desk.suspend(store, "s1")

    response = Browser(store).submit(detail("s1", interrupt_id), "answer", {"decision": "deny"})

    assert response.status_code == 303
    record = read_record(stored_record(store, "s1", interrupt_id))
    assert record is not None
    assert (record.approved, record.approver) == (False, "fiona")
    result = desk.agent(store, ["never"], "s1")()
    assert str(result.stop_reason) == "blocked"
    assert desk.paid == []


def test_a_user_without_the_role_sees_no_form_and_a_forged_post_is_refused(
    store: SessionStore,
) -> None:
    interrupt_id = Desk().suspend(store, "s1")
    browser = Browser(store, "mallory", ("support",))
    page = browser.get(detail("s1", interrupt_id)).text
    assert form_fields(page, "answer") is None
    assert 'id="approve"' not in page
    assert 'id="deny"' not in page
    assert '<p id="may-not-answer">' in page
    assert "role:finance" in page
    before = version(store, "s1")
    # Hand-made, with a valid token of mallory's own: what is forged is the answer.
    nonce = browser.client.cookies[COOKIE]
    response = browser.post(
        "/approvals/answer",
        {
            "session_id": "s1",
            "interrupt_id": interrupt_id,
            "decision": "approve",
            "csrf_token": CsrfTokens(SECRET).token("mallory", nonce),
        },
    )

    assert response.status_code == 403
    assert "mallory (roles: support; via console-local) may not answer" in response.text
    assert version(store, "s1") == before
    assert stored_record(store, "s1", interrupt_id) is None


@pytest.mark.parametrize(
    ("token", "headers"),
    [
        pytest.param(None, {}, id="no token"),
        pytest.param("0" * 64, {}, id="wrong token"),
        pytest.param("other user", {}, id="another user's token"),
        pytest.param("valid", {"origin": "https://evil.example"}, id="another origin"),
        pytest.param("valid", {"sec-fetch-site": "cross-site"}, id="cross-site fetch"),
    ],
)
def test_a_post_without_the_forms_token_or_from_another_site_is_refused(
    store: SessionStore, token: str | None, headers: dict[str, str]
) -> None:
    interrupt_id = Desk().suspend(store, "s1")
    browser = Browser(store)
    browser.get("/approvals")  # the cookie
    nonce = browser.client.cookies[COOKIE]
    tokens = CsrfTokens(SECRET)
    data = {"session_id": "s1", "interrupt_id": interrupt_id, "decision": "approve"}
    if token == "valid":
        data["csrf_token"] = tokens.token("fiona", nonce)
    elif token == "other user":
        data["csrf_token"] = tokens.token("mallory", nonce)
    elif token is not None:
        data["csrf_token"] = token
    before = version(store, "s1")

    response = browser.post("/approvals/answer", data, headers=headers)

    assert response.status_code == 403
    assert "nothing was written" in response.text
    assert version(store, "s1") == before
    assert stored_record(store, "s1", interrupt_id) is None


def test_a_valid_token_without_its_cookie_is_refused(store: SessionStore) -> None:
    interrupt_id = Desk().suspend(store, "s1")
    browser = Browser(store)
    fields = answer_form(browser, "s1", interrupt_id)
    browser.client.cookies.clear()

    response = browser.post("/approvals/answer", {**fields, "decision": "approve"})

    assert response.status_code == 403
    assert stored_record(store, "s1", interrupt_id) is None


@pytest.mark.parametrize(
    "path", ["/approvals/answer", "/escalations/claim", "/escalations/resolve"]
)
def test_a_get_on_a_form_address_is_405(store: SessionStore, path: str) -> None:
    response = Browser(store).get(path)
    assert response.status_code == 405


def test_a_second_answer_is_refused_and_the_first_stands(store: SessionStore) -> None:
    interrupt_id = Desk().suspend(store, "s1")
    first = Browser(store, "fiona")
    fields = answer_form(first, "s1", interrupt_id)
    assert first.post("/approvals/answer", {**fields, "decision": "approve"}).status_code == 303
    before = version(store, "s1")

    # The same form, posted again, approving and denying (a second tab, a double click).
    again = first.post("/approvals/answer", {**fields, "decision": "approve"})
    other = first.post("/approvals/answer", {**fields, "decision": "deny"})

    assert again.status_code == 409
    assert "answered already; the first answer stands" in again.text
    assert other.status_code == 409
    assert "approved by fiona (console-local)" in other.text
    assert version(store, "s1") == before
    record = read_record(stored_record(store, "s1", interrupt_id))
    assert record is not None
    assert record.approved


def test_an_answer_for_another_fingerprint_is_refused(store: SessionStore) -> None:
    interrupt_id = Desk().suspend(store, "s1")
    browser = Browser(store)
    fields = answer_form(browser, "s1", interrupt_id)
    stale = interrupt_id[:-16] + "0123456789abcdef"
    before = version(store, "s1")

    response = browser.post(
        "/approvals/answer", {**fields, "interrupt_id": stale, "decision": "approve"}
    )

    assert response.status_code == 409
    assert "is stale" in response.text
    assert version(store, "s1") == before
    assert stored_record(store, "s1", interrupt_id) is None


def test_an_answer_to_a_session_a_worker_runs_is_refused(store: SessionStore) -> None:
    interrupt_id = Desk().suspend(store, "s1")
    browser = Browser(store)
    fields = answer_form(browser, "s1", interrupt_id)
    stored = store.load("s1")
    assert stored is not None
    store.save(
        "s1", stored.snapshot, expected_version=stored.version, owner="worker-9", lease_seconds=30
    )

    response = browser.post("/approvals/answer", {**fields, "decision": "approve"})

    assert response.status_code == 409
    assert "is in use by worker 'worker-9'" in unescape(response.text)
    assert version(store, "s1") == stored.version + 1
    assert stored_record(store, "s1", interrupt_id) is None


def test_an_unknown_approval_is_404_and_a_malformed_id_400(store: SessionStore) -> None:
    Desk().suspend(store, "s1")
    browser = Browser(store)
    response = browser.get(detail("s1", "v2:policy:tool.before:x:t1#0123456789abcdef"))
    assert response.status_code == 404
    assert browser.get(detail("bad\x00id", "x")).status_code == 400


def test_what_the_conversation_holds_is_shown_as_text_never_as_markup(store: SessionStore) -> None:
    interrupt_id = Desk().suspend(
        store,
        "s1",
        prompt='<script>alert("x")</script><img src=x onerror=alert(1)>',
        customer="<b>bold</b>",
    )

    html = Browser(store).get(detail("s1", interrupt_id)).text

    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html


def test_every_page_forbids_scripts_and_framing(store: SessionStore) -> None:
    browser = Browser(store)
    for path in ["/approvals", "/escalations", "/audit", "/approvals/answer", "/nowhere"]:
        response = browser.get(path)
        policy = response.headers["content-security-policy"]
        assert "default-src 'none'" in policy
        assert "script-src" not in policy  # so none is allowed
        assert "frame-ancestors 'none'" in policy
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["referrer-policy"] == "same-origin"
    cookie = browser.get("/approvals").headers.get("set-cookie")
    # The cookie is set once, by the first page.
    assert cookie is None or "httponly" in cookie.lower()


def test_the_nonce_cookie_is_secure_behind_a_tls_terminating_proxy(store: SessionStore) -> None:
    # Behind a proxy that terminates TLS the console sees http: without secure_cookies the
    # cookie would travel over plain http too.
    plain = Browser(store).get("/approvals").headers["set-cookie"].lower()
    assert "httponly" in plain
    assert "samesite=strict" in plain
    assert "secure" not in plain.replace("samesite", "")
    secured = Browser(store, secure_cookies=True).get("/approvals").headers["set-cookie"]
    assert "; secure" in secured.lower()


def test_the_console_refuses_a_short_secret_and_a_bad_page_size(store: SessionStore) -> None:
    local = LocalAuthenticator("fiona")
    with pytest.raises(ValueError, match="at least 32 bytes"):
        create_app(store, authenticator=local, secret=b"short")
    with pytest.raises(ValueError, match="page_size must be 1 to 500"):
        create_app(store, authenticator=local, page_size=0)


def test_answered_approvals_list_newest_first_in_the_audit(store: SessionStore) -> None:
    desk = Desk()
    first = desk.suspend(store, "s1")
    second = desk.suspend(store, "s2")
    browser = Browser(store)
    browser.submit(detail("s1", first), "answer", {"decision": "approve"})
    browser.submit(detail("s2", second), "answer", {"decision": "deny"})

    audit = browser.get("/audit").text

    assert '<span id="approvals-total">2</span>' in audit
    found = re.findall(r'<tr class="decision" data-session-id="([^"]*)"', audit)
    assert sorted(found) == ["s1", "s2"]
    assert '<td class="verdict">approved</td>' in audit
    assert '<td class="verdict">denied</td>' in audit


def test_mounted_in_another_app_its_links_and_forms_follow_the_mount(store: SessionStore) -> None:
    interrupt_id = Desk().suspend(store, "s1")
    console = create_app(store, authenticator=LocalAuthenticator("fiona", roles=["finance"]))
    outer = Starlette(routes=[Mount("/ops/console", app=console)])
    browser = TestClient(
        outer, base_url="http://localhost:8400", client=("127.0.0.1", 50000), follow_redirects=False
    )

    assert browser.get("/ops/console/").headers["location"] == "/ops/console/approvals"
    listing = browser.get("/ops/console/approvals").text
    page = f"/ops/console{detail('s1', interrupt_id)}"
    assert f'href="{page}"' in listing
    html = browser.get(page).text
    assert '<form id="answer" method="post" action="/ops/console/approvals/answer">' in html
    assert 'href="/ops/console/static/console.css"' in html
    fields = form_fields(html, "answer")
    assert fields is not None

    answered = browser.post("/ops/console/approvals/answer", data={**fields, "decision": "deny"})

    assert answered.status_code == 303
    assert answered.headers["location"] == f"{page}?outcome=denied"
    assert browser.get("/ops/console/static/console.css").status_code == 200


@middleware(hooks=["input.received"], fail_mode="closed", timeout="2s")
async def wire_guard(event: InputEvent, env: PolicyEnv) -> Suspend | None:
    """Prompts that ask for a wire transfer wait for finance."""
    texts = [block.get("text", "") for message in event.messages for block in message["content"]]
    if any("wire" in text for text in texts):
        return Suspend("a wire transfer needs finance", approvers=["role:finance"])
    return None


def test_an_input_approval_shows_the_input_that_waits(store: SessionStore) -> None:
    agent = Agent(
        ScriptedModel(["done"]),
        policy=PolicyEngine([wire_guard]),
        session_store=store,
        session_id="s1",
    )
    result = agent("please wire 5,000 to <acct 42>")
    assert result.stop_reason == "interrupt"
    [interrupt] = result.interrupts

    html = Browser(store).get(detail("s1", interrupt.id)).text

    assert 'id="tool"' not in html
    assert "The input the user sent" in html
    request = html.split('<ol id="request">', 1)[1].split("</ol>", 1)[0]
    assert '<div class="text">please wire 5,000 to &lt;acct 42&gt;</div>' in request
    assert form_fields(html, "answer") is not None


@middleware(hooks=["input.received"], fail_mode="closed", timeout="2s")
async def hasty_guard(event: InputEvent, env: PolicyEnv) -> Suspend:
    """Every input waits for an answer, for half a second."""
    return Suspend("answer quickly", timeout=0.5)


def test_an_answer_after_the_deadline_is_refused(store: SessionStore) -> None:
    agent = Agent(
        ScriptedModel(["done"]),
        policy=PolicyEngine([hasty_guard]),
        session_store=store,
        session_id="s1",
    )
    [interrupt] = agent("hello").interrupts
    browser = Browser(store)
    fields = answer_form(browser, "s1", interrupt.id)
    assert '<dd id="deadline">' in browser.get(detail("s1", interrupt.id)).text
    time.sleep(0.6)
    before = version(store, "s1")

    response = browser.post("/approvals/answer", {**fields, "decision": "approve"})

    assert response.status_code == 409
    assert "could be answered until" in response.text
    assert version(store, "s1") == before
    assert stored_record(store, "s1", interrupt.id) is None


def test_ids_with_slashes_spaces_and_hashes_reach_their_approval(store: SessionStore) -> None:
    session_id = "team/a b#1?x=%2F"
    interrupt_id = Desk().suspend(store, session_id)
    browser = Browser(store)
    listing = browser.get("/approvals").text
    link = re.search(r'<a href="(/approvals/[^"]+)">', listing)
    assert link is not None
    assert link.group(1) == detail(session_id, interrupt_id)

    response = browser.submit(link.group(1), "answer", {"decision": "approve"})

    assert response.status_code == 303
    assert browser.get(response.headers["location"]).status_code == 200
    record = read_record(stored_record(store, session_id, interrupt_id))
    assert record is not None
    assert record.approved


def test_a_post_with_files_or_too_many_fields_is_refused_before_it_is_read(
    store: SessionStore,
) -> None:
    interrupt_id = Desk().suspend(store, "s1")
    browser = Browser(store)
    fields = {**answer_form(browser, "s1", interrupt_id), "decision": "approve"}
    before = version(store, "s1")

    padded = browser.post("/approvals/answer", {**fields, **{f"pad{n}": "x" for n in range(40)}})
    with_file = browser.client.post(
        "/approvals/answer", data=fields, files={"upload": ("a.txt", b"x")}
    )

    assert (padded.status_code, with_file.status_code) == (400, 400)
    assert version(store, "s1") == before
