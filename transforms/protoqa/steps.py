"""The plain-Python steps of ProtoQA, each writing one output folder: answer collection
(`run_hits_export`, `run_hits_import`), cluster proposals (`run_cluster_prep`), the
two-annotator sheets (`run_sheets_export`, `run_sheets_import`), their adjudication
(`run_adjudicate`) and the release's coverage filter and split (`write_release_splits`; its
Hugging Face layout and card: `transforms.protoqa.release`). The question curation is a Beam
pipeline (`pipeline.graphs.protoqa`).

They handle ~100 answers per question for ~150 questions, so they run without Beam. Each returns
what its command prints; `run_step` tells from a folder's files which step wrote it.
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence, Union

if TYPE_CHECKING:
    from data_specs import ProtoqaSpec

# The files (or table folders) only each step with statistics writes, in the order looked for.
STEP_FILES = (("release", ("coverage.json", "dev.jsonl", "test.jsonl", "unsplit.jsonl")),
              ("adjudicate", ("adjudicated.jsonl",)), ("sheets-import", ("agreement.json",)),
              ("questions", ("questions.jsonl",)), ("cluster-prep", ("answers",)))


def run_step(folder: Union[str, Path]) -> Optional[str]:
    """The step that wrote `folder` (`release`, `adjudicate`, `sheets-import`, `questions`,
    `cluster-prep`), known by the files only it writes; None for any other folder."""
    folder = Path(folder)
    return next((step for step, names in STEP_FILES if any((folder / n).exists() for n in names)), None)


def local_dir(output: str) -> Path:
    """The output folder, created when missing."""
    path = Path(output)
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_jsonl(path: Path, records: Sequence[dict]) -> None:
    """protoqa-data records, one a line."""
    from transforms.protoqa.release import dumps_record

    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(dumps_record(record) + "\n")


def tally_summary(stages: dict[str, tuple[int, int, Counter]], order: Sequence[str]) -> dict:
    """The summary of plain-Python stages: `order` first (zeros for a stage that never ran)."""
    from transforms.core.accounting import stage_entry

    names = list(order) + [s for s in stages if s not in order]
    return {"stages": {s: stage_entry(*stages.get(s, (0, 0, {}))) for s in names}}


def run_hits_export(questions_path: str, fmt: str, output: str) -> dict[str, str]:
    """`protoqa hits export`: the task files; returns their paths by role."""
    from transforms.protoqa.hits import export_label_studio, export_mturk, read_questions

    questions = read_questions(questions_path)
    path = local_dir(output)
    return export_mturk(questions, path) if fmt == "mturk" else export_label_studio(questions, path)


def run_hits_import(spec: ProtoqaSpec, results: str, output: str, fmt: str = "auto",
                    hits_dir: Optional[str] = None) -> dict:
    """`protoqa hits import`: the crowd answers CSV and its rejects; returns the summary."""
    from transforms.core.errors import UserError
    from transforms.protoqa.hits import IMPORT, import_results, rejects_path, write_answers, write_rejects

    if Path(output).suffix.lower() in (".json", ".jsonl"):
        raise UserError(f"--output {output}: the import writes the crowd answers CSV that "
                        f"cluster-prep reads; give a .csv path")
    if not hits_dir:
        print("warning: without --hits, results of another export are not detected", file=sys.stderr)
    rows, rejects, n_in = import_results(results, spec.limits, fmt, hits_dir)
    write_rejects(rejects_path(output), rejects)
    write_answers(output, rows)
    summary = tally_summary({IMPORT: (n_in, len(rows), Counter(r.reason for r in rejects))}, [IMPORT])
    summary["questions"] = len({r["question_id"] for r in rows})
    return summary


def run_cluster_prep(spec: ProtoqaSpec, answers_csv: str, output: str, models=None) -> dict:
    """Normalised answers and proposed clusters of a crowd answers CSV; returns the summary."""
    from transforms.core.io.tables import write_json, write_rows
    from transforms.core.reporting.provenance import file_metadata
    from transforms.protoqa.cluster_prep import (
        PREP_STAGES,
        PROPOSE,
        READ,
        check_models,
        prepare_all,
        read_crowd_answers,
    )

    if models is None:
        check_models(spec.answers)
    path = local_dir(output)
    questions, rejects, n_rows = read_crowd_answers(answers_csv, spec.limits)
    rows = prepare_all(questions, spec.answers, spec.seed, models)
    summary = tally_summary({
        READ: (n_rows, n_rows - len(rejects), Counter(r.reason for r in rejects)),
        PROPOSE: (len(questions), len({r["question_id"] for r in rows}), Counter()),
    }, PREP_STAGES)
    meta = file_metadata(spec, [answers_csv])
    write_rows(rows, "protoqa", "answers", path / "answers", file_metadata=meta)
    write_rows([r.row() for r in rejects], "protoqa", "rejects", path / "rejects", file_metadata=meta)
    write_json(str(path / "summary.json"), summary)
    return summary


def run_sheets_export(prep_dir: str, output: str, annotators: Sequence[str], fmt: str = "csv",
                      invalid_labels: Sequence[str] = ("?", "invalid")) -> list[str]:
    """One blank annotation sheet per annotator (default A and B), CSV or .xlsx with drop-downs
    (`invalid_labels` end each list); returns their paths."""
    from transforms.protoqa.cluster_prep import read_prep
    from transforms.protoqa.sheet_export import ANNOTATOR_COLUMNS, export_sheet_rows, write_csv, write_xlsx

    path = local_dir(output)
    rows = export_sheet_rows(read_prep(prep_dir))
    written = []
    for name in annotators or ["A", "B"]:
        target = path / f"sheet_{name}.{fmt}"
        if fmt == "xlsx":
            write_xlsx(str(target), rows, invalid_labels)
        else:
            write_csv(str(target), ANNOTATOR_COLUMNS, rows)
        written.append(str(target))
    return written


def run_sheets_import(spec: ProtoqaSpec, sheets: Sequence[str], output: str,
                      columns: Optional[Sequence[str]] = None) -> dict:
    """BLANC agreement of two annotators, their disagreements and the adjudication sheet."""
    from transforms.core.io.tables import write_json
    from transforms.protoqa.sheet_export import write_csv
    from transforms.protoqa.sheet_read import load_sheet
    from transforms.protoqa.sheets import (
        ADJUDICATION_COLUMNS,
        DISAGREEMENT_COLUMNS,
        adjudication_rows,
        agreement,
        disagreements,
        merge_read_sheets,
    )

    invalid = spec.sheets.invalid_labels
    merged, (col_a, col_b) = merge_read_sheets([load_sheet(s, spec.limits) for s in sheets], columns)
    result = agreement(merged, "annotator_a", "annotator_b", invalid, spec.sheets.blanc.mentions)
    result["annotators"] = ([Path(s).stem for s in sheets] if len(sheets) == 2 and not columns
                            else [col_a, col_b])
    result["paper_blanc"] = spec.sheets.paper_blanc
    path = local_dir(output)
    write_json(str(path / "agreement.json"), result)
    disputes = [d for q in merged for d in disagreements(q, "annotator_a", "annotator_b", invalid)]
    write_csv(str(path / "disagreements.csv"), DISAGREEMENT_COLUMNS, disputes)
    write_csv(str(path / "adjudication.csv"), ADJUDICATION_COLUMNS, adjudication_rows(merged, invalid))
    result["disagreements"] = len(disputes)
    return result


def run_adjudicate(spec: ProtoqaSpec, sheet: str, output: str, column: Optional[str] = None) -> dict:
    """protoqa-data records of an adjudicated sheet (OUTPUT/adjudicated.jsonl); the summary."""
    from transforms.core.io.tables import write_json
    from transforms.protoqa.sheet_read import load_sheet
    from transforms.protoqa.sheets import ADJUDICATE, adjudicate, adjudication_column

    questions, cols = load_sheet(sheet, spec.limits)
    records, rejects = adjudicate(questions, column or adjudication_column(cols),
                                  spec.sheets.invalid_labels, spec.release.source)
    path = local_dir(output)
    write_jsonl(path / "adjudicated.jsonl", records)
    summary = tally_summary({ADJUDICATE: (len(questions), len(records),
                                          Counter(r.reason for r in rejects))}, [ADJUDICATE])
    summary["rejects"] = [r.row() for r in rejects]
    write_json(str(path / "summary.json"), summary)
    return summary


def write_release_splits(spec: ProtoqaSpec, inputs: Sequence[str], output: str) -> dict:
    """`protoqa release` without its Hugging Face layout: the coverage filter and the dev / test
    split of the records of `inputs`, written as OUTPUT/{dev,test}.jsonl (and unsplit.jsonl when
    questions are left over), OUTPUT/coverage.json (what every reading keeps) and
    OUTPUT/summary.json; returns {"summary", "coverage": the report, "splits"}."""
    from transforms.core.io.tables import write_json
    from transforms.protoqa.release import (
        COVERAGE,
        RELEASE_STAGES,
        SPLIT,
        coverage_report,
        filter_coverage,
        read_records,
        split_records,
    )

    records = read_records(inputs)
    report = coverage_report(records, spec.coverage)
    kept, rejects = filter_coverage(records, spec.coverage)
    splits = split_records(kept, spec.release, spec.seed)
    path = local_dir(output)
    for name, items in splits.items():
        target = path / f"{name}.jsonl"
        if name == "unsplit" and not items:
            if target.exists():
                target.unlink()
            continue
        write_jsonl(target, items)
    split_kept = len(splits["dev"]) + len(splits["test"])
    summary = tally_summary({
        COVERAGE: (len(records), len(kept), Counter(r["reason"] for r in rejects)),
        SPLIT: (len(kept), split_kept, Counter({"over_split_sizes": len(splits["unsplit"])})
                if splits["unsplit"] else Counter()),
    }, RELEASE_STAGES)
    summary["splits"] = {name: [r["metadata"]["id"] for r in items] for name, items in splits.items()}
    summary["rejects"] = rejects
    write_json(str(path / "coverage.json"), report)
    write_json(str(path / "summary.json"), summary)
    return {"summary": summary, "coverage": report, "splits": splits}
