"""Stored annotations (`csdata record annotate`): their key, their Parquet rows, and the match.

An article's annotations are reused when its text and the annotator settings are those they
were made with. The text is keyed by `Article.content_key()` (sha1 of the paragraphs and the
highlights); the settings are the ones that shape the model's output: the backend, the spaCy
model and the package that provides it (name and version), the sentence splitter (and the
version of its rules, for the rule-based one), the spaCy version and the layout of the stored units (`FORMAT`). Settings applied after the model pass
(labels, name propagation, coreference, the passage split, every filter threshold) and batch
sizes are not part of the key: a variant of them reuses every annotation.

Each row also holds the article's MinHash signature with what it was made with
(`minhash_key`), so that near-duplicate removal of a generate run from the annotations hashes
no shingles for an unchanged article made with the same shingle size, permutations and seed.

The entities after the NER post-rules (`annotator.ner_rules`) depend only on the text, the rule
list and the rules' code, so `record annotate` stores them too, with `ner_rules_key` (the rule
names and a hash of `ner_rules.py`). A run whose key matches takes them as they are; any other
rule list (or changed rule code) applies its rules to the stored model spans, so the rules stay
out of the reuse key.

Chains are not stored: which mentions are passage or rest mentions, and their reading order
(passage, highlights, rest), depend on the split, and chains depend on `annotator.labels` and
`annotator.propagate_names` too, so they are computed when a run assembles the units.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import json
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from data_specs.models import AnnotatorSection
from transforms.core.models.loading import PYPI_BUILDS
from transforms.record.annotate import ner_rules
from transforms.record.annotate.sentences import RULES_VERSION
from transforms.record.annotation import ArticleAnnotation, UnitAnnotation
from transforms.record.article import Article

# The layout of the stored units; bump it when what a unit holds or how it is made changes.
FORMAT = 1
CACHED_BACKENDS = ("spacy",)
TABLE = "annotations"


def text_hash(article: Article) -> str:
    """The key of what is annotated: sha1 of the article's paragraphs and highlights."""
    return article.content_key()


def _distribution_version(name: str) -> str:
    for candidate in (name, name.replace("_", "-")):
        try:
            return importlib.metadata.version(candidate)
        except importlib.metadata.PackageNotFoundError:
            continue
    return ""


def _meta(location: Path) -> dict[str, Any]:
    for meta in [location / "meta.json", *sorted(location.glob("*/meta.json"))]:
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            return data
    return {}


def spacy_model_identity(model: str) -> dict[str, str]:
    """What `load_spacy(model)` loads, found without loading it: package (or path), version.

    The official package comes first, then its PyPI build, as `load_spacy` tries them.
    """
    if Path(model).is_dir():
        meta = _meta(Path(model))
        return {"package": str(Path(model).resolve()), "version": str(meta.get("version", ""))}
    for package in (model, PYPI_BUILDS.get(model)):
        if package is None:
            continue
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        version = _distribution_version(package)
        if not version and spec.submodule_search_locations:
            version = str(_meta(Path(next(iter(spec.submodule_search_locations)))).get("version", ""))
        return {"package": package, "version": version}
    return {"package": model, "version": ""}


def model_settings(annotator: AnnotatorSection) -> dict[str, Any]:
    """The settings that shape the model pass of the spec's backend (see the module docstring)."""
    return {
        "annotator": annotator.name,
        "model": annotator.model,
        **spacy_model_identity(annotator.model),
        "sentences": annotator.sentences,
        **({"sentence_rules": RULES_VERSION} if annotator.sentences == "corenlp" else {}),
        "spacy": _distribution_version("spacy"),
        "format": FORMAT,
    }


def settings_key(settings: Mapping[str, Any]) -> tuple[str, str]:
    """(JSON, sha1 of the JSON) of the settings: the stored `settings` and `settings_hash`."""
    text = json.dumps(dict(settings), sort_keys=True)
    return text, hashlib.sha1(text.encode("utf-8")).hexdigest()


def minhash_key(shingle_size: int, num_perm: int, seed: int) -> str:
    """What a stored MinHash signature depends on besides the article's text: the shingle size,
    the permutations, the seed and the datasketch version (its hashing scheme)."""
    return f"shingles={shingle_size} perm={num_perm} seed={seed} datasketch={_distribution_version('datasketch')}"


@functools.cache
def _rules_code() -> str:
    return hashlib.sha1(Path(ner_rules.__file__).read_bytes()).hexdigest()[:16]


def ner_rules_key(rules: Sequence[str]) -> str:
    """What the stored entities after the NER post-rules were made with: the rule names in
    order and a hash of the rules' code (`ner_rules.py`); "" without rules."""
    return f"{','.join(rules)} code={_rules_code()}" if rules else ""


def annotation_row(annotation: ArticleAnnotation, minhash: tuple[str, Sequence[int]] = ("", ()),
                   texts: Optional[Sequence[str]] = None, rules: Sequence[str] = ()) -> dict[str, Any]:
    """The Parquet row of an article's annotations (schema `annotations`; `end` inclusive).

    `minhash` is `(minhash_key, signature)` of the article's MinHash, made when annotating so
    that generate runs from these annotations skip it (`("", ())`: none). With `texts` (the
    article's units, `Article.paragraphs + highlights`) and `rules`, the entities after those
    NER post-rules are stored too (`ruled_mentions`, keyed by `ner_rules_key`).
    """
    units = annotation.paragraphs + annotation.highlights
    ruled: list[dict[str, Any]] = []
    if texts is not None and rules:
        ruled = [{"unit": i, "start": s, "end": e - 1, "label": label}
                 for i, (text, unit) in enumerate(zip(texts, units))
                 for s, e, label in ner_rules.apply_rules(text, unit.entities, rules)]
    return {
        "minhash_key": minhash[0],
        "minhash": [int(v) for v in minhash[1]],
        "ner_rules": ner_rules_key(rules) if texts is not None else "",
        "ruled_mentions": ruled,
        "article_id": annotation.article_id,
        "text_hash": annotation.text_hash,
        "annotator": annotation.annotator,
        "settings": annotation.settings,
        "settings_hash": annotation.settings_hash,
        "paragraphs": len(annotation.paragraphs),
        "highlights": len(annotation.highlights),
        "sentences": [{"unit": i, "start": s, "end": e - 1}
                      for i, unit in enumerate(units) for s, e in unit.sentences],
        "mentions": [{"unit": i, "start": s, "end": e - 1, "label": label}
                     for i, unit in enumerate(units) for s, e, label in unit.entities],
    }


def annotation_from_row(row: Mapping[str, Any], article: Article,
                        rules: Sequence[str] = ()) -> Optional[ArticleAnnotation]:
    """The annotations of a row, or None when they do not fit `article` (another text or
    layout, or an offset outside its unit). With `rules` (`annotator.ner_rules`), the stored
    entities after the NER post-rules come with the units when they were made with the same
    rules and rule code (`ner_rules_key`)."""
    texts: Sequence[str] = article.paragraphs + article.highlights
    if (row["text_hash"] != text_hash(article) or row["paragraphs"] != len(article.paragraphs)
            or row["highlights"] != len(article.highlights)):
        return None
    with_ruled = bool(rules) and row.get("ner_rules") == ner_rules_key(rules)
    sentences: list[list[tuple[int, int]]] = [[] for _ in texts]
    entities: list[list[tuple[int, int, str]]] = [[] for _ in texts]
    ruled: list[list[tuple[int, int, str]]] = [[] for _ in texts]
    for items, into, item_of in ((row["sentences"], sentences, lambda r: (r["start"], r["end"] + 1)),
                                 (row["mentions"], entities,
                                  lambda r: (r["start"], r["end"] + 1, r["label"])),
                                 (row.get("ruled_mentions") or () if with_ruled else (), ruled,
                                  lambda r: (r["start"], r["end"] + 1, r["label"]))):
        for item in items:
            unit = item["unit"]
            if not (0 <= unit < len(texts) and 0 <= item["start"] <= item["end"] < len(texts[unit])):
                return None
            into[unit].append(item_of(item))
    names = tuple(rules)
    units = tuple(UnitAnnotation(tuple(s), tuple(e), (names, tuple(r)) if with_ruled else None)
                  for s, e, r in zip(sentences, entities, ruled))
    n = len(article.paragraphs)
    return ArticleAnnotation(row["article_id"], row["text_hash"], row["annotator"], row["settings"],
                             row["settings_hash"], units[:n], units[n:])


def match_stored(article: Article, rows: Sequence[Mapping[str, Any]], settings_hash: str,
                 rules: Sequence[str] = ()) -> tuple[Optional[ArticleAnnotation], str]:
    """The stored annotations to reuse for `article` and "reused", or None and why not:
    `not_stored`, `text_changed`, `settings_changed` (or `unusable` for a row that does not fit).
    `rules` as in `annotation_from_row`."""
    digest = text_hash(article)
    why = "not_stored"
    for row in rows:
        if row["text_hash"] != digest:
            why = "text_changed" if why == "not_stored" else why
            continue
        if row["settings_hash"] != settings_hash:
            why = "settings_changed"
            continue
        annotation = annotation_from_row(row, article, rules)
        if annotation is not None:
            return annotation, "reused"
        why = "unusable"
    return None, why
