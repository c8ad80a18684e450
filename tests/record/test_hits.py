"""Human validation round trip (ReCoRD §3.4): HIT export, worker QC, validation and splits.

The run directory is built here with pyarrow (invented passages); worker results are simulated
with a seeded random.Random: five honest workers (~90% accurate) and a spammer who always picks
option 1, which is never a reference except on one trap triple.
"""
from __future__ import annotations

import csv
import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data_specs import RecordSpec, load_schema, load_spec
from transforms.core.accounting import format_summary
from transforms.core.io.tables import read_table
from transforms.record.crowd import eval_targets, import_results, passage_hash
from transforms.record.hits_export import HIDDEN_PREFIX, HIT_COLUMNS, export_hits
from transforms.record.hits_results import RESULT_COLUMNS, Submission, run_quality_control

SEP = "\n@highlight\n"
SPLIT_OF = ["train", "validation", "train", "test", "", "train",
            "validation", "test", "train", "", "validation", "test"]
NAMES = [("Alice Moreau", "Bruno Keller", "Lyon", "Daily Planet"),
         ("Zoë Lindqvist", "Farid Haddad", "Oslo", "Harbour Trust"),
         ("Greta Novak", "Hiro Tanaka", "Porto", "Civic Museum"),
         ("Ines Duarte", "Jonas Berg", "Tallinn", "River Council"),
         ("Kemal Arslan", "Lena Vogel", "Quito", "Northern Bank"),
         ("Marek Zielinski", "Nadia Petrova", "Accra", "Open Theatre"),
         ("Oskar Nilsson", "Priya Raman", "Hanoi", "Glass Studio"),
         ("Rafael Ortiz", "Sofia Conti", "Perth", "Mountain Club"),
         ("Tomas Horak", "Una Byrne", "Cusco", "Coastal Fund"),
         ("Viktor Sand", "Wen Li", "Dakar", "Silver Press"),
         ("Yara Haddad", "Zane Cooper", "Bergen", "Union Hall"),
         ("Amir Nasser", "Bea Lund", "Riga", "Forest Guild")]
HONEST = [f"honest{i}" for i in range(5)]
SPAMMER = "spammer"
TRAIN_ORIGIN = {i for i, s in enumerate(SPLIT_OF) if s == "train"}
TRAP_PASSAGE = 1          # eval-origin; its query 0 has option 1 as the answer


def pid(i: int) -> str:
    return hashlib.sha1(f"passage-{i}".encode()).hexdigest()


def qid(i: int, k: int) -> str:
    return f"{pid(i)}-{hashlib.sha1(f'sentence-{i}-{k}'.encode()).hexdigest()}-0"


def mentions(text: str, mention: str) -> list[tuple[int, int]]:
    """(start, inclusive end) of every occurrence of `mention`."""
    out, start = [], text.find(mention)
    while start >= 0:
        out.append((start, start + len(mention) - 1))
        start = text.find(mention, start + 1)
    return out


def make_passage(i: int) -> dict[str, Any]:
    person, other, city, org = NAMES[i]
    body = f"{person} met {other} in {city} on Monday. {person} later joined the {org}, based in {city}."
    text = body + SEP + f"{org} hires {other}"
    ents = []
    for name, label in ((person, "PERSON"), (other, "PERSON"), (city, "GPE")):
        ents += [{"start": s, "end": e, "text": name, "label": label, "chain": 0}
                 for s, e in mentions(text, name)]
    s, e = mentions(text, f"the {org}")[0]
    ents.append({"start": s, "end": e, "text": f"the {org}", "label": "ORG", "chain": 3})
    s, e = mentions(text, f"{org} hires")[0]
    ents.append({"start": s, "end": s + len(org) - 1, "text": org, "label": "ORG", "chain": 3})
    ents.sort(key=lambda x: x["start"])
    return {"passage_id": pid(i), "source": "CNN", "url": f"http://example.com/{i}", "split": SPLIT_OF[i],
            "text": text, "body_end": len(body), "passage_paragraphs": 1, "rest_paragraphs": 3,
            "tokens": len(body.split()), "entities": ents}


def answer_entity(i: int, k: int) -> int:
    """Index in NAMES[i] of query k's answer: never the first-mentioned one, except the trap."""
    return 0 if (i, k) == (TRAP_PASSAGE, 0) else (1, 2, 3)[k]


def make_query(passage: dict[str, Any], i: int, k: int, reader_correct: bool = False) -> dict[str, Any]:
    name = NAMES[i][answer_entity(i, k)]
    answers = [{"start": e["start"], "end": e["end"], "text": e["text"]}
               for e in passage["entities"] if e["text"] in (name, f"the {name}")]
    query = f"@placeholder will speak at a conference in the capital next week, aides said ({k})."
    return {"query_id": qid(i, k), "passage_id": pid(i), "query": query,
            "sentence": query.replace("@placeholder", name), "sentence_index": k, "placeholder_start": 0,
            "mention": name, "label": "PERSON", "chain": 0, "answers": answers, "filters_passed": ["all"],
            "fold": i % 5, "reader": "lexical", "reader_answer": "", "reader_correct": reader_correct}


def write_table(run: Path, table: str, schema: str, rows: list[dict[str, Any]]) -> None:
    (run / table).mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=load_schema("record", schema)),
                   run / table / "part-00000-of-00001.parquet")


def write_filtered_run(run: Path) -> Path:
    """The invented filtered run: every passage with three queries, plus one the reader answers."""
    passages = [make_passage(i) for i in range(len(NAMES))]
    queries = [make_query(p, i, k) for i, p in enumerate(passages) for k in range(3)]
    queries.append({**make_query(passages[0], 0, 1, reader_correct=True), "query_id": qid(0, 9)})
    random.Random(3).shuffle(queries)          # the reader must not rely on stored order
    write_table(run, "passages", "passages", passages)
    write_table(run, "queries", "filtered_queries", queries)
    return run


@pytest.fixture(scope="module")
def filtered_run(tmp_path_factory) -> Path:
    return write_filtered_run(tmp_path_factory.mktemp("filtered"))


def spec(*overrides: str) -> RecordSpec:
    return load_spec("record", ["hits.qc_every=20", *overrides])


def import_with(run_dir: Path, results: Path, out: Path, record_spec: RecordSpec) -> dict[str, Any]:
    return import_results(run_dir, results, out, record_spec.hits, record_spec.splits, record_spec.seed, record_spec.limits)


# --------------------------------------------------------------------------- export

@pytest.fixture(scope="module")
def hits(filtered_run: Path, tmp_path_factory) -> list[dict[str, str]]:
    out = tmp_path_factory.mktemp("hits") / "hits.csv"
    assert export_hits(filtered_run, out, spec().hits) == 36
    with out.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        assert tuple(reader.fieldnames) == HIT_COLUMNS
        return list(reader)


def test_export_marks_and_numbers_every_mention(hits):
    row = next(r for r in hits if r["triple_id"] == qid(0, 2))
    assert row["passage"] == (
        "[1: Alice Moreau] met [2: Bruno Keller] in [3: Lyon] on Monday. [1: Alice Moreau] later "
        "joined [4: the Daily Planet], based in [3: Lyon]."
        "\n@highlight\n[4: Daily Planet] hires [2: Bruno Keller]")
    assert json.loads(row["options"]) == [
        {"number": 1, "text": "Alice Moreau"}, {"number": 2, "text": "Bruno Keller"},
        {"number": 3, "text": "Lyon"}, {"number": 4, "text": "the Daily Planet"}]
    assert json.loads(row["hidden_reference_numbers"]) == [4]
    assert json.loads(row["hidden_reference_texts"]) == ["the Daily Planet", "Daily Planet"]


def test_export_shows_placeholder_hides_references_and_sorts(hits):
    hidden = [c for c in HIT_COLUMNS if c.startswith(HIDDEN_PREFIX)]
    assert hidden == ["hidden_reference_numbers", "hidden_reference_texts"]
    assert all("@placeholder" not in r["query"] and r["query"].startswith("X will speak") for r in hits)
    order = [(r["passage_id"], r["triple_id"]) for r in hits]
    assert order == sorted(order)
    assert qid(0, 9) not in {r["triple_id"] for r in hits}        # dropped by the machine filter
    unicode_row = next(r for r in hits if r["passage_id"] == pid(1))
    assert "[1: Zoë Lindqvist]" in unicode_row["passage"] and "Zoë" in unicode_row["options"]
    trap = next(r for r in hits if r["triple_id"] == qid(TRAP_PASSAGE, 0))
    assert json.loads(trap["hidden_reference_numbers"]) == [1]


# --------------------------------------------------------------------------- simulated workers

class Simulation:
    """Seeded crowd answers for every triple, with the honest correct count kept as ground truth."""

    def __init__(self, seed: int = 7):
        self.rng = random.Random(seed)
        self.rows: list[dict[str, str]] = []
        self.honest_correct: dict[str, int] = {}

    def options(self, i: int) -> list[str]:
        person, other, city, org = NAMES[i]
        return [person, other, city, f"the {org}"]

    def honest(self, worker: str, i: int, k: int, correct: bool) -> None:
        opts = self.options(i)
        answer = answer_entity(i, k)
        pick = answer if correct else self.rng.choice([j for j in range(4) if j != answer])
        if self.rng.random() < 0.5:
            chosen = str(pick + 1)
        else:   # by text; sometimes with another case or without the article
            chosen = self.rng.choice([opts[pick], opts[pick].upper(), opts[pick].removeprefix("the ")])
        self.add(worker, qid(i, k), chosen)
        self.honest_correct[qid(i, k)] = self.honest_correct.get(qid(i, k), 0) + int(correct)

    def add(self, worker: str, triple: str, chosen: str) -> None:
        self.rows.append({"worker_id": worker, "triple_id": triple, "chosen_entity": chosen, "feedback": ""})

    def build(self) -> list[dict[str, str]]:
        for i in range(len(NAMES)):
            for k in range(3):
                self.triple(i, k)
        self.add(HONEST[0], "no-such-triple", "1")
        self.rng.shuffle(self.rows)
        for n, row in enumerate(self.rows):
            row["assignment_id"] = f"A{n:04d}"
        return self.rows

    def triple(self, i: int, k: int) -> None:
        if (i, k) == (4, 0):
            return                                   # never judged
        if (i, k) != (5, 0):                         # (5, 0): judged by the spammer only
            workers = self.rng.sample(HONEST, 3)
            if (i, k) == (6, 1):                     # hard: every honest worker wrong
                flags = [False, False, False]
            elif (i, k) == (TRAP_PASSAGE, 0):        # one honest correct, the spammer also correct
                flags = [True, False, False]
            else:
                flags = [self.rng.random() < 0.9 for _ in workers]
            for worker, ok in zip(workers, flags):
                self.honest(worker, i, k, ok)
        self.add(SPAMMER, qid(i, k), "1")


def write_results(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(RESULT_COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def simulation() -> Simulation:
    sim = Simulation()
    sim.build()
    return sim


@pytest.fixture(scope="module")
def imported(filtered_run: Path, simulation: Simulation, tmp_path_factory):
    base = tmp_path_factory.mktemp("imported")
    results = write_results(base / "results.csv", simulation.rows)
    summary = import_with(filtered_run, results, base / "out", spec())
    return summary, base / "out"


def load(out: Path, table: str) -> list[dict[str, Any]]:
    return read_table(out, table).to_pylist()


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_spammer_blocked_at_checkpoint_and_republished(imported, simulation):
    summary, out = imported
    workers = {w["worker_id"]: w for w in csv_rows(out / "workers.csv")}
    assert summary["workers"]["blocked_ids"] == [SPAMMER]
    assert all(workers[w]["blocked"] == "false" and float(workers[w]["accuracy"]) > 0.7 for w in HONEST)
    judged = [r for r in simulation.rows if r["triple_id"] != "no-such-triple"]
    blocked_after = int(workers[SPAMMER]["blocked_after"])
    assert blocked_after % 20 == 0 and blocked_after < len(judged)
    spam_before = sum(r["worker_id"] == SPAMMER for r in judged[:blocked_after])
    spam_at_previous = sum(r["worker_id"] == SPAMMER for r in judged[:blocked_after - 20])
    # blocked at the first checkpoint where the spammer had min_judged submissions
    assert spam_before >= 10 and (blocked_after == 20 or spam_at_previous < 10)
    republish = csv_rows(out / "republish.csv")
    spam_rows = [r for r in simulation.rows if r["worker_id"] == SPAMMER]
    assert [r["assignment_id"] for r in republish] == [r["assignment_id"] for r in spam_rows]
    assert {r["worker_id"] for r in republish} == {SPAMMER}
    assert summary["submissions"]["discarded_blocked"] == len(spam_rows)
    assert summary["submissions"]["unknown_triple"] == 1


def test_every_triple_lands_exactly_once(imported):
    summary, out = imported
    placed = [r["query_id"] for s in ("train", "dev", "test") for r in load(out, s)]
    rejected = [r["record_id"] for r in load(out, "rejects")]
    everything = placed + rejected
    assert sorted(everything) == sorted(qid(i, k) for i in range(len(NAMES)) for k in range(3))
    stage = summary["stages"]["human_filter"]
    assert len(set(everything)) == len(everything) == stage["in"] == 36
    assert stage["balanced"] and summary["machine_filtered_excluded"] == 1
    assert stage["kept"] == sum(s["triples"] for s in summary["splits"].values()) == len(placed)
    assert stage["kept"] + sum(stage["rejected"].values()) == 36
    assert "human_filter" in format_summary(summary)
    assert {r["stage"] for r in load(out, "rejects")} == {"human_filter"}
    used = {r["passage_id"] for s in ("train", "dev", "test") for r in load(out, s)}
    assert sorted(p["passage_id"] for p in load(out, "passages")) == sorted(used)


def test_validation_rules(imported, simulation):
    summary, out = imported
    truth = simulation.honest_correct
    train = load(out, "train")
    evals = load(out, "dev") + load(out, "test")
    origin = {pid(i): i in TRAIN_ORIGIN for i in range(len(NAMES))}
    assert train and all(origin[r["passage_id"]] and r["split"] == "train" for r in train)
    assert {r["query_id"] for r in train} == {q for q, n in truth.items() if n >= 1 and origin[q[:40]]}
    assert evals and all(not origin[r["passage_id"]] and r["correct_answers"] >= 2 for r in evals)
    assert all(r["correct_answers"] == truth[r["query_id"]] for r in train + evals)   # spammer not counted
    assert all(r["judgements"] == 3 for r in train + evals)
    reasons = {r["record_id"]: r["reason"] for r in load(out, "rejects")}
    assert reasons[qid(4, 0)] == "no_judgements"
    assert reasons[qid(5, 0)] == "blocked_only"
    assert reasons[qid(6, 1)] == "not_validated"
    assert reasons[qid(TRAP_PASSAGE, 0)] == "not_validated"     # 1 honest + spammer would make 2
    eligible = {q for q, n in truth.items() if n >= 2 and not origin[q[:40]]}
    assert {r["query_id"] for r in evals} | {q for q, r in reasons.items()
                                            if r == "not_train_origin_and_not_selected"} == eligible


def check_dev_test(out: Path, seed: int) -> tuple[list[dict], list[dict]]:
    dev, test = load(out, "dev"), load(out, "test")
    dev_p, test_p = {r["passage_id"] for r in dev}, {r["passage_id"] for r in test}
    assert dev and test and not dev_p & test_p
    assert all(r["split"] == "dev" for r in dev) and all(r["split"] == "test" for r in test)
    per_passage = max(sum(r["passage_id"] == p for r in dev + test) for p in dev_p | test_p)
    assert abs(len(dev) - len(test)) <= per_passage
    unselected = {r["record_id"][:40] for r in load(out, "rejects")
                  if r["reason"] == "not_train_origin_and_not_selected"}
    if unselected:   # drawn in hash order: every selected passage comes before every unselected one
        last_selected = max(passage_hash(seed, p) for p in dev_p | test_p)
        assert last_selected < min(passage_hash(seed, p) for p in unselected)
    return dev, test


def test_dev_test_scaled_sizes_disjoint_by_passage(imported):
    summary, out = imported
    targets = summary["targets"]
    assert targets["validated"] == summary["splits"]["train"]["triples"] + targets["eval_pool"]
    expected = max(1, int(10000 * targets["validated"] / 120730 + 0.5))
    assert targets["dev_target"] == targets["test_target"] == expected
    dev, test = check_dev_test(out, load_spec("record").seed)
    assert summary["stages"]["human_filter"]["rejected"]["not_train_origin_and_not_selected"] > 0
    assert summary["splits"]["dev"]["triples"] == len(dev)
    assert summary["splits"]["test"]["passages"] == len({r["passage_id"] for r in test})


def test_unscaled_sizes_take_the_whole_pool(filtered_run, simulation, tmp_path):
    results = write_results(tmp_path / "results.csv", simulation.rows)
    summary = import_with(filtered_run, results, tmp_path / "out", spec("splits.reference_total=10"))
    assert summary["targets"]["dev_target"] == 10000
    dev, test = check_dev_test(tmp_path / "out", load_spec("record").seed)
    assert "not_train_origin_and_not_selected" not in summary["stages"]["human_filter"]["rejected"]
    assert len(dev) + len(test) == summary["targets"]["eval_pool"]


def test_import_is_deterministic(filtered_run, imported, simulation, tmp_path):
    _, first = imported
    results = write_results(tmp_path / "results.csv", simulation.rows)
    import_with(filtered_run, results, tmp_path / "out", spec())
    second = tmp_path / "out"
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert len(files) == 8      # five Parquet tables, two CSVs, summary.json
    for rel in files:
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), rel


def test_submit_time_orders_submissions(filtered_run, tmp_path):
    """Sorted by submit_time, the spammer's ten wrong answers come first and reach a checkpoint."""
    def row(worker: str, n: int, k: int, chosen: str, hour: int) -> dict[str, str]:
        return {"worker_id": worker, "assignment_id": f"{worker}-{n}", "triple_id": qid(n, k),
                "chosen_entity": chosen, "feedback": "", "submit_time": f"2024-01-01T{hour:02d}:00:{n:02d}Z"}

    rows = [row(SPAMMER, n, 1, "1", 0) for n in range(10)] + [row(HONEST[0], n, 2, "4", 1) for n in range(10)]
    path = tmp_path / "results.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(reversed(rows))
    import_with(filtered_run, path, tmp_path / "out", spec("hits.qc_every=10"))
    workers = {w["worker_id"]: w for w in csv_rows(tmp_path / "out" / "workers.csv")}
    assert workers[SPAMMER]["blocked_after"] == "10" and workers[HONEST[0]]["accuracy"] == "1.0000"


# --------------------------------------------------------------------------- units

def sub(worker: str, correct: bool) -> Submission:
    return Submission(worker, "a", "t", "x", correct)


def test_quality_control_blocks_for_good_and_checks_at_the_end():
    # checkpoints after 5 and 10 submissions, then a final one after 12
    subs = [sub("b", False), sub("a", True), sub("b", False), sub("b", False), sub("c", False),
            sub("b", True), sub("b", True), sub("b", True), sub("b", True), sub("c", False),
            sub("c", False), sub("a", False)]
    # after 5: b blocked (0/3); after 10: b stays blocked (4/7); at the end (12): c blocked (0/3)
    workers, checkpoints = run_quality_control(subs, qc_every=5, min_accuracy=0.5, min_judged=3)
    assert checkpoints == 3
    assert workers["b"].blocked_after == 5 and workers["b"].accuracy > 0.5
    assert workers["c"].blocked_after == 12
    assert not workers["a"].blocked          # below accuracy but under min_judged
    assert list(workers) == ["a", "b", "c"]


def test_eval_targets_scale_round_and_floor():
    splits = load_spec("record").splits
    assert eval_targets(50, 30, splits) == (4, 4)             # 10000 * 50 / 120730 = 4.14
    assert eval_targets(5, 1, splits) == (1, 1)               # rounds to 0: at least one each
    assert eval_targets(5, 0, splits) == (0, 0)
    assert eval_targets(200000, 90000, splits) == (10000, 10000)
