"""Fidelity of the ReCoRD generator against published examples (a measurement, not a test).

For each published passage, rebuild an article: the passage body as its leading paragraph, the
highlights, and as rest paragraphs the queries' original sentences (the placeholder filled with
the mention whose sha1 matches the published query id, or with each answer when the file
carries no ids). Run stages 1-2 on those articles and compare passages, entities, queries, answers
and ids with the release.

    .venv/bin/python tests/fidelity_record.py ../shared/samples/record/*.json*
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pipeline.cli import quiet_beam_import_warning  # noqa: E402

quiet_beam_import_warning()

from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402

from data_specs import load_spec  # noqa: E402
from pipeline.record_beam import run_record  # noqa: E402
from transforms.core.io import read_table  # noqa: E402
from transforms.record.article import HIGHLIGHT_SEP  # noqa: E402

PLACEHOLDER = "@placeholder"


def load_examples(path: str) -> list[dict]:
    """Published passages as {id, source, text, entities, qas:[{id?, query, answers}]}."""
    if path.endswith(".json"):
        data = json.load(open(path, encoding="utf-8"))["data"]
        return [{"id": d["id"], "source": d["source"], "text": d["passage"]["text"],
                 "entities": d["passage"]["entities"], "qas": d["qas"]} for d in data]
    examples = []
    for line in open(path, encoding="utf-8"):
        d = json.loads(line)
        text = d["passage"]["text"]
        examples.append({"id": hashlib.sha1(text.encode()).hexdigest(), "source": d["source"],
                         "text": text, "entities": d["passage"]["entities"], "qas": d["qas"]})
    return examples


def original_sentences(example: dict, qa: dict) -> list[str]:
    """The query with its placeholder filled back in.

    With a published id, the one mention whose sha1 matches; without one (SuperGLUE files), one
    variant per answer text and per answer's last word, since the replaced mention is unknown.
    """
    text = example["text"]
    answers = [a["text"] for a in qa["answers"]]
    if "id" in qa:
        digest = qa["id"].split("-")[1]
        candidates = answers + [text[e["start"]: e["end"] + 1] for e in example["entities"]]
        for cand in candidates:
            sentence = qa["query"].replace(PLACEHOLDER, cand)
            if hashlib.sha1(sentence.encode("utf-8")).hexdigest() == digest:
                return [sentence]
    variants = dict.fromkeys(answers + [a.split()[-1] for a in answers])
    return [qa["query"].replace(PLACEHOLDER, v) for v in variants]


def rebuild(example: dict) -> dict:
    body, *highlights = example["text"].split(HIGHLIGHT_SEP)
    sentences = list(dict.fromkeys(s for qa in example["qas"] for s in original_sentences(example, qa)))
    return {"id": example["id"], "article_lines": [body] + sentences, "highlights": highlights}


def prf(found: set, gold: set) -> tuple[float, float, float]:
    tp = len(found & gold)
    p = tp / len(found) if found else 0.0
    r = tp / len(gold) if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--keep", help="keep the run here")
    parser.add_argument("--show", type=int, default=0, help="print N mismatching queries")
    args = parser.parse_args()
    examples = [e for f in args.files for e in load_examples(f)]
    work = args.keep or tempfile.mkdtemp(prefix="fidelity-")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "articles.jsonl"), "w", encoding="utf-8") as out:
        for example in examples:
            out.write(json.dumps(rebuild(example), ensure_ascii=False) + "\n")
    # The samples repeat passages on purpose: no near-duplicate removal.
    spec = load_spec("record", [*args.overrides, "curation.near_duplicates.enabled=false"])
    run_record(spec, [os.path.join(work, "articles.jsonl")], os.path.join(work, "out"),
               options=PipelineOptions(["--runner=FnApiRunner"]))
    passages = {r["passage_id"]: r for r in read_table(os.path.join(work, "out"), "passages").to_pylist()}
    queries = read_table(os.path.join(work, "out"), "queries").to_pylist()
    rejects = read_table(os.path.join(work, "out"), "rejects").to_pylist()
    by_passage: dict[str, dict[str, dict]] = {}
    for q in queries:
        by_passage.setdefault(q["passage_id"], {})[q["query"]] = q

    same_text = 0
    ent_found, ent_gold = set(), set()
    n_queries = found = same_answers = same_ids = with_ids = 0
    reasons = Counter(r["reason"] for r in rejects)
    shown = 0
    for example in examples:
        pid = example["id"]
        row = passages.get(pid)
        if row and row["text"] == example["text"]:
            same_text += 1
        if row:
            ent_found |= {(pid, e["start"], e["end"]) for e in row["entities"]}
        ent_gold |= {(pid, e["start"], e["end"]) for e in example["entities"]}
        ours = by_passage.get(pid, {})
        for qa in example["qas"]:
            n_queries += 1
            q = ours.get(qa["query"])
            gold_answers = sorted((a["start"], a["end"], a["text"]) for a in qa["answers"])
            if q is None:
                if shown < args.show:
                    shown += 1
                    print("MISSING:", qa["query"][:160])
                continue
            found += 1
            answers = sorted((a["start"], a["end"], a["text"]) for a in q["answers"])
            same_answers += answers == gold_answers
            if answers != gold_answers and shown < args.show:
                shown += 1
                print("ANSWERS:", qa["query"][:100], "\n   ours", answers, "\n   gold", gold_answers)
            if "id" in qa:
                with_ids += 1
                same_ids += q["query_id"] == qa["id"]
    p, r, f = prf(ent_found, ent_gold)
    print(json.dumps({
        "passages": len(examples),
        "passages_kept": len(passages),
        "passage_text_identical": same_text,
        "entity_spans": {"precision": round(p, 3), "recall": round(r, 3), "f1": round(f, 3)},
        "published_queries": n_queries,
        "queries_regenerated": found,
        "answers_identical": same_answers,
        "ids_checked": with_ids,
        "ids_identical": same_ids,
        "rejects_by_reason": dict(reasons.most_common()),
        "work_dir": work,
    }, indent=2))


if __name__ == "__main__":
    main()
