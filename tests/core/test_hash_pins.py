"""Fixed points for the hashes other tests compare through the code itself: `spec_hash`,
`passage_hash` and `ner_rules_key`, each against the digest of the bytes its docstring names,
written out here."""
import hashlib

from pydantic import BaseModel, ConfigDict, Field

from data_specs import spec_hash
from tests.conftest import ROOT
from transforms.record.annotate.store import ner_rules_key
from transforms.record.crowd import passage_hash


class _Section(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    min_tokens: int = Field(alias="min-tokens")
    name: str


def test_spec_hash_is_sha1_of_the_canonical_json():
    # sorted keys, no spaces, UTF-8 not \u-escaped, YAML (alias) key names for a model
    canonical = b'{"a":[1,2.5,null],"b":{"c":"caf\xc3\xa9","d":true}}'
    assert spec_hash({"b": {"d": True, "c": "café"}, "a": [1, 2.5, None]}) == hashlib.sha1(canonical).hexdigest()
    model = b'{"min-tokens":120,"name":"caf\xc3\xa9"}'
    assert spec_hash(_Section(min_tokens=120, name="café")) == hashlib.sha1(model).hexdigest()


def test_passage_hash_is_sha1_of_seed_colon_id():
    assert passage_hash(1810, "02da4ac9") == hashlib.sha1(b"1810:02da4ac9").hexdigest()
    assert passage_hash(7, "x") == "e08322bacb2cbc9730fa65c4551613e9e12c6ce3"  # printf '7:x' | sha1sum


def test_ner_rules_key_names_the_rules_in_order_and_the_rules_code():
    code = hashlib.sha1((ROOT / "transforms" / "record" / "annotate" / "ner_rules.py").read_bytes()).hexdigest()
    assert ner_rules_key(("honorifics", "leading_the")) == f"honorifics,leading_the code={code[:16]}"
    assert ner_rules_key(("leading_the", "honorifics")) == f"leading_the,honorifics code={code[:16]}"
    assert ner_rules_key(()) == ""
