"""Commands load only what they use (issue #11): each command runs through `pipeline.cli.main.main`
in a fresh interpreter, which then reports the heavy modules it imported.

Only imports are checked here, never timings (`make bench` measures those). The help screens
load no Beam, no models, no spec models (pydantic) and no scipy. `protoqa score` loads scipy
(its assignment solver) but no Beam, no pydantic, and no NLTK once the WordNet index is cached.
`record export`, `stats` and the plain-Python ProtoQA steps load no Beam and no model.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from tests.conftest import Probe, probe_modules
from transforms.core.io.tables import write_json, write_rows

ROOT = Path(__file__).resolve().parents[2]
PROTOQA_SAMPLES = ROOT / "tests" / "data" / "protoqa"
MODELS = frozenset({"apache_beam", "torch", "transformers", "spacy"})
WATCHED = sorted(MODELS | {"scipy", "nltk", "pydantic", "pyarrow", "sklearn", "datasketch"})

def command(*argv: str, env: dict[str, str] | None = None) -> tuple[int | str | None, Probe]:
    """`csdata ARGV` through `pipeline.cli.main.main` in a fresh interpreter: its exit code, and which
    of the WATCHED modules it imported."""
    code = ("from pipeline.cli.main import main\n"
            "try:\n"
            f"    _code = main({list(argv)!r})\n"
            "except SystemExit as stop:\n"
            "    _code = stop.code\n"
            "print('\\nexit', repr(_code))\n")
    probe = probe_modules(code, WATCHED, env=env)
    return ast.literal_eval(probe.stdout.splitlines()[-1].removeprefix("exit ")), probe


def loaded_by(*argv: str, env: dict[str, str] | None = None) -> set[str]:
    """The watched modules `csdata ARGV` imported in a fresh interpreter (the command must succeed)."""
    code, probe = command(*argv, env=env)
    assert code in (0, None), probe.stderr
    return set(probe.loaded)


@pytest.mark.parametrize("argv", [
    ["--help"], ["record", "--help"], ["cosmos", "--help"], ["protoqa", "--help"],
    ["record", "generate", "--help"], ["protoqa", "score", "--help"], ["stats", "--help"],
    ["--version"],
])
def test_help_loads_nothing_heavy(argv):
    assert loaded_by(*argv) == set()


# ------------------------------------------------------------------------------ protoqa score
TARGETS = [
    {"metadata": {"id": "q1"}, "question": {"normalized": "name a pet."},
     "answers": {"clusters": {"q1.0": {"count": 3, "answers": ["dog", "puppy"]},
                              "q1.1": {"count": 1, "answers": ["cat"]}}}},
]
PREDICTIONS = {"q1": ["Puppies", "kitten", "dog"]}


def score_files(tmp_path: Path) -> list[str]:
    targets, predictions = tmp_path / "targets.jsonl", tmp_path / "predictions.json"
    targets.write_text("".join(json.dumps(t) + "\n" for t in TARGETS), encoding="utf-8")
    predictions.write_text(json.dumps(PREDICTIONS), encoding="utf-8")
    return ["protoqa", "score", "--targets", str(targets), "--predictions", str(predictions)]


def test_exact_score_loads_the_solver_only(tmp_path):
    loaded = loaded_by(*score_files(tmp_path), "--json")
    assert loaded == {"scipy"}


@pytest.mark.slow   # builds the WordNet index once (about a second)
def test_wordnet_score_never_loads_nltk(tmp_path):
    argv = [*score_files(tmp_path), "--similarity", "wordnet", "--json"]
    cache = {"CSDATA_CACHE_DIR": str(tmp_path / "cache")}
    cold = loaded_by(*argv, env=cache)
    assert cold == {"scipy"}                                               # built from the index files
    assert list((tmp_path / "cache").glob("wordnet-index-*.pickle"))
    assert loaded_by(*argv, env=cache) == {"scipy"}                        # warm: the cached index


# ------------------------------------------------------------------ finished runs: export, stats
BODY = "Ana Silva opened a cafe in Porto. Silva had worked in Lisbon for years."
TEXT = BODY + "\n@highlight\nA new cafe in Porto"


def mention(text: str, name: str, label: str, chain: int) -> dict:
    start = text.index(name)
    return {"start": start, "end": start + len(name) - 1, "text": name, "label": label, "chain": chain}


def write_record_run(root: Path) -> Path:
    """A finished ReCoRD run of one passage and one query, written by hand."""
    passage = {"passage_id": "p1", "source": "CNN", "url": "", "split": "train", "encoding": "utf-8",
               "text": TEXT, "body_end": len(BODY), "passage_paragraphs": 1, "rest_paragraphs": 1,
               "tokens": 14, "entities": [mention(TEXT, "Ana Silva", "PERSON", 0),
                                          mention(TEXT, "Porto", "GPE", 1),
                                          mention(TEXT, "Lisbon", "GPE", 2)]}
    sentence = "Ana Silva plans a second cafe next year."
    answer = mention(TEXT, "Ana Silva", "PERSON", 0)
    query = {"query_id": "p1-q1", "passage_id": "p1", "query": "@placeholder plans a second cafe next year.",
             "sentence": sentence, "sentence_index": 0, "placeholder_start": 0, "mention": "Ana Silva",
             "label": "PERSON", "chain": 0,
             "answers": [{k: answer[k] for k in ("start", "end", "text")}], "filters_passed": ["ngram"]}
    write_rows([passage], "record", "passages", root / "passages")
    write_rows([query], "record", "queries", root / "queries")
    write_rows([], "record", "rejects", root / "rejects")
    write_json(str(root / "summary.json"), {"stages": {}})
    return root


def test_record_export_and_stats_load_no_beam_or_models(tmp_path):
    run = write_record_run(tmp_path / "record")
    exported = tmp_path / "record.json"
    assert not MODELS & loaded_by("record", "export", str(run), "--output", str(exported))
    assert json.loads(exported.read_text())["data"][0]["qas"][0]["id"] == "p1-q1"
    assert not (MODELS | {"scipy"}) & loaded_by("stats", str(run))


def test_describe_loads_pyarrow_only_and_release_no_beam_or_models(tmp_path):
    run = write_record_run(tmp_path / "record")
    assert loaded_by("describe", str(run / "queries")) == {"pyarrow"}
    released = tmp_path / "released"
    assert not MODELS & loaded_by("record", "release", str(run), "--output", str(released))
    assert (released / "README.md").is_file() and (released / "queries").is_dir()


def test_protoqa_release_and_its_stats_load_no_beam_or_models(tmp_path):
    release = tmp_path / "release"
    loaded = loaded_by("protoqa", "release", "--input", str(PROTOQA_SAMPLES / "golden_adjudicated.jsonl"),
                       "--output", str(release))
    assert not (MODELS | {"scipy"}) & loaded
    assert (release / "dev.jsonl").exists()
    assert not (MODELS | {"scipy"}) & loaded_by("stats", str(release))


def test_a_missing_file_is_a_user_error_without_the_spec_models(tmp_path):
    """The error path itself must not import data_specs (pydantic) to classify the error."""
    code, probe = command("protoqa", "score", "--targets", str(tmp_path / "absent.jsonl"),
                          "--predictions", str(tmp_path / "absent.json"))
    assert code == 2 and "csdata: error:" in probe.stderr
    assert "pydantic" not in probe.loaded
