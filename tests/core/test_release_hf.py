"""The Hugging Face layout and dataset card of `transforms.core.reporting.release` (issue #14).

The header is checked against the field rules of the Hub's dataset card specification
(huggingface/hub-docs `datasetcard.md`: which keys, which types, the size categories), then read
by `datasets` itself; a release is loaded offline with `datasets.load_dataset`. `datasets` runs in
its own venv (`tests.conftest.hf_datasets`).
"""
from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data_specs import load_schema
from tests.conftest import hf_datasets
from transforms.core.reporting.release import (
    CARD,
    SIZE_CATEGORIES,
    Config,
    Release,
    hf_features,
    read_card_header,
    size_category,
    spec_differences,
    write_release,
)

# The Hub's task categories the releases use (huggingface.js packages/tasks pipelines.ts).
HUB_TASKS = {"question-answering", "multiple-choice", "text-generation", "text-classification",
             "fill-mask", "text2text-generation"}
SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")      # datasets' rule for split names
LIST_OF_STR = ("language", "task_categories", "task_ids", "source_datasets", "size_categories")
KNOWN_KEYS = {"pretty_name", "language", "license", "task_categories", "task_ids", "source_datasets",
              "size_categories", "configs", "dataset_info", "tags", "annotations_creators",
              "language_creators", "multilinguality", "paperswithcode_id"}


def header_problems(header: dict[str, Any]) -> list[str]:
    """What in a card header breaks the Hub's dataset card field rules ([] when nothing)."""
    problems = [f"unknown key {k}" for k in header if k not in KNOWN_KEYS]
    for key in ("pretty_name", "license"):
        if not isinstance(header.get(key), str) or not header[key]:
            problems.append(f"{key} must be a non-empty string")
    for key in LIST_OF_STR:
        value = header.get(key)
        if key != "task_ids" and value is None:
            problems.append(f"{key} is missing")
        elif value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            problems.append(f"{key} must be a list of strings")
    def items(key: str) -> list[str]:
        value = header.get(key)
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

    problems += [f"size category {v!r}" for v in items("size_categories") if v not in SIZE_CATEGORIES]
    problems += [f"task {v!r}" for v in items("task_categories") if v not in HUB_TASKS]
    problems += [f"language {v!r}" for v in items("language") if not re.fullmatch(r"[a-z]{2,3}", v)]
    problems += [f"source {v!r}" for v in items("source_datasets")
                 if v != "original" and not v.startswith("extended")]
    configs = header.get("configs")
    if not isinstance(configs, list) or not configs:
        return problems + ["configs must be a non-empty list"]
    names = []
    for config in configs:
        names.append(config.get("config_name"))
        if not isinstance(config.get("config_name"), str):
            problems.append("config_name must be a string")
        if "default" in config and not isinstance(config["default"], bool):
            problems.append("default must be a boolean")
        for entry in config.get("data_files", []):
            if set(entry) != {"split", "path"} or not SPLIT_NAME.match(str(entry["split"])):
                problems.append(f"bad data_files entry {entry}")
    if sum(bool(c.get("default")) for c in configs) > 1:
        problems.append("more than one default config")
    infos = header.get("dataset_info")
    infos = infos if isinstance(infos, list) else [infos]
    for info in infos:
        if not isinstance(info, dict) or info.get("config_name") not in names:
            problems.append("dataset_info entries must name one of the configs")
            continue
        if not isinstance(info.get("features"), list):
            problems.append("features must be a list")
        for split in info.get("splits", []):
            if not (isinstance(split.get("name"), str) and isinstance(split.get("num_bytes"), int)
                    and isinstance(split.get("num_examples"), int)):
                problems.append(f"bad split entry {split}")
        for key in ("download_size", "dataset_size"):
            if not isinstance(info.get(key), int):
                problems.append(f"{key} must be an integer")
    return problems


def check_with_datasets(header: dict[str, Any]) -> None:
    """`datasets` reads the header's configs and dataset_info as the Hub does."""
    configs, infos = hf_datasets("""
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCardData

card_data = DatasetCardData(**header)
result = [list(MetadataConfigs.from_dataset_card_data(card_data)),
          list(DatasetInfosDict.from_dataset_card_data(card_data))]
""", header=header)
    assert set(configs) == set(infos) == {c["config_name"] for c in header["configs"]}


def schema_b64(schema: pa.Schema) -> str:
    """An Arrow schema as text for `hf_datasets` (read there by `arrow_schema`)."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


# `hf_datasets` code: the pyarrow schema of the input `schema` (from `schema_b64`).
ARROW_SCHEMA = """
import base64
import pyarrow as pa
arrow_schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(schema)))
"""


def test_size_categories_follow_the_hub_buckets():
    assert [size_category(n) for n in (0, 999, 1000, 9999, 10_000, 120_730, 1_000_000)] == [
        "n<1K", "n<1K", "1K<n<10K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M"]


def test_features_in_the_yaml_form_of_datasets():
    schema = load_schema("cosmos", "release")
    assert hf_features(schema)[:2] == [{"name": "id", "dtype": "string"}, {"name": "context", "dtype": "string"}]
    assert hf_features(schema)[-1] == {"name": "label", "dtype": "int32"}
    nested = pa.schema([pa.field("a", pa.list_(pa.struct([pa.field("s", pa.int32())]))),
                        pa.field("b", pa.list_(pa.string())),
                        pa.field("c", pa.struct([pa.field("t", pa.bool_())]))])
    assert hf_features(nested) == [{"name": "a", "list": [{"name": "s", "dtype": "int32"}]},
                                   {"name": "b", "list": "string"},
                                   {"name": "c", "struct": [{"name": "t", "dtype": "bool"}]}]


@pytest.mark.parametrize("dataset, table", [("record", "release_passages"), ("record", "release_queries"),
                                            ("cosmos", "release"), ("protoqa", "release")])
def test_datasets_reads_the_features_as_the_schema(dataset, table):
    schema = load_schema(dataset, table)
    from_yaml, from_arrow = hf_datasets(ARROW_SCHEMA + """
from datasets import Features
result = [Features._from_yaml_list(yaml).to_dict(), Features.from_arrow_schema(arrow_schema).to_dict()]
""", yaml=hf_features(schema), schema=schema_b64(schema))
    assert from_yaml == from_arrow


def test_spec_differences_list_each_changed_value():
    defaults = {"passage": {"min_tokens": 100, "min_entities": 4}, "seed": 0, "labels": ["A", "B"]}
    spec = {"passage": {"min_tokens": 120, "min_entities": 4}, "seed": 0, "labels": ["A"]}
    assert spec_differences(spec, defaults) == [("labels", ["A"], ["A", "B"]),
                                                ("passage.min_tokens", 120, 100)]
    assert spec_differences(defaults, defaults) == []


def tiny_release() -> Release:
    schema = load_schema("cosmos", "release")
    row = {"id": "h##a##w##b##q1_a1", "context": "We missed the bus.", "question": "Why were they late ?",
           "answer0": "They missed the bus .", "answer1": "It rained .", "answer2": "No reason .",
           "answer3": "None of the above choices .", "label": 0}
    splits = {"test": [{**row, "id": "t1", "label": -1}], "train": [row, {**row, "id": "x2", "label": 1}],
              "validation": [{**row, "id": "v1"}]}
    return Release(pretty_name="Tiny", configs=[Config("default", schema, splits)], license="cc-by-4.0",
                   task_categories=["multiple-choice"], source_datasets=["original"], summary="Tiny.",
                   sections=[("Notes", "none")], citation="@misc{x, title={x}}",
                   file_metadata={"csdata.version": "1"})


def test_a_written_release_has_one_file_per_split_and_a_valid_card(tmp_path):
    counts = write_release(tmp_path, tiny_release())
    assert counts == {"default": {"train": 2, "validation": 1, "test": 1}}
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == [
        "test-00000-of-00001.parquet", "train-00000-of-00001.parquet", "validation-00000-of-00001.parquet"]
    header = read_card_header(tmp_path / CARD)
    assert header_problems(header) == []
    check_with_datasets(header)
    assert header["configs"] == [{"config_name": "default", "data_files": [
        {"split": "train", "path": "data/train-*.parquet"},
        {"split": "validation", "path": "data/validation-*.parquet"},
        {"split": "test", "path": "data/test-*.parquet"}]}]
    assert [(s["name"], s["num_examples"]) for s in header["dataset_info"][0]["splits"]] == [
        ("train", 2), ("validation", 1), ("test", 1)]
    text = (tmp_path / CARD).read_text(encoding="utf-8")
    assert "## Notes" in text and "```bibtex\n@misc{x, title={x}}\n```" in text
    schema = pq.read_schema(tmp_path / "data" / "train-00000-of-00001.parquet")
    assert schema.metadata[b"csdata.version"] == b"1"
    assert schema.field("label").metadata[b"description"] == b"index (0-3) of the correct option"


def test_shards_above_the_row_limit(tmp_path):
    write_release(tmp_path, tiny_release(), shard_rows=1)
    assert sorted(p.name for p in (tmp_path / "data").glob("train-*")) == [
        "train-00000-of-00002.parquet", "train-00001-of-00002.parquet"]


def test_header_rules_catch_mistakes():
    assert header_problems({"pretty_name": "x", "license": "mit", "language": "en",
                            "task_categories": ["no-such-task"], "source_datasets": ["original"],
                            "size_categories": ["huge"], "configs": []}) == [
        "language must be a list of strings", "size category 'huge'", "task 'no-such-task'",
        "configs must be a non-empty list"]


def test_load_dataset_gives_the_splits_and_features(tmp_path):
    write_release(tmp_path / "rel", tiny_release())
    loaded = hf_datasets(ARROW_SCHEMA + """
from datasets import Features, load_dataset
loaded = load_dataset(release)
result = {"splits": list(loaded), "num_rows": [loaded[s].num_rows for s in loaded],
          "features": loaded["train"].features.to_dict(),
          "schema_features": Features.from_arrow_schema(arrow_schema).to_dict(),
          "test_label": loaded["test"][0]["label"], "train_ids": list(loaded["train"]["id"])}
""", release=str(tmp_path / "rel"), schema=schema_b64(load_schema("cosmos", "release")))
    assert loaded["splits"] == ["train", "validation", "test"]
    assert loaded["num_rows"] == [2, 1, 1]
    assert loaded["features"] == loaded["schema_features"]
    assert loaded["test_label"] == -1 and loaded["train_ids"] == ["h##a##w##b##q1_a1", "x2"]


def test_provenance_chain_puts_the_steps_of_the_runs_read_first():
    from transforms.core.reporting.provenance import chain

    generate = chain({"command": "record generate"}, {})
    filtered = chain({"command": "record filter"}, {"run_dir": generate})
    annotate = chain({"command": "record annotate"}, {})
    both = chain({"command": "record release"}, {"annotations": annotate, "run_dir": filtered})
    assert [s["command"] for s in both["steps"]] == [
        "record annotate", "record generate", "record filter", "record release"]
    assert [s["upstreams"] for s in both["steps"]] == [{}, {}, {"run_dir": 1}, {"annotations": 0, "run_dir": 2}]


def test_changed_inputs_names_missing_and_changed_files(tmp_path):
    from transforms.core.reporting.provenance import changed_inputs, describe_inputs

    (tmp_path / "a.txt").write_text("one")
    (tmp_path / "b.txt").write_text("two")
    recorded = [dict(item, path=str(Path(item["path"]).relative_to(tmp_path)))
                for item in describe_inputs([str(tmp_path)])]
    assert changed_inputs(recorded, str(tmp_path)) == []
    (tmp_path / "a.txt").write_text("uno")                 # same size, other bytes
    (tmp_path / "b.txt").unlink()
    assert changed_inputs(recorded, str(tmp_path)) == ["a.txt (changed)", "b.txt (missing)"]
