"""The crowd platform layer on hand-written files in MTurk's and Label Studio's real formats.

Expected values are read off the files by hand: e.g. `Wed Mar 04 10:01:30 PDT 2020` is
17:01:30 UTC, before `18:05:00 GMT` and `10:12:45 PST` (18:12:45 UTC).
"""
from __future__ import annotations

import csv
import json
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest

from data_specs import load_spec
from transforms.core.crowd import pages
from transforms.core.crowd.label_studio import label_studio_tasks, read_label_studio_export
from transforms.core.crowd.mturk import (
    MTURK_RESULT_COLUMNS,
    fill_template,
    read_mturk_results,
    template_variables,
    write_mturk_batch,
)
from transforms.core.crowd.platforms import (
    LABEL_STUDIO,
    MTURK,
    OWN_CSV,
    Assignment,
    answer_text,
    check_inputs,
    detect_results_format,
    parse_time,
)
from transforms.core.crowd.preview_server import serve_preview
from transforms.core.errors import UserError

DATA = Path(__file__).resolve().parents[1] / "data" / "platforms"
LIMITS = load_spec("record").limits


def test_template_variables_in_order_each_once():
    html = "<p>${b}</p><input value='${a}'><textarea>${b}</textarea> $notone ${ x} ${c_2}"
    assert template_variables(html) == ["b", "a", "c_2"]


def test_fill_template_escapes_values_and_names_missing_ones():
    assert fill_template("<p>${a}</p>", {"a": "<b>&"}) == "<p>&lt;b&gt;&amp;</p>"
    with pytest.raises(UserError, match=r"\['b'\]"):
        fill_template("${a}${b}", {"a": "1"})


def test_batch_header_is_exactly_the_variables(tmp_path):
    path = tmp_path / "batch.csv"
    rows = [{"id": "1", "text": 'say "hi"\nthen go', "hidden": "secret"}]
    assert write_mturk_batch(path, ["id", "text"], rows) == 1
    with path.open(encoding="utf-8", newline="") as handle:
        read = list(csv.reader(handle))
    assert read == [["id", "text"], ["1", 'say "hi"\nthen go']]
    with pytest.raises(ValueError):
        write_mturk_batch(path, ["id", "missing"], rows)


def test_parse_mturk_and_iso_times():
    assert parse_time("Wed Mar 04 10:12:45 PST 2020") == datetime(2020, 3, 4, 18, 12, 45, tzinfo=timezone.utc)
    assert parse_time("Wed Mar 04 10:01:30 PDT 2020") == datetime(2020, 3, 4, 17, 1, 30, tzinfo=timezone.utc)
    assert parse_time("2024-05-02T10:15:00Z") == datetime(2024, 5, 2, 10, 15, tzinfo=timezone.utc)
    with pytest.raises(ValueError):
        parse_time("yesterday")


def test_mturk_results_skip_rejected_and_sort_by_submit_time():
    got = read_mturk_results(DATA / "mturk_results.csv", ["item_id", "text"], ["choice"], LIMITS).assignments
    assert [a.assignment_id for a in got] == ["3ASG0004", "3ASG0002", "3ASG0001"]
    first = got[0]
    assert first == Assignment(
        hit_id="3HIT0002", assignment_id="3ASG0004", worker_id="AWORKERA", status="Approved",
        submit_time="Wed Mar 04 10:01:30 PDT 2020", work_seconds=90.0,
        inputs={"item_id": "item-2", "text": "Dogs bark\nat night."}, answers={"choice": "Dogs", "feedback": ""})
    assert got[1].answers == {"choice": "mat", "feedback": "nice task"}
    assert got[2].inputs["text"] == 'A cat sat, on "the" mat.'


def test_mturk_task_answers_are_flattened():
    got = read_mturk_results(DATA / "mturk_results_task_answers.csv", ["item_id"], ["choice", "sure"], LIMITS).assignments
    assert [a.assignment_id for a in got] == ["3ASG0102", "3ASG0101"]
    answers = got[1].answers
    assert answers["choice"] == "cat" and answers["sure"] == {"on": True}
    assert answer_text(answers["sure"]) == "yes" and answer_text(answers["size"]) == "large"
    assert answer_text(got[0].answers["sure"]) == "no" and got[0].answers["feedback"] == "too easy"


def test_mturk_rejected_rows_and_damaged_task_answers(tmp_path):
    """A rejected assignment's answers are not read (spam may lack fields); a submitted row whose
    Answer.taskAnswers is not JSON is a malformed_record, and the other rows are read."""
    with (DATA / "mturk_results_task_answers.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    spam = dict(rows[0], AssignmentId="3ASG0199", AssignmentStatus="Rejected", **{"Answer.taskAnswers": "[{}]"})
    broken = dict(rows[0], AssignmentId="3ASG0198", **{"Answer.taskAnswers": "[{\"choice\": "})
    path = tmp_path / "results.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows([*rows, spam, broken])
    got = read_mturk_results(path, ["item_id"], ["choice", "sure"], LIMITS)
    assert [a.assignment_id for a in got.assignments] == ["3ASG0102", "3ASG0101"]
    assert [a.assignment_id for a in got.withdrawn] == ["3ASG0199"]
    assert [(s.reason, s.where) for s in got.skipped] == [("malformed_record", f"line {len(rows) + 3}")]


def test_mturk_missing_columns_are_one_clear_error(tmp_path):
    with pytest.raises(UserError, match=r"mturk_results.csv.*'Input.passage'"):
        read_mturk_results(DATA / "mturk_results.csv", ["passage"], [], LIMITS)
    with pytest.raises(UserError, match=r"'Answer.entity'"):
        read_mturk_results(DATA / "mturk_results.csv", ["item_id"], ["entity"], LIMITS)
    with pytest.raises(UserError, match=r"line 2: Answer.taskAnswers has no field 'entity'"):
        read_mturk_results(DATA / "mturk_results_task_answers.csv", [], ["entity"], LIMITS)
    no_worker = tmp_path / "results.csv"
    text = (DATA / "mturk_results.csv").read_text(encoding="utf-8").replace('"WorkerId"', '"Worker"', 1)
    no_worker.write_text(text, encoding="utf-8")
    with pytest.raises(UserError, match=r"results.csv: not an MTurk results file.*'WorkerId'"):
        read_mturk_results(no_worker, [], [], LIMITS)


def test_mturk_header_is_the_documented_one():
    with (DATA / "mturk_results.csv").open(encoding="utf-8", newline="") as handle:
        header = next(csv.reader(handle))
    assert tuple(header[:len(MTURK_RESULT_COLUMNS)]) == MTURK_RESULT_COLUMNS
    assert header[-2:] == ["Approve", "Reject"]


def test_label_studio_export_skips_cancelled_and_flattens_results():
    got = read_label_studio_export(DATA / "label_studio_export.json", ["item_id"], LIMITS).assignments
    assert [(a.hit_id, a.assignment_id, a.worker_id) for a in got] == [("42", "503", "ann@example.org"),
                                                                       ("41", "501", "7")]
    assert got[0].answers == {"choice": "Dogs"} and got[0].work_seconds == 40.25
    assert got[1].answers == {"choice": "cat", "feedback": "first line\nsecond line"}
    assert got[1].inputs["text"] == 'A cat sat, on "the" mat.'
    assert json.loads(got[1].inputs["options"]) == [{"value": "cat"}, {"value": "mat"}]
    with pytest.raises(UserError, match=r"task 41: data has no field 'passage'"):
        read_label_studio_export(DATA / "label_studio_export.json", ["passage"], LIMITS)


def test_label_studio_tasks_wrap_rows():
    assert label_studio_tasks([{"a": "1"}, {"a": "2", "o": [{"value": "x"}]}]) == [
        {"data": {"a": "1"}}, {"data": {"a": "2", "o": [{"value": "x"}]}}]


def test_detect_formats(tmp_path):
    own = tmp_path / "own.csv"
    own.write_text("worker_id,assignment_id,triple_id\n", encoding="utf-8")
    assert detect_results_format(DATA / "mturk_results.csv") == MTURK
    assert detect_results_format(DATA / "label_studio_export.json") == LABEL_STUDIO
    assert detect_results_format(own) == OWN_CSV


def test_foreign_hits_are_one_clear_error():
    got = read_mturk_results(DATA / "mturk_results.csv", ["item_id"], [], LIMITS).assignments
    rows = {"item-1": {"item_id": "item-1", "text": 'A cat  sat, on "the" mat.'},
            "item-2": {"item_id": "item-2", "text": "Dogs bark at night."}}
    check_inputs(got, rows, "item_id", "r.csv", compare=("text",))   # whitespace aside: the same
    with pytest.raises(UserError, match=r"r.csv: assignment 3ASG0004 \(HIT 3HIT0002\) is not from this export: "
                                        r"item_id 'item-2' is not in the run"):
        check_inputs(got, {"item-1": rows["item-1"]}, "item_id", "r.csv")
    changed = {**rows, "item-1": {"item_id": "item-1", "text": "A dog sat."}}
    with pytest.raises(UserError, match=r"its text differs"):
        check_inputs(got, changed, "item_id", "r.csv", compare=("text",))


def test_json_value_cannot_break_out_of_a_slot():
    value = pages.json_value(["</textarea><script>x</script>", "a & b"])
    assert "<" not in value and ">" not in value and "&" not in value
    assert json.loads(value) == ["</textarea><script>x</script>", "a & b"]


def test_preview_serves_the_page_and_shows_submitted_fields():
    page = pages.document("t", '<input name="entity" value="3">', "")
    url, server = serve_preview(page)
    try:
        assert "turkSubmitTo=http%3A%2F%2F127.0.0.1%3A" in url and "assignmentId=PREVIEW_ASSIGNMENT" in url
        with urllib.request.urlopen(url) as response:
            assert response.read().decode("utf-8") == page
        base = url.split("/?")[0]
        data = b"assignmentId=PREVIEW_ASSIGNMENT&entity=3&feedback=%3Cb%3E"
        with urllib.request.urlopen(base + "/mturk/externalSubmit", data=data) as response:
            shown = response.read().decode("utf-8")
        assert "<td>3</td>" in shown and "&lt;b&gt;" in shown
        with urllib.request.urlopen(base + "/submissions.json") as response:
            assert json.loads(response.read()) == [{"assignmentId": "PREVIEW_ASSIGNMENT", "entity": "3",
                                                    "feedback": "<b>"}]
    finally:
        server.shutdown()
        server.server_close()
