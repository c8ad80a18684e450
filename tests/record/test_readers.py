"""Candidates, the random baseline and the lexical / predictions readers."""
import json
import random

import pytest

from data_specs import load_spec
from transforms.core.errors import UserError
from transforms.record.readers import make_reader
from transforms.record.readers.base import Triple, candidates, correct_flags, random_baseline

SPEC = load_spec("record")
PEOPLE = ["Ada Quill", "Bo Vance", "Cy Moreau", "Di Lark"]
PLACES = ["Brighton", "Leeds", "Bristol"]


def triple(i: int, rng: random.Random) -> Triple:
    """A synthetic passage: the answer is the person who 'signed the treaty' in the passage."""
    people = rng.sample(PEOPLE, 3)
    place = rng.choice(PLACES)
    text = (f"{people[0]} signed the treaty in {place} on Monday. {people[1]} attended the dinner. "
            f"{people[2]} spoke to reporters. {people[1]} left early.")
    entities = []
    for name in people + [place]:
        start = text.index(name)
        while start != -1:
            entities.append((start, start + len(name) - 1, name, "GPE" if name in PLACES else "PERSON"))
            start = text.find(name, start + 1)
    query = "Officials confirmed that @placeholder signed the treaty after long talks."
    return Triple(query_id=f"q{i}", passage_id=f"p{i}", passage=text, body_end=len(text),
                  entities=tuple(entities), query=query, answers=(people[0],), fold=i % 2)


def test_candidates_merge_mentions_by_normalised_text():
    t = Triple("q", "p", "The UN met. the UN said. Paris", 30,
               ((4, 5, "UN", "ORG"), (16, 17, "UN", "ORG"), (25, 29, "Paris", "GPE")),
               "@placeholder said", ("UN",))
    cands = candidates(t)
    assert [(c.text, c.mentions) for c in cands] == [("UN", ((4, 6), (16, 18))), ("Paris", ((25, 30),))]
    assert correct_flags(t, cands) == [True, False]
    assert random_baseline(t) == 0.5


def test_lexical_reader_learns_and_beats_random():
    rng = random.Random(7)
    train = [triple(i, rng) for i in range(60)]
    test = [triple(i, rng) for i in range(60, 100)]
    reader = make_reader("lexical", SPEC.filter.readers, SPEC.seed)
    model = reader.fit([reader.prepare(t) for t in train])
    answers = reader.predict(model, [reader.prepare(t) for t in test])
    accuracy = sum(a == t.answers[0] for a, t in zip(answers, test)) / len(test)
    baseline = sum(random_baseline(t) for t in test) / len(test)
    assert baseline == pytest.approx(0.25)
    assert accuracy >= 0.9
    assert reader.predict(reader.load(reader.save(model)), [reader.prepare(test[0])]) == answers[:1]


def test_lexical_reader_without_both_classes_ranks_by_frequency():
    rng = random.Random(1)
    t = triple(0, rng)
    reader = make_reader("lexical", SPEC.filter.readers, SPEC.seed)
    no_answers = Triple(**{**t.__dict__, "answers": ("Nobody",)})
    model = reader.fit([reader.prepare(no_answers)])
    [answer] = reader.predict(model, [reader.prepare(t)])
    counts = {c.text: len(c.mentions) for c in candidates(t)}
    assert counts[answer] == max(counts.values())


def test_predictions_reader_reads_an_external_file(tmp_path):
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"q1": "Ada Quill"}))
    reader = make_reader(f"predictions:{path}", SPEC.filter.readers, SPEC.seed)
    assert reader.predict(reader.fit([]), ["q1", "q2"]) == ["Ada Quill", ""]
    with pytest.raises(FileNotFoundError):
        make_reader(f"predictions:{tmp_path / 'missing.json'}", SPEC.filter.readers, SPEC.seed)
    with pytest.raises(UserError, match="needs a file"):
        make_reader("predictions", SPEC.filter.readers, SPEC.seed)


def test_unknown_reader_lists_the_known_ones():
    with pytest.raises(ValueError, match="lexical"):
        make_reader("san", SPEC.filter.readers, SPEC.seed)
