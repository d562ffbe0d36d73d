"""The approvals console in a real browser, against a real worker process.

Each test starts a refund request in the worker; the run suspends, durably, on an
approval only ``role:finance`` may give. Dana (finance) answers it in the page, and the
worker's run goes on in its own process: approved, the refund runs once and the run
finishes; denied, the step is blocked and the refund never runs. Eve (support) sees the
approval but no button. The list's filter form narrows it by middleware, hook point and
age. A POST forged from another site, or sent by a script without the form's token, is
refused, and the run still waits; another site cannot frame the page either, and the
pages break nothing of their own Content-Security-Policy; markup a customer writes shows
as text. Behind a single-sign-on proxy, the answer is the proxy's user's, and around it
nobody is signed in. An escalated run waits until dana, one of the escalations'
resolvers, claims and resolves it in the page; eve may not.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from urllib.parse import urlencode

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

from stageware._console._csrf import COOKIE, CsrfTokens
from tests.dbos.pending import pending_approval

from .browser import policy_violations, until
from .deployment import Console, Deployment
from .pages import open_approval, open_escalation, shown
from .worker import AMOUNT, ESCALATION, REASON, prompt_for


def field(browser: webdriver.Chrome, name: str) -> str | None:
    """The value of the answer form's field *name*."""
    return browser.find_element(By.CSS_SELECTOR, f"#answer [name={name}]").get_attribute("value")


def cells(row: WebElement, *classes: str) -> list[str]:
    """The texts of *row*'s cells of *classes*."""
    return [row.find_element(By.CSS_SELECTOR, f"td.{name}").text for name in classes]


def audit_row(browser: webdriver.Chrome, console: Console, session_id: str) -> WebElement:
    """The audit page's row of *session_id*'s answered approval."""
    browser.get(f"{console.url}/audit")
    rows = browser.find_elements(By.CSS_SELECTOR, f'tr.decision[data-session-id="{session_id}"]')
    assert len(rows) == 1, browser.find_element(By.TAG_NAME, "body").text
    return rows[0]


def status(browser: webdriver.Chrome) -> int:
    """The HTTP status of the document the browser shows (the Navigation Timing entry's)."""
    found: int = browser.execute_script(
        "return performance.getEntriesByType('navigation')[0].responseStatus"
    )
    return found


def still_waiting(deployment: Deployment, session_id: str, approval: str) -> None:
    """The approval is unanswered and the run has not ended; nothing was refunded."""
    assert pending_approval(deployment.store, session_id) == approval
    assert not deployment.finished(session_id)
    assert deployment.refunds(session_id) == []


def test_an_approval_given_in_the_page_releases_the_run_waiting_in_the_worker(
    browser: webdriver.Chrome, deployment: Deployment, dana: Console
) -> None:
    approval = deployment.request_refund("order-1041")

    open_approval(browser, dana, "order-1041")

    # What runs if approved, the conversation that led to it, why, and who may answer.
    assert shown(browser, "tool") == "refund"
    assert json.loads(shown(browser, "tool-input")) == {"order": "order-1041", "amount": AMOUNT}
    conversation = shown(browser, "conversation")
    assert prompt_for("order-1041") in conversation
    assert "I will refund order order-1041." in conversation
    assert shown(browser, "reason") == REASON
    assert "order-1041" in shown(browser, "details")
    assert shown(browser, "who-may-answer") == "role:finance"
    assert "dana" in shown(browser, "current-user")
    assert field(browser, "session_id") == "order-1041"
    assert field(browser, "interrupt_id") == approval
    browser.find_element(By.CSS_SELECTOR, "#answer textarea[name=comment]").send_keys(
        "the courier confirmed the damage"
    )
    browser.find_element(By.ID, "approve").click()

    outcome = until(browser, lambda b: b.find_element(By.ID, "outcome"))
    assert "approved" in outcome.text.lower()
    result = deployment.result("order-1041")
    assert (result.stop_reason, result.text, result.error) == (
        "end_turn",
        f"Refunded {AMOUNT} EUR for order order-1041.",
        None,
    )
    assert deployment.refunds("order-1041") == [str(AMOUNT)]
    # The list no longer shows it; the audit shows who answered, as the console verified.
    browser.get(f"{dana.url}/approvals")
    assert not browser.find_elements(By.CSS_SELECTOR, 'tr.approval[data-session-id="order-1041"]')
    row = audit_row(browser, dana, "order-1041")
    assert cells(row, "verdict", "answered-by", "via") == ["approved", "dana", "console-local"]
    assert "finance" in row.text
    assert "the courier confirmed the damage" in row.text


def test_a_denial_given_in_the_page_blocks_the_step(
    browser: webdriver.Chrome, deployment: Deployment, dana: Console
) -> None:
    deployment.request_refund("order-1042")

    open_approval(browser, dana, "order-1042")
    browser.find_element(By.ID, "deny").click()

    outcome = until(browser, lambda b: b.find_element(By.ID, "outcome"))
    assert "denied" in outcome.text.lower()
    result = deployment.result("order-1042")
    assert (result.stop_reason, result.error) == ("blocked", None)
    assert deployment.refunds("order-1042") == []
    row = audit_row(browser, dana, "order-1042")
    assert cells(row, "verdict", "answered-by", "via") == ["denied", "dana", "console-local"]


def test_a_user_without_the_role_sees_the_approval_but_no_button(
    browser: webdriver.Chrome, deployment: Deployment, eve: Console
) -> None:
    approval = deployment.request_refund("order-1043")

    page = open_approval(browser, eve, "order-1043")

    assert REASON in page.text
    for absent in ("#answer", "#approve", "#deny"):
        with pytest.raises(NoSuchElementException):
            browser.find_element(By.CSS_SELECTOR, absent)
    assert "role:finance" in browser.find_element(By.ID, "may-not-answer").text
    still_waiting(deployment, "order-1043", approval)


# What a customer could write, to run script in the approver's page.
_MARKUP = (
    "<img src=x onerror=\"document.title='owned'\">"
    "<script>document.title='owned'</script><b id=injected>bold</b>"
)


def test_markup_in_the_conversation_is_shown_as_text(
    browser: webdriver.Chrome, deployment: Deployment, dana: Console
) -> None:
    deployment.request_refund("order-1052", _MARKUP)

    open_approval(browser, dana, "order-1052")

    assert f"{prompt_for('order-1052')} {_MARKUP}" in shown(browser, "conversation")
    assert not browser.find_elements(By.CSS_SELECTOR, "#conversation img, #injected, main script")
    assert browser.title != "owned"


def filter_approvals(browser: webdriver.Chrome, console: Console, **filters: str) -> list[str]:
    """Fill in the list's filter form with *filters* and send it; the sessions listed."""
    browser.get(f"{console.url}/approvals")
    for name, value in filters.items():
        browser.find_element(By.CSS_SELECTOR, f"#filters input[name={name}]").send_keys(value)
    browser.find_element(By.CSS_SELECTOR, "#filters button").click()
    until(browser, lambda b: "?" in b.current_url)
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.approval")
    sessions = [str(row.get_attribute("data-session-id")) for row in rows]
    assert shown(browser, "total") == str(len(sessions))
    return sessions


def test_the_filters_narrow_the_list(
    browser: webdriver.Chrome, deployment: Deployment, dana: Console
) -> None:
    deployment.request_refund("order-1051")

    assert "order-1051" in filter_approvals(browser, dana, middleware="refund_approval")
    assert "order-1051" in filter_approvals(browser, dana, hook="tool.before", older_than="0")
    assert filter_approvals(browser, dana, middleware="another_guard") == []
    assert shown(browser, "empty") == "Nothing waits for an answer."
    assert filter_approvals(browser, dana, older_than="60") == []


@pytest.fixture(scope="module")
def other_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A web server of another site, serving a folder; its URL and the folder.

    On 127.0.0.2, a loopback address of its own (Linux routes all of 127/8 to the loopback
    device): a host other than the consoles' 127.0.0.1, so another site to the browser.
    """
    folder = tmp_path_factory.mktemp("other-site")
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.2", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.2:{server.server_address[1]}", folder
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _form_page(console: Console, **fields: str) -> str:
    inputs = "".join(f'<input type="hidden" name="{k}" value="{v}">' for k, v in fields.items())
    return (
        "<!doctype html><title>You won a prize</title>"
        f'<form id="forged" method="post" action="{console.url}/approvals/answer">{inputs}</form>'
        "<script>document.getElementById('forged').submit()</script>"
    )


def test_the_pages_keep_to_their_own_policy(
    browser: webdriver.Chrome, deployment: Deployment, dana: Console
) -> None:
    deployment.request_refund("order-1049")
    policy_violations(browser)  # forget what earlier tests' pages did

    open_approval(browser, dana, "order-1049")
    # The console's one style sheet, from its own origin, is applied.
    header = browser.find_element(By.TAG_NAME, "header")
    assert header.value_of_css_property("background-color") == "rgba(32, 35, 42, 1)"
    for page in ("/escalations", "/audit", "/approvals"):
        browser.get(f"{dana.url}{page}")

    assert policy_violations(browser) == []


def test_another_site_cannot_frame_the_console(
    browser: webdriver.Chrome, deployment: Deployment, dana: Console, other_site: tuple[str, Path]
) -> None:
    # Clickjacking: a page that shows the approval in a frame under a decoy, so that the
    # approver's click lands on the console's Approve button.
    deployment.request_refund("order-1050")
    detail = open_approval(browser, dana, "order-1050")
    url, folder = other_site
    (folder / "framed.html").write_text(
        f'<!doctype html><title>Win</title><iframe src="{browser.current_url}"></iframe>',
        encoding="utf-8",
    )
    detail.find_element(By.ID, "approve")  # there, unframed

    browser.get(f"{url}/framed.html")
    browser.switch_to.frame(browser.find_element(By.TAG_NAME, "iframe"))
    try:
        assert not browser.find_elements(By.ID, "approve")
        framed: str = browser.execute_script("return location.href")
    finally:
        browser.switch_to.default_content()

    assert framed.startswith("chrome-error://"), framed


def test_a_post_forged_on_another_site_is_refused(
    browser: webdriver.Chrome,
    deployment: Deployment,
    dana: Console,
    other_site: tuple[str, Path],
) -> None:
    approval = deployment.request_refund("order-1044")
    # Dana has the console open, and the role: a page she is lured to posts for her.
    open_approval(browser, dana, "order-1044")
    url, folder = other_site
    fields = {"session_id": "order-1044", "interrupt_id": approval, "decision": "approve"}
    (folder / "prize.html").write_text(
        _form_page(dana, **fields, csrf_token="guessed"), encoding="utf-8"
    )

    browser.get(f"{url}/prize.html")

    until(browser, lambda b: b.current_url.startswith(dana.url))
    assert status(browser) == 403
    still_waiting(deployment, "order-1044", approval)


# A form built and sent by a script running in the console's own page, as an injected
# script's would be: same origin, so only the token (or the approver rule) can refuse it.
_POST_FORM = """
const [fields] = arguments;
const form = document.createElement('form');
form.method = 'post';
form.action = '/approvals/answer';
for (const [name, value] of Object.entries(fields)) {
    const input = document.createElement('input');
    input.type = 'hidden';
    input.name = name;
    input.value = value;
    form.appendChild(input);
}
document.body.appendChild(form);
form.submit();
"""

_FETCH = """
const [done] = arguments;
fetch('/approvals/answer', {method: 'POST', body: new URLSearchParams({decision: 'approve'})})
    .then(answer => done(answer.status), error => done(error.name));
"""


def post_from_the_page(browser: webdriver.Chrome, console: Console, **fields: str) -> int:
    """Submit *fields* to the answer URL from a form a script adds to the page; the status."""
    before = browser.current_url
    browser.execute_script(_POST_FORM, fields)
    until(browser, lambda b: b.current_url != before)
    assert browser.current_url == f"{console.url}/approvals/answer"
    return status(browser)


def test_an_answer_without_the_forms_token_is_refused(
    browser: webdriver.Chrome, deployment: Deployment, dana: Console
) -> None:
    approval = deployment.request_refund("order-1045")
    fields = {"session_id": "order-1045", "interrupt_id": approval, "decision": "approve"}
    open_approval(browser, dana, "order-1045")

    assert post_from_the_page(browser, dana, **fields) == 403
    open_approval(browser, dana, "order-1045")
    assert post_from_the_page(browser, dana, **fields, csrf_token="0" * 64) == 403
    # A script in the page may not even send a request: the page's policy allows none.
    open_approval(browser, dana, "order-1045")
    assert browser.execute_async_script(_FETCH) == "TypeError"
    # And no answer through a GET.
    browser.get(f"{dana.url}/approvals/answer?{urlencode(fields)}")
    assert status(browser) == 405

    still_waiting(deployment, "order-1045", approval)


def test_an_answer_from_a_user_without_the_role_is_refused_with_a_valid_token(
    browser: webdriver.Chrome, deployment: Deployment, eve: Console
) -> None:
    approval = deployment.request_refund("order-1046")
    open_approval(browser, eve, "order-1046")
    # The token a form of eve's would carry in this browser: she gets past the forgery
    # check as herself, and is refused as who she is.
    nonce = browser.get_cookie(COOKIE)
    assert nonce is not None
    token = CsrfTokens(eve.secret).token("eve", nonce["value"])

    answered = post_from_the_page(
        browser,
        eve,
        session_id="order-1046",
        interrupt_id=approval,
        decision="approve",
        csrf_token=token,
    )

    assert answered == 403
    assert "role:finance" in browser.find_element(By.TAG_NAME, "body").text
    still_waiting(deployment, "order-1046", approval)


def test_behind_a_single_sign_on_proxy_the_answer_is_the_proxys_user(
    browser: webdriver.Chrome, deployment: Deployment
) -> None:
    console = deployment.console_behind_proxy("dana@example.com", ("finance", "staff"))
    deployment.request_refund("order-1053")
    # The browser's user would be mallory, of finance: it names her in the proxy's
    # headers on every request it sends.
    forged = {"X-Forwarded-User": "mallory", "X-Forwarded-Groups": "finance"}
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": forged})
    try:
        open_approval(browser, console, "order-1053")
        assert "dana@example.com" in shown(browser, "current-user")
        browser.find_element(By.ID, "approve").click()

        until(browser, lambda b: b.find_element(By.ID, "outcome"))
        assert deployment.result("order-1053").stop_reason == "end_turn"
        assert deployment.refunds("order-1053") == [str(AMOUNT)]
        row = audit_row(browser, console, "order-1053")
        assert cells(row, "answered-by", "via") == ["dana@example.com", "proxy-header"]
        # Around the proxy, from an address the console does not trust, nobody is
        # signed in, whatever the headers say.
        browser.get(f"{console.direct_url}/approvals")
        assert status(browser) == 401
        assert not browser.find_elements(By.CSS_SELECTOR, "tr.approval")
    finally:
        browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {}})


def test_an_escalation_claimed_and_resolved_in_the_page_ends_the_run_waiting_on_it(
    browser: webdriver.Chrome, deployment: Deployment, dana: Console
) -> None:
    escalation = deployment.request_disputed_refund("dispute-1047")

    open_escalation(browser, dana, escalation)
    assert ESCALATION in browser.find_element(By.TAG_NAME, "h1").text
    assert "dispute-1047" in shown(browser, "event")
    browser.find_element(By.ID, "claim-button").click()
    until(browser, lambda b: shown(b, "status") == "claimed")
    assert shown(browser, "claimed-by") == "dana"
    assert not deployment.finished("dispute-1047")
    browser.find_element(By.CSS_SELECTOR, "#resolve input[name=resolution]").send_keys(
        "refunded by bank transfer"
    )
    browser.find_element(By.ID, "resolve-button").click()

    until(browser, lambda b: shown(b, "status") == "resolved")
    assert shown(browser, "resolution") == "refunded by bank transfer"
    result = deployment.result("dispute-1047")
    assert (result.stop_reason, result.escalation_id, result.error) == (
        "escalated",
        escalation,
        None,
    )
    assert deployment.refunds("dispute-1047") == []
    browser.get(f"{dana.url}/audit")
    row = browser.find_element(By.CSS_SELECTOR, f'tr.resolution[data-escalation-id="{escalation}"]')
    assert cells(row, "resolved-by") == ["dana"]


def test_a_user_who_may_not_resolve_sees_the_escalation_but_no_form(
    browser: webdriver.Chrome, deployment: Deployment, eve: Console
) -> None:
    escalation = deployment.request_disputed_refund("dispute-1048")

    open_escalation(browser, eve, escalation)

    for absent in ("#claim", "#resolve"):
        with pytest.raises(NoSuchElementException):
            browser.find_element(By.CSS_SELECTOR, absent)
    assert "role:finance" in shown(browser, "may-not-resolve")
    assert shown(browser, "status") == "open"
    assert not deployment.finished("dispute-1048")
