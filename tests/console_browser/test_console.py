"""The approvals console in a real browser, against a real worker process.

Each test starts a refund request in the worker; the run suspends, durably, on an
approval only ``role:finance`` may give. Dana (finance) answers it in the page, and the
worker's run goes on in its own process: approved, the refund runs once and the run
finishes; denied, the step is blocked and the refund never runs. Eve (support) sees the
approval but no button. A POST forged from another site, or sent by a script without the
form's token, is refused, and the run still waits.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.wait import WebDriverWait

from tests.dbos.pending import pending_approval

from .deployment import BOUND, Console, Deployment, free_port
from .worker import AMOUNT, REASON, prompt_for


def open_approval(browser: webdriver.Chrome, console: Console, session_id: str) -> WebElement:
    """Open *console*'s list of approvals, then the approval *session_id* waits on, by
    its link in the list; the detail page's body."""
    browser.get(f"{console.url}/approvals")
    row = browser.find_element(By.CSS_SELECTOR, f'tr.approval[data-session-id="{session_id}"]')
    row.find_element(By.TAG_NAME, "a").click()
    WebDriverWait(browser, BOUND).until(lambda b: "/approvals/" in b.current_url)
    return browser.find_element(By.TAG_NAME, "body")


def audit_row(browser: webdriver.Chrome, console: Console, session_id: str) -> str:
    """The text of the audit page's row of *session_id*'s approval."""
    browser.get(f"{console.url}/audit")
    rows = [
        row.text for row in browser.find_elements(By.CSS_SELECTOR, "tr") if session_id in row.text
    ]
    assert len(rows) == 1, browser.find_element(By.TAG_NAME, "body").text
    return rows[0]


def loaded(browser: webdriver.Chrome) -> bool:
    """Whether the document the browser shows has loaded."""
    state: str = browser.execute_script("return document.readyState")
    return state == "complete"


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
    assert not [r for r in deployment.refunds() if r.startswith(f"{session_id} ")]


def test_an_approval_given_in_the_page_releases_the_run_waiting_in_the_worker(
    browser: webdriver.Chrome, deployment: Deployment, dana: Console
) -> None:
    approval = deployment.request_refund("order-1041")

    page = open_approval(browser, dana, "order-1041")

    # What runs if approved, the conversation that led to it, why, and who may answer.
    text = page.text
    assert "refund" in text
    assert "order-1041" in text
    assert str(AMOUNT) in text
    assert prompt_for("order-1041") in text
    assert "I will refund order order-1041." in text
    assert REASON in text
    assert "role:finance" in text
    assert "dana" in text
    assert (
        browser.find_element(By.CSS_SELECTOR, "#answer input[name=interrupt_id]").get_attribute(
            "value"
        )
        == approval
    )
    browser.find_element(By.CSS_SELECTOR, "#answer textarea[name=comment]").send_keys(
        "the courier confirmed the damage"
    )
    browser.find_element(By.ID, "approve").click()

    outcome = WebDriverWait(browser, BOUND).until(lambda b: b.find_element(By.ID, "outcome"))
    assert "approved" in outcome.text.lower()
    result = deployment.result("order-1041")
    assert (result.stop_reason, result.text, result.error) == (
        "end_turn",
        f"Refunded {AMOUNT} EUR for order order-1041.",
        None,
    )
    assert [r for r in deployment.refunds() if r.startswith("order-1041 ")] == [
        f"order-1041 {AMOUNT}"
    ]
    # The list no longer shows it; the audit shows who answered, as the console verified.
    browser.get(f"{dana.url}/approvals")
    assert not browser.find_elements(By.CSS_SELECTOR, 'tr.approval[data-session-id="order-1041"]')
    row = audit_row(browser, dana, "order-1041")
    for shown in ("approved", "dana", "finance", "console-local"):
        assert shown in row, row


def test_a_denial_given_in_the_page_blocks_the_step(
    browser: webdriver.Chrome, deployment: Deployment, dana: Console
) -> None:
    deployment.request_refund("order-1042")

    open_approval(browser, dana, "order-1042")
    browser.find_element(By.ID, "deny").click()

    outcome = WebDriverWait(browser, BOUND).until(lambda b: b.find_element(By.ID, "outcome"))
    assert "denied" in outcome.text.lower()
    result = deployment.result("order-1042")
    assert (result.stop_reason, result.error) == ("blocked", None)
    assert not [r for r in deployment.refunds() if r.startswith("order-1042 ")]
    row = audit_row(browser, dana, "order-1042")
    for shown in ("denied", "dana", "console-local"):
        assert shown in row, row


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


@pytest.fixture(scope="module")
def other_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A web server of another origin (``localhost``, another port), serving a folder;
    its URL and the folder."""
    folder = tmp_path_factory.mktemp("other-site")
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{server.server_address[1]}", folder
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _forged_page(console: Console, **fields: Any) -> str:
    inputs = "".join(f'<input type="hidden" name="{k}" value="{v}">' for k, v in fields.items())
    return (
        "<!doctype html><title>You won a prize</title>"
        f'<form id="forged" method="post" action="{console.url}/approvals/answer">{inputs}</form>'
        "<script>document.getElementById('forged').submit()</script>"
    )


def test_a_post_forged_on_another_site_is_refused(
    browser: webdriver.Chrome,
    deployment: Deployment,
    dana: Console,
    other_site: tuple[str, Path],
) -> None:
    approval = deployment.request_refund("order-1044")
    # Dana has the console open, and the role: a form she is lured to submits for her.
    open_approval(browser, dana, "order-1044")
    url, folder = other_site
    (folder / "prize.html").write_text(
        _forged_page(
            dana,
            session_id="order-1044",
            interrupt_id=approval,
            decision="approve",
            csrf_token="guessed",
        ),
        encoding="utf-8",
    )

    browser.get(f"{url}/prize.html")

    WebDriverWait(browser, BOUND).until(lambda b: b.current_url.startswith(dana.url) and loaded(b))
    assert status(browser) == 403
    still_waiting(deployment, "order-1044", approval)


_POST_WITHOUT_TOKEN = """
const [fields, done] = arguments;
const body = new URLSearchParams(fields);
fetch('/approvals/answer', {method: 'POST', body, redirect: 'manual'})
    .then(answer => done(answer.status), error => done(String(error)));
"""


@pytest.mark.parametrize("who", ["dana", "eve"])
def test_a_post_without_the_forms_token_is_refused(
    browser: webdriver.Chrome, deployment: Deployment, who: str, request: pytest.FixtureRequest
) -> None:
    console: Console = request.getfixturevalue(who)
    session_id = f"order-1050-{who}"
    approval = deployment.request_refund(session_id)
    open_approval(browser, console, session_id)

    # A script on the console's own origin (as an injected one would be) posts the answer
    # without the form: the request is same-origin, but it has no token.
    answered = browser.execute_async_script(
        _POST_WITHOUT_TOKEN,
        {"session_id": session_id, "interrupt_id": approval, "decision": "approve"},
    )

    assert answered == 403
    still_waiting(deployment, session_id, approval)
