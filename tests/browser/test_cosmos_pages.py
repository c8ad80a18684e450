"""Cosmos QA's two task pages in headless Chromium, filled with real exported rows of the sample
blogs run: a worker writes two questions (§2.2), three validators answer the five questions of
§2.3 for each; the captured fields, as MTurk results CSVs and as Label Studio exports, give the
expected question sets, validations and "None of the above" decisions."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from data_specs import load_spec
from pipeline.cli import cosmos
from pipeline.cli.main import main
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
from transforms.cosmos import crowd

pytestmark = pytest.mark.slow      # a stage-1 run of the sample blogs (spaCy, MiniLM)

DATA = Path(__file__).resolve().parents[1] / "data" / "cosmos"
WORKER = "W-WRITER"
Q1 = {"type": "causes", "question": "Why did the instructor make them practise falling first?",
      "correct": ["So that they would not get hurt if they slipped.", "Falling safely is part of climbing."],
      "incorrect": ["Because the wall was closed.", "Because Tom asked for it.", "So that they could skip the class."]}
Q2 = {"type": "effects", "question": "What will the writer probably do next week?",
      "correct": ["Go back to the climbing wall."],
      "incorrect": ["Sell the climbing shoes.", "Never speak to Priya again.", "Move to another country."]}


def spec():
    return load_spec("cosmos", ["answer_scorer.name=overlap", f"splits.excellent_workers=[{WORKER}]"])


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cosmos-run")
    assert main(["cosmos", "paragraphs", "--input", str(DATA / "blogs"), "--input", str(DATA / "stories.jsonl"),
                 "--output", str(out)]) == 0
    return out


def rows_of(batch: Path) -> list[dict[str, str]]:
    with batch.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


class Page:
    """A filled page served by the preview server; `submit()` returns the fields the form sent."""

    def __init__(self, driver, html: str, ready: str):
        self.driver = driver
        self.url, self.server = serve_preview(html)
        driver.get(self.url)
        WebDriverWait(driver, 10).until(lambda d: d.execute_script(ready))

    def type(self, name: str, text: str) -> None:
        self.driver.find_element(By.NAME, name).send_keys(text)

    def choose(self, name: str, value: str) -> None:
        for radio in self.driver.find_elements(By.NAME, name):
            if radio.get_attribute("value") == value:
                self.driver.find_element(By.CSS_SELECTOR, f"label[for='{radio.get_attribute('id')}']").click()
                assert radio.is_selected()
                return
        raise AssertionError(f"no {name} option {value!r}")

    def submit(self) -> dict[str, str]:
        before = len(self.server.submissions)
        self.driver.find_element(By.ID, "submitButton").click()
        WebDriverWait(self.driver, 10).until(lambda d: len(self.server.submissions) > before)
        return self.server.submissions[-1]

    def close(self) -> None:
        # Leave the page first: Chromium asks for a page's favicon after it loads (the submitted
        # fields' page too), and a request still to come when the server stops fails, as a
        # console error read by the next page's check.
        self.driver.get("about:blank")
        self.server.shutdown()
        self.server.server_close()


def write_question(page: Page, n: int, q: dict) -> None:
    page.choose(f"q{n}_type", q["type"])
    page.type(f"q{n}_question", q["question"])
    for k, text in enumerate(q["correct"], start=1):
        page.type(f"q{n}_correct{k}", text)
    for k, text in enumerate(q["incorrect"], start=1):
        page.type(f"q{n}_incorrect{k}", text)


@pytest.fixture(scope="module")
def writing(run, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("writing")
    crowd.export_question_hits(run, out / "mturk", spec().hits, "mturk")
    crowd.export_question_hits(run, out / "ls", spec().hits, "label-studio")
    return {"dir": out, "row": rows_of(out / "mturk" / "batch.csv")[0],
            "template": (out / "mturk" / "template.html").read_text(encoding="utf-8")}


def mturk_results(path: Path, row: dict[str, str], submissions: list[tuple[str, dict[str, str]]]) -> Path:
    fields = sorted({k for _, s in submissions for k in s if k != "assignmentId"})
    return mturk_results_csv(path, mturk_header(row, fields), [
        mturk_row(f"HIT-{path.stem}", f"{path.stem}-{n}", worker, f"Thu Jun 06 11:0{n}:00 PDT 2024", status="Approved",
                  inputs=row, answers={f: sub.get(f, "") for f in fields})
        for n, (worker, sub) in enumerate(submissions)])


def test_writing_page_round_trip(browser, run, writing, screenshot, tmp_path):
    page = Page(browser, fill_template(writing["template"], writing["row"]),
                "return document.getElementById('paragraph').textContent.length > 0")
    try:
        paragraph = read_table(run, "paragraphs").to_pylist()
        shown = browser.find_element(By.ID, "paragraph").text
        assert shown == next(p["text"] for p in paragraph if p["paragraph_id"] == writing["row"]["paragraph_id"])
        write_question(page, 1, Q1)
        page.type("q2_question", Q2["question"])        # half a second question: refused with a message
        browser.find_element(By.ID, "submitButton").click()
        assert "Question 2 needs" in browser.find_element(By.ID, "formError").text and not page.server.submissions
        browser.find_element(By.NAME, "q2_question").clear()
        write_question(page, 2, Q2)
        assert browser.find_element(By.ID, "formError").text == ""      # typing clears the message
        assert console_errors(browser) == []
        whole_page(browser, 1000)
        screenshot(browser, "cosmos_writing")
        fields = page.submit()
    finally:
        page.close()
    assert fields["paragraph_id"] == writing["row"]["paragraph_id"]
    assert fields["q1_correct2"] == Q1["correct"][1] and fields["q2_correct2"] == "" and fields["q2_type"] == "effects"
    results = mturk_results(tmp_path / "written.csv", writing["row"], [(WORKER, fields)])
    sets, rejects, n = crowd.read_question_sets(
        results, {p["paragraph_id"]: p for p in read_table(run, "paragraphs").to_pylist()}, spec().hits, spec().limits)
    assert n == 2 and rejects == []
    assert [(s.set_id, s.question_type, s.question, s.correct, s.incorrect) for s in sets] == [
        ("written-0#q1", "causes", Q1["question"], Q1["correct"], Q1["incorrect"]),
        ("written-0#q2", "effects", Q2["question"], Q2["correct"], Q2["incorrect"])]


def test_writing_page_on_a_phone(phone_browser, writing, screenshot):
    page = Page(phone_browser, fill_template(writing["template"], writing["row"]),
                "return document.getElementById('paragraph').textContent.length > 0")
    try:
        assert phone_browser.execute_script("return document.documentElement.clientWidth") == 390
        assert phone_browser.execute_script("return document.documentElement.scrollWidth") <= 390
        whole_page(phone_browser, 390, mobile=True)
        screenshot(phone_browser, "cosmos_writing_phone")
    finally:
        page.close()


# The three validators of each set: (chosen answer, paragraph_sensible, question_sensible,
# needs_commonsense, answerable_without_paragraph).
VOTES = {"q1": [(Q1["correct"][0], "yes", "yes", "yes", "no"), (Q1["correct"][1], "yes", "yes", "yes", "no"),
                (Q1["incorrect"][0], "yes", "yes", "yes", "no")],
         "q2": [(Q2["correct"][0], "yes", "yes", "yes", "no"), (Q2["correct"][0], "yes", "yes", "yes", "yes"),
                (Q2["correct"][0], "yes", "yes", "no", "no")]}
JUDGED = ("paragraph_sensible", "question_sensible", "needs_commonsense", "answerable_without_paragraph")


def written_sets(path: Path, row: dict[str, str]) -> Path:
    fields = {"paragraph_id": row["paragraph_id"]}
    for n, q in ((1, Q1), (2, Q2)):
        fields.update({f"q{n}_type": q["type"], f"q{n}_question": q["question"]})
        fields.update({f"q{n}_correct{k}": (q["correct"] + [""])[k - 1] for k in (1, 2)})
        fields.update({f"q{n}_incorrect{k}": q["incorrect"][k - 1] for k in (1, 2, 3)})
    return mturk_results(path, row, [(WORKER, fields)])


@pytest.fixture(scope="module")
def validation(run, writing, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("validation")
    written = written_sets(out / "written.csv", writing["row"])
    s = spec()
    assert crowd.export_validation_hits(run, written, out / "mturk", s.hits, s.seed, s.limits, "mturk") == 2
    crowd.export_validation_hits(run, written, out / "ls", s.hits, s.seed, s.limits, "label-studio")
    return {"dir": out, "written": written, "rows": rows_of(out / "mturk" / "batch.csv"),
            "template": (out / "mturk" / "template.html").read_text(encoding="utf-8")}


def validate(browser, validation, row: dict[str, str], vote: tuple[str, ...], screenshot=None) -> dict[str, str]:
    page = Page(browser, fill_template(validation["template"], row),
                "return document.querySelectorAll('input[name=chosen_answer]').length > 0")
    try:
        labels = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#chosen_answer-options label")]
        assert labels == json.loads(row["options"])        # the exported order, nothing marked correct
        page.choose("chosen_answer", vote[0])
        for name, answer in zip(JUDGED, vote[1:]):
            page.choose(name, answer)
        assert console_errors(browser) == []
        if screenshot:
            whole_page(browser, 1000)
            screenshot(browser, "cosmos_validation")
        return page.submit()
    finally:
        page.close()


def test_validation_page_requires_every_judgement(browser, validation):
    page = Page(browser, fill_template(validation["template"], validation["rows"][0]),
                "return document.querySelectorAll('input[name=chosen_answer]').length > 0")
    try:
        page.choose("chosen_answer", json.loads(validation["rows"][0]["options"])[0])
        browser.find_element(By.ID, "submitButton").click()      # four judgements missing
        invalid = browser.execute_script("return document.querySelectorAll('input:invalid').length")
        assert invalid > 0 and page.server.submissions == []
        legends = [e.text for e in browser.find_elements(By.TAG_NAME, "legend")]
        assert len([t for t in legends if t[:2] in ("1.", "2.", "3.", "4.", "5.")]) == 5
    finally:
        page.close()


def test_validation_page_on_a_phone(phone_browser, validation, screenshot):
    page = Page(phone_browser, fill_template(validation["template"], validation["rows"][0]),
                "return document.querySelectorAll('input[name=chosen_answer]').length > 0")
    try:
        assert phone_browser.execute_script("return document.documentElement.scrollWidth") <= 390
        whole_page(phone_browser, 390, mobile=True)
        screenshot(phone_browser, "cosmos_validation_phone")
    finally:
        page.close()


def label_studio(path: Path, tasks_file: Path, key: str, submissions: dict[str, list[tuple[str, dict[str, str]]]],
                 kinds: dict[str, str]) -> Path:
    """Captured fields as a Label Studio export of the given tasks (choices or text areas)."""
    tasks = json.loads(tasks_file.read_text(encoding="utf-8"))
    out, n = [], 0
    for t_id, task in enumerate(tasks):
        annotations = []
        for worker, fields in submissions.get(task["data"][key], []):
            result = [label_studio_result(name, "question", kinds.get(name, "textarea"), value)
                      for name, value in fields.items() if name not in ("assignmentId", key) and value]
            annotations.append(label_studio_annotation(f"{path.stem}-{n}", {"id": n, "email": worker}, result,
                                                       f"2024-06-06T18:0{n}:00Z", lead_time=30))
            n += 1
        out.append(label_studio_task(f"HIT-{path.stem}" if key == "paragraph_id" else t_id, task["data"], annotations))
    return label_studio_export(path, out)


@pytest.mark.parametrize("platform", ["mturk", "label-studio"])
def test_validation_round_trip(browser, run, writing, validation, screenshot, platform, tmp_path):
    rows = {r["set_id"].rsplit("#", 1)[1]: r for r in validation["rows"]}
    captured = {q: [validate(browser, validation, rows[q], vote, screenshot if (q, k, platform) == ("q1", 0, "mturk")
                             else None) for k, vote in enumerate(votes)] for q, votes in VOTES.items()}
    for q, fields in captured.items():
        assert [f["chosen_answer"] for f in fields] == [v[0] for v in VOTES[q]]
        assert all(f["set_id"] == rows[q]["set_id"] for f in fields)
    judges = {q: [(f"V{k}", f) for k, f in enumerate(fields)] for q, fields in captured.items()}
    if platform == "mturk":
        written = validation["written"]
        all_rows = [(rows[q], w, f) for q in judges for w, f in judges[q]]
        fields = sorted({k for _, _, f in all_rows for k in f if k != "assignmentId"})
        judged = mturk_results_csv(tmp_path / "judged.csv", mturk_header(validation["rows"][0], fields), [
            mturk_row(f"VH{n // 3}", f"VA{n}", worker, f"Thu Jun 06 12:0{n}:00 PDT 2024", inputs=row,
                      answers={k: f.get(k, "") for k in fields})
            for n, (row, worker, f) in enumerate(all_rows)])
    else:
        written_fields = {"paragraph_id": writing["row"]["paragraph_id"]}
        for n, q in ((1, Q1), (2, Q2)):
            written_fields.update({f"q{n}_type": q["type"], f"q{n}_question": q["question"],
                                   **{f"q{n}_correct{k}": c for k, c in enumerate(q["correct"], start=1)},
                                   **{f"q{n}_incorrect{k}": c for k, c in enumerate(q["incorrect"], start=1)}})
        written = label_studio(tmp_path / "written.json", writing["dir"] / "ls" / "tasks.json", "paragraph_id",
                               {writing["row"]["paragraph_id"]: [(WORKER, written_fields)]},
                               {"q1_type": "choices", "q2_type": "choices"})
        # the written sets' ids are the Label Studio annotation ids: export the validation task for them
        s = spec()
        crowd.export_validation_hits(run, written, tmp_path / "vls", s.hits, s.seed, s.limits, "label-studio")
        renamed = {f"written-{n}#{q}": judges[q] for n, q in ((0, "q1"), (0, "q2"))}
        judged = label_studio(tmp_path / "judged.json", tmp_path / "vls" / "tasks.json", "set_id", renamed,
                              {k: "choices" for k in ("chosen_answer", *JUDGED)})
    summary = cosmos.run_hits_import(spec(), run, written, judged, tmp_path / "qa")
    assert summary["stages"]["question_sets"]["kept"] == 2
    assert summary["stages"]["validation"] == {"in": 2, "kept": 2, "rejected": {}, "balanced": True}
    sets = {r["set_id"].rsplit("#", 1)[1]: r for r in read_table(tmp_path / "qa", "sets").to_pylist()}
    assert sets["q1"]["intended_votes"] == 2 and not sets["q1"]["unanswerable"]
    assert sets["q2"]["intended_votes"] == 3 and sets["q2"]["unanswerable"]     # "answerable without" + "no commonsense"
    assert summary["nota"]["unanswerable_sets"] == 1
    instances = [r for s in ("train", "dev", "test") for r in read_table(tmp_path / "qa", s).to_pylist()]
    assert sorted(r["set_id"].rsplit("#", 1)[1] for r in instances) == ["q1", "q1", "q2"]   # one per correct answer
