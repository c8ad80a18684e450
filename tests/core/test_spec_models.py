"""The typed specs of data_specs.models: shipped specs validate, dump back, and bad values fail
with one-line SpecErrors naming the key and the value."""
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from data_specs import (
    CosmosSpec,
    ProtoqaSpec,
    RecordSpec,
    SpecError,
    apply_overrides,
    load_dataset_spec,
    load_raw_spec,
    load_spec,
    spec_hash,
    validate_spec,
)

SPEC_DIR = Path(__file__).resolve().parents[2] / "data_specs"
SPECS = {"record": RecordSpec, "cosmos": CosmosSpec, "protoqa": ProtoqaSpec}


def yaml_dict(name):
    return yaml.safe_load((SPEC_DIR / f"{name}.yaml").read_text(encoding="utf-8"))


def spec_error(name, *overrides):
    with pytest.raises(SpecError) as info:
        load_spec(name, list(overrides))
    message = str(info.value)
    assert "\n" not in message
    return message


# ---- shipped specs --------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SPECS))
def test_shipped_specs_load_as_their_model(name):
    spec = load_spec(name)
    assert type(spec) is SPECS[name]
    assert spec.dataset == name


@pytest.mark.parametrize("name", sorted(SPECS))
def test_round_trip_gives_the_yaml_back(name):
    data = yaml_dict(name)
    dumped = load_spec(name).model_dump(by_alias=True)
    assert dumped == data
    assert list(dumped) == list(data)                      # same keys, same order


def test_values_from_the_yaml_and_papers():
    record, cosmos, protoqa = load_spec("record"), load_spec("cosmos"), load_spec("protoqa")
    assert record.seed == 1810 and record.passage.min_tokens == 100
    assert record.annotator.allennlp_predictions.coref_input == ""
    assert record.filter.readers.cross_encoder.learning_rate == 3.0e-5
    assert record.paper_table1.queries == 100730
    assert (cosmos.paragraph.min_words, cosmos.paragraph.max_words) == (30, 150)
    assert cosmos.paragraph.cut_baseline == "median"
    assert protoqa.questions.answers.max_total == 100
    assert protoqa.coverage.min_coverage == 85
    assert protoqa.assign.weights.embedding == 3.6
    assert protoqa.assign.threshold == 0.4
    assert protoqa.assign.max_partition_pairs == 4096


def test_models_are_frozen_and_dump_hyphenated_keys():
    spec = load_spec("record")
    with pytest.raises(ValidationError):
        spec.seed = 1
    annotator = spec.annotator.model_dump(by_alias=True)
    assert "allennlp-predictions" in annotator and "deepmind-metadata" in annotator
    assert "cross-encoder" in spec.filter.readers.model_dump(by_alias=True)


def test_specs_are_typed_not_dicts():
    spec = load_spec("record")
    with pytest.raises(TypeError):
        spec["passage"]  # noqa: B018  (attribute access only: spec.passage.min_tokens)
    assert apply_overrides(spec, ["passage.min_tokens=120"])["passage"]["min_tokens"] == 120


def test_a_spec_of_another_dataset_is_refused():
    assert load_dataset_spec(RecordSpec, "record").passage.min_tokens == 100
    with pytest.raises(SpecError, match="cosmos spec"):
        load_dataset_spec(RecordSpec, "cosmos")


def test_spec_hash_is_stable_and_changes_with_a_value():
    assert spec_hash(load_spec("record")) == spec_hash(load_spec("record"))
    assert len(spec_hash(load_spec("record"))) == 40
    assert spec_hash(load_spec("record")) != spec_hash(load_spec("record", ["passage.min_tokens=120"]))


def test_load_raw_spec_is_the_yaml_with_overrides():
    raw = load_raw_spec("record", ["passage.min_tokens=120"])
    expected = yaml_dict("record")
    expected["passage"]["min_tokens"] = 120
    assert raw == expected
    assert validate_spec(raw).passage.min_tokens == 120


# ---- good overrides -------------------------------------------------------------------------
@pytest.mark.parametrize("name, override, attribute, value", [
    ("record", "query.min_tokens=12", ("query", "min_tokens"), 12),
    ("record", "filter.reader=predictions:x.json", ("filter", "reader"), "predictions:x.json"),
    ("record", "filter.reader=cross-encoder", ("filter", "reader"), "cross-encoder"),
    ("cosmos", "paragraph.cut_baseline=0.25", ("paragraph", "cut_baseline"), 0.25),
    ("protoqa", "questions.answers.max_total=null", ("questions", "answers", "max_total"), None),
    ("protoqa", "coverage.min_coverage=80", ("coverage", "min_coverage"), 80),
])
def test_valid_overrides_are_accepted(name, override, attribute, value):
    node = load_spec(name, [override])
    for part in attribute:
        node = getattr(node, part)
    assert node == value


# ---- bad values -----------------------------------------------------------------------------
@pytest.mark.parametrize("name, override, fragments", [
    ("record", "passage.min_tokens=abc", ["passage.min_tokens='abc'", "integer"]),
    ("record", "query.min_tokens=1.5", ["query.min_tokens=1.5", "integer"]),
    ("record", "query.min_tokens=true", ["query.min_tokens=True", "integer"]),
    ("record", "passage.min_tokens=-5", ["passage.min_tokens=-5", ">= 0"]),
    ("record", "curation.near_duplicates.threshold=1.5",
     ["curation.near_duplicates.threshold=1.5", "[0, 1]"]),
    ("record", "annotator.sentences=foo", ["annotator.sentences='foo'", "'senter'", "'parser'"]),
    ("record", "annotator.min_articles_per_call=500",
     ["annotator.min_articles_per_call=500", "annotator.max_articles_per_call", "32"]),
    ("record", "filter.reader=bogus", ["filter.reader='bogus'", "predictions:FILE"]),
    ("record", "filter.folds=1", ["filter.folds=1", ">= 2"]),
    ("cosmos", "paragraph.min_words=200", ["paragraph.min_words=200", "paragraph.max_words", "150"]),
    ("cosmos", "paragraph.cut_baseline=mean", ["paragraph.cut_baseline='mean'", "'median'"]),
    ("cosmos", "coherence.device=gpu", ["coherence.device='gpu'", "'cuda'"]),
    ("protoqa", "coverage.min_coverage=150", ["coverage.min_coverage=150", "[0, 100]"]),
    ("protoqa", "assign.threshold=2", ["assign.threshold=2", "[0, 1]"]),
    ("protoqa", "assign.weights.lemma=-0.1", ["assign.weights.lemma=-0.1", ">= 0"]),
])
def test_bad_values_name_key_and_value(name, override, fragments):
    message = spec_error(name, override)
    for fragment in fragments:
        assert fragment in message, message


def test_section_replaced_by_a_scalar():
    message = spec_error("record", "passage=5")
    assert "passage" in message and "5" in message and "min_tokens" in message


def test_key_below_a_scalar_is_unknown():
    message = spec_error("record", "passage.min_tokens.x=1")
    assert "passage.min_tokens.x" in message


def test_unknown_key_via_set():
    message = spec_error("record", "annotator.nmae=spacy")
    assert "annotator.nmae" in message and "unknown" in message and "name" in message


def test_unknown_key_in_a_users_yaml(tmp_path):
    data = yaml_dict("record")
    data["annotator"]["nmae"] = "spacy"
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec(str(path))
    message = str(info.value)
    assert "\n" not in message
    assert "annotator.nmae" in message and "unknown" in message


def test_several_problems_on_one_line(tmp_path):
    message = spec_error("record", "passage.min_tokens=abc", "query.ngram=0")
    assert "passage.min_tokens='abc'" in message and "query.ngram=0" in message and "; " in message


@pytest.mark.parametrize("text, fragment", [
    ("dataset: record\npassage: [unclosed\n", "YAML"),
    ("- just\n- a list\n", "mapping"),
    ("dataset: squad\nseed: 1\n", "dataset"),
])
def test_malformed_user_files(tmp_path, text, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec(str(path))
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_missing_spec_file(tmp_path):
    with pytest.raises(SpecError):
        load_spec(str(tmp_path / "absent.yaml"))
