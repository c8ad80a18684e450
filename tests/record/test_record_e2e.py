"""End to end: the repo's sample corpus through `csdata record generate`, export and stats,
on the in-process runner, in multi-process mode and through a portable job service."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.cli.main import main
from tests.conftest import DATA, generate
from transforms.core.io.tables import read_table
from transforms.record.article import passage_text
from transforms.record.formats import parse_story
from transforms.record.queries import query_id

EXPECTED_REASON = {"ok": None, "short": "too_short", "question": "question",
                   "overlap": "shares_ngram", "noent": "no_entity", "absent": "entity_not_in_passage"}
def rows(output: Path, table: str) -> list[dict]:
    key = {"passages": "passage_id", "queries": "query_id"}.get(table)
    found = read_table(str(output), table).to_pylist()
    return sorted(found, key=lambda r: r[key] if key else (r["stage"], r["record_id"], r["reason"]))


@pytest.fixture(scope="module")
def expectations() -> dict:
    return json.loads((DATA / "expectations.json").read_text(encoding="utf-8"))


def test_every_stage_balances_and_names_its_rejects(record_generate_run):
    summary = json.loads((record_generate_run / "summary.json").read_text())["stages"]
    assert all(stage["balanced"] for stage in summary.values())
    assert summary["read"]["in"] == 15
    assert summary["dedup_exact"]["rejected"] == {"duplicate_id": 1}
    assert summary["dedup_near"]["rejected"] == {"near_duplicate": 1}
    assert summary["passage_split"]["rejected"] == {"passage_too_short": 1}
    assert summary["passage_filter"]["rejected"] == {"too_few_entities": 1}
    rejects = rows(record_generate_run, "rejects")
    for stage, entry in summary.items():
        for reason, count in entry["rejected"].items():
            assert sum(r["stage"] == stage and r["reason"] == reason for r in rejects) == count
    assert summary["sentence_filter"]["in"] == (summary["sentence_filter"]["kept"]
                                                + sum(summary["sentence_filter"]["rejected"].values()))


def test_rest_sentences_get_the_verdicts_the_corpus_was_written_for(record_generate_run, expectations):
    queries = rows(record_generate_run, "queries")
    kept = {q["sentence"] for q in queries}
    rejected = {r["detail"]: r["reason"] for r in rows(record_generate_run, "rejects")
                if r["stage"] == "sentence_filter"}
    passages = {p["passage_id"] for p in rows(record_generate_run, "passages")}
    checked = 0
    for article in expectations["articles"]:
        if article["id"] not in passages:
            continue
        for sentence in article.get("rest_sentences", []):
            got = None if sentence["text"] in kept else rejected.get(sentence["text"][:200], "lost")
            assert got == EXPECTED_REASON[sentence["expected"]], sentence["text"]
            checked += 1
    # the rest sentences of the 11 passages kept: C1 10, C2-D1 9 each (5 articles), D3 9, D2-dup 8,
    # J1 8, J2 6, J4 7 -> 10 + 45 + 9 + 8 + 8 + 6 + 7 = 93
    assert checked == 93


def test_passages_use_the_published_layout_and_url_metadata(record_generate_run, expectations):
    passages = {p["passage_id"]: p for p in rows(record_generate_run, "passages")}
    c1 = next(a for a in expectations["articles"] if a["key"] == "C1")
    story = parse_story((DATA / c1["file"]).read_text(encoding="utf-8"), c1["id"])
    body = " ".join(story.paragraphs[: c1["passage_paragraphs"]])
    row = passages[c1["id"]]
    assert row["text"] == passage_text(body, story.highlights)[0]
    assert (row["url"], row["source"], row["split"]) == (c1["url"], "CNN", "train")
    assert row["tokens"] == c1["passage_tokens"]
    assert all(row["text"][e["start"]: e["end"] + 1] == e["text"] for e in row["entities"])
    assert any("\u00a0" in p["text"] for p in passages.values())  # raw characters kept


def test_queries_carry_published_ids_answers_and_filters(record_generate_run):
    passages = {p["passage_id"]: p for p in rows(record_generate_run, "passages")}
    queries = rows(record_generate_run, "queries")
    # By hand: one query per name in each of the 43 "ok" rest sentences of expectations.json
    # (the names all occur in the passage). Names per sentence, article by article:
    # C1 1+1+2+2+1, C2 2+1+1+1, C3 1+2+3+2+3, C4 1+1+2+1, C5 1+1+1+1, D1 2+1+1+2+1, D2-dup 1+1+1,
    # D3 2+1+2+1, J1 1+1+1, J2 1+1+1, J4 1+1+1 -> 7+5+11+5+4+7+3+6+3+3+3 = 57
    assert len(queries) == 57
    assert len({q["sentence"] for q in queries}) == 43
    for q in queries:
        assert q["query_id"] == query_id(q["passage_id"], q["sentence"], q["placeholder_start"])
        assert q["query"] == (q["sentence"][: q["placeholder_start"]] + "@placeholder"
                              + q["sentence"][q["placeholder_start"] + len(q["mention"]):])
        text = passages[q["passage_id"]]["text"]
        assert q["answers"] and all(text[a["start"]: a["end"] + 1] == a["text"] for a in q["answers"])
        assert q["filters_passed"] == ["min_tokens", "not_question", "no_shared_ngram",
                                       "min_entities", "entities_in_passage"]


def test_coreference_reaches_the_answers(record_generate_run):
    queries = rows(record_generate_run, "queries")
    answers_of = {}
    for q in queries:
        answers_of.setdefault(q["mention"], set()).update(a["text"] for a in q["answers"])
    assert "Anneliese Brunner" in answers_of["Brunner"]                     # surname
    assert "International Glacier Monitoring Council" in answers_of["IGMC"]  # acronym
    assert "Priya Raman" in answers_of["Raman"]          # title + surname (NER rule `honorifics`)
    assert "Venezuela" in answers_of["Venezuelans"]                        # demonym


def test_export_and_stats_commands(record_generate_run, tmp_path, capsys):
    out = tmp_path / "dev.json"
    assert main(["record", "export", str(record_generate_run), "--format", "record-json",
                 "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["version"] == "1.0" and len(data["data"]) == 11
    assert main(["stats", str(record_generate_run)]) == 0
    printed = capsys.readouterr().out
    assert "tokens/passage" in printed and "169.5" in printed


def test_two_runs_give_identical_rows_even_multiprocess(record_generate_run, tmp_path):
    again = tmp_path / "again"
    assert generate(again, "--direct_running_mode=multi_processing", "--direct_num_workers=2") == 0
    for table in ("passages", "queries", "rejects"):
        assert rows(again, table) == rows(record_generate_run, table), table


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def _wait_for(port: int, seconds: float = 60) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("localhost", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on port {port}")


def test_portable_runner_with_job_service_and_external_worker_pool(record_generate_run, tmp_path):
    """The job API of Flink and Dataflow Runner v2: a local job service plus an SDK worker pool."""
    env = dict(os.environ)
    # The pool starts a bare `python`: it must be this interpreter's.
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    job_port, pool_port = _free_port(), _free_port()
    services = [
        subprocess.Popen([sys.executable, "-m", "apache_beam.runners.portability.local_job_service_main",
                          "--port", str(job_port)], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL),
        subprocess.Popen([sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
                          f"--service_port={pool_port}"], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL),
    ]
    try:
        _wait_for(job_port)
        _wait_for(pool_port)
        portable = tmp_path / "portable"
        assert generate(portable, "--runner=PortableRunner", f"--job_endpoint=localhost:{job_port}",
                        "--environment_type=EXTERNAL", f"--environment_config=localhost:{pool_port}") == 0
        for table in ("passages", "queries", "rejects"):
            assert rows(portable, table) == rows(record_generate_run, table), table
    finally:
        for process in services:
            process.terminate()
            process.wait(timeout=30)
