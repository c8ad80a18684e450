"""The `csdata report` page of a demo run of each dataset, in headless Chromium: every chart
rendered (non-zero size, drawn paths), no console errors, the funnel's reject reasons open on a
click to their example rejects, nothing wider than a 390 px phone screen. Saves the screenshots
report_record, report_cosmos and report_protoqa (`make screenshots` puts them in docs/).
Reports with `--reference` (small invented published files) show the published column and an
overlay on every length chart."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from pipeline.cli.main import main
from tests.browser.conftest import PHONE, console_errors
from tests.core.conftest import protoqa_record
from tests.core.test_report_reference import OFFICIAL
from transforms.core.reporting.plots import REFERENCE_COLOUR

pytestmark = pytest.mark.slow       # runs the three demo pipelines (spaCy, MiniLM) once

# ProtoQA's question curation rejects rows at every stage; its release run (the clusters after
# adjudication) rejects none in the demo, so it is checked without the click.
RUNS = {"record": "record", "cosmos": "cosmos", "protoqa": "protoqa/questions"}
PAGES = {**RUNS, "protoqa_release": "protoqa/release"}
# (run, invented published file) of the pages made with --reference
REFERENCES = {"record_reference": ("record", "record.json"), "protoqa_reference": ("protoqa/release", "dev.jsonl")}


def write_references(folder: Path) -> None:
    """The invented published files: ReCoRD official JSON, protoqa-data JSONL."""
    folder.mkdir()
    (folder / "record.json").write_text(json.dumps(OFFICIAL), encoding="utf-8")
    (folder / "dev.jsonl").write_text("".join(json.dumps(protoqa_record(q, c)) + "\n" for q, c in
                                      (("r1", [60, 40]), ("r2", [70, 20, 10]), ("r3", [90, 5, 3, 2]))),
                                      encoding="utf-8")


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    """`csdata demo`, then `csdata report` of its ReCoRD, Cosmos and ProtoQA runs."""
    root = tmp_path_factory.mktemp("report-demo")
    assert main(["demo", "--output", str(root / "demo")]) == 0
    pages = {}
    for name, run in PAGES.items():
        assert main(["report", str(root / "demo" / run), "--output", str(root / name)]) == 0
        pages[name] = root / name / "index.html"
    write_references(root / "published")
    for name, (run, published) in REFERENCES.items():
        assert main(["report", str(root / "demo" / run), "--output", str(root / name),
                     "--reference", str(root / "published" / published)]) == 0
        pages[name] = root / name / "index.html"
    return pages


SVG_FACTS = """return Array.from(document.querySelectorAll('main svg')).map(function (svg) {
  var box = svg.getBoundingClientRect();
  return {w: box.width, h: box.height, paths: svg.querySelectorAll('path').length,
          title: svg.querySelector('title') ? svg.querySelector('title').textContent : '',
          label: svg.getAttribute('aria-label') || ''};
});"""


def check_rendered(browser) -> None:
    """Every chart drawn and labelled, the headings and table headers in place."""
    svgs = browser.execute_script(SVG_FACTS)
    assert len(svgs) >= 3, svgs                 # the lengths (at least 2 charts) and the funnel
    for svg in svgs:
        assert svg["w"] > 100 and svg["h"] > 50, svg
        assert svg["paths"] > 0 and svg["title"] and svg["label"] == svg["title"], svg
    headings = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "h2")]
    assert headings[:2] == ["Table 1 beside the paper's", "Length distributions"] and "Stage funnel" in headings
    assert browser.find_elements(By.CSS_SELECTOR, "table th[scope=col]")


@pytest.mark.parametrize("name", list(RUNS))
def test_report_renders_every_plot_and_opens_rejects(name, reports, browser, screenshot):
    browser.get(reports[name].as_uri())
    check_rendered(browser)

    reasons = browser.find_elements(By.CSS_SELECTOR, "details.reason")
    assert reasons, "the demo runs reject records at some stage"
    first = reasons[0]
    assert first.get_attribute("open") is None
    example = first.find_element(By.CSS_SELECTOR, "li code")
    assert not example.is_displayed()
    screenshot(browser, f"report_{name}")       # before any click: every reason closed
    first.find_element(By.TAG_NAME, "summary").click()
    assert first.get_attribute("open") is not None
    assert example.is_displayed() and example.text
    assert console_errors(browser) == []


def test_release_report_renders(reports, browser):
    browser.get(reports["protoqa_release"].as_uri())
    check_rendered(browser)
    assert "Coverage rule" in [h.text for h in browser.find_elements(By.CSS_SELECTOR, "h2")]
    assert console_errors(browser) == []


LENGTH_CHARTS = """return Array.from(document.querySelectorAll('#lengths svg')).map(function (svg) {
  return svg.outerHTML.indexOf(arguments[0]) >= 0;
});"""


@pytest.mark.parametrize("name", list(REFERENCES))
def test_reference_report_overlays_every_length_chart(name, reports, browser):
    browser.get(reports[name].as_uri())
    check_rendered(browser)
    header = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#table1 thead th")]
    assert "published" in header
    overlaid = browser.execute_script(LENGTH_CHARTS.replace("arguments[0]", json.dumps(REFERENCE_COLOUR)))
    assert overlaid and all(overlaid), overlaid
    assert console_errors(browser) == []


@pytest.mark.parametrize("name", [*PAGES, *REFERENCES])
def test_report_fits_a_phone(name, reports, phone_browser):
    phone_browser.get(reports[name].as_uri())
    assert phone_browser.execute_script("return document.documentElement.clientWidth") == PHONE[0]
    assert phone_browser.execute_script("return document.documentElement.scrollWidth") <= PHONE[0]
    for svg in phone_browser.execute_script(SVG_FACTS):
        assert 0 < svg["w"] <= PHONE[0], svg
    assert console_errors(phone_browser) == []
