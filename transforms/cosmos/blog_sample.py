"""Cosmos QA's last sample, `sample.per_blog` paragraphs a blog, without grouping paragraph texts.

The rule needs only a paragraph's place in its blog's order (`kept_order`: ids and hashes), so the segmented paragraphs are written where they are made, in *parts* of up to
`PART_SIZE` under the run's work folder (`paragraphs/`), and the per-blog grouping carries one
`(order key, part, index)` entry a paragraph (about 150 bytes). The kept entries are grouped by
part, and each part is read back by the worker it is dealt to, which emits the kept paragraphs.
A part is written by the bundle that made its paragraphs and named only by that bundle's
output, so a retried bundle's part is never read. Given the rounds' paragraphs as several
PCollections, each is written in the stage that made it and only the places are flattened (a
Flatten of several stages' outputs waits whole in the in-process runner's driver). Without a work folder, the paragraphs
themselves are grouped by blog (`SamplePerBlog` as before).
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator, NamedTuple, Optional, Sequence, Union

import apache_beam as beam

from transforms.core.accounting import Reject
from transforms.core.hashing import unit_hash
from transforms.core.resume.checkpoint import WritePartsFn, read_part_file
from transforms.core.resume.store import remove_folder
from transforms.core.stages import Stage
from transforms.cosmos.segment import Paragraph
from transforms.cosmos.story_sample import NOT_SAMPLED

SAMPLE_STAGE = "sample"
PART_SIZE = 500
FOLDER = "paragraphs"   # under the work folder; rewritten by every run


def paragraph_rank(seed: int, paragraph_id: str) -> tuple[float, str]:
    """A paragraph's place in its story's (or, under `all`, its blog's) order: sha1(seed,
    "paragraph", id), ties by id."""
    return unit_hash(seed, "paragraph", paragraph_id), paragraph_id


def kept_order(paragraph: Paragraph, seed: int, mode: str) -> tuple:
    """The sort key of a blog's paragraphs; the first `per_blog` are kept (see
    `transforms.cosmos.paragraphs`)."""
    if mode == "all":
        return paragraph_rank(seed, paragraph.paragraph_id)
    return (unit_hash(seed, "story", paragraph.story_id), paragraph.story_id,
            *paragraph_rank(seed, paragraph.paragraph_id))


def sample_paragraphs(grouped: tuple[str, Sequence[Paragraph]], seed: int, per_blog: int,
                      mode: str = "all") -> Iterator[Any]:
    """Keep a blog's first `per_blog` paragraphs in `kept_order`; the others are `not_sampled`."""
    blog_id, paragraphs = grouped
    ranked = sorted(paragraphs, key=lambda p: kept_order(p, seed, mode))
    for rank, p in enumerate(ranked):
        if rank < per_blog:
            yield p
        else:
            yield Reject(SAMPLE_STAGE, NOT_SAMPLED, p.paragraph_id, f"blog {blog_id}")


class PlacedParagraph(NamedTuple):
    """Where a written paragraph is, and its place in its blog's order."""

    order: tuple
    paragraph_id: str
    part: str
    index: int


class WriteParagraphPartsFn(WritePartsFn):
    """Paragraphs -> `(blog id, PlacedParagraph)` once the part holding them is written (parts
    of up to `size` paragraphs, as `WritePartsFn` writes them)."""

    def __init__(self, folder: str, seed: int, mode: str, size: int = PART_SIZE):
        super().__init__(folder, size)
        self._seed, self._mode = seed, mode

    def written(self, path: str, elements: Sequence[Any]) -> Iterable[tuple[str, PlacedParagraph]]:
        return [(p.blog_id, PlacedParagraph(kept_order(p, self._seed, self._mode), p.paragraph_id, path, index))
                for index, p in enumerate(elements)]


def decide_blog(grouped: tuple[str, Iterable[PlacedParagraph]], per_blog: int) -> Iterator[Union[tuple, Reject]]:
    """A blog's first `per_blog` paragraphs in order, as `(part, index)`; the others `not_sampled`."""
    blog_id, placed = grouped
    for rank, p in enumerate(sorted(placed)):
        if rank < per_blog:
            yield p.part, p.index
        else:
            yield Reject(SAMPLE_STAGE, NOT_SAMPLED, p.paragraph_id, f"blog {blog_id}")


def kept_in_part(grouped: tuple[str, Iterable[int]]) -> Iterator[Paragraph]:
    """The paragraphs of one part at the kept indexes."""
    part, indexes = grouped
    wanted = set(indexes)
    for index, paragraph in enumerate(read_part_file(part, "run the command again: its paragraphs are written anew")):
        if index in wanted:
            yield paragraph


class SampleFromParts(beam.PTransform):
    """Paragraphs (a PCollection, or a list of them: the rounds') -> `(kept, rejects, tallies)`
    of the `sample` stage, through parts in `{work}/paragraphs` (see the module doc); `seed`,
    `per_blog` and `mode` as the spec's."""

    def __init__(self, work: str, seed: int, per_blog: int, mode: str):
        super().__init__()
        self._folder = f"{work.rstrip('/')}/{FOLDER}"
        self._seed, self._per_blog, self._mode = seed, per_blog, mode

    def expand(self, paragraphs):
        remove_folder(self._folder)
        per_blog = self._per_blog
        if isinstance(paragraphs, beam.pvalue.PCollection):
            placed = paragraphs | "WriteParagraphParts" >> beam.ParDo(
                WriteParagraphPartsFn(self._folder, self._seed, self._mode))
        else:
            # Several steps' paragraphs (the rounds'): each is written where it is made and only
            # the places are flattened, since a Flatten of several stages' outputs waits whole
            # in the in-process runner's driver.
            placed = ([p | f"WriteParagraphParts{i}" >> beam.ParDo(
                WriteParagraphPartsFn(self._folder, self._seed, self._mode)) for i, p in enumerate(paragraphs)]
                      | "FlattenPlaces" >> beam.Flatten())
        kept, rejects, tallies = (
            placed
            | "GroupEntriesByBlog" >> beam.GroupByKey()
            | "SamplePerBlog" >> Stage(SAMPLE_STAGE, lambda g: decide_blog(g, per_blog),
                                       units=lambda g: sum(1 for _ in g[1])))
        read = (kept
                | "GroupByPart" >> beam.GroupByKey()
                | "ReadKeptParagraphs" >> beam.FlatMap(kept_in_part))
        return read, rejects, tallies


def work_folder(work: Optional[Any]) -> Optional[str]:
    """The folder of a `transforms.core.resume.memo.WorkLike` (None without one)."""
    if work is None:
        return None
    return work if isinstance(work, str) else work.folder
