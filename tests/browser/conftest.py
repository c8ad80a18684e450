"""Headless Chromium for the tests of the pages we ship (task templates, the report).

`make test` installs Debian's `chromium` and `chromium-driver` (see the Makefile's
`browser-deps`); the tests drive them with Selenium, offline. With `CSDATA_SCREENSHOTS=DIR` (as
`make screenshots` sets it) every `screenshot(driver, name)` is also saved as `DIR/name.png`,
which is where the README's screenshots come from; otherwise they go to the test's tmp folder.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
PHONE = (390, 844)      # a phone-sized viewport, CSS pixels
DESKTOP = (1280, 900)


def _binary(names: tuple[str, ...]) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


def _make_driver(size: tuple[int, int]):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser = _binary(CHROMIUM_CANDIDATES)
    driver_path = _binary(("chromedriver",))
    if browser is None or driver_path is None:
        pytest.fail("headless Chromium is missing: `make test` installs Debian's chromium and "
                    "chromium-driver (make browser-deps)")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--no-first-run", "--disable-extensions", f"--window-size={size[0]},{size[1]}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=options)


@pytest.fixture
def browser() -> Iterator:
    """A headless Chromium WebDriver with a desktop-sized window."""
    driver = _make_driver(DESKTOP)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def phone_browser() -> Iterator:
    """A headless Chromium WebDriver with a phone-sized viewport (390 x 844 CSS pixels)."""
    driver = _make_driver(PHONE)
    # Headless Chromium keeps a minimum window width (about 485 px); the device-metrics override
    # gives the layout a real 390 px viewport, as a phone would.
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": PHONE[0], "height": PHONE[1], "deviceScaleFactor": 1, "mobile": True})
    try:
        yield driver
    finally:
        driver.quit()


def console_errors(driver) -> list[str]:
    """The browser console's SEVERE entries since the last call (JS errors, failed loads)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def whole_page(driver, width: int, mobile: bool = False) -> None:
    """Make the viewport `width` CSS px wide and as tall as the page (at most 4000 px), so that a
    screenshot shows all of it; `mobile` as a phone's viewport."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": min(height, 4000), "deviceScaleFactor": 1, "mobile": mobile})


@pytest.fixture
def screenshot(tmp_path: Path):
    """`screenshot(driver, name)` saves a full-page PNG and returns its path."""
    def save(driver, name: str) -> Path:
        target_dir = Path(os.environ.get("CSDATA_SCREENSHOTS") or tmp_path)
        target_dir.mkdir(parents=True, exist_ok=True)
        width = driver.execute_script("return document.documentElement.scrollWidth")
        height = driver.execute_script("return document.documentElement.scrollHeight")
        original = driver.get_window_size()
        driver.set_window_size(max(width, 320), min(max(height, 200), 4000))
        path = target_dir / f"{name}.png"
        driver.save_screenshot(str(path))
        driver.set_window_size(original["width"], original["height"])
        return path
    return save
