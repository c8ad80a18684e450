"""`csdata record release`: a ReCoRD run as a Hugging Face `Release`, its configs `passages`
(the official JSON shape) and `queries` (rows from `transforms.record.export.release_rows`) and
what its dataset card says of ReCoRD: the models that annotated the run, the limitations, the
citation. The card's sections every dataset shares come from the caller.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from transforms.core.reporting.release import Release

CITATION = """@article{zhang2018record,
  title   = {{ReCoRD}: Bridging the Gap between Human and Machine Commonsense Reading Comprehension},
  author  = {Zhang, Sheng and Liu, Xiaodong and Liu, Jingjing and Gao, Jianfeng and Duh, Kevin and
             Van Durme, Benjamin},
  journal = {arXiv preprint arXiv:1810.12885},
  year    = {2018}
}"""
LIMITATIONS = """Entities and coreference come from the models named above, not from the paper's
Google and AllenNLP annotations, so some mentions are missed or mislabelled, which drops
sentences or answers (see the csdata README, "Fidelity"). A release of a `generate` or `filter`
run is not crowd-validated (paper §3.4): its splits are the URL lists' (`train` when none was
given), and its queries may be unanswerable or answerable without commonsense. The news articles'
copyright stays with CNN and the Daily Mail; use for research only."""


def card_limitations(spec: Mapping[str, Any], steps: Sequence[Mapping[str, Any]]) -> str:
    """The card's "Limitations": the models of `spec` (the run's recorded spec) that annotated
    the run, and the machine filter's reader when a `record filter` step is among `steps`."""
    models = (f"annotator `{spec['annotator']['name']}` (model `{spec['annotator']['model']}`), "
              f"coreference `{spec['coref']['name']}`")
    if any(s.get("command") == "record filter" for s in steps):
        models += f", machine-filter reader `{spec['filter']['reader']}`"
    return f"Annotated by: {models}.\n\n{' '.join(LIMITATIONS.split())}"


def build_release(run_dir: str, sections: list[tuple[str, str]], file_metadata: dict[str, str]) -> Release:
    """The `Release` of the ReCoRD run in `run_dir` with the card's `sections` and the Parquet
    `file_metadata`."""
    from data_specs import load_schema
    from transforms.core.reporting.release import Config, Release
    from transforms.record.export import release_rows

    passages, queries = release_rows(run_dir)
    return Release(
        pretty_name="ReCoRD (regenerated with csdata)",
        configs=[Config("passages", load_schema("record", "release_passages"), passages, "passages"),
                 Config("queries", load_schema("record", "release_queries"), queries, "queries")],
        license="unknown", task_categories=["question-answering"], task_ids=["extractive-qa"],
        source_datasets=["extended|cnn_dailymail"],
        summary=("Reading Comprehension with Commonsense Reasoning (Zhang et al. 2018): cloze "
                 "queries over CNN/Daily Mail news passages, regenerated from raw articles by "
                 "csdata. Config `passages` has one row per passage with its queries in the "
                 "official ReCoRD JSON shape; config `queries` one row per query. Offsets are "
                 "character offsets into the passage text; `end` is inclusive."),
        sections=sections, citation=CITATION, file_metadata=file_metadata)
