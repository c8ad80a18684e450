"""The `csdata report` page of a Cosmos QA run (`cosmos paragraphs` or `cosmos hits import`).

Table 1 is `csdata stats`' own cells (`paragraph_rows` / `qa_rows`); the words histogram is the
one `csdata stats` prints. The paper (Huang et al. 2019) gives lengths as ranges and means, not
figures: paragraphs of 30-150 words (§2.1, Appendix A), and Table 1's mean and maximum tokens per
paragraph, question and answer; the charts mark those and say that no paper figure exists.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Union

from data_specs.models import CosmosPaperTable1, NotaSection
from filters.text import count_tokens
from transforms.core.accounting import STAGE_UNITS
from transforms.core.io import read_table
from transforms.core.plots import Line, Shade, bars_svg, histogram_svg
from transforms.core.report import NO_PAPER_FIGURE, Plot, Report, Section, Table, run_funnel, sample_table
from transforms.cosmos.stats import paragraph_rows, paragraph_stats, qa_rows, qa_stats

PAPER_WORDS = "30-150 words"      # the paper's paragraph range (the bins of `stats.histogram`)
SAMPLE_TEXT_LIMIT = 240
SPLITS = ("train", "dev", "test")


def _tokens_plot(values: list[int], slug: str, title: str, paper_mean: float, paper_max: int) -> Plot:
    ours = sum(values) / len(values) if values else 0.0
    lines = [Line(ours, f"this run: mean {ours:.1f}"), Line(paper_mean, f"paper: mean {paper_mean}", paper=True),
             Line(paper_max, f"paper: max {paper_max}", paper=True)]
    caption = (f"{title}: {len(values):,} values, mean {ours:.1f}, max {max(values, default=0)} "
               f"(paper's Table 1: mean {paper_mean}, max {paper_max}); {NO_PAPER_FIGURE} for the "
               "distribution.")
    return Plot(histogram_svg(values, slug, title, "tokens", lines=lines), caption)


def _paragraph_sections(run_dir: Path, s: dict[str, Any], paper: CosmosPaperTable1,
                        sample_rows: int) -> tuple[tuple[Section, ...], Section]:
    rows = s["histogram"]
    in_range = [i for i, (label, _) in enumerate(rows) if label != "outside"]
    words = Plot(bars_svg(rows, "words", "Words per paragraph", "words (whitespace)", "paragraphs",
                          shade=Shade(in_range[0], in_range[-1], f"paper: {PAPER_WORDS}")),
                 f"Words per paragraph, the bins `csdata stats` prints; the band is the paper's range "
                 f"({PAPER_WORDS}, §2.1); {NO_PAPER_FIGURE} for the distribution.")
    texts = read_table(run_dir, "paragraphs", ["text"]).column("text").to_pylist()
    tokens = _tokens_plot([count_tokens(t) for t in texts], "paragraph-tokens", "Tokens per paragraph",
                          paper.tokens_per_paragraph, paper.max_tokens_per_paragraph)
    lengths = Section("Length distributions", "lengths", plots=(words, tokens))
    if sample_rows <= 0:
        return (lengths,), _omitted()
    table = read_table(run_dir, "paragraphs", ["paragraph_id", "blog_id", "n_words", "text"]).to_pylist()
    table.sort(key=lambda r: r["paragraph_id"])
    sample = sample_table(f"The first {min(sample_rows, len(table))} of {len(table):,} paragraphs by id",
                          ("paragraph id", "blog", "words", "text"),
                          [(r["paragraph_id"], r["blog_id"], r["n_words"], r["text"]) for r in table[:sample_rows]],
                          SAMPLE_TEXT_LIMIT)
    return (lengths,), Section("Sample rows", "sample", tables=(sample,))


def _qa_sections(run_dir: Path, paper: CosmosPaperTable1, sample_rows: int) -> tuple[tuple[Section, ...], Section]:
    every = [dict(r, split=split) for split in SPLITS for r in read_table(run_dir, split).to_pylist()]
    contexts = {r["paragraph_id"]: r["context"] for r in every}
    plots = (
        _tokens_plot([count_tokens(t) for t in contexts.values()], "paragraph-tokens", "Tokens per paragraph",
                     paper.tokens_per_paragraph, paper.max_tokens_per_paragraph),
        _tokens_plot([count_tokens(r["question"]) for r in every], "question-tokens", "Tokens per question",
                     paper.tokens_per_question, paper.max_tokens_per_question),
        _tokens_plot([count_tokens(r[f"answer{r['label']}"]) for r in every], "correct-tokens",
                     "Tokens per correct answer", paper.tokens_per_correct_answer,
                     paper.max_tokens_per_correct_answer),
        _tokens_plot([count_tokens(r[f"answer{i}"]) for r in every for i in range(4) if i != r["label"]],
                     "incorrect-tokens", "Tokens per incorrect answer", paper.tokens_per_incorrect_answer,
                     paper.max_tokens_per_incorrect_answer),
    )
    lengths = Section("Length distributions", "lengths", plots=plots)
    if sample_rows <= 0:
        return (lengths,), _omitted()
    every.sort(key=lambda r: (r["split"], r["id"]))
    rows = [(r["split"], r["id"], r["question"], *(r[f"answer{i}"] for i in range(4)), r["label"])
            for r in every[:sample_rows]]
    sample = sample_table(f"The first {len(rows)} of {len(every):,} questions (split, id)",
                          ("split", "id", "question", "answer0", "answer1", "answer2", "answer3", "label"),
                          rows, SAMPLE_TEXT_LIMIT)
    return (lengths,), Section("Sample rows", "sample", tables=(sample,))


def _omitted() -> Section:
    return Section("Sample rows", "sample", intro="Omitted (--sample-rows 0): no text of the inputs is shown.")


def cosmos_report(run_dir: Union[str, Path], paper: CosmosPaperTable1, nota: NotaSection,
                  sample_rows: int = 5) -> Report:
    """The report of the Cosmos QA run in `run_dir` (stage 1, or a `hits import` run with its
    splits); `sample_rows` rows are shown (0: no text of the inputs at all)."""
    run_dir = Path(run_dir)
    if (run_dir / "train").is_dir():
        rows = qa_rows(qa_stats(run_dir, nota.text), paper, nota)
        sections, sample = _qa_sections(run_dir, paper, sample_rows)
        what = "questions and answers (a `cosmos hits import` run)"
    else:
        s = paragraph_stats(run_dir)
        rows = paragraph_rows(s, paper)
        sections, sample = _paragraph_sections(run_dir, s, paper, sample_rows)
        what = "stage 1 paragraphs (a `cosmos paragraphs` run)"
    table1 = Table("Cosmos QA statistics beside the paper's Table 1", ("statistic", "this run", "paper"),
                   tuple((label.strip(), ours, "-" if ref is None else str(ref)) for label, ours, ref in rows),
                   note="The same cells as `csdata stats`.")
    return Report(
        title=f"Cosmos QA run report: {run_dir.name}", run_dir=str(run_dir),
        description=f"Cosmos QA (Huang et al. 2019): {what}.", table1=table1, sections=sections,
        funnel=run_funnel(run_dir, STAGE_UNITS["cosmos"], details=sample_rows > 0), tail=(sample,))


def build(run_dir: Union[str, Path], sample_rows: int = 5) -> Report:
    """`cosmos_report` with the shipped spec's Table 1 and NOTA text (as `csdata stats`)."""
    from data_specs import load_dataset_spec
    from data_specs.models import CosmosSpec

    spec = load_dataset_spec(CosmosSpec, "cosmos")
    return cosmos_report(run_dir, spec.paper_table1, spec.nota, sample_rows)
