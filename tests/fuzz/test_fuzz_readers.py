"""Property-based fuzzing of every reader of a file someone else made (issue #30).

Each test feeds one reader damaged copies of a real-format file (tests/fuzz/mutations.py) and
asserts what a stranger's file may do to csdata: end with rows and rejects (exit 0, or 3 when
the summary does not balance) or with one line and exit 2; never a traceback, a hang or
unbounded memory. The commands run in process through `pipeline.cli.main.main`, as a user runs them.

`make test` runs the `ci` profile (few, derandomised examples: seconds per reader); `make fuzz`
the `fuzz` profile (thousands, random) with Hypothesis' statistics (cases run per reader).
"""
from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from data_specs import load_spec
from pipeline.cli.main import main
from pipeline.cli.releases import check_recorded_inputs, read_steps
from tests.fuzz.mutations import bounded, damaged, json_values, mutated_bytes, mutated_json
from transforms.core.errors import UserError
from transforms.protoqa.read import iter_question_lines, parse_question
from transforms.protoqa.steps import run_hits_export
from transforms.record.report import reference_figures

DATA = Path(__file__).resolve().parents[1] / "data"
MTURK = DATA / "platforms" / "protoqa_mturk_results.csv"
LABEL_STUDIO = DATA / "platforms" / "protoqa_label_studio_export.json"
QUESTIONS = DATA / "platforms" / "protoqa_questions.jsonl"
SHEET = DATA / "protoqa" / "sheets" / "annotator_a.csv"
TARGETS = DATA / "protoqa_score" / "targets.jsonl"
PREDICTIONS = DATA / "protoqa_score" / "predictions.json"
PREDICTIONS_JSONL = DATA / "protoqa_score" / "predictions.jsonl"
PROTOQA = load_spec("protoqa")

# A ReCoRD JSON file in the official layout, written for these tests (not published text).
RECORD = {"version": "v1.0", "data": [{
    "id": "p1", "source": "Daily mail",
    "passage": {"text": "Ann Lee met Bo Chan in Paris.\n@highlight\nLee and Chan talk",
                "entities": [{"start": 0, "end": 6}, {"start": 12, "end": 18}, {"start": 23, "end": 27}]},
    "qas": [{"id": "p1-q1", "query": "@placeholder met Chan in Paris.",
             "answers": [{"start": 0, "end": 6, "text": "Ann Lee"}]},
            {"id": "p1-q2", "query": "They met in @placeholder.",
             "answers": [{"start": 23, "end": 27, "text": "Paris"}]}]}]}
RECORD_PREDICTIONS = {"p1-q1": "Ann Lee", "p1-q2": "London"}
# provenance.json as csdata records a step (its inputs are files of this repository).
PROVENANCE = {"format": 1, "steps": [{
    "command": "protoqa questions", "cwd": ".", "spec": {"dataset": "protoqa"},
    "argv": ["protoqa", "questions", "--input", "tests/data/protoqa/scraped.jsonl", "--output", "out",
             "--runner=DirectRunner"],
    "inputs": [{"path": "tests/data/protoqa/scraped.jsonl", "size": 1, "sha256": "0" * 64}],
    "upstreams": {}, "versions": {"csdata": "0.1.0"}}]}

_names = itertools.count()


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """A folder for the damaged files and outputs, and the task exports the imports check against."""
    folder = tmp_path_factory.mktemp("fuzz")
    run_hits_export(str(QUESTIONS), "mturk", str(folder / "mturk-hits"))
    run_hits_export(str(QUESTIONS), "label-studio", str(folder / "ls-hits"))
    return folder


def write(folder: Path, data: bytes, suffix: str) -> Path:
    path = folder / f"case-{next(_names)}{suffix}"
    path.write_bytes(data)
    return path


def ends_well(argv: list[str], capsys, folder: Path) -> None:
    """`csdata ARGV` ends with output (0, or 3: unbalanced) or one error line (2), in bounds."""
    output = folder / f"out-{next(_names)}"
    try:
        with bounded():
            code = main([*argv, "--output", str(output)])
    finally:
        shutil.rmtree(output, ignore_errors=True)
        for leftover in folder.glob(f"{output.name}*"):      # a CSV output and its rejects
            leftover.unlink()
    err = capsys.readouterr().err
    assert code in (0, 2, 3), err
    assert "Traceback" not in err
    if code == 2:
        errors = [line for line in err.splitlines() if line.startswith("csdata: error:")]
        assert len(errors) == 1 and err.rstrip().endswith(errors[0]), err


def stays_within(call) -> object:
    """A plain reader: returns, or says one UserError; any other exception fails the example."""
    try:
        with bounded():
            return call()
    except UserError as error:
        assert "\n" not in str(error)
        return None


# ------------------------------------------------------------------------------ crowd results

@given(data=damaged(MTURK, "csv"))
def test_mturk_results_csv(work, capsys, data):
    path = write(work, data, ".csv")
    ends_well(["protoqa", "hits", "import", str(path), "--format", "mturk", "--hits", str(work / "mturk-hits")],
              capsys, work)
    path.unlink()


@given(data=damaged(LABEL_STUDIO, "json"))
def test_label_studio_json(work, capsys, data):
    path = write(work, data, ".json")
    ends_well(["protoqa", "hits", "import", str(path), "--format", "label-studio", "--hits",
               str(work / "ls-hits")], capsys, work)
    path.unlink()


# ------------------------------------------------------------------------------ annotator sheets

@given(data=damaged(SHEET, "csv"))
def test_csv_sheet(work, capsys, data):
    path = write(work, data, ".csv")
    ends_well(["protoqa", "sheets", "adjudicate", "--sheet", str(path)], capsys, work)
    path.unlink()


def _workbook(rows: list[list[object]]) -> bytes:
    import io

    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    for row in rows:
        sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


SHEET_ROWS = [line.split(",") for line in SHEET.read_text(encoding="utf-8").splitlines()]
XLSX_SEED = _workbook(SHEET_ROWS)


@st.composite
def damaged_workbooks(draw) -> bytes:
    """A workbook with one cell replaced by any value openpyxl writes, or its zip bytes damaged."""
    if draw(st.booleans()):
        return draw(mutated_bytes(XLSX_SEED))
    rows = [list(row) for row in SHEET_ROWS]
    r, c = draw(st.integers(0, len(rows) - 1)), draw(st.integers(0, len(rows[0]) - 1))
    rows[r][c] = draw(st.one_of(st.none(), st.integers(-10**15, 10**15), st.floats(allow_nan=False),
                                st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc"]), max_size=30),
                                st.sampled_from(["=1+1", "x" * 32_000, "", "?", "invalid"])))
    return _workbook(rows)


@given(data=damaged_workbooks())
def test_xlsx_sheet(work, capsys, data):
    path = write(work, data, ".xlsx")
    ends_well(["protoqa", "sheets", "adjudicate", "--sheet", str(path)], capsys, work)
    path.unlink()


# ------------------------------------------------------------------------------ protoqa-data JSONL

@given(data=damaged(QUESTIONS, "jsonl"))
def test_protoqa_data_jsonl_for_hits(work, capsys, data):
    path = write(work, data, ".jsonl")
    ends_well(["protoqa", "hits", "export", str(path), "--format", "label-studio"], capsys, work)
    path.unlink()


@given(data=damaged(DATA / "protoqa" / "scraped.jsonl", "jsonl"))
def test_protoqa_data_jsonl_for_curation(work, data):
    """The `protoqa questions` reader (the per-line functions of its Beam transforms)."""
    path = write(work, data, ".jsonl")
    limits = PROTOQA.limits
    with path.open("rb") as handle, bounded():
        for line in iter_question_lines(str(path), handle, limits.max_record_bytes):
            for out in parse_question(line, "", "lenient", "remove", limits):
                assert isinstance(out, dict) or out.stage == "read"
    path.unlink()


# ------------------------------------------------------------------------------ scoring files

@given(data=st.one_of(damaged(PREDICTIONS, "json"), mutated_bytes(PREDICTIONS_JSONL.read_bytes())))
def test_protoqa_score_predictions(work, capsys, data):
    path = write(work, data, ".json")
    code_and_err(["protoqa", "score", "--targets", str(TARGETS), "--predictions", str(path)], capsys)
    path.unlink()


@given(data=damaged(TARGETS, "jsonl"))
def test_protoqa_score_targets(work, capsys, data):
    path = write(work, data, ".jsonl")
    code_and_err(["protoqa", "score", "--targets", str(path), "--predictions", str(PREDICTIONS)], capsys)
    path.unlink()


def code_and_err(argv: list[str], capsys) -> None:
    """`ends_well` for commands without --output."""
    with bounded():
        code = main(argv)
    err = capsys.readouterr().err
    assert code in (0, 2), err
    assert "Traceback" not in err
    if code == 2:
        assert len([line for line in err.splitlines() if line.startswith("csdata: error:")]) == 1, err


def _record_seed(tmp: Path) -> Path:
    path = tmp / "record-seed.json"
    if not path.exists():
        path.write_text(json.dumps(RECORD), encoding="utf-8")
    return path


@given(data=st.one_of(mutated_json(RECORD), mutated_bytes(json.dumps(RECORD).encode())),
       predictions=st.one_of(st.just(RECORD_PREDICTIONS), json_values))
def test_record_json_for_evaluate(work, capsys, data, predictions):
    path = write(work, data, ".json")
    answers = write(work, json.dumps(predictions).encode(), ".json")
    code_and_err(["record", "evaluate", str(path), str(answers)], capsys)
    path.unlink()
    answers.unlink()


@given(data=st.one_of(mutated_json(RECORD), mutated_bytes(json.dumps(RECORD).encode())))
def test_record_json_for_report_reference(work, data):
    """`csdata report RUN --reference FILE` reads the published file with `reference_figures`."""
    path = write(work, data, ".json")
    stays_within(lambda: reference_figures(path))
    path.unlink()


# ------------------------------------------------------------------------------ releases

@given(data=st.one_of(mutated_json(PROVENANCE), mutated_bytes(json.dumps(PROVENANCE).encode())))
def test_provenance_json_for_reproduce(work, data):
    """What `reproduce` reads and checks of a downloaded release before it runs anything."""
    release = work / f"release-{next(_names)}"
    release.mkdir()
    (release / "provenance.json").write_bytes(data)

    def plan() -> None:
        provenance, _ = read_steps(str(release))
        check_recorded_inputs(provenance)

    stays_within(plan)
    shutil.rmtree(release)

