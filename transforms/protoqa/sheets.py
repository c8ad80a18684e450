"""ProtoQA annotator round trip (`csdata protoqa sheets ...`): sheets, BLANC agreement and
adjudication into protoqa-data records. Plain Python: the crowdsourced set is ~150 questions.

Sheet formats (CSV or .xlsx, header row required):

* annotator sheet (`sheets export` writes one per annotator):
  `question_id, question, answer, count, fixed_spelling, proposed_cluster, annotator_cluster`
* adjudication sheet (`sheets import` writes it): `question_id, question, answer, count,
  fixed_spelling, annotator_a, annotator_b, adjudicated`
* the evaluator's stub sheet (protoqa-evaluator's annotator_sheet_example):
  `question, answer, fixed_spelling, <annotator A>, <annotator B>, Combined`; the question is
  given on the first row of each block only, one row per response, and a trailing row of
  spreadsheet formulas (no answer) is ignored.
* `.xlsx` workbooks (`sheets export --format xlsx` writes one per annotator): one worksheet per
  question, as the stub's `crowdsource_data_stub.xlsx`, each read like a CSV sheet; the
  annotator sheet's `annotator_cluster` cells carry a drop-down (data validation list) of the
  question's proposed clusters and the invalid labels, kept on the hidden `_clusters` sheet.

Labels in `sheets.invalid_labels` (`?`, `invalid`) mean "no cluster": such answers stay in
`raw` and out of every cluster, and are not mentions for BLANC.
"""
from __future__ import annotations

import csv
import io
import re
import zipfile
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

from data_specs.models import LimitsSection
from filters.protoqa import normalize_question
from transforms.core.accounting import Reject
from transforms.core.cells import escaped_dict, read_csv_cell, xlsx_text
from transforms.core.errors import UserError
from transforms.core.untrusted import csv_field_limit
from transforms.protoqa.blanc import LinkCounts, blanc_from_counts, link_counts
from transforms.protoqa.cluster_prep import question_id_for

ANNOTATOR_COLUMNS = ["question_id", "question", "answer", "count", "fixed_spelling",
                     "proposed_cluster", "annotator_cluster"]


ADJUDICATION_COLUMNS = ["question_id", "question", "answer", "count", "fixed_spelling",
                        "annotator_a", "annotator_b", "adjudicated"]


DISAGREEMENT_COLUMNS = ["question_id", "question", "answer", "count", "annotator_a", "annotator_b",
                        "kind"]


# The label column `sheets adjudicate` reads when none is named, in order of preference.
ADJUDICATED_COLUMNS = ("adjudicated", "annotator_cluster", "Combined")


ADJUDICATE = "adjudicate"


class SheetError(UserError, ValueError):
    """A sheet is malformed or incomplete (or a column the command needs is not in it)."""


@dataclass
class SheetRow:
    answer: str
    count: int
    fixed: str
    labels: dict[str, str]          # column name -> label ("" when empty)


@dataclass
class SheetQuestion:
    question_id: str
    question: str
    rows: list[SheetRow] = field(default_factory=list)


def export_sheet_rows(prep_rows: Sequence[dict]) -> list[dict]:
    """Annotator-sheet rows from cluster-prep rows; `annotator_cluster` is left to fill in."""
    return [{"question_id": r["question_id"], "question": r["question"], "answer": r["answer"],
             "count": r["count"], "fixed_spelling": r["answer"],
             "proposed_cluster": r["proposed_label"], "annotator_cluster": ""}
            for r in prep_rows]


def write_csv(path: str, columns: Sequence[str], rows: Iterable[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(escaped_dict(row) for row in rows)


def read_sheet(text: str, question_ids: Optional[dict[str, str]] = None
               ) -> tuple[list[SheetQuestion], list[str]]:
    """Questions of a CSV sheet in any of the three formats, and the sheet's label columns.

    Label columns: `annotator_cluster` (annotator sheet), `annotator_a, annotator_b,
    adjudicated` (adjudication sheet), or the stub's annotator columns and `Combined`.
    `question_ids` maps normalised question text to ids for sheets without a question_id column.
    """
    reader = ([read_csv_cell(cell) for cell in row] for row in csv.reader(io.StringIO(text)))
    try:
        header = next(reader)
    except StopIteration:
        raise SheetError("empty sheet") from None
    questions: OrderedDict[str, SheetQuestion] = OrderedDict()
    label_columns = _read_rows(header, reader, question_ids, questions)
    return list(questions.values()), label_columns


def _read_rows(header_cells: Sequence[str], rows: Iterable[Sequence[str]],
               question_ids: Optional[dict[str, str]],
               questions: OrderedDict[str, SheetQuestion]) -> list[str]:
    """Add one table's rows (after its header) to `questions`; the table's label columns."""
    header = [h.strip() for h in header_cells]
    lower = [h.lower() for h in header]
    if "answer" not in lower or "question" not in lower:
        raise SheetError(f"sheet header needs question and answer columns, got {header}")
    col = {name: lower.index(name) for name in lower}
    fixed_col = col.get("fixed_spelling", col.get("fixed spelling"))
    known = {"question_id", "question", "answer", "count", "fixed_spelling", "fixed spelling",
             "proposed_cluster", "proposed cluster"}
    label_columns = [h for h, low in zip(header, lower) if low not in known and h]
    current_question, current_id = "", ""
    for row_cells in rows:
        cells = list(row_cells) + [""] * (len(header) - len(row_cells))

        def get(name: str, cells: list[str] = cells) -> str:
            return cells[col[name]].strip() if name in col else ""

        question = get("question")
        if question:
            current_question = question
            current_id = get("question_id") or (question_ids or {}).get(
                normalize_question(question)) or question_id_for(question)
        elif "question_id" in col and get("question_id"):
            current_id = get("question_id")
        answer = get("answer")
        if not answer:
            continue                                   # formula / blank rows
        if not current_question:
            raise SheetError(f"answer {answer!r} comes before any question")
        raw_count = get("count") or "1"
        try:
            count = int(raw_count)
        except ValueError:
            raise SheetError(f"count {raw_count!r} of answer {answer!r} is not an integer") from None
        fixed = (cells[fixed_col].strip() if fixed_col is not None else "") or answer
        labels = {h: cells[header.index(h)].strip() for h in label_columns}
        entry = questions.setdefault(current_id, SheetQuestion(current_id, current_question))
        entry.rows.append(SheetRow(answer, count, fixed, labels))
    return label_columns


# ---- .xlsx workbooks -------------------------------------------------------------------------

# The hidden worksheet holding each question's drop-down list (one column per question).
CLUSTERS_SHEET = "_clusters"
XLSX_PROMPT = "Pick a proposed cluster, type a new cluster name, or ? when the answer fits none."
_TITLE_CHARS = re.compile(r"[\[\]:*?/\\]")


def _sheet_titles(question_ids: Sequence[str]) -> list[str]:
    """Worksheet titles: the question id without the characters Excel forbids, at most 31
    characters, made unique with a `~n` suffix."""
    titles: list[str] = []
    used: set[str] = {CLUSTERS_SHEET.lower()}
    for n, qid in enumerate(question_ids, start=1):
        base = _TITLE_CHARS.sub("_", qid).strip("'")[:31] or str(n)
        title, k = base, 1
        while title.lower() in used:
            k += 1
            title = f"{base[:31 - len(str(k)) - 1]}~{k}"
        used.add(title.lower())
        titles.append(title)
    return titles


def write_xlsx(path: str, rows: Sequence[dict], invalid_labels: Sequence[str]) -> None:
    """One annotator's workbook: a worksheet per question (as the evaluator's stub sheet),
    columns `ANNOTATOR_COLUMNS`, and on each `annotator_cluster` cell a drop-down of the
    question's proposed clusters and the invalid labels. A name not in the list is allowed after
    a warning: proposals are suggestions, annotators make new clusters."""
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font
    from openpyxl.utils import get_column_letter
    from openpyxl.worksheet.datavalidation import DataValidation

    by_question: OrderedDict[str, list[dict]] = OrderedDict()
    for row in rows:
        by_question.setdefault(str(row["question_id"]), []).append(row)
    workbook = Workbook()
    default = workbook.active
    lists = workbook.create_sheet(CLUSTERS_SHEET)
    lists.sheet_state = "hidden"
    label_col = ANNOTATOR_COLUMNS.index("annotator_cluster") + 1
    widths = {"question_id": 12, "question": 40, "answer": 24, "count": 7, "fixed_spelling": 24,
              "proposed_cluster": 24, "annotator_cluster": 24}
    for n, (title, (qid, q_rows)) in enumerate(zip(_sheet_titles(list(by_question)),
                                                   by_question.items()), start=1):
        sheet = workbook.create_sheet(title, index=n - 1)
        sheet.append(ANNOTATOR_COLUMNS)
        for cell in sheet[1]:
            cell.font = Font(bold=True)
        for row in q_rows:
            sheet.append([str(row["question_id"]), str(row["question"]), str(row["answer"]),
                          int(row["count"]), str(row["fixed_spelling"]),
                          str(row["proposed_cluster"]), str(row["annotator_cluster"] or "")])
            for cell in sheet[sheet.max_row]:
                xlsx_text(cell)   # an answer "=HYPERLINK(...)" stays text
        for i, name in enumerate(ANNOTATOR_COLUMNS, start=1):
            sheet.column_dimensions[get_column_letter(i)].width = widths[name]
        for cell in sheet["B"][1:]:
            cell.alignment = Alignment(wrap_text=True, vertical="top")
        sheet.freeze_panes = "A2"
        choices = list(OrderedDict.fromkeys(
            [str(r["proposed_cluster"]) for r in q_rows if str(r["proposed_cluster"])]
            + list(invalid_labels)))
        letter = get_column_letter(n)
        lists.cell(row=1, column=n, value=qid)
        for i, choice in enumerate(choices, start=2):
            xlsx_text(lists.cell(row=i, column=n, value=choice))
        validation = DataValidation(
            type="list", formula1=f"'{CLUSTERS_SHEET}'!${letter}$2:${letter}${len(choices) + 1}",
            allow_blank=True, showDropDown=False, showErrorMessage=True, errorStyle="warning",
            errorTitle="Not a proposed cluster",
            error="Keep it as a new cluster name? (Yes keeps it.)",
            showInputMessage=True, promptTitle="Cluster", prompt=XLSX_PROMPT)
        column = get_column_letter(label_col)
        validation.add(f"{column}2:{column}{len(q_rows) + 1}")
        sheet.add_data_validation(validation)
    workbook.remove(default)
    if not by_question:
        workbook.create_sheet("sheet", index=0).append(ANNOTATOR_COLUMNS)
    workbook.save(path)


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def read_xlsx(path: str, question_ids: Optional[dict[str, str]] = None
              ) -> tuple[list[SheetQuestion], list[str]]:
    """Questions and label columns of a workbook: every worksheet whose first row names question
    and answer columns (the drop-down lists and other sheets are skipped), in workbook order;
    each worksheet is read as a CSV sheet is (the stub's one-question-per-sheet layout too)."""
    from openpyxl import load_workbook

    try:
        workbook = load_workbook(path, read_only=True, data_only=True)   # rows streamed
    except Exception as error:       # zipfile / XML errors of a damaged or misnamed file
        raise SheetError(f"{path}: not a readable .xlsx workbook ({error})") from None
    questions: OrderedDict[str, SheetQuestion] = OrderedDict()
    label_columns: list[str] = []
    try:
        for sheet in workbook.worksheets:
            if sheet.title == CLUSTERS_SHEET:
                continue
            rows = ([_cell_text(v) for v in row] for row in sheet.iter_rows(values_only=True))
            header = next(rows, None)
            lower = {h.strip().lower() for h in header or []}
            if header is None or not {"question", "answer"} <= lower:
                continue
            try:
                columns = _read_rows(header, rows, question_ids, questions)
            except SheetError as error:
                raise SheetError(f"{path}, worksheet {sheet.title!r}: {error}") from None
            label_columns += [c for c in columns if c not in label_columns]
    finally:
        workbook.close()
    if not questions and not label_columns:
        raise SheetError(f"{path}: no worksheet with question and answer columns")
    return list(questions.values()), label_columns


def load_sheet(path: str, limits: Optional[LimitsSection] = None, question_ids: Optional[dict[str, str]] = None
               ) -> tuple[list[SheetQuestion], list[str]]:
    """A sheet file: `.xlsx` workbooks by `read_xlsx`, anything else as UTF-8 CSV (`read_sheet`).

    With `limits`, a file (a workbook: its uncompressed parts) over `max_file_bytes` or a CSV
    cell over `max_field_bytes` is a `SheetError`: an annotator's sheet is fixed, not cut.
    """
    if limits is not None:
        _check_size(path, limits)
    if path.lower().endswith(".xlsx"):
        return read_xlsx(path, question_ids)
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8-sig")      # spreadsheet exports write a BOM
    except UnicodeDecodeError as error:
        raise SheetError(f"{path}: not UTF-8 (byte {error.start}); save the sheet as UTF-8 CSV") from None
    limit = limits.max_field_bytes if limits is not None else csv.field_size_limit()
    try:
        with csv_field_limit(limit):
            return read_sheet(text, question_ids)
    except csv.Error as error:
        if "field larger than field limit" in str(error):
            raise SheetError(f"{path}: a cell is over {limit} characters (limits.max_field_bytes)") from None
        raise SheetError(f"{path}: not a CSV sheet ({error})") from None


def _check_size(path: str, limits: LimitsSection) -> None:
    """A file, or a workbook's uncompressed parts, over `limits.max_file_bytes` is a SheetError."""
    size = Path(path).stat().st_size
    if path.lower().endswith(".xlsx") and zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as archive:
                size = max(size, sum(info.file_size for info in archive.infolist()))
        except (zipfile.BadZipFile, OSError, ValueError):
            pass                      # read_xlsx says what is wrong with it
    if size > limits.max_file_bytes:
        raise SheetError(f"{path}: {size} bytes, over limits.max_file_bytes ({limits.max_file_bytes})")


def _is_invalid(label: str, invalid_labels: Sequence[str]) -> bool:
    return not label or label.lower() in {x.lower() for x in invalid_labels}


def clustering(question: SheetQuestion, column: str, invalid_labels: Sequence[str],
               mentions: str = "strings") -> dict:
    """mention -> cluster label of one annotator; invalid and empty labels are not mentions.

    `strings`: each distinct raw answer is a mention (repeated rows merge); `responses`: each
    response (an answer's count) is a mention.
    """
    result: dict = {}
    seen: Counter = Counter()
    for row in question.rows:
        label = row.labels.get(column, "")
        if _is_invalid(label, invalid_labels):
            seen[row.answer] += row.count
            continue
        if mentions == "responses":
            for _ in range(row.count):
                result[(row.answer, seen[row.answer])] = label.lower()
                seen[row.answer] += 1
        else:
            result[row.answer] = label.lower()
    return result


def agreement(questions: Sequence[SheetQuestion], column_a: str, column_b: str,
              invalid_labels: Sequence[str], mentions: str = "strings") -> dict:
    """Per-question and overall BLANC (x100) between two annotators' label columns."""
    per_question, total, scores = {}, LinkCounts(), []
    for question in questions:
        a = clustering(question, column_a, invalid_labels, mentions)
        b = clustering(question, column_b, invalid_labels, mentions)
        counts = link_counts(a, b)
        score = blanc_from_counts(counts)
        per_question[question.question_id] = {
            "blanc": 100 * score.blanc, "recall": 100 * score.recall,
            "precision": 100 * score.precision, "mentions_a": len(a), "mentions_b": len(b),
            "clusters_a": len(set(a.values())), "clusters_b": len(set(b.values()))}
        scores.append(score.blanc)
        total = total + counts
    return {"annotators": [column_a, column_b], "mentions": mentions,
            "questions": len(per_question),
            "macro_blanc": 100 * sum(scores) / len(scores) if scores else 0.0,
            "micro_blanc": 100 * blanc_from_counts(total).blanc,
            "per_question": per_question}


def disagreements(question: SheetQuestion, column_a: str, column_b: str,
                  invalid_labels: Sequence[str]) -> list[dict]:
    """Answers the two annotators treat differently, with the kind of disagreement.

    `validity`: valid for one, invalid for the other; `cluster`: the set of answers sharing its
    cluster differs; `spelling` is not judged here (one fixed_spelling column per sheet).
    """
    def partners(column):
        groups: dict[str, set] = {}
        for row in question.rows:
            label = row.labels.get(column, "")
            if not _is_invalid(label, invalid_labels):
                groups.setdefault(label.lower(), set()).add(row.answer)
        return {row.answer: frozenset(groups.get(row.labels.get(column, "").lower(), ()))
                for row in question.rows}

    pa, pb = partners(column_a), partners(column_b)
    out = []
    for row in question.rows:
        la, lb = row.labels.get(column_a, ""), row.labels.get(column_b, "")
        ia, ib = _is_invalid(la, invalid_labels), _is_invalid(lb, invalid_labels)
        kind = ""
        if ia != ib:
            kind = "validity"
        elif not ia and pa[row.answer] != pb[row.answer]:
            kind = "cluster"
        if kind:
            out.append({"question_id": question.question_id, "question": question.question,
                        "answer": row.answer, "count": row.count, "annotator_a": la,
                        "annotator_b": lb, "kind": kind})
    return out


def merge_annotators(sheet_a: Sequence[SheetQuestion], column_a: str,
                     sheet_b: Sequence[SheetQuestion], column_b: str) -> list[SheetQuestion]:
    """One question list with both annotators' labels as `annotator_a` / `annotator_b`.

    Rows are matched by (question_id, answer); A's fixed spelling is kept. An answer on one
    sheet only gets an empty label from the other annotator.
    """
    b_index = {(q.question_id, r.answer): r for q in sheet_b for r in q.rows}
    merged = []
    for question in sheet_a:
        rows = []
        for row in question.rows:
            other = b_index.pop((question.question_id, row.answer), None)
            rows.append(SheetRow(row.answer, row.count, row.fixed, {
                "annotator_a": row.labels.get(column_a, ""),
                "annotator_b": other.labels.get(column_b, "") if other else ""}))
        merged.append(SheetQuestion(question.question_id, question.question, rows))
    by_id = {q.question_id: q for q in merged}
    for (qid, _), row in b_index.items():
        target = by_id.get(qid)
        if target is None:
            source = next(q for q in sheet_b if q.question_id == qid)
            target = by_id[qid] = SheetQuestion(qid, source.question)
            merged.append(target)
        target.rows.append(SheetRow(row.answer, row.count, row.fixed,
                                    {"annotator_a": "", "annotator_b": row.labels.get(column_b, "")}))
    return merged


def merge_sheets(texts: Sequence[str], columns: Optional[Sequence[str]] = None
                 ) -> tuple[list[SheetQuestion], tuple[str, str]]:
    """`merge_read_sheets` of CSV sheet texts."""
    return merge_read_sheets([read_sheet(text) for text in texts], columns)


def merge_read_sheets(sheets: Sequence[tuple[list[SheetQuestion], list[str]]],
                      columns: Optional[Sequence[str]] = None
                      ) -> tuple[list[SheetQuestion], tuple[str, str]]:
    """Both annotators' labels (`merge_annotators`) from two read sheets or one with two label
    columns (each as `read_sheet` / `load_sheet` returns it).

    Two sheets: each one's `columns` entry, else its `annotator_cluster` column, else its first
    label column. One sheet: `columns`, else its first two label columns. Returns the merged
    questions and the two columns read.
    """
    if len(sheets) == 2:
        (qa, cols_a), (qb, cols_b) = sheets
        if not columns and (not cols_a or not cols_b):
            raise SheetError("each sheet needs a label column (annotator_cluster)")
        col_a = columns[0] if columns else ("annotator_cluster" if "annotator_cluster" in cols_a else cols_a[0])
        col_b = columns[1] if columns else ("annotator_cluster" if "annotator_cluster" in cols_b else cols_b[0])
        return merge_annotators(qa, col_a, qb, col_b), (col_a, col_b)
    if len(sheets) == 1:
        questions, cols = sheets[0]
        if columns:
            col_a, col_b = columns
        elif len(cols) >= 2:
            col_a, col_b = cols[0], cols[1]
        else:
            raise SheetError("a single sheet needs two annotator columns (see --columns)")
        return merge_annotators(questions, col_a, questions, col_b), (col_a, col_b)
    raise SheetError("give one sheet with two annotator columns, or two sheets")


def adjudication_rows(questions: Sequence[SheetQuestion], invalid_labels: Sequence[str]) -> list[dict]:
    """The adjudication sheet: `adjudicated` pre-filled where A and B agree, empty elsewhere."""
    rows = []
    for question in questions:
        disputed = {d["answer"] for d in disagreements(question, "annotator_a", "annotator_b",
                                                       invalid_labels)}
        for row in question.rows:
            la, lb = row.labels["annotator_a"], row.labels["annotator_b"]
            if row.answer in disputed:
                label = ""
            elif _is_invalid(la, invalid_labels):
                label = la or lb or "?"
            else:
                label = la
            rows.append({"question_id": question.question_id, "question": question.question,
                         "answer": row.answer, "count": row.count, "fixed_spelling": row.fixed,
                         "annotator_a": la, "annotator_b": lb, "adjudicated": label})
    return rows


def build_record(question_id: str, source: str, original: str, normalized: str,
                 raw: Sequence[tuple[str, int]] | dict, clusters: Sequence[tuple[int, Sequence[str]]]) -> dict:
    """One protoqa-data row: clusters in descending count order (stable for ties), numbered
    `<id>.<n>`; `num.answers` is the sum of cluster counts. Invalid answers appear in `raw` only.
    """
    raw_items = list(raw.items()) if isinstance(raw, dict) else list(raw)
    ordered = sorted(enumerate(clusters), key=lambda item: (-item[1][0], item[0]))
    cluster_map = {f"{question_id}.{n}": {"count": int(count), "answers": list(answers)}
                   for n, (_, (count, answers)) in enumerate(ordered)}
    return {
        "metadata": {"id": question_id, "source": source},
        "question": {"original": original, "normalized": normalized},
        "answers": {"raw": {a: int(c) for a, c in raw_items}, "clusters": cluster_map},
        "num": {"answers": sum(int(c) for c, _ in clusters), "clusters": len(clusters)},
    }


def record_from_sheet(question: SheetQuestion, column: str, invalid_labels: Sequence[str],
                      source: str) -> dict | Reject:
    """A protoqa-data record from one question's adjudicated labels.

    `raw` sums counts per fixed spelling (sheet order); a cluster's count is the sum of its
    rows' counts and its answers are its distinct fixed spellings. An empty label is an
    unadjudicated answer and rejects the question.
    """
    missing = [r.answer for r in question.rows if not r.labels.get(column, "")]
    if missing:
        return Reject(ADJUDICATE, "unadjudicated", question.question_id,
                      f"{len(missing)} answers without a label, e.g. {missing[0]!r}")
    raw: OrderedDict[str, int] = OrderedDict()
    clusters: OrderedDict[str, list] = OrderedDict()
    for row in question.rows:
        raw[row.fixed] = raw.get(row.fixed, 0) + row.count
        label = row.labels[column]
        if _is_invalid(label, invalid_labels):
            continue
        entry = clusters.setdefault(label.lower(), [0, []])
        entry[0] += row.count
        if row.fixed not in entry[1]:
            entry[1].append(row.fixed)
    if not clusters:
        return Reject(ADJUDICATE, "no_valid_answers", question.question_id, "")
    return build_record(question.question_id, source, question.question,
                        normalize_question(question.question), raw,
                        [(count, answers) for count, answers in clusters.values()])


def adjudication_column(columns: Sequence[str]) -> str:
    """The first of `ADJUDICATED_COLUMNS` among a sheet's label columns."""
    column = next((c for c in ADJUDICATED_COLUMNS if c in columns), None)
    if column is None:
        raise SheetError(f"no adjudicated / annotator_cluster / Combined column in {list(columns)}; "
                         f"use --column")
    return column


def adjudicate(questions: Sequence[SheetQuestion], column: str, invalid_labels: Sequence[str],
               source: str) -> tuple[list[dict], list[Reject]]:
    """(protoqa-data records, rejects) of every question's adjudicated labels (`record_from_sheet`)."""
    records, rejects = [], []
    for question in questions:
        result = record_from_sheet(question, column, invalid_labels, source)
        if isinstance(result, Reject):
            rejects.append(result)
        else:
            records.append(result)
    return records, rejects
