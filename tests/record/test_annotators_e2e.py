"""Annotation backends end to end: generate with DeepMind metadata, and compare-annotators.

The metadata is written here in the rc-data format for the repo's sample stories: the tokens of
the story string, and one entity index per distinct name, marking every occurrence of the names
the default spaCy run found in the passages.
"""
from __future__ import annotations

import json
import re
from itertools import combinations
from pathlib import Path

import pytest

from pipeline.cli.main import main
from tests.conftest import DATA
from transforms.core.io.tables import read_table
from transforms.record.article import article_document
from transforms.record.formats import parse_story

STORIES = sorted((DATA / "cnn" / "stories").glob("*.story"))
NO_ENTITY_FILTER = ["--set", "passage.min_entities=0"]


def write_metadata(root: Path, story_path: Path, names: list[str]) -> None:
    article = parse_story(story_path.read_text(encoding="utf-8"), story_path.stem)
    document = article_document(article)
    tokens = [(m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", document)]
    byte = lambda i: len(document[:i].encode("utf-8"))  # noqa: E731  rc-data offsets are UTF-8 bytes
    (root / "tokens").mkdir(exist_ok=True)
    (root / "entities").mkdir(exist_ok=True)
    (root / "tokens" / f"{article.id}.txt").write_text(
        ";".join(f"{byte(s)},{byte(e) - byte(s) - 1}" for s, e in tokens) + "\n", encoding="utf-8")
    start_token = {s: i for i, (s, _) in enumerate(tokens)}
    end_token = {e: i for i, (_, e) in enumerate(tokens)}
    entries = []
    for index, name in enumerate(names):
        for match in re.finditer(re.escape(name), document):
            first, last = start_token.get(match.start()), end_token.get(match.end())
            if first is not None and last is not None:
                entries.append((index, first, last))
    (root / "entities" / f"{article.id}.txt").write_text(
        ";".join(f"{i},{a},{b}" for i, a, b in sorted(entries, key=lambda x: x[1])) + "\n",
        encoding="utf-8")


def generate(output: Path, *extra: str) -> None:
    argv = ["record", "generate", "--output", str(output)]
    for story in STORIES:
        argv += ["--input", str(story)]
    assert main(argv + NO_ENTITY_FILTER + list(extra)) == 0


def spans_and_links(table: list[dict]) -> tuple[dict, dict]:
    spans, chains = {}, {}
    for row in table:
        spans[row["passage_id"]] = {(e["start"], e["end"]) for e in row["entities"]}
        chains[row["passage_id"]] = {(e["start"], e["end"]): e["chain"] for e in row["entities"]}
    return spans, chains


def links(chain_of: dict, keep: set) -> set:
    members = {}
    for span, chain in chain_of.items():
        if span in keep:
            members.setdefault(chain, []).append(span)
    return {pair for group in members.values() for pair in combinations(sorted(group), 2)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("annotators")
    generate(base / "spacy")
    spacy_rows = read_table(str(base / "spacy"), "passages").to_pylist()
    metadata = base / "rc-data"
    metadata.mkdir()
    for story in STORIES:
        row = next((r for r in spacy_rows if r["passage_id"] == story.stem), None)
        names = sorted({e["text"] for e in row["entities"]}, key=len, reverse=True) if row else []
        write_metadata(metadata, story, names)
    (metadata / "tokens" / f"{STORIES[0].stem}.txt").unlink()   # one article without metadata
    return base, metadata, spacy_rows


def test_generate_with_deepmind_metadata_rejects_missing_files(runs):
    base, metadata, _ = runs
    generate(base / "deepmind", "--annotator", "deepmind-metadata",
             "--set", f"annotator.deepmind-metadata.root={metadata}")
    summary = json.loads((base / "deepmind" / "summary.json").read_text())["stages"]["annotate"]
    assert summary["balanced"] and summary["rejected"] == {"annotation_missing": 1}
    rows = read_table(str(base / "deepmind"), "passages").to_pylist()
    # the 7 CNN stories but S-short (too short to split) and C1 (no metadata): C2, C3, C4, C5, S-fewents
    assert len(rows) == 5
    assert all(r["text"][e["start"]: e["end"] + 1] == e["text"] for r in rows for e in r["entities"])
    assert read_table(str(base / "deepmind"), "queries").num_rows > 0


def test_compare_annotators_numbers_match_the_two_generate_runs(runs, tmp_path):
    base, metadata, spacy_rows = runs
    out = tmp_path / "compare"
    argv = ["record", "compare-annotators", "--output", str(out), "--a", "spacy", "--b", "deepmind-metadata",
            "--set", f"annotator.deepmind-metadata.root={metadata}"]
    for story in STORIES:
        argv += ["--input", str(story)]
    assert main(argv) == 0
    report = json.loads((out / "compare.json").read_text())
    spans_a, chains_a = spans_and_links(spacy_rows)
    spans_b, chains_b = spans_and_links(read_table(str(base / "deepmind"), "passages").to_pylist())
    both = sorted(set(spans_a) & set(spans_b))
    assert report["articles"] == len(both) == len(spacy_rows) - 1   # one article lacks metadata
    # Passage rows store inclusive ends; the report counts spans, so the convention cancels out.
    common = sum(len(spans_a[p] & spans_b[p]) for p in both)
    assert report["entity_spans"]["a"] == sum(len(spans_a[p]) for p in both)
    assert report["entity_spans"]["b"] == sum(len(spans_b[p]) for p in both)
    assert report["entity_spans"]["common"] == common
    link_a = sum(len(links(chains_a[p], spans_a[p] & spans_b[p])) for p in both)
    link_b = sum(len(links(chains_b[p], spans_a[p] & spans_b[p])) for p in both)
    link_common = sum(len(links(chains_a[p], spans_a[p] & spans_b[p])
                          & links(chains_b[p], spans_a[p] & spans_b[p])) for p in both)
    assert (report["chains"]["a"], report["chains"]["b"], report["chains"]["common"]) == (link_a, link_b, link_common)
    assert report["entity_spans"]["precision"] == pytest.approx(100 * common / report["entity_spans"]["b"])
    assert report["rejected"]["b"] == {"annotation_missing": 1}


def test_stanza_without_models_fails_at_start_up_with_the_fetch_command(tmp_path, monkeypatch, capsys):
    pytest.importorskip("stanza")
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(tmp_path / "no-models"))
    argv = ["record", "generate", "--input", str(STORIES[0]), "--output", str(tmp_path / "out"),
            "--annotator", "stanza"]
    assert main(argv) == 2
    message = capsys.readouterr().err
    assert "stanza.download('en'" in message and "resources.json" in message
    assert not (tmp_path / "out" / "summary.json").exists()   # nothing ran


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]", text)


def test_allennlp_predictions_round_trip(tmp_path):
    """annotation-inputs, then prediction files as `allennlp predict` writes them, then generate."""
    stories = STORIES[1:3]
    inputs = tmp_path / "inputs"
    argv = ["record", "annotation-inputs", "--output", str(inputs)]
    for story in stories:
        argv += ["--input", str(story)]
    assert main(argv) == 0
    coref_in = [json.loads(line) for line in (inputs / "coref_input.jsonl").read_text().splitlines()]
    ner_in = [json.loads(line) for line in (inputs / "ner_input.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in coref_in) == sorted(s.stem for s in stories)
    # The "model": every capitalised word pair is a PER name, all its mentions one cluster.
    names = {}
    with open(tmp_path / "coref_pred.jsonl", "w") as out:
        for record in coref_in:
            tokens = _tokens(record["document"])
            spans = {}
            for i in range(len(tokens) - 1):
                if tokens[i][:1].isupper() and tokens[i + 1][:1].isupper() and tokens[i].isalpha():
                    spans.setdefault(f"{tokens[i]} {tokens[i + 1]}", []).append([i, i + 1])
            names[record["id"]] = set(spans)
            out.write(json.dumps({"document": tokens, "clusters": [v for v in spans.values() if len(v) > 1]}) + "\n")
    with open(tmp_path / "ner_pred.jsonl", "w") as out:
        for record in ner_in:
            words = _tokens(record["sentence"])
            tags = ["O"] * len(words)
            for i in range(len(words) - 1):
                if f"{words[i]} {words[i + 1]}" in names[record["id"]] and tags[i] == "O":
                    tags[i], tags[i + 1] = "B-PER", "L-PER"
            out.write(json.dumps({"words": words, "tags": tags}) + "\n")
    out_dir = tmp_path / "out"
    settings = [f"annotator.allennlp-predictions.coref_input={inputs / 'coref_input.jsonl'}",
                f"annotator.allennlp-predictions.coref_predictions={tmp_path / 'coref_pred.jsonl'}",
                f"annotator.allennlp-predictions.ner_input={inputs / 'ner_input.jsonl'}",
                f"annotator.allennlp-predictions.ner_predictions={tmp_path / 'ner_pred.jsonl'}"]
    argv = ["record", "generate", "--output", str(out_dir), "--annotator", "allennlp-predictions"]
    for story in STORIES[1:4]:          # the third story has no prediction lines
        argv += ["--input", str(story)]
    for setting in settings:
        argv += ["--set", setting]
    assert main(argv + NO_ENTITY_FILTER) == 0
    stages = json.loads((out_dir / "summary.json").read_text())["stages"]
    summary = stages["annotate"]
    assert summary["balanced"]
    # By hand: the three stories (C4, C3, C2 of expectations.json) are long enough to split, the
    # two with prediction lines are annotated, the third is missing; every passage is kept.
    assert stages["passage_split"]["kept"] == summary["in"] == 3
    assert (summary["kept"], summary["rejected"]) == (2, {"annotation_missing": 1})
    passages = read_table(str(out_dir), "passages").to_pylist()
    assert sorted(r["passage_id"] for r in passages) == sorted(s.stem for s in stories)
    for row in passages:
        assert row["entities"], row["passage_id"]
        # Names as tagged, "the" trimmed as for every backend ("The Venezuela ..." -> "Venezuela").
        assert all(e["label"] == "PERSON" and any(n.endswith(e["text"]) for n in names[row["passage_id"]])
                   for e in row["entities"])
        assert all(row["text"][e["start"]: e["end"] + 1] == e["text"] for e in row["entities"])


def test_deepmind_question_files_check_entity_names(runs, tmp_path):
    base, metadata, spacy_rows = runs
    urls = {}
    for line_file in (DATA / "url_lists").glob("*.txt"):
        for url in line_file.read_text().split():
            urls[__import__("hashlib").sha1(url.encode()).hexdigest()] = url
    good, bad = STORIES[1], STORIES[2]
    questions = tmp_path / "questions"
    questions.mkdir()
    for story, corrupt in ((good, False), (bad, True)):
        row = next(r for r in spacy_rows if r["passage_id"] == story.stem)
        names = sorted({e["text"] for e in row["entities"]}, key=len, reverse=True)
        entity_lines = [f"@entity{i}:{n}" for i, n in enumerate(names) if re.fullmatch(r"[\w ]+", n)]
        if corrupt:
            entity_lines[0] = entity_lines[0].split(":")[0] + ":Somebody Else"
        (questions / f"{story.stem}.question").write_text(
            f"{urls[story.stem]}\n\ncontext\n\nquestion\n\n@entity0\n\n" + "\n".join(entity_lines) + "\n")
    out = tmp_path / "out"
    generate(out, "--annotator", "deepmind-metadata",
             "--set", f"annotator.deepmind-metadata.root={metadata}",
             "--set", f"annotator.deepmind-metadata.questions={questions}/*.question")
    rejects = read_table(str(out), "rejects").to_pylist()
    annotate = [(r["reason"], r["record_id"]) for r in rejects if r["stage"] == "annotate"]
    assert ("entity_name_mismatch", bad.stem) in annotate
    assert all(record_id != good.stem for _, record_id in annotate)
    assert good.stem in {r["passage_id"] for r in read_table(str(out), "passages").to_pylist()}
