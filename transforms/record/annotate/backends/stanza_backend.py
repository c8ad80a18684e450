"""stanza (tokenize, ner, coref) over whole article documents, as `DocumentAnnotation`s.

The models are never downloaded here: `check_stanza_resources` verifies them up front and
names the command that fetches them. stanza 1.15's default resources directory is
`$STANZA_RESOURCES_DIR`, else `~/.cache/stanza/<version>/resources` (older releases used
`~/stanza_resources`). The coref model also needs its Hugging Face transformer in the local
Hugging Face cache; `stanza.download` does not fetch it, the first online `stanza.Pipeline`
with coref does.

Coreference mentions (`stanza.models.coref.coref_chain.CorefMention`) are
`(sentence, start_word, end_word)` with 0-based word indexes and `end_word` exclusive; a
zero-anaphora mention has tuple indexes and no text, and is skipped.
"""
from __future__ import annotations

import os
from typing import Any, Optional, Sequence

from transforms.core.models.loading import ModelUnavailable
from transforms.record.annotate.backends import chain_mentions
from transforms.record.annotation import AnnotationError, DocumentAnnotation

PROCESSORS = "tokenize,ner,coref"
LANG = "en"
DOWNLOAD_COMMAND = ("python -c \"import stanza; stanza.download('en', "
                    "processors='tokenize,ner,coref')\"")


def _default_dir() -> str:
    env = os.environ.get("STANZA_RESOURCES_DIR")
    if env:
        return env
    try:
        from stanza.resources.common import USER_CACHE_DIR
    except ImportError:
        return os.path.expanduser("~/stanza_resources")
    return os.path.join(USER_CACHE_DIR, "resources")


def required_model_files(resources_dir: str) -> list[str]:
    """The model files a `tokenize,ner,coref` English pipeline loads, as stanza resolves them
    from `resources.json` (dependencies such as pretrained embeddings and charlms included)."""
    from stanza.resources import common

    resources = common.load_resources_json(resources_dir)
    lang = resources.get(LANG, {}).get("alias", LANG)
    if lang not in resources:
        raise ModelUnavailable(f"stanza resources.json in {resources_dir} has no language {lang!r}")
    _, _, package, processors = common.process_pipeline_parameters(lang, resources_dir, "default",
                                                                   PROCESSORS)
    load_list = common.maintain_processor_list(resources, lang, package, processors)
    load_list = common.add_dependencies(resources, lang, load_list)
    missing = {p for p in PROCESSORS.split(",")} - {item[0] for item in load_list}
    if missing:
        raise ModelUnavailable(f"stanza resources.json in {resources_dir} lists no English "
                               f"{', '.join(sorted(missing))} model")
    return [os.path.join(resources_dir, lang, processor, package + ".pt")
            for processor, package in common.flatten_processor_list(load_list)]


def check_stanza_resources(resources_dir: Optional[str] = None) -> str:
    """The stanza resources directory (`resources_dir`, else $STANZA_RESOURCES_DIR, else stanza's
    default), after checking that `resources.json` and the English tokenize, ner and coref
    model files it lists exist. Raises ModelUnavailable naming what is missing and the command
    that fetches it; never downloads."""
    directory = resources_dir or _default_dir()
    fetch = f"fetch them with: STANZA_RESOURCES_DIR={directory} {DOWNLOAD_COMMAND}"
    try:
        import stanza  # noqa: F401
    except ImportError:
        raise ModelUnavailable("stanza is not installed; `pip install stanza`") from None
    if not os.path.isfile(os.path.join(directory, "resources.json")):
        raise ModelUnavailable(f"stanza models are not installed: no resources.json in "
                               f"{directory}; {fetch}")
    try:
        files = required_model_files(directory)
    except ModelUnavailable as error:
        raise ModelUnavailable(f"{error}; {fetch}") from None
    except (ValueError, KeyError, TypeError) as error:
        raise ModelUnavailable(f"stanza resources.json in {directory} is unreadable "
                               f"({type(error).__name__}: {error}); {fetch}") from None
    missing = [path for path in files if not os.path.isfile(path)]
    if missing:
        raise ModelUnavailable(f"stanza model files missing: {', '.join(missing)}; {fetch}")
    return directory


def _is_word_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def document_from_stanza(doc: Any) -> DocumentAnnotation:
    """Entities (`doc.ents`), coreference chains (`doc.coref`) and sentences of a processed
    `stanza.Document`, in the character offsets of `doc.text`."""
    sentences = doc.sentences
    clusters: list[list[tuple[int, int]]] = []
    for chain in doc.coref or ():
        spans = []
        for mention in chain.mentions:
            if not (_is_word_index(mention.start_word) and _is_word_index(mention.end_word)):
                continue  # zero anaphora: no text
            if not 0 <= mention.sentence < len(sentences):
                raise AnnotationError("bad_token_offsets", f"coref sentence {mention.sentence}")
            words = sentences[mention.sentence].words
            if not 0 <= mention.start_word < mention.end_word <= len(words):
                raise AnnotationError("bad_token_offsets",
                                      f"coref words {mention.start_word}-{mention.end_word} of "
                                      f"{len(words)} in sentence {mention.sentence}")
            first, last = words[mention.start_word], words[mention.end_word - 1]
            start = first.start_char if first.start_char is not None else first.parent.start_char
            end = last.end_char if last.end_char is not None else last.parent.end_char
            spans.append((start, end))
        clusters.append(spans)
    mentions = [(ent.start_char, ent.end_char, ent.type) for ent in doc.ents]
    sentence_spans = [(s.tokens[0].start_char, s.tokens[-1].end_char)
                      for s in sentences if s.tokens]
    return chain_mentions(doc.text, mentions, clusters, sentence_spans)


class StanzaAnnotator:
    """A stanza `tokenize,ner,coref` pipeline over article documents."""

    name = "stanza"

    def __init__(self, resources_dir: Optional[str] = None, batch_size: int = 8,
                 use_gpu: Optional[bool] = None, **_: Any):
        self.resources_dir = check_stanza_resources(resources_dir)
        self.batch_size = batch_size
        import stanza

        try:
            self.nlp = stanza.Pipeline(LANG, processors=PROCESSORS, dir=self.resources_dir,
                                       download_method=None, use_gpu=use_gpu,
                                       logging_level="WARN")
        except Exception as error:  # a transformer missing from the HF cache, a bad file, ...
            raise ModelUnavailable(f"stanza pipeline failed to load from {self.resources_dir} "
                                   f"({type(error).__name__}: {error}); {DOWNLOAD_COMMAND}, "
                                   f"then build one pipeline online to cache its transformer"
                                   ) from error

    def annotate_documents(self, texts: Sequence[str]) -> list[DocumentAnnotation]:
        """Annotate each article document; same length and order as `texts`."""
        import stanza

        results: list[DocumentAnnotation] = []
        for at in range(0, len(texts), self.batch_size):
            docs = [stanza.Document([], text=text) for text in texts[at:at + self.batch_size]]
            results.extend(document_from_stanza(doc) for doc in self.nlp(docs))
        return results
