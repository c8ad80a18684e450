"""ProtoQA question curation (`csdata protoqa questions`) as Beam transforms.

read (protoqa-data JSONL rows, `transforms.protoqa.read`) -> normalise -> exact duplicates
(grouped by normalised question) -> near duplicates (MinHash LSH over character shingles, grouped
by band bucket) -> excluded question classes -> omitted ids / questions -> answer checks -> flag
column. Every drop is a `Reject` with its stage and reason; the per-element logic is in plain
functions below and in `filters/protoqa.py`.
"""
from __future__ import annotations

import json
from typing import Iterable, Iterator, Mapping, Optional, Sequence, Union

import apache_beam as beam

from data_specs.models import LimitsSection, QuestionsSection
from filters.protoqa import (
    answer_problem,
    excluded_class,
    flag_reason,
    omitted,
    same_question,
)
from transforms.core.accounting import Reject
from transforms.core.dedup import DropNearDuplicates
from transforms.core.stages import Ledger, Stage
from transforms.protoqa.read import READ, parse_question, question_units

DEDUP_EXACT = "dedup_exact"
DEDUP_NEAR = "dedup_near"
CLASS_FILTER = "class_filter"
OMITTED = "omitted"
ANSWER_CHECK = "answer_check"
QUESTION_STAGES = [READ, DEDUP_EXACT, DEDUP_NEAR, CLASS_FILTER, OMITTED, ANSWER_CHECK]


# ---- exact duplicates ------------------------------------------------------------------------

def pick_question(grouped: tuple[str, Iterable[dict]]) -> Iterator[Union[dict, Reject]]:
    """Keep the question with the smallest id among those with the same normalised text."""
    _, questions = grouped
    ordered = sorted(questions, key=lambda q: (q["question_id"], json.dumps(q["answers"])))
    for i, question in enumerate(ordered):
        if i == 0:
            yield question
        elif question["question_id"] == ordered[0]["question_id"]:
            yield Reject(DEDUP_EXACT, "duplicate_id", question["question_id"], "")
        else:
            yield Reject(DEDUP_EXACT, "duplicate_question", question["question_id"],
                         f"same as {ordered[0]['question_id']}")


# ---- near duplicates -------------------------------------------------------------------------

def question_shingles(normalized: str, size: int) -> set[bytes]:
    """Character `size`-grams of the normalised question without its final punctuation."""
    text = normalized.rstrip(" .?!:")
    if len(text) <= size:
        return {text.encode("utf-8")} if text else set()
    return {text[i : i + size].encode("utf-8") for i in range(len(text) - size + 1)}


# ---- filters and output rows -----------------------------------------------------------------

def _check(stage: str, reason: Optional[str], question: dict, detail: str = ""):
    return [Reject(stage, reason, question["question_id"], detail)] if reason else [question]


def question_row(question: dict, flagged_ids: Sequence[str],
                 patterns: Mapping[str, Sequence[str]]) -> dict:
    """The output row of a kept question: its answers as objects, their totals and its flag."""
    reason = flag_reason(question["question_id"], question["normalized"], flagged_ids, patterns)
    return {
        "question_id": question["question_id"], "source": question["source"],
        "original": question["original"], "normalized": question["normalized"],
        "answers": [{"answer": a, "count": int(c)} for a, c in question["answers"]],
        "num_answers": int(sum(c for _, c in question["answers"])),
        "num_clusters": len(question["answers"]),
        "flagged": bool(reason), "flag_reason": reason,
    }


def scraped_jsonl(row: dict) -> str:
    """A curated question back in protoqa-data's scraped format (one string per cluster)."""
    qid = row["question_id"]
    answers = [(a["answer"], a["count"]) for a in row["answers"]]
    clusters = {f"{qid}.{i}": {"count": c, "answers": [a]} for i, (a, c) in enumerate(answers)}
    return json.dumps({
        "metadata": {"id": qid, "source": row["source"]},
        "question": {"original": row["original"], "normalized": row["normalized"]},
        "answers": {"raw": dict(answers), "clusters": clusters},
        "num": {"answers": row["num_answers"], "clusters": row["num_clusters"]},
    })


class CurateQuestions(beam.PTransform):
    """Lines of protoqa-data JSONL -> (kept question rows, [rejects...], [tallies...]).

    The lines are text (`beam.io.ReadFromText`) or, better, `ReadQuestionLines`' `(path:line,
    bytes)`, which are decoded by `questions.encoding` / `questions.control_chars`.

    `questions` is the spec's `questions` section and `seed` the spec's seed (MinHash).
    `omitted_ids` / `omitted_questions` (normalised) are dropped besides
    `questions.omitted_ids`; `flagged_ids` are kept with `flagged` = true.
    """

    def __init__(self, questions: QuestionsSection, seed: int, omitted_ids: Sequence[str] = (),
                 omitted_questions: Sequence[str] = (), flagged_ids: Sequence[str] = (),
                 limits: Optional[LimitsSection] = None):
        super().__init__()
        self._questions = questions
        self._limits = limits
        self._seed = seed
        self._omitted_ids = [*questions.omitted_ids, *omitted_ids]
        self._omitted_questions = list(omitted_questions)
        self._flagged_ids = list(flagged_ids)

    def expand(self, lines):
        section = self._questions
        near = section.near_duplicates
        classes, patterns = section.excluded_classes, section.flag_patterns
        min_answers, max_total = section.answers.min_answers, section.answers.max_total
        default_source = section.source_default
        omitted_ids, omitted_questions = self._omitted_ids, self._omitted_questions
        flagged_ids = self._flagged_ids
        ledger = Ledger()
        collect = ledger.add

        policy, controls, limits = section.encoding, section.control_chars, self._limits
        questions = collect(lines | "Parse" >> Stage(
            READ, lambda line: parse_question(line, default_source, policy, controls, limits),
            units=question_units))
        grouped = (questions | "KeyByText" >> beam.Map(lambda q: (q["normalized"], q))
                   | "GroupByText" >> beam.GroupByKey())
        questions = collect(grouped | "PickOne" >> Stage(
            DEDUP_EXACT, pick_question, units=lambda g: len(list(g[1]))))
        if near.enabled:
            size = near.shingle_size
            questions = collect(questions | "NearDuplicates" >> DropNearDuplicates(
                near.threshold, near.num_perm, self._seed,
                shingles=lambda q: question_shingles(q["normalized"], size),
                key=lambda q: q["question_id"], stage=DEDUP_NEAR, max_bucket=near.max_bucket,
                payload=lambda q: q["normalized"], confirm=same_question))
        else:
            questions = collect(questions | "NoNearDuplicates" >> Stage(DEDUP_NEAR, lambda q: [q]))
        questions = collect(questions | "ClassFilter" >> Stage(
            CLASS_FILTER, lambda q: _check(CLASS_FILTER, excluded_class(q["normalized"], classes), q)))
        questions = collect(questions | "Omitted" >> Stage(
            OMITTED, lambda q: _check(OMITTED, omitted(q["question_id"], q["normalized"],
                                                       omitted_ids, omitted_questions), q)))
        questions = collect(questions | "AnswerCheck" >> Stage(
            ANSWER_CHECK, lambda q: _check(
                ANSWER_CHECK, answer_problem(dict(q["answers"]), min_answers, max_total), q,
                f"{len(q['answers'])} answers, total {sum(c for _, c in q['answers'] if isinstance(c, int))}")))
        rows = questions | "Flag" >> beam.Map(question_row, flagged_ids, patterns)
        all_rejects = ledger.rejects | "FlattenRejects" >> beam.Flatten()
        all_tallies = ledger.tallies | "FlattenTallies" >> beam.Flatten()
        return rows, all_rejects, all_tallies
