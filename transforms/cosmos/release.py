"""Cosmos QA release export (the dataset as published with the paper, Huang et al. 2019), and
`csdata cosmos release`: the same rows in the Hugging Face layout with their dataset card.

`export_release` writes the splits of a `csdata cosmos hits import` run as the release files:
`train.csv` and `dev.csv` (`id, context, question, answer0..answer3, label`) and `test.jsonl`
(the same fields without `label`), rows in id order; NOTA answers are written as the release's
exact "None of the above choices ." string (`nota.text`).
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, TextIO, Union

from transforms.core.io.tables import read_table

if TYPE_CHECKING:
    from transforms.core.reporting.release import Release

PathLike = Union[str, Path]
RELEASE_COLUMNS = ("id", "context", "question", "answer0", "answer1", "answer2", "answer3", "label")


def write_release_csv(rows: Iterable[Mapping[str, Any]], handle: TextIO) -> None:
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(RELEASE_COLUMNS)
    for r in rows:
        writer.writerow([r[c] for c in RELEASE_COLUMNS])


def write_release_jsonl(rows: Iterable[Mapping[str, Any]], handle: TextIO) -> None:
    for r in rows:
        handle.write(json.dumps({c: r[c] for c in RELEASE_COLUMNS if c != "label"}, ensure_ascii=False) + "\n")


def export_release(qa_dir: PathLike, out_dir: PathLike) -> dict[str, int]:
    """`train.csv`, `dev.csv` (with label) and `test.jsonl` (without) as in the Cosmos QA release."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split, name, writer in (("train", "train.csv", write_release_csv), ("dev", "dev.csv", write_release_csv),
                                ("test", "test.jsonl", write_release_jsonl)):
        rows = sorted(read_table(qa_dir, split).to_pylist(), key=lambda r: r["id"])
        with (out / name).open("w", encoding="utf-8", newline="") as handle:
            writer(rows, handle)
        counts[name] = len(rows)
    return counts


# ---- `csdata cosmos release`: the Hugging Face layout and card --------------------------------
CITATION = """@inproceedings{huang2019cosmos,
  title     = {Cosmos {QA}: Machine Reading Comprehension with Contextual Commonsense Reasoning},
  author    = {Huang, Lifu and Le Bras, Ronan and Bhagavatula, Chandra and Choi, Yejin},
  booktitle = {Proceedings of the 2019 Conference on Empirical Methods in Natural Language Processing
               and the 9th International Joint Conference on Natural Language Processing (EMNLP-IJCNLP)},
  pages     = {2391--2401},
  year      = {2019}
}"""
# A run's split -> the Hub's split name; test labels stay hidden as in the release (label -1).
HF_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
HIDDEN_LABEL = -1


def release_rows(qa_dir: PathLike) -> dict[str, list[dict[str, Any]]]:
    """The release columns per Hub split (train, validation, test), rows in id order; the test
    split's label is -1, as the published test file has none."""
    found = {}
    for split, name in HF_SPLITS.items():
        rows = sorted(read_table(qa_dir, split, list(RELEASE_COLUMNS)).to_pylist(), key=lambda r: r["id"])
        if split == "test":
            rows = [{**r, "label": HIDDEN_LABEL} for r in rows]
        found[name] = rows
    return found


LIMITATIONS = """Paragraphs were cut by the coherence model named above and one was sampled per
blog by hash; the questions, answers and validations are the crowd's, imported from the task
CSVs, and the "None of the above" distractors replaced the least challenging negative chosen by
the answer scorer named above. The test split's labels are -1, as in the published release
(they stay in the run's test/ table). The Blog Authorship Corpus is for non-commercial research."""


def check_releasable(qa_dir: PathLike) -> None:
    """A release is made of the train/, dev/ and test/ tables of a `cosmos hits import` run;
    another folder is a UserError."""
    from transforms.core.errors import UserError

    if not all((Path(qa_dir) / split).is_dir() for split in ("train", "dev", "test")):
        raise UserError(f"{qa_dir} has no train/, dev/ and test/ tables: release the output of "
                        "`csdata cosmos hits import`")


def card_limitations(spec: Mapping[str, Any]) -> str:
    """The card's "Limitations": the models of `spec` (the run's recorded spec), then LIMITATIONS."""
    models = (f"coherence scorer `{spec['coherence']['name']}`, answer scorer "
              f"`{spec['answer_scorer']['name']}`, sentences `{spec['sentences']['model']}`")
    return f"Models: {models}.\n\n{' '.join(LIMITATIONS.split())}"


def build_release(qa_dir: PathLike, sections: list[tuple[str, str]], file_metadata: dict[str, str]) -> Release:
    """The `Release` of the `cosmos hits import` run in `qa_dir` with the card's `sections`
    and the Parquet `file_metadata`."""
    from data_specs import load_schema
    from transforms.core.reporting.release import Config, Release

    return Release(
        pretty_name="Cosmos QA (regenerated with csdata)",
        configs=[Config("default", load_schema("cosmos", "release"), release_rows(qa_dir))],
        license="cc-by-4.0", task_categories=["multiple-choice"], task_ids=["multiple-choice-qa"],
        source_datasets=["extended|blog_authorship_corpus"],
        summary=("Cosmos QA (Huang et al. 2019): multiple-choice reading comprehension that needs "
                 "contextual commonsense, over paragraphs of personal blog stories, regenerated by "
                 "csdata. One row per question with four options and the correct option's index."),
        sections=sections, citation=CITATION, file_metadata=file_metadata)
