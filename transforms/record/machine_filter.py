"""Stage 3 of ReCoRD (§3.3): k-fold machine filtering of generated triples.

Folds come from a hash of the passage id and the spec's seed, so no article is split across
folds. Each fold's reader is trained on the other folds' examples, grouped by fold (one group
per fold, capped by a hash sample); its model is written as an artifact and its path reaches the
prediction step as a side input. Prediction runs in parallel over batches. A triple the reader
answers correctly (exact match with any reference) is dropped; the others are kept.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from data_specs.models import FilterSection
from transforms.core.accounting import Reject
from transforms.core.hashing import unit_hash
from transforms.core.models import release_memory
from transforms.core.reporting import TaskLog
from transforms.core.stages import Stage
from transforms.record.metric import is_correct
from transforms.record.readers import make_reader
from transforms.record.readers.base import Reader, Triple, random_baseline

STAGE = "machine_filter"


def fold_of(passage_id: str, seed: int, folds: int) -> int:
    """The fold of a passage (and of all its triples)."""
    return int(unit_hash(seed, "fold", passage_id) * folds)


def make_triples(grouped: tuple[str, dict[str, list]], seed: int,
                 folds: int) -> Iterator[tuple[dict, Triple]]:
    """Join a passage with its query rows: `(query row, Triple)` per query."""
    passage_id, groups = grouped
    # Queries of an unknown passage yield nothing here: `orphan_queries` rejects them.
    passage = groups["passages"][0] if groups["passages"] else None
    entities = tuple((e["start"], e["end"], e["text"], e["label"]) for e in passage["entities"]) if passage else ()
    fold = fold_of(passage_id, seed, folds)
    for row in (groups["queries"] if passage else ()):
        yield row, Triple(query_id=row["query_id"], passage_id=passage_id, passage=passage["text"],
                          body_end=passage["body_end"], entities=entities, query=row["query"],
                          answers=tuple(a["text"] for a in row["answers"]), fold=fold)


def orphan_queries(grouped: tuple[str, dict[str, list]]) -> Iterator[Reject]:
    passage_id, groups = grouped
    for row in (groups["queries"] if not groups["passages"] else ()):
        yield Reject(STAGE, "passage_missing", row["query_id"], passage_id)


def training_keys(fold: int, query_id: str, folds: int, seed: int, keep: float) -> list[int]:
    """The folds whose model trains on this triple (all but its own), sampled to `keep`."""
    return [k for k in range(folds) if k != fold and unit_hash(seed, "train", k, query_id) < keep]


def model_path(output: str, reader: str, fold: int) -> str:
    return f"{output}/models/{reader.replace(':', '_').replace('/', '_')}-fold{fold}.bin"


class TrainFoldFn(beam.DoFn):
    """Fit the reader on one fold's training group and write the model artifact; a long training
    reports on stderr as `csdata: fold K: ...` (`progress`: (enabled, interval, origin))."""

    def __init__(self, reader: Reader, output: str, choice: str,
                 progress: tuple[bool, float, tuple[str, int]] = (False, 0.0, ("", 0))):
        self._reader, self._output, self._choice, self._progress = reader, output, choice, progress

    def process(self, keyed: tuple[int, Iterable[Any]]) -> Iterator[tuple[int, str]]:
        fold, examples = keyed
        ordered = sorted(examples, key=lambda e: e[0])  # by query id: independent of shuffling
        enabled, interval, origin = self._progress
        log = TaskLog(f"fold {fold}", enabled, interval, origin)
        model = self._reader.fit([example for _, example in ordered], log=log)
        path = model_path(self._output, self._choice, fold)
        with FileSystems.create(path) as handle:
            handle.write(self._reader.save(model))
        del model                          # before the next fold's model is built
        release_memory()
        yield fold, path


class PredictFn(beam.DoFn):
    """Answer a batch of triples with the model of each triple's fold (loaded once per worker)."""

    def __init__(self, reader: Reader, choice: str):
        self._reader, self._choice = reader, choice

    def setup(self) -> None:
        self._models: dict[int, Any] = {}

    def _model(self, fold: int, paths: dict[int, str]) -> Any:
        if fold not in self._models:
            with FileSystems.open(paths[fold]) as handle:
                self._models[fold] = self._reader.load(handle.read())
        return self._models[fold]

    def process(self, batch: list[tuple[dict, int, Any, float]], paths: dict[int, str]):
        by_fold: dict[int, list] = {}
        for item in batch:
            by_fold.setdefault(item[1], []).append(item)
        for fold, items in sorted(by_fold.items()):
            # A fold without a model (no training data in a tiny run) answers nothing.
            answers = (self._reader.predict(self._model(fold, paths), [i[2] for i in items])
                       if fold in paths else [""] * len(items))
            for (row, _, _, baseline), answer in zip(items, answers):
                answers_text = [a["text"] for a in row["answers"]]
                yield {**row, "fold": fold, "reader": self._choice, "reader_answer": answer,
                       "reader_correct": bool(answer) and is_correct(answer, answers_text)}, baseline


def keep_or_drop(item: tuple[dict, float]) -> Iterator[Any]:
    row, _ = item
    if row["reader_correct"]:
        yield Reject(STAGE, "answered_by_reader", row["query_id"],
                     f"fold {row['fold']}: {row['reader_answer']}")
    else:
        yield row


class MachineFilter(beam.PTransform):
    """Triples (rows + passages) in; `(kept rows, dropped rows, rejects, tallies, fold stats)` out.

    The spec's `filter` section chooses the reader (`reader`, its options under `readers`), the
    number of folds and the training and batch bounds; models are written under `output`.
    """

    def __init__(self, filter_: FilterSection, seed: int, output: str,
                 progress: tuple[bool, float, tuple[str, int]] = (False, 0.0, ("", 0))):
        super().__init__()
        self._progress = progress
        self._reader = make_reader(filter_.reader, filter_.readers, seed)
        self._choice, self._output = filter_.reader, output
        self._folds, self._seed = filter_.folds, seed
        self._max_train, self._max_per_call = filter_.max_train_triples, filter_.max_triples_per_call

    def expand(self, inputs):
        passages, queries = inputs
        reader, folds, seed, max_train = self._reader, self._folds, self._seed, self._max_train
        grouped = ({"passages": passages | "KeyPassages" >> beam.Map(lambda p: (p["passage_id"], p)),
                    "queries": queries | "KeyQueries" >> beam.Map(lambda q: (q["passage_id"], q))}
                   | "JoinPassages" >> beam.CoGroupByKey())
        triples = grouped | "MakeTriples" >> beam.FlatMap(make_triples, seed, folds)
        orphans = grouped | "OrphanQueries" >> beam.FlatMap(orphan_queries)
        examples = triples | "Prepare" >> beam.Map(
            lambda rt: (rt[0], rt[1].fold, reader.prepare(rt[1]), random_baseline(rt[1])))
        total = triples | "CountTriples" >> beam.combiners.Count.Globally()

        def to_groups(item, n):
            row, fold, example, _ = item
            per_fold = n * (folds - 1) / folds
            keep = 1.0 if per_fold <= max_train else max_train / per_fold
            for k in training_keys(fold, row["query_id"], folds, seed, keep):
                yield k, (row["query_id"], example)

        paths = (
            examples
            | "TrainingGroups" >> beam.FlatMap(to_groups, beam.pvalue.AsSingleton(total))
            | "GroupByFold" >> beam.GroupByKey()
            | "TrainFold" >> beam.ParDo(TrainFoldFn(reader, self._output, self._choice, self._progress))
        )
        predicted = (
            examples
            | "Batch" >> beam.BatchElements(min_batch_size=1, max_batch_size=self._max_per_call)
            | "Predict" >> beam.ParDo(PredictFn(reader, self._choice), beam.pvalue.AsDict(paths))
        )
        kept, rejects, tallies = predicted | "Decide" >> Stage(STAGE, keep_or_drop)
        rejects = (rejects, orphans) | "AllRejects" >> beam.Flatten()
        orphan_tallies = orphans | "TallyOrphans" >> beam.FlatMap(
            lambda r: [((STAGE, "in"), 1), ((STAGE, "rejected." + r.reason), 1)])
        tallies = (tallies, orphan_tallies) | "AllTallies" >> beam.Flatten()
        dropped = (predicted | "Dropped" >> beam.Filter(lambda item: item[0]["reader_correct"])
                   | "DroppedRows" >> beam.Map(lambda item: item[0]))
        fold_stats = predicted | "FoldStats" >> beam.Map(
            lambda item: (item[0]["fold"], (1, int(item[0]["reader_correct"]), item[1])))
        return kept, dropped, rejects, tallies, fold_stats


def fold_summary(reader: str, stats: list[tuple[int, tuple[int, int, float]]],
                 stages: dict) -> dict:
    """`summary.json` of a filter run: per-fold answered rates beside the random baseline."""
    folds = []
    for fold, (triples, answered, baseline) in sorted(stats):
        folds.append({"fold": fold, "triples": triples, "answered": answered,
                      "answered_rate": answered / triples if triples else 0.0,
                      "random_baseline": baseline / triples if triples else 0.0})
    entry = stages.get(STAGE, {"in": 0, "kept": 0, "rejected": {}})
    total = sum(f["triples"] for f in folds)
    return {
        "reader": reader,
        "folds": folds,
        "answered_rate": sum(f["answered"] for f in folds) / total if total else 0.0,
        "random_baseline": sum(f["random_baseline"] * f["triples"] for f in folds) / total if total else 0.0,
        "in": entry["in"],
        "kept": entry["kept"],
        "dropped": sum(entry["rejected"].values()),
        "stages": stages,
    }


def format_filter_summary(summary: dict) -> str:
    """Per-fold answered rate beside the random baseline (the paper: 68 % answered overall)."""
    lines = [f"reader: {summary['reader']}",
             f"{'fold':>4}{'triples':>9}{'answered':>10}{'rate':>8}{'random':>8}"]
    for fold in summary["folds"]:
        lines.append(f"{fold['fold']:>4}{fold['triples']:>9}{fold['answered']:>10}"
                     f"{fold['answered_rate']:>8.1%}{fold['random_baseline']:>8.1%}")
    lines.append(f"{'all':>4}{summary['in']:>9}{summary['dropped']:>10}"
                 f"{summary['answered_rate']:>8.1%}{summary['random_baseline']:>8.1%}"
                 f"   kept {summary['kept']} (paper: 68% answered and dropped)")
    return "\n".join(lines)
