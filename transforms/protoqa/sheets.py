"""ProtoQA annotator round trip (`csdata protoqa sheets import` and `sheets adjudicate`): BLANC
agreement between two annotators, their disagreements, the adjudication sheet and the
adjudicated protoqa-data records. Plain Python: the crowdsourced set is ~150 questions.

The sheets themselves are written by `transforms.protoqa.sheet_export` and read by
`transforms.protoqa.sheet_read`. Labels in `sheets.invalid_labels` (`?`, `invalid`) mean "no
cluster": such answers stay in `raw` and out of every cluster, and are not mentions for BLANC.
"""
from __future__ import annotations

from collections import Counter, OrderedDict
from typing import Optional, Sequence

from filters.protoqa import normalize_question
from transforms.core.accounting import Reject
from transforms.protoqa.blanc import LinkCounts, blanc_from_counts, link_counts
from transforms.protoqa.sheet_read import SheetError, SheetQuestion, SheetRow, read_sheet

ADJUDICATION_COLUMNS = ["question_id", "question", "answer", "count", "fixed_spelling",
                        "annotator_a", "annotator_b", "adjudicated"]


DISAGREEMENT_COLUMNS = ["question_id", "question", "answer", "count", "annotator_a", "annotator_b",
                        "kind"]


# The label column `sheets adjudicate` reads when none is named, in order of preference.
ADJUDICATED_COLUMNS = ("adjudicated", "annotator_cluster", "Combined")


ADJUDICATE = "adjudicate"


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
