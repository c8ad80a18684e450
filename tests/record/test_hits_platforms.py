"""ReCoRD §3.4 on MTurk and Label Studio: the platform_exports page and batch, and the results read back.

The run is the invented one of test_hits.py; the simulated workers' answers are written as the
platforms write them, and the import must place every triple as the own-CSV import of the same
answers in the same order does.
"""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pipeline.cli.main import main
from tests.crowd_files import (
    label_studio_annotation,
    label_studio_export,
    label_studio_result,
    label_studio_task,
    mturk_header,
    mturk_results_csv,
    mturk_row,
)
from tests.record.test_hits import (
    Simulation,
    qid,
    spec,
    write_filtered_run,
)
from transforms.core.crowd.mturk import template_variables
from transforms.core.crowd.pages import form_field_names
from transforms.core.errors import UserError
from transforms.core.io.tables import read_table
from transforms.record.crowd import import_results
from transforms.record.hits_export import export_hits
from transforms.record.hits_results import RESULT_COLUMNS

FIELDS = Path(__file__).resolve().parents[1] / "data" / "platforms" / "record_validation.fields.json"


@pytest.fixture(scope="module")
def finished_filtered_run(tmp_path_factory) -> Path:
    run = write_filtered_run(tmp_path_factory.mktemp("filtered"))
    (run / "summary.json").write_text('{"stages": {}}')
    return run


@pytest.fixture(scope="module")
def platform_exports(finished_filtered_run: Path, tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("platform-hits")
    assert export_hits(finished_filtered_run, base / "mturk", spec().hits, "mturk") == 36
    assert export_hits(finished_filtered_run, base / "ls", spec().hits, "label-studio") == 36
    return {"mturk": base / "mturk", "ls": base / "ls"}


def batch(platform_exports) -> list[dict[str, str]]:
    with (platform_exports["mturk"] / "batch.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_template_variables_and_fields_match_the_golden(platform_exports):
    golden = json.loads(FIELDS.read_text(encoding="utf-8"))
    page = (platform_exports["mturk"] / "template.html").read_text(encoding="utf-8")
    assert template_variables(page) == golden["mturk_variables"]
    assert form_field_names(page) + golden["mturk_scripted_answers"] == golden["mturk_answers"]
    with (platform_exports["mturk"] / "batch.csv").open(encoding="utf-8", newline="") as handle:
        assert next(csv.reader(handle)) == golden["mturk_variables"]
    config = (platform_exports["ls"] / "config.xml").read_text(encoding="utf-8")
    controls = re.findall(r'<(?:Choices|TextArea) name="([^"]+)"', config)
    assert controls == golden["label_studio_results"]
    tasks = json.loads((platform_exports["ls"] / "tasks.json").read_text(encoding="utf-8"))
    assert all(list(t["data"]) == golden["label_studio_data"] for t in tasks)
    assert 'src=' not in page and 'href=' not in page        # no external resources


def test_batch_row_holds_the_passage_segments_and_no_references(platform_exports):
    rows = {r["triple_id"]: r for r in batch(platform_exports)}
    row = rows[qid(0, 2)]
    assert json.loads(row["passage"]) == [
        [1, "Alice Moreau"], " met ", [2, "Bruno Keller"], " in ", [3, "Lyon"], " on Monday. ",
        [1, "Alice Moreau"], " later joined ", [4, "the Daily Planet"], ", based in ", [3, "Lyon"], ".\n• ",
        [4, "Daily Planet"], " hires ", [2, "Bruno Keller"]]
    assert json.loads(row["query"]) == ["", "X", " will speak at a conference in the capital next week, aides said (2)."]
    assert qid(0, 9) not in rows and len(rows) == 36
    text = (platform_exports["mturk"] / "batch.csv").read_text(encoding="utf-8")
    tasks = (platform_exports["ls"] / "tasks.json").read_text(encoding="utf-8")
    page = (platform_exports["mturk"] / "template.html").read_text(encoding="utf-8")
    for content in (text, tasks, page):
        assert "hidden_" not in content and "reference" not in content and "@placeholder" not in content
    task = next(t["data"] for t in json.loads(tasks) if t["data"]["triple_id"] == qid(0, 2))
    assert task["options"] == [{"value": "Alice Moreau"}, {"value": "Bruno Keller"}, {"value": "Lyon"},
                               {"value": "the Daily Planet"}]
    assert '<mark title="option 4">the Daily Planet</mark>' in task["passage_html"]


def mturk_results(path: Path, rows: list[dict[str, str]], inputs: dict[str, dict[str, str]],
                  extra: list[dict[str, str]] = ()) -> Path:
    """The simulated answers as MTurk's results CSV (SubmitTime increasing in the given order)."""
    variables = ["triple_id", "passage", "query"]
    out = [mturk_row(f"HIT-{row['triple_id'][:8]}", row["assignment_id"], row["worker_id"],
                     f"Mon Jun 03 09:{n // 60:02d}:{n % 60:02d} PDT 2024", status=row.get("status", "Submitted"),
                     WorkTimeInSeconds="30", inputs={v: inputs[row["triple_id"]][v] for v in variables},
                     answers={"entity": row["chosen_entity"], "feedback": row["feedback"], "triple_id": row["triple_id"]})
           for n, row in enumerate([*rows, *extra])]
    header = mturk_header(variables, ["entity", "entity_text", "feedback", "guessed", "triple_id"])
    return mturk_results_csv(path, header, reversed(out))     # file order is not submission order


def own_results(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(RESULT_COLUMNS))
        writer.writeheader()
        writer.writerows({k: r[k] for k in RESULT_COLUMNS} for r in rows)
    return path


def placed(out: Path) -> dict[str, Any]:
    return {"splits": {s: sorted(r["query_id"] for r in read_table(out, s).to_pylist()) for s in ("train", "dev", "test")},
            "rejects": sorted((r["record_id"], r["reason"]) for r in read_table(out, "rejects").to_pylist()),
            "workers": (out / "workers.csv").read_text(encoding="utf-8"),
            "republish": (out / "republish.csv").read_text(encoding="utf-8")}


@pytest.fixture(scope="module")
def answers() -> list[dict[str, str]]:
    rows = Simulation().build()
    return [r for r in rows if r["triple_id"] != "no-such-triple"]


def test_mturk_results_give_the_same_splits_as_the_own_csv(finished_filtered_run, platform_exports, answers, tmp_path):
    inputs = {r["triple_id"]: r for r in batch(platform_exports)}
    rejected = {"worker_id": "rejected-worker", "assignment_id": "REJ-1", "triple_id": qid(2, 0),
                "chosen_entity": "2", "feedback": "", "status": "Rejected"}
    results = mturk_results(tmp_path / "Batch_1_batch_results.csv", answers, inputs, [rejected])
    s = spec()
    summary = import_results(finished_filtered_run, results, tmp_path / "mturk", s.hits, s.splits, s.seed, s.limits)
    assert summary["results_format"] == "mturk"
    import_results(finished_filtered_run, own_results(tmp_path / "own.csv", answers), tmp_path / "own", s.hits, s.splits, s.seed, s.limits)
    mturk, own = placed(tmp_path / "mturk"), placed(tmp_path / "own")
    assert mturk["rejects"] == sorted([*own["rejects"], ("REJ-1", "rejected_assignment")])
    assert {**mturk, "rejects": own["rejects"]} == own
    assert summary["stages"]["read_results"] == {"in": len(answers) + 1, "kept": len(answers),
                                                 "rejected": {"rejected_assignment": 1}, "balanced": True}
    assert "rejected-worker" not in (tmp_path / "mturk" / "workers.csv").read_text(encoding="utf-8")
    assert summary["stages"]["human_filter"]["balanced"] and summary["submissions"]["judged"] == len(answers)


def test_an_oversized_results_row_is_a_read_results_reject(finished_filtered_run, answers, tmp_path):
    """The row after the last answer (file line len(answers) + 2) carries 70 KB of feedback."""
    big = dict(answers[0], assignment_id="BIG-1", feedback="f" * 70_000)
    path = own_results(tmp_path / "results.csv", [*answers, big])
    s = spec()
    summary = import_results(finished_filtered_run, path, tmp_path / "out", s.hits, s.splits, s.seed, s.limits)
    assert summary["stages"]["read_results"] == {"in": len(answers) + 1, "kept": len(answers),
                                                 "rejected": {"field_too_large": 1}, "balanced": True}
    import_results(finished_filtered_run, own_results(tmp_path / "own.csv", answers), tmp_path / "own", s.hits, s.splits,
                   s.seed, s.limits)
    big_rejects = [r for r in read_table(tmp_path / "out", "rejects").to_pylist() if r["stage"] == "read_results"]
    assert [(r["reason"], r["record_id"], r["detail"]) for r in big_rejects] == [
        ("field_too_large", f"results.csv:line {len(answers) + 2}", "feedback: 70000 bytes, over 65536")]
    got = placed(tmp_path / "out")
    got["rejects"] = [r for r in got["rejects"] if r[1] != "field_too_large"]
    assert got == placed(tmp_path / "own")                            # the other rows count as before


def label_studio_results(path: Path, rows: list[dict[str, str]], tasks: list[dict], options_of) -> Path:
    """The simulated answers as a Label Studio export: choices by text, created_at in order."""
    by_triple = {t["data"]["triple_id"]: label_studio_task(100 + n, t["data"], [], project=1)
                 for n, t in enumerate(tasks)}
    for n, row in enumerate(rows):
        task = by_triple[row["triple_id"]]
        result = [label_studio_result("entity", "passage", "choices", options_of(row["triple_id"], row["chosen_entity"])),
                  label_studio_result("feedback", "passage", "textarea", "ok")]
        task["annotations"].append(label_studio_annotation(
            int(row["assignment_id"]), {"id": 7, "email": row["worker_id"]}, result,
            f"2024-06-03T09:{n // 60:02d}:{n % 60:02d}.000000Z", lead_time=20.0,
            updated_at="2024-06-04T00:00:00Z", task=task["id"]))
    return label_studio_export(path, list(by_triple.values()))


def test_label_studio_export_gives_the_same_splits(finished_filtered_run, platform_exports, answers, tmp_path):
    tasks = json.loads((platform_exports["ls"] / "tasks.json").read_text(encoding="utf-8"))
    options = {t["data"]["triple_id"]: [o["value"] for o in t["data"]["options"]] for t in tasks}

    def option_text(triple: str, chosen: str) -> str:    # the worker picks the choice a number names
        return options[triple][int(chosen) - 1] if chosen.isdigit() else chosen

    answers = [dict(r, assignment_id=str(1000 + n)) for n, r in enumerate(answers)]   # Label Studio's ids
    results = label_studio_results(tmp_path / "project-1-at-2024.json", answers, tasks, option_text)
    s = spec()
    summary = import_results(finished_filtered_run, results, tmp_path / "ls", s.hits, s.splits, s.seed, s.limits)
    assert summary["results_format"] == "label-studio"
    import_results(finished_filtered_run, own_results(tmp_path / "own.csv", answers), tmp_path / "own", s.hits, s.splits, s.seed, s.limits)
    assert placed(tmp_path / "ls") == placed(tmp_path / "own")


def test_foreign_hits_are_one_clear_error(finished_filtered_run, platform_exports, answers, tmp_path):
    inputs = {r["triple_id"]: r for r in batch(platform_exports)}
    s = spec()
    unknown = dict(answers[0], triple_id="f" * 40 + "-" + "0" * 40 + "-0", assignment_id="FOREIGN-1")
    inputs[unknown["triple_id"]] = dict(inputs[answers[0]["triple_id"]], triple_id=unknown["triple_id"])
    results = mturk_results(tmp_path / "foreign.csv", answers[:3], inputs, [unknown])
    with pytest.raises(UserError, match=r"assignment FOREIGN-1 .* is not from this export: triple_id 'f+-0+-0' "
                                        r"is not in the run"):
        import_results(finished_filtered_run, results, tmp_path / "out", s.hits, s.splits, s.seed, s.limits)
    changed = {k: dict(v, query=v["query"].replace("capital", "harbour")) for k, v in inputs.items()}
    results = mturk_results(tmp_path / "changed.csv", answers[:3], changed)
    with pytest.raises(UserError, match=r"its query differs from the run's"):
        import_results(finished_filtered_run, results, tmp_path / "out", s.hits, s.splits, s.seed, s.limits)


def test_cli_exports_and_imports_platform_files(finished_filtered_run, platform_exports, answers, tmp_path, capsys):
    assert main(["record", "hits", "export", str(finished_filtered_run), "--format", "mturk", "--output", str(tmp_path / "h")]) == 0
    assert (tmp_path / "h" / "template.html").read_text(encoding="utf-8") == \
        (platform_exports["mturk"] / "template.html").read_text(encoding="utf-8")
    inputs = {r["triple_id"]: r for r in batch(platform_exports)}
    results = mturk_results(tmp_path / "results.csv", answers, inputs)
    out = tmp_path / "final"
    assert main(["record", "hits", "import", str(results), "--run", str(finished_filtered_run), "--output", str(out),
                 "--set", "hits.qc_every=20"]) == 0
    printed = capsys.readouterr().out
    assert "splits: train" in printed
    # the final folder, not the staging folder the command wrote into
    assert f"(their assignments: {out}/republish.csv)" in printed
    assert (out / "republish.csv").is_file()
    broken = tmp_path / "broken.csv"
    broken.write_text(results.read_text(encoding="utf-8").replace('"Input.triple_id"', '"Input.tid"', 1),
                      encoding="utf-8")
    assert main(["record", "hits", "import", str(broken), "--run", str(finished_filtered_run), "--output", str(tmp_path / "x"),
                 "--format", "mturk"]) == 2
    assert "missing column 'Input.triple_id'" in capsys.readouterr().err


def test_preview_page_is_the_template_filled_with_one_row(finished_filtered_run, platform_exports):
    from transforms.record.hits_export import preview_page

    rows = batch(platform_exports)
    page = preview_page(finished_filtered_run, spec().hits, rows[1]["triple_id"])
    assert "${" not in page and f'name="triple_id" value="{rows[1]["triple_id"]}"' in page
    assert f'value="{rows[0]["triple_id"]}"' in preview_page(finished_filtered_run, spec().hits)   # default: the first row
    with pytest.raises(UserError, match="no triple 'nope'"):
        preview_page(finished_filtered_run, spec().hits, "nope")
