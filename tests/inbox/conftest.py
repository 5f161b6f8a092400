"""Fixtures of the inbox's tests (the helpers are in inbox_helpers.py and browser.py)."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from browser import chromium, screenshot
from selenium import webdriver

FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" and report.failed:
        item.stash[FAILED] = True
    return report


@pytest.fixture
def browser(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[webdriver.Chrome]:
    """A headless chromium; when the test fails, a screenshot of its page is written to
    the test's temp dir (``failure.png``, its path printed)."""
    driver = chromium()
    try:
        yield driver
        if request.node.stash.get(FAILED, False):
            print(f"the page when the test failed: {screenshot(driver, tmp_path / 'failure.png')}")
    finally:
        driver.quit()
