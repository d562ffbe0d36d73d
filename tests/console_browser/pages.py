"""Going to the console's pages as an approver does: from the lists, by their links."""

from __future__ import annotations

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

from .browser import until
from .deployment import Console


def open_approval(browser: webdriver.Chrome, console: Console, session_id: str) -> WebElement:
    """Open *console*'s list of approvals, then the approval *session_id* waits on, by
    its link in the list; the detail page's body."""
    browser.get(f"{console.url}/approvals")
    row = browser.find_element(By.CSS_SELECTOR, f'tr.approval[data-session-id="{session_id}"]')
    row.find_element(By.TAG_NAME, "a").click()
    until(browser, lambda b: "/approvals/" in b.current_url)
    return browser.find_element(By.TAG_NAME, "body")


def shown(browser: webdriver.Chrome, element_id: str) -> str:
    """The text of the element *element_id* of the page."""
    return browser.find_element(By.ID, element_id).text


def open_escalation(browser: webdriver.Chrome, console: Console, escalation_id: str) -> None:
    """Open *console*'s list of escalations, then the escalation *escalation_id*, by its
    link in the list."""
    browser.get(f"{console.url}/escalations")
    selector = f'tr.escalation[data-escalation-id="{escalation_id}"]'
    browser.find_element(By.CSS_SELECTOR, selector).find_element(By.TAG_NAME, "a").click()
    until(browser, lambda b: "/escalations/" in b.current_url)
