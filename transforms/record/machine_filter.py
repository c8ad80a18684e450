"""Stage 3 of ReCoRD (§3.3): k-fold machine filtering of generated triples.

Folds come from a hash of the passage id and the spec's seed, so no article is split across
folds. Each fold's reader is trained on the other folds' examples (capped at
`filter.max_train_triples` by a hash sample). The examples never travel as one group: every
worker writes the examples of its bundles into files, one per training fold, and only the
files' paths are grouped by fold (`WriteTraining`, `GroupByFold`); `TrainFold`, a step of its
own after a reshuffle of those small groups, so that a cluster trains the folds on different
workers, reads its fold's files, orders the examples by query id and fits. The files are
removed once every fold's model is written. A fold's model is
written as an artifact whose path reaches the prediction as a side input; prediction is Beam's
`RunInference`, one per fold, with a model handler that loads that artifact
(`ReaderModelHandler`). A triple the reader answers correctly (exact match with any reference) is
dropped; the others are kept.
"""
from __future__ import annotations

import pickle
import uuid
from typing import Any, Iterable, Iterator, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindows

from data_specs.models import FilterSection
from transforms.core.accounting import Reject
from transforms.core.hashing import unit_hash
from transforms.core.io.shards import remove_folder
from transforms.core.models.heap import release_memory
from transforms.core.models.inference import ModelHandler, ModelMetadata, PredictionResult, RunInference
from transforms.core.progress.lines import TaskLog
from transforms.core.progress.steps import ProgressLine
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


# TaskLog settings (enabled, interval, origin) of a training that reports nothing.
NO_PROGRESS: tuple[bool, float, tuple[str, int]] = (False, 0.0, ("", 0))


def model_path(output: str, reader: str, fold: int) -> str:
    return f"{output}/models/{reader.replace(':', '_').replace('/', '_')}-fold{fold}.bin"


class WriteTrainingFn(beam.DoFn):
    """Write each bundle's training examples into one file per training fold (a stream of
    pickled `(query id, example)` records under `folder`) and emit `(fold, (path, count))` at
    the bundle's end: the examples stay in files written by every worker, and only their paths
    are grouped by fold (a DoFn for the bundle boundaries)."""

    def __init__(self, folder: str, folds: int, seed: int, max_train: int):
        self._folder, self._folds, self._seed, self._max_train = folder, folds, seed, max_train
        self._files: dict[int, tuple[str, Any, int]] = {}

    def start_bundle(self) -> None:
        self._files = {}

    def process(self, item: tuple[dict, int, Any, float], total: int) -> tuple[()]:
        row, fold, example, _ = item
        per_fold = total * (self._folds - 1) / self._folds
        keep = 1.0 if per_fold <= self._max_train else self._max_train / per_fold
        for k in training_keys(fold, row["query_id"], self._folds, self._seed, keep):
            if k not in self._files:
                path = f"{self._folder}/fold{k}-{uuid.uuid4().hex}.pkl"
                self._files[k] = (path, FileSystems.create(path), 0)
            path, handle, count = self._files[k]
            pickle.dump((row["query_id"], example), handle, protocol=pickle.HIGHEST_PROTOCOL)
            self._files[k] = (path, handle, count + 1)
        return ()

    def finish_bundle(self) -> Iterator[Any]:
        files, self._files = self._files, {}
        for k, (path, handle, count) in sorted(files.items()):
            handle.close()
            yield GlobalWindows.windowed_value((k, (path, count)))


def read_training(paths: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """The `(query id, example)` records of training files written by `WriteTrainingFn`."""
    for path in paths:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            while True:
                try:
                    yield pickle.load(handle)
                except EOFError:
                    break


def remove_training(folder: str) -> None:
    """Remove the training files once every fold's model is written (any Beam filesystem)."""
    remove_folder(folder)


class TrainFoldFn(beam.DoFn):
    """Fit the reader on one fold's training files and write the model artifact; a long training
    reports on stderr as `csdata: fold K: ...` (`progress`: (enabled, interval, origin))."""

    def __init__(self, reader: Reader, output: str, choice: str,
                 progress: tuple[bool, float, tuple[str, int]] = NO_PROGRESS):
        self._reader, self._output, self._choice, self._progress = reader, output, choice, progress

    def process(self, keyed: tuple[int, Iterable[tuple[str, int]]]) -> Iterator[tuple[int, str]]:
        fold, files = keyed
        paths = sorted(path for path, _ in files)
        ordered = sorted(read_training(paths), key=lambda e: e[0])  # by query id: independent of bundling
        enabled, interval, origin = self._progress
        log = TaskLog(f"fold {fold}", enabled, interval, origin)
        model = self._reader.fit([example for _, example in ordered], log=log)
        del ordered
        path = model_path(self._output, self._choice, fold)
        with FileSystems.create(path) as handle:
            handle.write(self._reader.save(model))
        del model                          # before the next fold's model is built
        release_memory()
        yield fold, path


class ReaderModelHandler(ModelHandler):
    """One fold's reader model for Beam's `RunInference`: loaded (once per worker) from the
    artifact the fold's training wrote, it answers batches of `(row, fold, example, baseline)`."""

    def __init__(self, reader: Reader, path: str, max_batch_size: int):
        super().__init__()
        self._reader, self._path, self._max_batch_size = reader, path, max_batch_size

    def load_model(self) -> Any:
        with FileSystems.open(self._path) as handle:
            return self._reader.load(handle.read())

    def update_model_path(self, model_path: Optional[str] = None) -> None:
        # The path comes from the fold's training step (RunInference's model side input).
        if model_path:
            self._path = model_path

    def run_inference(self, batch: Sequence[tuple], model: Any,
                      inference_args: Optional[dict[str, Any]] = None) -> Iterator[PredictionResult]:
        answers = self._reader.predict(model, [item[2] for item in batch])
        return (PredictionResult(item, answer) for item, answer in zip(batch, answers))

    def batch_elements_kwargs(self) -> dict[str, Any]:
        return {"min_batch_size": 1, "max_batch_size": self._max_batch_size}


def answered_row(item: tuple[dict, int, Any, float], answer: str, choice: str) -> tuple[dict, float]:
    """The query row with the reader's answer and whether it is correct, and its random baseline."""
    row, fold, _, baseline = item
    answers_text = [a["text"] for a in row["answers"]]
    return {**row, "fold": fold, "reader": choice, "reader_answer": answer,
            "reader_correct": bool(answer) and is_correct(answer, answers_text)}, baseline


def fold_model(trained: tuple[int, str], fold: int) -> list[ModelMetadata]:
    """The model of `fold` for its RunInference step, from a `(fold, path)` of `TrainFold`."""
    return [ModelMetadata(trained[1], f"fold{fold}")] if trained[0] == fold else []


def fold_route(item: tuple[dict, int, Any, float], parts: int, paths: dict[int, str]) -> int:
    """The triple's fold when that fold has a model; the last part (answers nothing) otherwise."""
    return item[1] if item[1] in paths else parts - 1


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
    number of folds and the training and batch bounds; models are written under `output`. With a
    `progress` line, each fold's training says how far it got and the line counts the triples
    predicted, as each fold's RunInference answers them.
    """

    def __init__(self, filter_: FilterSection, seed: int, output: str,
                 progress: Optional[ProgressLine] = None):
        super().__init__()
        self._line = progress
        self._reader = make_reader(filter_.reader, filter_.readers, seed)
        self._choice, self._output = filter_.reader, output
        self._folds, self._seed = filter_.folds, seed
        self._max_train, self._max_per_call = filter_.max_train_triples, filter_.max_triples_per_call
        self._training_folder = f"{output}/models/.training-{uuid.uuid4().hex}"

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

        line = self._line
        training_log = (line.enabled, line.interval, line.origin) if line is not None else NO_PROGRESS
        folder = self._training_folder
        files = examples | "WriteTraining" >> beam.ParDo(
            WriteTrainingFn(folder, folds, seed, max_train), beam.pvalue.AsSingleton(total))
        paths = (
            files
            | "GroupByFold" >> beam.GroupByKey()
            # Flink places the groups by a hash of the fold, which can put most folds on one
            # worker; a reshuffle (round robin there) deals them out over the workers again.
            | "SpreadFolds" >> beam.Reshuffle()
            | "TrainFold" >> beam.ParDo(TrainFoldFn(reader, self._output, self._choice, training_log))
        )
        _ = (paths.pipeline | "AfterTraining" >> beam.Impulse()
             | "RemoveTraining" >> beam.Map(lambda _, models: remove_training(folder), beam.pvalue.AsList(paths)))
        parts = examples | "RouteByFold" >> beam.Partition(fold_route, folds + 1, beam.pvalue.AsDict(paths))
        answered = []
        for fold in range(folds):
            model = paths | f"ModelOfFold{fold}" >> beam.FlatMap(fold_model, fold)
            handler = ReaderModelHandler(reader, model_path(self._output, self._choice, fold),
                                         self._max_per_call)
            answers = (parts[fold]
                       | f"PredictFold{fold}" >> RunInference(handler, model_metadata_pcoll=model)
                       | f"AnswersOfFold{fold}" >> beam.Map(
                           lambda result, choice: answered_row(result.example, result.inference, choice),
                           self._choice))
            answered.append(answers)
        # A fold without a model (no training data in a tiny run) answers nothing.
        answered.append(parts[folds] | "Unanswered" >> beam.Map(answered_row, "", self._choice))
        if line is not None:
            # Counted where each fold's answers come out, not after all folds are done.
            answered = [answers | f"ProgressPredicted{k}" >> line.step("predicted", "triples")
                        for k, answers in enumerate(answered)]
        predicted = answered | "AllAnswers" >> beam.Flatten()
        training_sizes = (files | "CountTraining" >> beam.Map(lambda kf: (kf[0], kf[1][1]))
                          | "SumTraining" >> beam.CombinePerKey(sum)
                          | "TrainingStats" >> beam.Map(lambda kn: (kn[0], (0, 0, 0.0, kn[1]))))
        kept, rejects, tallies = predicted | "Decide" >> Stage(STAGE, keep_or_drop)
        rejects = (rejects, orphans) | "AllRejects" >> beam.Flatten()
        orphan_tallies = orphans | "TallyOrphans" >> beam.FlatMap(
            lambda r: [((STAGE, "in"), 1), ((STAGE, "rejected." + r.reason), 1)])
        tallies = (tallies, orphan_tallies) | "AllTallies" >> beam.Flatten()
        dropped = (predicted | "Dropped" >> beam.Filter(lambda item: item[0]["reader_correct"])
                   | "DroppedRows" >> beam.Map(lambda item: item[0]))
        fold_stats = (predicted | "FoldStats" >> beam.Map(
            lambda item: (item[0]["fold"], (1, int(item[0]["reader_correct"]), item[1], 0))))
        fold_stats = (fold_stats, training_sizes) | "AllFoldStats" >> beam.Flatten()
        return kept, dropped, rejects, tallies, fold_stats


def fold_summary(reader: str, stats: list[tuple[int, tuple[int, int, float, int]]],
                 stages: dict) -> dict:
    """`summary.json` of a filter run: per fold, the triples, how many the reader answered beside
    the random baseline, and how many triples the fold's model was trained on."""
    folds = []
    for fold, (triples, answered, baseline, training) in sorted(stats):
        folds.append({"fold": fold, "triples": triples, "answered": answered,
                      "answered_rate": answered / triples if triples else 0.0,
                      "random_baseline": baseline / triples if triples else 0.0,
                      "training_triples": training})
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
    """Per-fold answered rate beside the random baseline and the training-set size (the paper:
    68 % answered overall, SAN trained on about 616k triples a fold)."""
    lines = [f"reader: {summary['reader']}",
             f"{'fold':>4}{'triples':>9}{'answered':>10}{'rate':>8}{'random':>8}{'trained on':>12}"]
    for fold in summary["folds"]:
        lines.append(f"{fold['fold']:>4}{fold['triples']:>9}{fold['answered']:>10}"
                     f"{fold['answered_rate']:>8.1%}{fold['random_baseline']:>8.1%}"
                     f"{fold['training_triples']:>12,}")
    lines.append(f"{'all':>4}{summary['in']:>9}{summary['dropped']:>10}"
                 f"{summary['answered_rate']:>8.1%}{summary['random_baseline']:>8.1%}"
                 f"   kept {summary['kept']} (paper: 68% answered and dropped)")
    return "\n".join(lines)
