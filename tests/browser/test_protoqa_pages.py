"""ProtoQA's answer task in headless Chromium: a worker types an answer on the exported page,
and the fields the page submits, written as an MTurk results CSV and as a Label Studio export,
come back through `protoqa hits import` as the crowd answers cluster-prep reads."""
from __future__ import annotations

import csv
import json
import time
from pathlib import Path

from selenium.webdriver.common.by import By

from data_specs import load_spec
from tests.browser.conftest import console_errors
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
from transforms.protoqa.steps import run_hits_export, run_hits_import

QUESTIONS = Path(__file__).resolve().parents[1] / "data" / "platforms" / "protoqa_questions.jsonl"
SHOWN = "Name something you’d find in a kitchen drawer & never use."


def _wait_for(predicate, seconds: float = 10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def _submit_answer(driver, url: str, server, typed: str) -> dict[str, str]:
    """Open the page, type `typed`, press Submit; the fields the preview server received."""
    before = len(server.submissions)
    driver.get(url)
    box = driver.find_element(By.ID, "answer")
    box.send_keys(typed)
    driver.find_element(By.ID, "submitButton").click()
    _wait_for(lambda: len(server.submissions) > before)
    return server.submissions[-1]


def _mturk_results(path: Path, batch_row: dict[str, str], submissions: list[dict[str, str]]) -> None:
    """An MTurk batch results CSV as the requester site writes it, one row per submission."""
    fields = [k for k in submissions[0] if k != "assignmentId"]
    mturk_results_csv(path, mturk_header(batch_row, fields), [
        mturk_row("HIT-P3", f"ASG{n}", f"WORKER{n}", f"Tue Dec 01 10:0{n}:00 PST 2026", WorkTimeInSeconds="14",
                  inputs=batch_row, answers={k: sent[k] for k in fields})
        for n, sent in enumerate(submissions, start=1)])


def _label_studio_export(path: Path, task: dict, submissions: list[dict[str, str]]) -> None:
    """A Label Studio JSON export of the task with one TextArea annotation per submission."""
    annotations = [label_studio_annotation(n, n, [label_studio_result("answer", "question", "textarea", sent["answer"])],
                                           f"2026-12-01T10:0{n}:00.000000Z", lead_time=14.0)
                   for n, sent in enumerate(submissions, start=1)]
    label_studio_export(path, [label_studio_task(1, task["data"], annotations)])


def _answers(path: Path) -> list[tuple[str, str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return [(r["question_id"], r["question"], r["answer"]) for r in csv.DictReader(handle)]


def test_a_worker_answers_and_the_answers_come_back(phone_browser, screenshot, tmp_path):
    hits, ls = tmp_path / "hits", tmp_path / "ls"
    run_hits_export(str(QUESTIONS), "mturk", str(hits))
    run_hits_export(str(QUESTIONS), "label-studio", str(ls))
    with open(hits / "batch.csv", encoding="utf-8", newline="") as handle:
        batch_row = list(csv.DictReader(handle))[2]           # p3: a curly quote and & in the text
    page = fill_template((hits / "template.html").read_text(encoding="utf-8"), batch_row)
    url, server = serve_preview(page)
    try:
        driver = phone_browser
        driver.get(url)
        assert driver.find_element(By.ID, "question").text == SHOWN
        # a blank answer is not sent: the page asks for one
        driver.find_element(By.ID, "answer").send_keys("   ")
        driver.find_element(By.ID, "submitButton").click()
        assert driver.find_element(By.ID, "formError").text == "Please type an answer first."
        assert server.submissions == []
        driver.find_element(By.ID, "answer").send_keys("  wooden   spoons ")
        assert driver.find_element(By.ID, "formError").text == ""      # typing clears the message
        assert driver.execute_script(
            "return document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        screenshot(driver, "protoqa_answer")
        driver.find_element(By.ID, "submitButton").click()
        _wait_for(lambda: server.submissions)
        second = _submit_answer(driver, url, server, "Forks")
        assert console_errors(driver) == []
    finally:
        server.shutdown()
        server.server_close()
    first = server.submissions[0]
    assert first == {"assignmentId": "PREVIEW_ASSIGNMENT", "question_id": "p3", "answer": "wooden spoons"}
    assert second["answer"] == "Forks"
    expected = [("p3", SHOWN, "wooden spoons"), ("p3", SHOWN, "Forks")]

    results = tmp_path / "Batch_1_batch_results.csv"
    _mturk_results(results, batch_row, server.submissions)
    summary = run_hits_import(load_spec("protoqa"), str(results), str(tmp_path / "mturk_answers.csv"), "auto", str(hits))
    assert summary["stages"]["import_answers"]["kept"] == 2
    assert _answers(tmp_path / "mturk_answers.csv") == expected

    task = json.loads((ls / "tasks.json").read_text(encoding="utf-8"))[2]
    export = tmp_path / "project-1-at-2026-12-01.json"
    _label_studio_export(export, task, server.submissions)
    run_hits_import(load_spec("protoqa"), str(export), str(tmp_path / "ls_answers.csv"), "auto", str(ls))
    assert _answers(tmp_path / "ls_answers.csv") == expected


def test_the_page_on_mturk_preview_cannot_be_submitted(browser, tmp_path):
    run_hits_export(str(QUESTIONS), "mturk", str(tmp_path / "hits"))
    with open(tmp_path / "hits" / "batch.csv", encoding="utf-8", newline="") as handle:
        row = next(csv.DictReader(handle))
    page = tmp_path / "page.html"
    page.write_text(fill_template((tmp_path / "hits" / "template.html").read_text(encoding="utf-8"), row),
                    encoding="utf-8")
    browser.get(page.as_uri() + "?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H")
    assert browser.find_element(By.ID, "question").text == "Name something people bring to a picnic."
    assert not browser.find_element(By.ID, "submitButton").is_enabled()
    assert console_errors(browser) == []
