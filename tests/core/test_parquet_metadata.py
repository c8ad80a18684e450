"""Every Parquet file carries its schema's field descriptions and the run's file metadata (issue
#14), and `csdata describe FILE` prints them."""
from __future__ import annotations

import hashlib
import json

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from data_specs import SPEC_DIR, load_schema, load_spec
from pipeline.cli.main import main
from tests.conftest import beam_test_pipeline
from tests.cosmos.crowd_sets import import_simulated
from transforms.core.io.sinks import WriteTable
from transforms.core.io.tables import write_rows
from transforms.core.reporting import provenance

REJECT = {"stage": "read", "reason": "empty_article", "record_id": "a1", "detail": "x.story"}
META = {"csdata.version": "9.9.9", "csdata.spec_sha256": "ab" * 32,
        "csdata.input_files_sha256": "cd" * 32, "csdata.run_date": "2026-01-02T03:04:05+00:00"}


def yaml_fields(entries):
    """(name, description) of every field of a YAML table, nested ones included."""
    for entry in entries:
        yield entry["name"], entry.get("description")
        item = entry.get("item")
        nested = entry.get("fields") or (item if isinstance(item, list) else [])
        yield from yaml_fields(nested)


def arrow_fields(fields):
    for field in fields:
        yield field
        kind = field.type
        while pa.types.is_list(kind):
            kind = kind.value_type
        if pa.types.is_struct(kind):
            yield from arrow_fields(list(kind))


@pytest.mark.parametrize("dataset", ["record", "cosmos", "protoqa"])
def test_every_field_of_every_schema_has_a_description(dataset):
    tables = yaml.safe_load((SPEC_DIR / f"{dataset}_schema.yaml").read_text(encoding="utf-8"))
    for table, entry in tables.items():
        entries = entry["fields"] if isinstance(entry, dict) else entry
        missing = [name for name, text in yaml_fields(entries) if not text]
        assert not missing, f"{dataset}_schema.yaml {table}: no description for {missing}"
        schema = load_schema(dataset, table)
        assert all(f.metadata and f.metadata[b"description"] for f in arrow_fields(list(schema)))


def test_end_offsets_say_they_are_inclusive():
    passages = load_schema("record", "passages")
    end = passages.field("entities").type.value_type.field("end")
    assert b"inclusive" in end.metadata[b"description"]
    answers = load_schema("record", "queries").field("answers").type.value_type
    assert b"inclusive" in answers.field("end").metadata[b"description"]


def test_descriptions_do_not_change_types_or_names():
    schema = load_schema("record", "rejects")
    assert schema.names == ["stage", "reason", "record_id", "detail"]
    assert schema.field("reason").metadata == {b"description": b"why, one of the stage's named reasons"}
    assert [f.type for f in schema] == [pa.string()] * 4


def test_write_rows_carries_file_metadata_and_descriptions(tmp_path):
    write_rows([REJECT], "record", "rejects", tmp_path / "rejects", file_metadata=META)
    path = next((tmp_path / "rejects").glob("*.parquet"))
    schema = pq.read_schema(path)
    assert {k.decode(): v.decode() for k, v in schema.metadata.items() if k != b"ARROW:schema"} == META
    assert schema.field("record_id").metadata[b"description"].startswith(b"article id")
    assert pq.read_table(path).to_pylist() == [REJECT]


def test_write_table_carries_file_metadata_and_leaves_rows_alone(tmp_path):
    rows = [REJECT, {**REJECT, "record_id": "b2"}]
    for name, meta in (("with", META), ("without", None)):
        with beam_test_pipeline() as pipeline:
            (pipeline | beam.Create(rows, reshuffle=False)
             | WriteTable(str(tmp_path / name), "rejects", 1, file_metadata=meta))
    shard = next((tmp_path / "with" / "rejects").glob("*.parquet"))
    plain = next((tmp_path / "without" / "rejects").glob("*.parquet"))
    schema = pq.read_schema(shard)
    assert schema.metadata[b"csdata.spec_sha256"] == b"ab" * 32
    assert schema.metadata[b"csdata.run_date"] == b"2026-01-02T03:04:05+00:00"
    assert schema.field("stage").metadata[b"description"] == b"the stage that rejected the record"
    assert pq.read_table(shard).to_pylist() == pq.read_table(plain).to_pylist() == rows


def test_file_metadata_hashes(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"abc")
    (tmp_path / "b.txt").write_bytes(b"hello")
    record_spec = load_spec("record")
    meta = provenance.file_metadata(record_spec, [str(tmp_path)], run_date="2026-01-02T03:04:05+00:00")
    listing = f"{tmp_path}/a.txt\t3\n{tmp_path}/b.txt\t5\n"
    assert meta["csdata.input_files_sha256"] == hashlib.sha256(listing.encode()).hexdigest()
    canonical = json.dumps(record_spec.model_dump(by_alias=True, mode="json"), sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False)
    assert meta["csdata.spec_sha256"] == hashlib.sha256(canonical.encode()).hexdigest()
    assert meta["csdata.run_date"] == "2026-01-02T03:04:05+00:00"
    assert meta["csdata.version"] == provenance.csdata_version()
    changed = load_spec("record", ["passage.min_tokens=120"])
    assert provenance.spec_sha256(changed) != meta["csdata.spec_sha256"]


def test_describe_prints_metadata_rows_and_fields(tmp_path, capsys):
    write_rows([REJECT, REJECT], "record", "rejects", tmp_path / "rejects", file_metadata=META)
    assert main(["describe", str(next((tmp_path / "rejects").glob("*.parquet")))]) == 0
    out = capsys.readouterr().out
    assert "rows: 2" in out
    assert "csdata.version: 9.9.9" in out and "csdata.run_date: 2026-01-02T03:04:05+00:00" in out
    assert "  record_id: string  -- article id, or {article id}#s{sentence index}" in out
    write_rows([], "record", "queries", tmp_path / "queries")
    assert main(["describe", str(tmp_path / "queries")]) == 0      # a table folder
    out = capsys.readouterr().out
    assert "rows: 0" in out and "(no file metadata)" in out
    assert "    end: int32  -- last character of the answer in the passage text (inclusive)" in out


def test_describe_refuses_a_file_that_is_not_parquet(tmp_path, capsys):
    (tmp_path / "x.parquet").write_text("not parquet")
    assert main(["describe", str(tmp_path / "x.parquet")]) == 2
    assert "not a Parquet file" in capsys.readouterr().err


METADATA_KEYS = {b"csdata.version", b"csdata.spec_sha256", b"csdata.input_files_sha256", b"csdata.run_date"}


def check_every_shard(out, tables):
    """Every Parquet shard under `out` is of one of `tables`, carries the four file-metadata keys
    (one run: the same values in every file) and a description on every field."""
    shards = sorted(out.rglob("*.parquet"))
    assert sorted({p.parent.name for p in shards}) == sorted(tables)
    values = set()
    for path in shards:
        schema = pq.read_schema(path)
        assert METADATA_KEYS <= set(schema.metadata), path
        values.add(tuple(schema.metadata[k] for k in sorted(METADATA_KEYS)))
        assert all(f.metadata and f.metadata[b"description"] for f in arrow_fields(list(schema))), path
    assert len(values) == 1
    return dict(zip(sorted(METADATA_KEYS), values.pop()))


def test_record_hits_import_writes_file_metadata(tmp_path):
    from tests.record.test_hits import Simulation, write_filtered_run, write_results

    run = write_filtered_run(tmp_path / "filtered")
    (run / "summary.json").write_text('{"stages": {}}')         # a finished run
    simulation = Simulation()
    simulation.build()
    results = write_results(tmp_path / "results.csv", simulation.rows)
    out = tmp_path / "validated"
    assert main(["record", "hits", "import", str(results), "--run", str(run), "--output", str(out),
                 "--set", "hits.qc_every=20"]) == 0
    meta = check_every_shard(out, ["train", "dev", "test", "passages", "rejects"])
    record_spec = load_spec("record", ["hits.qc_every=20"])
    assert meta[b"csdata.spec_sha256"].decode() == provenance.spec_sha256(record_spec)
    listing = provenance.input_files([str(run), str(results)])
    assert meta[b"csdata.input_files_sha256"].decode() == provenance.input_list_sha256(listing)


def test_cosmos_hits_import_writes_file_metadata(tmp_path, cosmos_simulated):
    run, questions, validations = cosmos_simulated
    out = tmp_path / "qa"
    import_simulated(cosmos_simulated, out)
    meta = check_every_shard(out, ["train", "dev", "test", "sets", "paragraphs", "rejects"])
    listing = provenance.input_files([str(run), str(questions), str(validations)])
    assert meta[b"csdata.input_files_sha256"].decode() == provenance.input_list_sha256(listing)


def test_protoqa_hits_import_writes_csv_not_parquet(tmp_path):
    """`protoqa hits import` writes the crowd answers CSV that cluster-prep reads (no Parquet);
    `cluster-prep`, whose tables are Parquet, carries the metadata (tested with it)."""
    from tests.protoqa.test_protoqa_hits import MTURK_RESULTS, QUESTIONS

    hits_dir = tmp_path / "hits"
    assert main(["protoqa", "hits", "export", str(QUESTIONS), "--output", str(hits_dir)]) == 0
    assert main(["protoqa", "hits", "import", str(MTURK_RESULTS), "--hits", str(hits_dir),
                 "--output", str(tmp_path / "crowd.csv")]) == 0
    assert (tmp_path / "crowd.csv").is_file() and not list(tmp_path.rglob("*.parquet"))
