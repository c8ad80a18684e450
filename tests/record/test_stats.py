"""Table 1 statistics on a tiny hand-counted run."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data_specs import load_schema, load_spec
from transforms.record.stats import (
    format_table,
    passage_tokens,
    passage_words,
    query_tokens,
    query_words,
    record_stats,
)

SEP = "\n@highlight\n"


def _passage(pid: str, text: str, mentions: int) -> dict[str, Any]:
    entities = [{"start": 0, "end": 0, "text": "x", "label": "PERSON", "chain": i} for i in range(mentions)]
    return {"passage_id": pid, "source": "", "url": "", "split": "", "text": text, "body_end": 0,
            "passage_paragraphs": 1, "rest_paragraphs": 1, "tokens": 0, "entities": entities}


def _query(qid: str, pid: str, text: str) -> dict[str, Any]:
    return {"query_id": qid, "passage_id": pid, "query": text, "sentence": "", "sentence_index": 0,
            "placeholder_start": 0, "mention": "", "label": "", "chain": 0, "answers": [],
            "filters_passed": []}


@pytest.fixture
def hand_counted_run(tmp_path: Path) -> Path:
    passages = [
        _passage("a", "Ann met Bob." + SEP + "bob smiled", 3),  # Ann met Bob. bob smiled: 5 tokens
        _passage("b", "Cy ran." + SEP + "Cy won", 2),          # Cy ran. Cy won: 4 tokens
        _passage("c", "Zed sang loudly.", 7),                   # no queries: ignored
    ]
    queries = [
        _query("a-1", "a", "@placeholder met Bob."),        # @placeholder met Bob.: 3 tokens
        _query("a-2", "a", "Bob smiled at @placeholder"),   # Bob smiled at @placeholder: 4
        _query("b-1", "b", "@placeholder won"),             # @placeholder won: 2
    ]
    for table, rows in (("passages", passages), ("queries", queries)):
        (tmp_path / table).mkdir()
        pq.write_table(pa.Table.from_pylist(rows, schema=load_schema("record", table)),
                       tmp_path / table / "part-00000.parquet")
    return tmp_path


def test_token_definitions() -> None:
    # Counted tokens are whitespace-separated (Table 1's); the vocabulary's split off punctuation.
    assert passage_tokens("A b." + SEP + "C" + SEP + "d") == ["A", "b.", "C", "d"]
    assert passage_words("A b." + SEP + "C" + SEP + "d") == ["A", "b", ".", "C", "d"]
    assert query_tokens("Then @placeholder's team won") == ["Then", "@placeholder's", "team", "won"]
    assert query_words("Then @placeholder's team won") == ["Then", "@placeholder", "'", "s", "team", "won"]


def test_record_stats_hand_counted(hand_counted_run: Path) -> None:
    stats = record_stats(hand_counted_run)
    assert stats == {
        "queries": 3,
        "unique_passages": 2,
        "passage_vocab": 8,   # ann met bob . smiled cy ran won
        "query_vocab": 7,     # @placeholder met bob . smiled at won
        "tokens_per_passage": pytest.approx(4.5),
        "entities_per_passage": pytest.approx(2.5),
        "tokens_per_query": pytest.approx(3.0),
    }


def test_format_table_shows_paper_values(hand_counted_run: Path) -> None:
    paper = load_spec("record").paper_table1
    table = format_table(record_stats(hand_counted_run), paper)
    assert "169.5" in table and "100730" in table
    lines = table.splitlines()
    assert lines[0].split() == ["statistic", "this", "run", "paper"]
    assert "tokens/passage" in table and "4.5" in table
    assert len({len(line) for line in lines}) == 1  # fixed width
