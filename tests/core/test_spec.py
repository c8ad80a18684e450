"""Spec loading, `--set` overrides and the schemas kept in data_specs/."""
import pyarrow as pa
import pytest

from data_specs import SpecError, apply_overrides, load_schema, load_spec


def test_record_spec_has_the_papers_defaults():
    spec = load_spec("record")
    assert spec.passage.min_tokens == 100
    assert spec.passage.min_entities == 4
    assert spec.query.min_tokens == 10
    assert spec.query.ngram == 3


def test_overrides_parse_yaml_values():
    spec = apply_overrides({"passage": {"min_tokens": 100, "strategy": "x"}},
                           ["passage.min_tokens=120", "passage.strategy=y"])
    assert spec == {"passage": {"min_tokens": 120, "strategy": "y"}}


@pytest.mark.parametrize("bad", ["passage.nope=1", "nope.min_tokens=1", "no_equals_sign"])
def test_unknown_override_keys_are_errors(bad):
    with pytest.raises(SpecError):
        apply_overrides({"passage": {"min_tokens": 100}}, [bad])


def test_schemas_build_and_list_answers_as_structs():
    queries = load_schema("record", "queries")
    answer = queries.field("answers").type.value_type
    assert isinstance(answer, pa.StructType)
    assert [answer.field(i).name for i in range(answer.num_fields)] == ["start", "end", "text"]
    assert load_schema("record", "rejects").names == ["stage", "reason", "record_id", "detail"]
