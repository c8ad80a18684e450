"""ReCoRD's validation page in headless Chromium, filled with a real exported row of the sample
corpus run: a worker chooses entities (mouse and keyboard), submits to the preview server, and
the captured fields, as an MTurk results CSV and as a Label Studio export, validate the triple."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from data_specs import load_spec
from tests.browser.conftest import console_errors, whole_page
from tests.crowd_files import (
    label_studio_annotation,
    label_studio_export,
    label_studio_result,
    label_studio_task,
    mturk_header,
    mturk_results_csv,
    mturk_row,
)
from transforms.core.crowd.mturk import fill_template
from transforms.core.crowd.preview_server import serve_preview
from transforms.core.io.tables import read_table
from transforms.record.crowd import import_results
from transforms.record.hits_export import export_hits
from transforms.record.metric import is_correct

pytestmark = pytest.mark.slow      # a generate run of the sample corpus (spaCy)


@pytest.fixture(scope="module")
def exported(record_generate_run: Path, tmp_path_factory) -> dict:
    """The MTurk and Label Studio export of the sample run, and one triple with its references."""
    base = tmp_path_factory.mktemp("record-pages")
    spec = load_spec("record")
    export_hits(record_generate_run, base / "mturk", spec.hits, "mturk")
    export_hits(record_generate_run, base / "ls", spec.hits, "label-studio")
    with (base / "mturk" / "batch.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    queries = {q["query_id"]: q for q in read_table(record_generate_run, "queries").to_pylist()}
    passages = {p["passage_id"]: p for p in read_table(record_generate_run, "passages").to_pylist()}
    row = rows[0]
    query = queries[row["triple_id"]]
    return {"base": base, "rows": rows, "row": row, "answers": [a["text"] for a in query["answers"]],
            "split": passages[query["passage_id"]]["split"], "run": record_generate_run,
            "template": (base / "mturk" / "template.html").read_text(encoding="utf-8")}


def open_page(driver, exported):
    url, server = serve_preview(fill_template(exported["template"], exported["row"]))
    driver.get(url)
    WebDriverWait(driver, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "button.entity"))
    return server


def submit(driver, server) -> dict[str, str]:
    before = len(server.submissions)
    driver.find_element(By.ID, "submitButton").click()
    WebDriverWait(driver, 10).until(lambda d: len(server.submissions) > before)
    WebDriverWait(driver, 10).until(lambda d: d.find_elements(By.ID, "submitted"))
    return server.submissions[-1]


def work(driver, exported, correct: bool, feedback: str = "", guessed: bool = False) -> dict[str, str]:
    """What a worker does: choose an entity (the right one by keyboard, a wrong one by mouse)."""
    server = open_page(driver, exported)
    try:
        buttons = driver.find_elements(By.CSS_SELECTOR, "button.entity")
        assert buttons and all(b.tag_name == "button" for b in buttons)
        target = next(b for b in buttons if is_correct(b.text, exported["answers"]) == correct)
        if correct:
            target.send_keys(Keys.ENTER)          # keyboard operable
        else:
            target.click()
        number = target.get_attribute("data-number")
        pressed = [b for b in buttons if b.get_attribute("aria-pressed") == "true"]
        assert pressed and {b.get_attribute("data-number") for b in pressed} == {number}
        assert driver.find_element(By.ID, "chosen").text.startswith("Your answer: ")
        if guessed:
            driver.find_element(By.CSS_SELECTOR, "label[for=guessed]").click()
        if feedback:
            driver.find_element(By.ID, "feedback").send_keys(feedback)
        assert console_errors(driver) == []
        return submit(driver, server)
    finally:
        driver.get("about:blank")   # as test_cosmos_pages' Page.close: no favicon request left
        server.shutdown()
        server.server_close()


@pytest.fixture
def captured(browser, exported):
    """Two workers' submissions: the right entity by keyboard; a wrong one, guessed, with feedback."""
    right = work(browser, exported, correct=True)
    wrong = work(browser, exported, correct=False, feedback="Two people fit.", guessed=True)
    return right, wrong


def test_page_shows_the_row_and_submits_the_fields(exported, captured):
    right, wrong = captured
    assert right["triple_id"] == wrong["triple_id"] == exported["row"]["triple_id"]
    assert is_correct(right["entity_text"], exported["answers"]) and right["entity"].isdigit()
    assert "guessed" not in right and right["feedback"] == ""
    assert wrong["guessed"] == "yes" and wrong["feedback"] == "Two people fit."
    assert not is_correct(wrong["entity_text"], exported["answers"])
    assert right["assignmentId"] == "PREVIEW_ASSIGNMENT"


def test_nothing_is_submitted_before_an_entity_is_chosen(browser, exported, screenshot):
    server = open_page(browser, exported)
    try:
        browser.find_element(By.ID, "submitButton").click()
        assert "Choose an entity" in browser.find_element(By.ID, "formError").text
        assert server.submissions == []
        active = browser.switch_to.active_element
        assert active.get_attribute("class") == "entity"          # focus moved to the first entity
        body = browser.find_element(By.TAG_NAME, "body")
        body.click()
        browser.execute_script("document.activeElement.blur(); window.scrollTo(0, 0);")
        browser.find_element(By.TAG_NAME, "html").send_keys(Keys.TAB)
        assert browser.switch_to.active_element.get_attribute("class") == "entity"   # first in focus order
        browser.switch_to.active_element.send_keys(Keys.SPACE)
        assert browser.find_element(By.ID, "entity").get_attribute("value")
        assert browser.find_element(By.CSS_SELECTOR, "label[for=feedback]").text
        whole_page(browser, 1000)
        screenshot(browser, "record_validation")
    finally:
        server.shutdown()
        server.server_close()


def test_no_horizontal_scroll_on_a_phone(phone_browser, exported, screenshot):
    server = open_page(phone_browser, exported)
    try:
        width = phone_browser.execute_script("return document.documentElement.scrollWidth")
        viewport = phone_browser.execute_script("return document.documentElement.clientWidth")
        assert viewport == 390 and width <= viewport
        whole_page(phone_browser, 390, mobile=True)
        screenshot(phone_browser, "record_validation_phone")
    finally:
        server.shutdown()
        server.server_close()


def mturk_csv(path: Path, exported, submissions: list[tuple[str, dict[str, str]]]) -> Path:
    fields = sorted({k for _, s in submissions for k in s if k != "assignmentId"})
    return mturk_results_csv(path, mturk_header(exported["row"], fields), [
        mturk_row("3HITREAL", f"3ASG{n}", worker, f"Wed Mar 04 10:1{n}:45 PST 2020", WorkTimeInSeconds="42",
                  inputs=exported["row"], answers={f: sub.get(f, "") for f in fields})
        for n, (worker, sub) in enumerate(submissions)])


def label_studio_json(path: Path, exported, submissions: list[tuple[str, dict[str, str]]]) -> Path:
    tasks = json.loads((exported["base"] / "ls" / "tasks.json").read_text(encoding="utf-8"))
    task = next(t for t in tasks if t["data"]["triple_id"] == exported["row"]["triple_id"])
    annotations = []
    for n, (worker, sub) in enumerate(submissions):
        result = [label_studio_result("entity", "passage", "choices", sub["entity_text"]),
                  label_studio_result("feedback", "passage", "textarea", sub["feedback"])]
        if sub.get("guessed"):
            result.append(label_studio_result("guessed", "passage", "choices", "I guessed"))
        annotations.append(label_studio_annotation(70 + n, {"id": n, "email": worker}, result,
                                                   f"2024-05-02T10:1{n}:00Z", lead_time=42.0))
    return label_studio_export(path, [label_studio_task(1, task["data"], annotations)])


@pytest.mark.parametrize("platform", ["mturk", "label-studio"])
def test_captured_fields_validate_the_triple(platform, exported, captured, tmp_path):
    right, wrong = captured
    submissions = [("W1", right), ("W2", right), ("W3", wrong)]
    if platform == "mturk":
        results = mturk_csv(tmp_path / "Batch_results.csv", exported, submissions)
    else:
        results = label_studio_json(tmp_path / "export.json", exported, submissions)
    spec = load_spec("record")
    summary = import_results(exported["run"], results, tmp_path / "out", spec.hits, spec.splits, spec.seed, spec.limits)
    assert summary["results_format"] == platform
    triple = exported["row"]["triple_id"]
    placed = {r["query_id"]: (s, r) for s in ("train", "dev", "test") for r in read_table(tmp_path / "out", s).to_pylist()}
    assert list(placed) == [triple]                       # two of three correct: valid for any split
    split, row = placed[triple]
    assert row["correct_answers"] == 2 and row["judgements"] == 3
    assert (split == "train") == (exported["split"] == "train")
    reasons = {r["reason"] for r in read_table(tmp_path / "out", "rejects").to_pylist()}
    assert reasons == {"no_judgements"} and summary["stages"]["human_filter"]["in"] == len(exported["rows"])
