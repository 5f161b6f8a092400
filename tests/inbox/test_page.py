"""The inbox's page in a real headless browser (Debian's chromium, driven by selenium
through its chromedriver): a person's click on "approve" resumes the waiting call, and
the page shows the decision, and new requests, live (server-sent events) without a
reload.  A failing test leaves a screenshot of the page in its temp dir.  One test also
writes docs/approvals-inbox.png (two pending requests, fixed content) for the docs.

The browser is driven from a worker thread (selenium blocks); the inbox and the waiting
call run on the test's event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from inbox_browser import chromium, screenshot, wait_for
from inbox_helpers import TIMEOUT, agent, ask, asked, client, csrf_of_page, run_command, serving
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select

from interpose import ToolResult
from interpose.adapters.inbox.security import Tokens
from interpose.approvals import GrantSpec, MemoryApprovalStore
from interpose.pipeline.context import acting_as

pytestmark = pytest.mark.integration

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"


@pytest.fixture
def browser(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[webdriver.Chrome]:
    """A headless chromium; when the test fails, a screenshot of its page is written to
    the test's temp dir (``failure.png``, its path printed)."""
    failed = request.session.testsfailed  # (a failed call is counted before teardown)
    driver = chromium()
    try:
        yield driver
        if request.session.testsfailed > failed:
            print(f"the page when the test failed: {screenshot(driver, tmp_path / 'failure.png')}")
    finally:
        driver.quit()


async def in_browser(step: Callable[[], None]) -> None:
    """Run ``step`` (selenium calls, which block) in a worker thread."""
    await anyio.to_thread.run_sync(step)


def row(driver: webdriver.Chrome, request_id: str) -> WebElement | None:
    found = driver.find_elements(By.CSS_SELECTOR, f'#pending li[data-id="{request_id}"]')
    return found[0] if found else None


def counted(driver: webdriver.Chrome, rule: str) -> list[str]:
    """The counters of ``rule`` in the page (asked, approved, denied, edited, expired,
    granted)."""
    rows = driver.find_elements(By.CSS_SELECTOR, "#counters tr")
    for found in rows:
        cells = [cell.text for cell in found.find_elements(By.TAG_NAME, "td")]
        if cells and cells[0] == rule:
            return cells[1:]
    return []


async def test_a_click_on_approve_resumes_the_waiting_call(
    browser: webdriver.Chrome, tmp_path: Path
) -> None:
    """An agent's call waits (a real pipeline, its permission rule asks, the ask in the
    store); a person opens the page and clicks approve; the call runs."""
    store = MemoryApprovalStore()
    pipe = agent(tmp_path, store)
    ran: list[str] = []
    results: list[ToolResult] = []

    async def waiting_call() -> None:
        with acting_as({"sub": "alice", "team": "ops"}):  # (a bearer token's claims)
            results.append(await run_command(pipe, "git push origin main", ran, "c1"))

    with anyio.fail_after(TIMEOUT * 2):
        async with serving(store) as url, anyio.create_task_group() as tg:
            tg.start_soon(waiting_call)
            waiting = await asked(store, "c1")

            def approve() -> None:
                browser.get(url)
                item = wait_for(browser, lambda: row(browser, waiting.id), "the pending request")
                text = item.text
                assert "exec" in text
                assert "git push origin main" in text
                assert "Bash(git push:*)" in text
                assert "alice" in text
                assert "ops" in text
                wait_for(
                    browser,
                    lambda: browser.find_element(By.ID, "live").text == "live",
                    "the live stream open",
                )
                browser.execute_script("window.notReloaded = true")
                # as after a restart of the inbox (a new secret): the page's CSRF token no
                # longer passes; its click fetches a fresh one and goes through
                browser.execute_script("csrf = 'from-before.0000'")
                item.find_element(By.CSS_SELECTOR, "button.approve").click()
                decided = wait_for(
                    browser,
                    lambda: browser.find_elements(
                        By.CSS_SELECTOR, f'#decisions li[data-id="{waiting.id}"]'
                    ),
                    "the decision in the live list",
                )
                assert "approved" in decided[0].text
                assert "local@127.0.0.1" in decided[0].text
                wait_for(browser, lambda: row(browser, waiting.id) is None, "the request gone")
                assert browser.execute_script("return window.notReloaded") is True

            await in_browser(approve)
    assert [r.status for r in results] == ["ok"]
    assert ran == ["git push origin main"]
    assert (await store.get(waiting.id)).decided_by == "local@127.0.0.1"


async def test_with_a_token_the_person_opens_the_link_once_and_decides_as_its_name(
    browser: webdriver.Chrome,
) -> None:
    """``/?token=`` sets the cookie and leaves the token out of the address; the page
    then reads and decides with the cookie (and its CSRF token); the decision is the
    token's name's."""
    token = "alice-token-0123456789"
    store = MemoryApprovalStore()
    pending = await store.submit(ask())
    with anyio.fail_after(TIMEOUT * 2):
        async with serving(store, tokens=Tokens({token: "alice"})) as url:

            def decide() -> None:
                browser.get(url)  # no token: nothing to see
                assert "needs its token" in browser.find_element(By.TAG_NAME, "body").text
                browser.get(f"{url}?token={token}")
                assert browser.current_url == url  # (the token is out of the address)
                item = wait_for(browser, lambda: row(browser, pending.id), "the request")
                deny_reason = item.find_element(By.CSS_SELECTOR, ".deny-reason")
                deny_reason.send_keys("not before the release")
                item.find_element(By.CSS_SELECTOR, "button.deny").click()
                wait_for(browser, lambda: row(browser, pending.id) is None, "the request gone")

            await in_browser(decide)
    decided = await store.get(pending.id)
    assert (decided.state, decided.decided_by) == ("denied", "alice@127.0.0.1")
    assert decided.decision_reason == "not before the release"


async def test_new_requests_and_decisions_made_elsewhere_show_up_live(
    browser: webdriver.Chrome,
) -> None:
    store = MemoryApprovalStore()
    first = await store.submit(ask(call="1"))
    with anyio.fail_after(TIMEOUT * 2):
        async with serving(store) as url, client(url) as http:

            def opened() -> None:
                browser.get(url)
                wait_for(browser, lambda: row(browser, first.id), "the first request")
                wait_for(
                    browser,
                    lambda: browser.find_element(By.ID, "live").text == "live",
                    "the live stream open",
                )
                browser.execute_script("window.notReloaded = true")

            await in_browser(opened)
            second = await store.submit(
                ask("read", {"path": ".env"}, call="2", rule="Read(./.env)")
            )
            csrf = await csrf_of_page(http)
            denied = await http.post(
                f"/api/requests/{first.id}/decide",
                json={"decision": "deny", "reason": "not today"},
                headers={"x-interpose-csrf": csrf},
            )
            assert denied.status_code == 200

            def shown() -> None:
                wait_for(browser, lambda: row(browser, second.id), "the new request")
                wait_for(browser, lambda: row(browser, first.id) is None, "the denied one gone")
                line = wait_for(
                    browser,
                    lambda: browser.find_elements(
                        By.CSS_SELECTOR, f'#decisions li[data-id="{first.id}"]'
                    ),
                    "the deny in the live list",
                )
                assert "denied" in line[0].text
                assert "not today" in line[0].text
                # (the counters of a load may be read a moment before the list's: the
                # next change's load catches up)
                wait_for(
                    browser,
                    lambda: counted(browser, "Bash(git push:*)") == ["1", "0", "1", "0", "0", "0"],
                    "the rule's counters: asked 1, denied 1",
                )
                assert browser.execute_script("return window.notReloaded") is True

            await in_browser(shown)


async def test_a_grant_made_and_revoked_in_the_page(
    browser: webdriver.Chrome, tmp_path: Path
) -> None:
    """Grant (this rule, this session, 1 h) approves the waiting call and lists the
    grant; the next matching call passes without asking (the page shows it granted,
    live); Revoke removes it, and the call after asks again."""
    store = MemoryApprovalStore()
    pipe = agent(tmp_path, store)
    ran: list[str] = []
    results: list[ToolResult] = []
    with anyio.fail_after(TIMEOUT * 3):
        async with serving(store) as url, anyio.create_task_group() as tg:

            async def call(call_id: str) -> None:
                results.append(await run_command(pipe, f"git push origin {call_id}", ran, call_id))

            tg.start_soon(call, "c1")
            first = await asked(store, "c1")

            def grant() -> None:
                browser.get(url)
                item = wait_for(browser, lambda: row(browser, first.id), "the pending request")
                wait_for(
                    browser,
                    lambda: browser.find_element(By.ID, "live").text == "live",
                    "the live stream open",
                )
                Select(item.find_element(By.CSS_SELECTOR, ".grant-ttl")).select_by_visible_text(
                    "1 h"
                )
                item.find_element(By.CSS_SELECTOR, "button.grant").click()
                wait_for(
                    browser,
                    lambda: browser.find_elements(By.CSS_SELECTOR, "#grants li"),
                    "the grant listed",
                )

            await in_browser(grant)
            (made,) = await store.grants()
            assert (made.rule, made.scope, made.session_key) == (
                "Bash(git push:*)",
                "session",
                "s1",
            )
            assert made.expires is not None
            assert 3500 < made.expires - made.created <= 3600
            await call("c2")  # no ask: the grant lets it through

            def granted_then_revoke() -> None:
                line = wait_for(
                    browser,
                    lambda: browser.find_elements(
                        By.CSS_SELECTOR, '#decisions li[data-kind="grant_used"]'
                    ),
                    "the granted call in the live list",
                )
                assert "by the grant of local@127.0.0.1" in line[0].text
                (listed,) = browser.find_elements(By.CSS_SELECTOR, "#grants li")
                assert "Bash(git push:*)" in listed.text
                assert "until" in listed.text
                listed.find_element(By.CSS_SELECTOR, "button.revoke").click()
                wait_for(
                    browser,
                    lambda: not browser.find_elements(By.CSS_SELECTOR, "#grants li"),
                    "the grant gone",
                )

            await in_browser(granted_then_revoke)
            assert await store.grants() == []
            tg.start_soon(call, "c3")
            third = await asked(store, "c3")  # asked again: nothing grants it now
            await store.decide(third.id, "deny", approver="test", reason="enough")
    assert [r.status for r in results] == ["ok", "ok", "denied"]
    assert ran == ["git push origin c1", "git push origin c2"]
    (revoked,) = await store.grants(live=False)
    assert revoked.revoked_by == "local@127.0.0.1"


async def test_the_docs_screenshot_of_the_page(browser: webdriver.Chrome) -> None:
    # a fixed clock: every time on the page (asked at, decided at) is the same each run
    clock = 1_795_000_000.0
    store = MemoryApprovalStore(clock=lambda: clock)
    await store.submit(
        ask(
            "mcp__github__merge_pull_request",
            {"owner": "acme", "repo": "api", "pull_number": 1234, "merge_method": "squash"},
            agent="release-bot",
            session="nightly-7",
            call="m1",
            rule="mcp__github__merge_pull_request",
            reason="merging needs a person",
            created=clock - 95,
            ttl=3600,
            principal={"sub": "svc-release", "iss": "https://idp.acme.test", "team": "platform"},
        )
    )
    await store.submit(
        ask(
            "exec",
            {"command": "git push --force origin main"},
            agent="coder-3",
            session="pr-881",
            call="x1",
            rule="Bash(git push:*)",
            reason="pushing to a remote",
            created=clock - 20,
            ttl=3600,
        )
    )
    done = await store.submit(
        ask(
            "exec",
            {"command": "rm -rf build"},
            agent="coder-3",
            session="pr-881",
            call="x0",
            rule="Bash(rm:*)",
            reason="deleting files",
            created=clock - 300,
            ttl=3600,
        )
    )
    tests = await store.submit(
        ask(
            "exec",
            {"command": "pytest -q"},
            agent="coder-3",
            session="pr-881",
            call="x2",
            rule="Bash(pytest:*)",
            reason="running the tests",
            created=clock - 600,
            ttl=3600,
        )
    )
    spec = GrantSpec(match="rule", scope="session", ttl=3600)
    await store.decide(tests.id, "approve", approver="maria@10.0.0.7", grant=spec)
    with anyio.fail_after(TIMEOUT * 2):
        async with serving(store) as url:

            def opened() -> None:
                browser.get(url)
                wait_for(
                    browser,
                    lambda: len(browser.find_elements(By.CSS_SELECTOR, "#pending li")) == 3,
                    "three requests",
                )
                wait_for(
                    browser, lambda: browser.find_element(By.ID, "live").text == "live", "live"
                )

            await in_browser(opened)
            await store.decide(done.id, "deny", approver="maria@10.0.0.7", reason="use make clean")

            def shot() -> None:
                wait_for(
                    browser,
                    lambda: len(browser.find_elements(By.CSS_SELECTOR, "#pending li")) == 2,
                    "two requests",
                )
                wait_for(
                    browser,
                    lambda: browser.find_elements(By.CSS_SELECTOR, "#decisions li"),
                    "the deny",
                )
                wait_for(
                    browser,
                    lambda: browser.find_elements(By.CSS_SELECTOR, "#grants li"),
                    "the grant",
                )
                browser.execute_script("document.activeElement && document.activeElement.blur()")
                screenshot(browser, DOCS / "approvals-inbox.png")

            await in_browser(shot)
    assert (DOCS / "approvals-inbox.png").stat().st_size > 10_000
