"""A real headless browser for the inbox's page tests: Debian's ``chromium`` driven by its
``chromedriver`` through selenium (both installed by scripts/test.sh; nothing is
downloaded at run time).  Missing, the tests that need it are skipped, except under CI
(``CI=true``), where they fail.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, TypeVar

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

T = TypeVar("T")

WAIT = 15.0  # s: the longest a page may take to show what a test waits for


def _missing(what: str) -> NoReturn:
    message = f"{what}: not installed (scripts/test.sh installs it)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def chromium() -> webdriver.Chrome:
    """A headless chromium, 1280x900, a new profile."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if binary is None or driver is None:
        _missing("chromium and chromium-driver (apt)")
    options = Options()
    options.binary_location = binary
    for argument in (
        "--headless=new",
        "--no-sandbox",  # (root, in a container)
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        "--force-device-scale-factor=1",
        "--hide-scrollbars",
    ):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


def wait_for(
    driver: webdriver.Chrome, what: Callable[[], T | None], describe: str, timeout: float = WAIT
) -> T:
    """Poll ``what`` in the page until it returns something true (selenium's wait).

    Raises:
        AssertionError: not within ``timeout`` s (saying ``describe``).
    """
    try:
        # (an element the page replaced while it was read: read the page again)
        found = WebDriverWait(
            driver,
            timeout,
            poll_frequency=0.05,
            ignored_exceptions=(StaleElementReferenceException,),
        ).until(lambda _: what(), describe)
    except TimeoutException:
        raise AssertionError(f"the page did not show {describe} within {timeout}s") from None
    assert found is not None  # (until returns a true value)
    return found


def screenshot(driver: webdriver.Chrome, path: Path) -> Path:
    """Save the page as PNG at ``path``; the path."""
    driver.save_screenshot(str(path))
    return path
