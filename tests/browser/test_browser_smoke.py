"""The browser fixture itself: a page with a form renders, runs its script and is read back."""
from __future__ import annotations

from selenium.webdriver.common.by import By

from tests.browser.conftest import console_errors

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>t</title></head><body>
<form id="f"><input name="a" id="a"><button type="button" id="b">go</button></form>
<p id="out"></p>
<script>document.getElementById('b').onclick = function () {
  document.getElementById('out').textContent = document.getElementById('a').value.toUpperCase();
};</script></body></html>"""


def test_headless_chromium_runs_a_page_script(browser, tmp_path):
    page = tmp_path / "page.html"
    page.write_text(PAGE, encoding="utf-8")
    browser.get(page.as_uri())
    browser.find_element(By.ID, "a").send_keys("entity")
    browser.find_element(By.ID, "b").click()
    assert browser.find_element(By.ID, "out").text == "ENTITY"
    assert console_errors(browser) == []


def test_console_errors_are_reported(browser, tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<!doctype html><script>undefinedFunction();</script>", encoding="utf-8")
    browser.get(page.as_uri())
    assert any("undefinedFunction" in message for message in console_errors(browser))
