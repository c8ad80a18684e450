"""`csdata diff RUN --release FILE` for ReCoRD, and the comparison `make fidelity` reports
(tests/fidelity_record.py calls `compare`): a run's passages, entities and queries against a
published file of the same articles (the official JSON, or SuperGLUE's JSONL). Plain Python.

Passages are matched by id (the official files' `id` is the article's, as the run's
`passage_id`), else by identical text. Per passage: identical text, entity spans (P/R/F1 over
all passages; errors `ner_missed`, `ner_extra`, `boundary`). Per published query: regenerated
(the same query text in the matched passage) or lost, with its cause: the reject of its source
sentence (`shared_ngram`, `no_entity_in_passage`, ... the run's own reasons), `passage_rejected`,
or `no_reject_for_sentence` (a sentence split that differs, most often); a regenerated query's
answers identical or differing (`link_missed`, `answer_not_an_entity`, `wrong_link`,
`answer_not_published`), and its id identical or not. Every lost or differing query is listed.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

from transforms.core.errors import UserError
from transforms.core.io.tables import read_table
from transforms.core.io.untrusted import parse_json
from transforms.core.reporting.report import json_lines, not_a_release, read_reference

PLACEHOLDER = "@placeholder"
OPTION = "--release"
SHAPE = ('the official JSON {"data": [{"id", "passage": {"text", "entities"}, "qas"}]} or '
         'SuperGLUE JSONL with "passage" and "qas"')


def _offset(value: Any) -> bool:
    return type(value) is int and 0 <= value < 2**31          # the run's tables hold int32 offsets


def _span_list(items: Any, text: bool = False) -> bool:
    """Entities or answers as published: objects with integer `start` and `end` (and `text`)."""
    return isinstance(items, list) and all(
        isinstance(i, dict) and _offset(i.get("start")) and _offset(i.get("end"))
        and (not text or isinstance(i.get("text"), str)) for i in items)


def published_examples(path: Union[str, Path], option: str = OPTION) -> list[dict]:
    """Published passages as {id, source, text, entities, qas: [{id?, query, answers}]} (ends
    inclusive, as published); a file of another shape is a UserError. JSONL passages without an
    id get sha1(text)."""
    text = read_reference(path, option)
    try:
        document = parse_json(text)
    except ValueError:
        document = None
    if isinstance(document, dict) and isinstance(document.get("data"), list):
        entries = document["data"]
    else:
        try:
            entries = json_lines(path, text, option)
        except UserError:
            raise not_a_release(path, "ReCoRD", SHAPE, option) from None
    examples = []
    for entry in entries:
        passage = entry.get("passage") if isinstance(entry, dict) else None
        if not (isinstance(passage, dict) and isinstance(passage.get("text"), str)
                and _span_list(passage.get("entities") or []) and isinstance(entry.get("qas"), list)
                and all(isinstance(qa, dict) and isinstance(qa.get("query"), str)
                        and _span_list(qa.get("answers") or [], text=True)
                        and isinstance(qa.get("id", ""), str) for qa in entry["qas"])):
            raise not_a_release(path, "ReCoRD", SHAPE, option)
        pid = entry["id"] if isinstance(entry.get("id"), str) else hashlib.sha1(passage["text"].encode()).hexdigest()
        examples.append({"id": pid, "source": str(entry.get("source", "")), "text": passage["text"],
                         "entities": passage.get("entities") or [],
                         "qas": [{**qa, "answers": qa.get("answers") or []} for qa in entry["qas"]]})
    if not examples or not any(e["qas"] for e in examples):
        raise not_a_release(path, "ReCoRD", SHAPE + ", with at least one query", option)
    return examples


def original_sentences(example: dict, qa: dict) -> list[str]:
    """The query with its placeholder filled back in.

    With a published id, the one mention whose sha1 matches; without one (SuperGLUE files), one
    variant per answer text and per answer's last word, since the replaced mention is unknown.
    """
    text = example["text"]
    answers = [a["text"] for a in qa["answers"]]
    if "id" in qa and qa["id"].count("-") >= 2:
        digest = qa["id"].split("-")[1]
        candidates = answers + [text[e["start"]: e["end"] + 1] for e in example["entities"]]
        for cand in candidates:
            sentence = qa["query"].replace(PLACEHOLDER, cand)
            if hashlib.sha1(sentence.encode("utf-8")).hexdigest() == digest:
                return [sentence]
    variants = dict.fromkeys(answers + [a.split()[-1] for a in answers if a.split()])
    return [qa["query"].replace(PLACEHOLDER, v) for v in variants]


def prf(found: set, gold: set) -> tuple[float, float, float]:
    """Precision, recall and F1 of `found` against `gold`."""
    tp = len(found & gold)
    p = tp / len(found) if found else 0.0
    r = tp / len(gold) if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


class Tally:
    """The measures of a set of published passages (a part of them, or all)."""

    def __init__(self) -> None:
        self.passages = self.kept = self.same_text = 0
        self.ent_found: set = set()
        self.ent_gold: set = set()
        self.queries = self.found = self.same_answers = self.with_ids = self.same_ids = 0
        self.ans_found = self.ans_gold = self.ans_common = 0
        self.lost: Counter = Counter()
        self.entity_errors: Counter = Counter()
        self.answer_errors: Counter = Counter()
        self.answer_sets: Counter = Counter()
        self.differences: list[dict[str, str]] = []

    def count_entities(self, ours: set, gold: set) -> None:
        """Entity errors by kind: a gold span we miss with no overlapping span of ours (`ner_missed`)
        or with one (`boundary`); a span of ours overlapping no gold span (`ner_extra`)."""
        def overlaps(span: tuple, others: set) -> bool:
            return any(o[0] <= span[1] and span[0] <= o[1] for o in others)
        for span in gold - ours:
            self.entity_errors["boundary" if overlaps(span, ours) else "ner_missed"] += 1
        for span in ours - gold:
            if not overlaps(span, gold):
                self.entity_errors["ner_extra"] += 1

    def count_answers(self, ours: set, gold: set, ours_entities: set, gold_entities: set) -> str:
        """Answer errors of a regenerated query by kind: a published answer that is not one of our
        entities (`answer_not_an_entity`) or is one in another chain (`link_missed`); an answer
        of ours that is a published entity (`wrong_link`) or is not (`answer_not_published`).
        Returns the kind of the whole answer set's difference ("" when identical)."""
        for start, end, _ in gold - ours:
            self.answer_errors["link_missed" if (start, end) in ours_entities
                               else "answer_not_an_entity"] += 1
        for start, end, _ in ours - gold:
            self.answer_errors["wrong_link" if (start, end) in gold_entities
                               else "answer_not_published"] += 1
        # `entity_spans` when some difference is a span only one side has as an entity (NER:
        # missed, extra or other boundaries), else `too_large` (wrong links only), `too_small`
        # (missed links only) or `both`.
        if ours == gold:
            return ""
        spans = any((s, e) not in ours_entities for s, e, _ in gold - ours) or any(
            (s, e) not in gold_entities for s, e, _ in ours - gold)
        kind = ("entity_spans" if spans else "both" if ours - gold and gold - ours
                else "too_large" if ours - gold else "too_small")
        self.answer_sets[kind] += 1
        return kind

    def report(self, differences: bool = False) -> dict[str, Any]:
        """The measures as a dict (with `differences`, every lost or differing query)."""
        p, r, f = prf(self.ent_found, self.ent_gold)
        ap = self.ans_common / self.ans_found if self.ans_found else 0.0
        ar = self.ans_common / self.ans_gold if self.ans_gold else 0.0
        report = {
            "passages": self.passages,
            "passages_kept": self.kept,
            "passage_text_identical": self.same_text,
            "entity_spans": {"precision": round(p, 3), "recall": round(r, 3), "f1": round(f, 3)},
            "published_queries": self.queries,
            "queries_regenerated": self.found,
            "answers_identical": self.same_answers,
            # Over regenerated queries: our answer mentions against the published ones (a wrong
            # coreference link is an extra answer, a missed link a missing one).
            "answer_mentions": {"precision": round(ap, 3), "recall": round(ar, 3)},
            "ids_checked": self.with_ids,
            "ids_identical": self.same_ids,
            "lost_by_reason": dict(self.lost.most_common()),
            "entity_errors": dict(self.entity_errors.most_common()),
            "answer_errors": dict(self.answer_errors.most_common()),
            "answer_sets_differing": dict(self.answer_sets.most_common()),
        }
        if differences:
            report["queries"] = self.differences
        return report


def sentence_reject_reason(example: dict, qa: dict, rejects: Sequence[dict]) -> str:
    """Why a published query was not regenerated: the reject of its sentence, if any."""
    sentences = original_sentences(example, qa)
    for r in rejects:
        if r["record_id"].startswith(example["id"] + "#") and any(
                r["detail"] and s.startswith(r["detail"][:120]) for s in sentences):
            return r["reason"]
    return "no_reject_for_sentence"


def compare(examples: Sequence[dict], passages: Sequence[dict], queries: Sequence[dict],
            rejects: Sequence[dict], part_of: Optional[Callable[[dict], str]] = None) -> dict[str, Tally]:
    """Tallies of the run's rows against the published examples: "total", and one per part
    when `part_of` names each example's part (the fidelity measurement's dev / held-aside)."""
    by_id = {r["passage_id"]: r for r in passages}
    by_text = {r["text"]: r for r in passages}
    by_passage: dict[str, dict[str, dict]] = {}
    for q in queries:
        by_passage.setdefault(q["passage_id"], {})[q["query"]] = q
    tallies: dict[str, Tally] = {"total": Tally()}
    for example in examples:
        row = by_id.get(example["id"]) or by_text.get(example["text"])
        pid = row["passage_id"] if row else example["id"]
        both = [tallies["total"]]
        if part_of is not None:
            both.append(tallies.setdefault(part_of(example), Tally()))
        ours_entities = {(e["start"], e["end"]) for e in row["entities"]} if row else set()
        gold_entities = {(e["start"], e["end"]) for e in example["entities"]}
        for t in both:
            t.passages += 1
            t.kept += row is not None
            t.same_text += bool(row and row["text"] == example["text"])
            t.ent_found |= {(example["id"], *span) for span in ours_entities}
            t.ent_gold |= {(example["id"], *span) for span in gold_entities}
            t.count_entities(ours_entities, gold_entities)
        ours_q = by_passage.get(pid, {})
        for qa in example["qas"]:
            q = ours_q.get(qa["query"])
            gold_answers = sorted((a["start"], a["end"], a["text"]) for a in qa["answers"])
            for t in both:
                t.queries += 1
            if q is None:
                reason = sentence_reject_reason(example, qa, rejects) if row else "passage_rejected"
                for t in both:
                    t.lost[reason] += 1
                    t.differences.append({"passage_id": example["id"], "query": qa["query"],
                                          "verdict": "lost", "cause": reason})
                continue
            answers = sorted((a["start"], a["end"], a["text"]) for a in q["answers"])
            for t in both:
                kind = t.count_answers(set(answers), set(gold_answers), ours_entities, gold_entities)
                t.found += 1
                t.same_answers += answers == gold_answers
                t.ans_found += len(answers)
                t.ans_gold += len(gold_answers)
                t.ans_common += len(set(answers) & set(gold_answers))
                if "id" in qa:
                    t.with_ids += 1
                    t.same_ids += q["query_id"] == qa["id"]
                if kind:
                    t.differences.append({"passage_id": example["id"], "query": qa["query"],
                                          "verdict": "answers differ", "cause": kind})
    return tallies


def diff(run_dir: Union[str, Path], release: Union[str, Path]) -> dict[str, Any]:
    """The account of a run against a published file of the same articles (module doc)."""
    examples = published_examples(release)
    passages = read_table(run_dir, "passages", ["passage_id", "text", "entities"]).to_pylist()
    queries = read_table(run_dir, "queries", ["query_id", "passage_id", "query", "answers"]).to_pylist()
    rejects = read_table(run_dir, "rejects", ["reason", "record_id", "detail"]).to_pylist()
    total = compare(examples, passages, queries, rejects)["total"]
    return {"dataset": "record", "run": str(run_dir), "release": str(release), **total.report(differences=True)}


def format_diff(report: dict[str, Any]) -> str:
    """The account as a table for the terminal, then every lost or differing query."""
    e, a = report["entity_spans"], report["answer_mentions"]
    rows = [("published passages", report["passages"]), ("  in the run", report["passages_kept"]),
            ("  identical text", report["passage_text_identical"]),
            ("entity spans P / R / F1", f"{e['precision']:.3f} / {e['recall']:.3f} / {e['f1']:.3f}"),
            ("published queries", report["published_queries"]),
            ("  regenerated", report["queries_regenerated"]),
            ("  identical answer sets", report["answers_identical"]),
            ("  identical ids", f"{report['ids_identical']} of {report['ids_checked']} with ids"),
            ("answer mentions P / R", f"{a['precision']:.3f} / {a['recall']:.3f}")]
    lines = [f"ReCoRD: {report['run']} against {report['release']}"]
    lines += [f"{name:<28}{value}" for name, value in rows]
    for title, key in (("lost queries by cause", "lost_by_reason"), ("entity errors", "entity_errors"),
                       ("answer sets differing", "answer_sets_differing")):
        if report[key]:
            lines.append(f"{title}: " + ", ".join(f"{k} {v}" for k, v in report[key].items()))
    if report["queries"]:
        lines += ["", f"{'passage':<14}{'verdict':<16}{'cause':<26}query"]
        lines += [f"{q['passage_id'][:12]:<14}{q['verdict']:<16}{q['cause']:<26}{q['query'][:80]}"
                  for q in report["queries"]]
    return "\n".join(lines)
