"""Annotation backends that read an external tool's files instead of running a model.

* `deepmind-metadata`: DeepMind rc-data per-article metadata (`tokens/<id>.txt`,
  `entities/<id>.txt`; one entity index is one coreference chain), read per article; optionally
  checked against the entity names of the `.question` files.
* `allennlp-predictions`: the JSON lines `allennlp predict` wrote for the coreference model and
  the NER tagger, paired line by line with the input files `csdata record annotation-inputs`
  wrote, then joined with the passages by article id.

Both turn an article's annotations into a `DocumentAnnotation` and place it with
`assemble_document`; unusable annotations become rejects of the `annotate` stage.
"""
from __future__ import annotations

import io
from typing import Callable, Iterable, Iterator, Optional, Union

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystems import FileSystems

from data_specs import SpecError
from data_specs.models import AllennlpPredictionsOptions, AnnotatorSection, DeepmindMetadataOptions
from transforms.core.accounting import Reject
from transforms.core.stages import Stage
from transforms.record.annotate import STAGE
from transforms.record.annotate.backends import allennlp, deepmind
from transforms.record.annotate.document import assemble_document
from transforms.record.annotate.spans import trim_span
from transforms.record.annotation import AnnotatedArticle, AnnotationError
from transforms.record.article import PassageSplit, article_document
from transforms.record.formats import url_to_id


def _required(value: str, backend: str, key: str) -> str:
    if not value:
        raise SpecError(f"annotator {backend!r} needs annotator.{backend}.{key} in the spec "
                         f"(e.g. --set annotator.{backend}.{key}=PATH)")
    return value


def _placed(split: PassageSplit, build) -> Iterator[Union[AnnotatedArticle, Reject]]:
    try:
        yield assemble_document(split, build(), trim_span)
    except AnnotationError as error:
        yield Reject(STAGE, error.reason, split.article.id, error.detail[:300])


def annotate_from_deepmind(split: PassageSplit, root: str,
                           names: Optional[dict[str, str]] = None) -> Iterator[Union[AnnotatedArticle, Reject]]:
    """One article from its DeepMind metadata files under `root`; `names` (from the article's
    `.question` files) are checked against the entities' token text when given."""

    def build():
        tokens, entities = deepmind.read_article_metadata(root, split.article.id)
        document = article_document(split.article)
        if names:
            deepmind.check_entity_names(document, tokens, entities, names)
        return deepmind.document_annotation(document, tokens, entities)

    yield from _placed(split, build)


def question_names(path: str) -> Iterator[tuple[str, dict[str, str]]]:
    """(article id = sha1(url), {"@entityN": name}) of one DeepMind `.question` file."""
    with FileSystems.open(path) as handle:
        url, _, _, _, names = deepmind.parse_question_file(handle.read().decode("utf-8"))
    yield url_to_id(url.strip()), names


def _merge(dicts: Iterable[dict]) -> dict:
    merged: dict = {}
    for names in dicts:
        merged.update(names)
    return merged


def _annotate_grouped(grouped: tuple[str, dict[str, list]], root: str):
    _, groups = grouped
    names = groups["names"][0] if groups["names"] else None
    for split in groups["splits"]:
        yield from annotate_from_deepmind(split, root, names)


class AnnotateFromDeepMind(beam.PTransform):
    """`deepmind-metadata`: each article's tokens/entities files, read where it is processed.

    With `annotator.deepmind-metadata.questions` (a glob of `.question` files), the entity
    names they list are joined by article id and checked against the metadata.
    """

    def __init__(self, options: DeepmindMetadataOptions):
        super().__init__()
        self._root = _required(options.root, "deepmind-metadata", "root").rstrip("/")
        self._questions = options.questions

    def expand(self, splits):
        root = self._root
        if not self._questions:
            return splits | "ReadMetadata" >> Stage(STAGE, lambda s: annotate_from_deepmind(s, root))
        names = (splits.pipeline
                 | "QuestionFiles" >> fileio.MatchFiles(self._questions)
                 | "Paths" >> beam.Map(lambda m: m.path)
                 | "ReadQuestions" >> beam.FlatMap(question_names)
                 | "MergeNames" >> beam.CombinePerKey(_merge))
        grouped = ({"splits": splits | "KeyById" >> beam.Map(lambda s: (s.article.id, s)), "names": names}
                   | "JoinNames" >> beam.CoGroupByKey())
        return grouped | "ReadMetadata" >> Stage(STAGE, lambda g: _annotate_grouped(g, root),
                                                 units=lambda g: len(g[1]["splits"]))


def _lines(path: str) -> Iterator[str]:
    with FileSystems.open(path) as handle:
        yield from io.TextIOWrapper(handle, encoding="utf-8")


def read_pairs(paths: tuple[str, str]) -> Iterator[tuple[str, tuple[dict, dict]]]:
    """(article id, (input record, prediction)) from an input file and its prediction file."""
    inputs, predictions = paths
    for article_id, source, prediction in allennlp.pair_lines(_lines(inputs), _lines(predictions)):
        yield article_id, (source, prediction)


def annotate_from_allennlp(grouped: tuple[str, dict[str, list]]) -> Iterator[Union[AnnotatedArticle, Reject]]:
    """The articles of one id with their coreference prediction and NER sentence predictions."""
    _, groups = grouped
    coref = [prediction for _, prediction in groups["coref"]]
    ner = sorted(groups["ner"], key=lambda pair: int(pair[0].get("offset", 0)))
    for split in groups["splits"]:
        if not coref and not ner:
            yield Reject(STAGE, "annotation_missing", split.article.id, "no AllenNLP prediction lines")
            continue
        document = article_document(split.article)
        yield from _placed(split, lambda document=document: allennlp.document_annotation(
            document, coref[0] if coref else None, ner))


class AnnotateFromAllenNlp(beam.PTransform):
    """`allennlp-predictions`: prediction files paired with their inputs, joined by article id."""

    def __init__(self, options: AllennlpPredictionsOptions):
        super().__init__()
        backend = "allennlp-predictions"
        self._coref = (_required(options.coref_input, backend, "coref_input"),
                       _required(options.coref_predictions, backend, "coref_predictions"))
        self._ner = (_required(options.ner_input, backend, "ner_input"),
                     _required(options.ner_predictions, backend, "ner_predictions"))

    def expand(self, splits):
        pipeline = splits.pipeline
        coref = (pipeline | "CorefFiles" >> beam.Create([self._coref])
                 | "PairCoref" >> beam.FlatMap(read_pairs) | "RebalanceCoref" >> beam.Reshuffle())
        ner = (pipeline | "NerFiles" >> beam.Create([self._ner])
               | "PairNer" >> beam.FlatMap(read_pairs) | "RebalanceNer" >> beam.Reshuffle())
        grouped = ({"splits": splits | "KeyById" >> beam.Map(lambda s: (s.article.id, s)),
                    "coref": coref, "ner": ner}
                   | "JoinPredictions" >> beam.CoGroupByKey())
        return grouped | "Place" >> Stage(STAGE, annotate_from_allennlp,
                                          units=lambda g: len(g[1]["splits"]))


# Backends that read annotation files: name -> factory(the spec's `annotator` section).
FILE_BACKENDS: dict[str, Callable[[AnnotatorSection], beam.PTransform]] = {
    "deepmind-metadata": lambda annotator: AnnotateFromDeepMind(annotator.deepmind_metadata),
    "allennlp-predictions": lambda annotator: AnnotateFromAllenNlp(annotator.allennlp_predictions),
}
