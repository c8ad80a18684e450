"""ProtoQA question curation (`csdata protoqa questions`) as Beam transforms.

read (protoqa-data JSONL rows) -> normalise -> exact duplicates (grouped by normalised question)
-> near duplicates (MinHash LSH over character shingles, grouped by band bucket) -> excluded
question classes -> omitted ids / questions -> answer checks -> flag column. Every drop is a
`Reject` with its stage and reason; the per-element logic is in plain functions below and in
`filters/protoqa_curation.py`.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable, Iterator, Optional, Sequence, Union

import apache_beam as beam
import numpy as np

from filters.protoqa_curation import (answer_problem, excluded_class, flag_reason,
                                      normalize_question, omitted, same_question)
from transforms.accounting import Reject, Stage
from transforms.curation import lsh_bands, similarity

READ = "read"
DEDUP_EXACT = "dedup_exact"
DEDUP_NEAR = "dedup_near"
CLASS_FILTER = "class_filter"
OMITTED = "omitted"
ANSWER_CHECK = "answer_check"
QUESTION_STAGES = [READ, DEDUP_EXACT, DEDUP_NEAR, CLASS_FILTER, OMITTED, ANSWER_CHECK]


# ---- reading ---------------------------------------------------------------------------------

def parse_question(line: str, default_source: str = "") -> Iterable[Union[dict, Reject]]:
    """One protoqa-data JSONL line -> a question dict (answers: [(string, count)] in file order).

    Scraped rows have one string per cluster and `raw == {string: count}`; rows with clusters
    take the answers from `raw` all the same, so any protoqa-data file can be curated.
    """
    line = line.strip()
    if not line:
        return []
    digest = hashlib.sha1(line.encode("utf-8")).hexdigest()[:12]
    try:
        row = json.loads(line)
        question = row["question"]
        original = question["original"] if isinstance(question, dict) else str(question)
        meta = row.get("metadata") or {}
        question_id = str(meta.get("id") or f"line-{digest}")
        raw = (row.get("answers") or {}).get("raw") or {}
        answers = [(str(a), c) for a, c in raw.items()]
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        return [Reject(READ, "malformed_row", f"line-{digest}", str(error)[:200])]
    return [{
        "question_id": question_id,
        "source": str(meta.get("source") or default_source),
        "original": original,
        "normalized": normalize_question(original),
        "answers": answers,
    }]


def read_id_list(path: str) -> tuple[list[str], list[str]]:
    """(ids, normalised questions) of an omitted / flagged list.

    A protoqa-data JSONL file (omitted.jsonl) gives each row's id and normalised question; any
    other file is read as one id per line (`#` comments allowed).
    """
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.open(path) as handle:
        text = handle.read().decode("utf-8")
    ids, questions = [], []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            row = json.loads(line)
            if (row.get("metadata") or {}).get("id"):
                ids.append(str(row["metadata"]["id"]))
            question = row.get("question")
            if isinstance(question, dict) and question.get("original"):
                questions.append(normalize_question(question["original"]))
        else:
            ids.append(line)
    return ids, questions


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


class QuestionHasher:
    """MinHash signatures (datasketch, seeded by the spec) and LSH band keys of questions."""

    def __init__(self, threshold: float, num_perm: int, shingle_size: int, seed: int):
        self.threshold, self.num_perm = threshold, num_perm
        self.shingle_size, self.seed = shingle_size, seed
        self.bands, self.rows = lsh_bands(threshold, num_perm)
        self._template = None

    def signature(self, normalized: str) -> Optional[np.ndarray]:
        from datasketch import MinHash

        grams = question_shingles(normalized, self.shingle_size)
        if not grams:
            return None
        if self._template is None:
            self._template = MinHash(num_perm=self.num_perm, seed=self.seed)
        minhash = self._template.copy()
        minhash.update_batch(sorted(grams))
        return minhash.hashvalues

    def band_keys(self, signature: np.ndarray) -> list[str]:
        return [f"{band}:{hashlib.sha1(signature[band * self.rows:(band + 1) * self.rows].tobytes()).hexdigest()[:20]}"
                for band in range(self.bands)]


class _SignQuestion(beam.DoFn):
    def __init__(self, hasher: QuestionHasher):
        self._hasher = hasher

    def process(self, question: dict) -> Iterator[tuple[str, tuple[str, Any]]]:
        signature = self._hasher.signature(question["normalized"])
        if signature is None:
            return
        for key in self._hasher.band_keys(signature):
            yield key, (question["question_id"], signature, question["normalized"])


def near_duplicate_questions(members: Sequence[tuple[str, np.ndarray, str]], threshold: float,
                             max_bucket: int) -> Iterator[tuple[str, str]]:
    """(dropped id, kept id) for each bucket member similar to one with a smaller id.

    Similar: MinHash estimate >= threshold, confirmed by `same_question` on the texts. Past
    `max_bucket` members only the first `max_bucket` are references.
    """
    ordered = sorted({m[0]: m for m in members}.values(), key=lambda m: m[0])
    for j, (doc_id, signature, text) in enumerate(ordered):
        for other_id, other, other_text in ordered[: min(j, max_bucket)]:
            if similarity(signature, other) >= threshold and same_question(text, other_text):
                yield doc_id, other_id
                break


def mark_or_keep(grouped: tuple[str, dict]) -> Iterator[Union[dict, Reject]]:
    _, groups = grouped
    for question in groups["questions"]:
        if groups["similar_to"]:
            yield Reject(DEDUP_NEAR, "near_duplicate", question["question_id"],
                         f"similar to {min(groups['similar_to'])}")
        else:
            yield question


class DropNearDuplicateQuestions(beam.PTransform):
    """MinHash LSH near-duplicate removal; of a similar pair the smaller id is kept."""

    def __init__(self, threshold: float, num_perm: int, shingle_size: int, seed: int,
                 max_bucket: int = 2000):
        super().__init__()
        self._hasher = QuestionHasher(threshold, num_perm, shingle_size, seed)
        self._max_bucket = max_bucket

    def expand(self, questions):
        threshold, max_bucket = self._hasher.threshold, self._max_bucket
        similar = (questions
                   | "SignAndBand" >> beam.ParDo(_SignQuestion(self._hasher))
                   | "GroupByBand" >> beam.GroupByKey()
                   | "CompareInBucket" >> beam.FlatMap(
                       lambda kv: near_duplicate_questions(list(kv[1]), threshold, max_bucket)))
        grouped = ({"questions": questions | "KeyById" >> beam.Map(lambda q: (q["question_id"], q)),
                    "similar_to": similar}
                   | "JoinMarks" >> beam.CoGroupByKey())
        return grouped | "Decide" >> Stage(DEDUP_NEAR, mark_or_keep,
                                           units=lambda g: len(g[1]["questions"]))


# ---- filters and output rows -----------------------------------------------------------------

def _check(stage: str, reason: Optional[str], question: dict, detail: str = ""):
    return [Reject(stage, reason, question["question_id"], detail)] if reason else [question]


def question_row(question: dict, flagged_ids: Sequence[str], patterns: dict) -> dict:
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
    """Lines of protoqa-data JSONL -> (kept question rows, [rejects...], [tallies...])."""

    def __init__(self, spec: dict, omitted_ids: Sequence[str] = (),
                 omitted_questions: Sequence[str] = (), flagged_ids: Sequence[str] = ()):
        super().__init__()
        self._spec = spec
        self._omitted_ids = list(spec["questions"].get("omitted_ids") or []) + list(omitted_ids)
        self._omitted_questions = list(omitted_questions)
        self._flagged_ids = list(flagged_ids)

    def expand(self, lines):
        section = self._spec["questions"]
        near = section["near_duplicates"]
        classes = dict(section.get("excluded_classes") or {})
        patterns = dict(section.get("flag_patterns") or {})
        min_answers = int(section["answers"]["min_answers"])
        max_total = section["answers"]["max_total"]
        max_total = None if max_total is None else int(max_total)
        default_source = section.get("source_default", "")
        omitted_ids, omitted_questions = self._omitted_ids, self._omitted_questions
        flagged_ids = self._flagged_ids
        rejects, tallies = [], []

        def collect(result):
            kept, rej, tal = result
            rejects.append(rej)
            tallies.append(tal)
            return kept

        questions = collect(lines | "Parse" >> Stage(
            READ, lambda line: parse_question(line, default_source),
            units=lambda line: 1 if line.strip() else 0))
        grouped = (questions | "KeyByText" >> beam.Map(lambda q: (q["normalized"], q))
                   | "GroupByText" >> beam.GroupByKey())
        questions = collect(grouped | "PickOne" >> Stage(
            DEDUP_EXACT, pick_question, units=lambda g: len(list(g[1]))))
        if near["enabled"]:
            questions = collect(questions | "NearDuplicates" >> DropNearDuplicateQuestions(
                float(near["threshold"]), int(near["num_perm"]), int(near["shingle_size"]),
                int(self._spec["seed"]), int(near["max_bucket"])))
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
        all_rejects = rejects | "FlattenRejects" >> beam.Flatten()
        all_tallies = tallies | "FlattenTallies" >> beam.Flatten()
        return rows, all_rejects, all_tallies
