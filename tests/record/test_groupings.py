"""`record generate`'s groupings before the models carry entries, not texts: the curation steps
decide on `ArticleEntry`s and the kept articles are read again from their files
(`transforms.record.entries`); with a work folder, the splits go on from the checkpoint's parts.
"""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from data_specs import RecordSpec, load_dataset_spec
from pipeline.graphs.record import GenerateRecord
from tests.conftest import INPUTS, URL_LISTS, beam_test_pipeline
from tests.groupings import assert_no_grouping_carries
from transforms.core.accounting import Reject
from transforms.core.io.files import WHOLE
from transforms.record.article import Article
from transforms.record.entries import (
    INPUT_CHANGED,
    SHARDS,
    ArticleEntry,
    article_entry,
    kept_articles,
    read_key,
)

STORY = "{body}\n\n@highlight\n\n{highlight}\n"

# Steps that hold texts by design: the output writers (rows) and the summary.
WRITERS = ("Create", "WriteTables", "Summarize")


def story_file(path: Path, *paragraphs: str, highlight: str = "A highlight") -> Path:
    path.write_text(STORY.format(body="\n\n".join(paragraphs), highlight=highlight), encoding="utf-8")
    return path


def entry_of(path: Path, article_id: str, *paragraphs: str, highlight: str = "A highlight") -> ArticleEntry:
    unit = (str(path), 0, WHOLE, 1)
    article = Article(article_id, paragraphs, (highlight,), origin=str(path))
    return article_entry(unit, article)


def test_no_grouping_before_the_models_carries_an_article_text(tmp_path):
    # The whole of `record generate` with a work folder (checkpoint and model memo): every value
    # that enters a grouping, or waits for a side input, is checked for a piece of article text
    # (" the "), except in the steps that must hold text (WRITERS).
    spec = load_dataset_spec(RecordSpec, "record")
    p = beam_test_pipeline()
    p | GenerateRecord(spec, INPUTS, str(tmp_path / "out"), URL_LISTS, progress=False, work=str(tmp_path / "work"))
    checked = assert_no_grouping_carries(p, " the ", skip=WRITERS)
    p.run().wait_until_finish()
    # by id (with the URL lists), by band, the near-duplicate verdicts, by read unit, the
    # checkpoint's parts (settled, then spread), done.json's sums and what waits for it
    assert checked >= 8


def test_without_a_work_folder_no_grouping_carries_an_article_text(tmp_path):
    spec = load_dataset_spec(RecordSpec, "record")
    p = beam_test_pipeline()
    p | GenerateRecord(spec, INPUTS, str(tmp_path / "out"), URL_LISTS, progress=False)
    checked = assert_no_grouping_carries(p, " the ", skip=WRITERS)
    p.run().wait_until_finish()
    assert checked >= 4


def test_an_entry_is_small_and_has_no_text(tmp_path):
    body = "the quick brown fox jumps over the lazy dog " * 200
    entry = entry_of(story_file(tmp_path / "a.story", body), "a", body)
    assert " the " not in repr(entry)
    assert entry.work == len(body) + len("A highlight")


def test_a_kept_article_is_read_again_with_its_url_list_fields(tmp_path):
    body = "Paragraph one of the story."
    path = story_file(tmp_path / "a.story", body)
    entry = entry_of(path, "a", body)
    chosen = ArticleEntry(**{**entry.__dict__, "url": "http://example.org/a", "source": "CNN", "split": "train"})
    found = list(kept_articles((read_key(chosen), [chosen]), ""))
    assert len(found) == 1 and isinstance(found[0], Article)
    assert (found[0].id, found[0].paragraphs, found[0].url, found[0].source, found[0].split) == (
        "a", (body,), "http://example.org/a", "CNN", "train")


def test_an_article_changed_under_the_run_is_an_input_changed_reject(tmp_path):
    path = story_file(tmp_path / "a.story", "Paragraph one.")
    entry = entry_of(path, "a", "Paragraph one.")
    story_file(path, "Paragraph one, edited after it was read.")
    missing = entry_of(tmp_path / "b.story", "b", "Never written.")
    for chosen in (entry, missing):
        (reject,) = kept_articles((read_key(chosen), [chosen]), "")
        assert isinstance(reject, Reject)
        assert (reject.stage, reject.reason, reject.record_id) == ("passage_split", INPUT_CHANGED, chosen.id)


def test_the_articles_of_an_archive_are_read_again_in_shards(tmp_path):
    # 40 members: each lands in one of SHARDS groups by a hash of its id, and each group, read
    # again, gives back exactly its own members.
    archive = tmp_path / "stories.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        for i in range(40):
            data = STORY.format(body=f"Story {i} body.", highlight=f"Highlight {i}").encode("utf-8")
            info = tarfile.TarInfo(f"cnn/stories/s{i:02d}.story")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    unit = (str(archive), 0, WHOLE, 1)
    entries = [article_entry(unit, Article(f"s{i:02d}", (f"Story {i} body.",), (f"Highlight {i}",),
                                           origin=f"{archive}!cnn/stories/s{i:02d}.story"))
               for i in range(40)]
    groups: dict = {}
    for entry in entries:
        groups.setdefault(read_key(entry), []).append(entry)
    assert 1 < len(groups) <= SHARDS and {key[0] for key in groups} == {unit}
    found = []
    for key, members in groups.items():
        articles = list(kept_articles((key, members), ""))
        assert sorted(a.id for a in articles) == sorted(e.id for e in members)
        found.extend(articles)
    assert sorted(a.id for a in found) == [f"s{i:02d}" for i in range(40)]


def test_a_story_file_is_one_group(tmp_path):
    path = story_file(tmp_path / "a.story", "Body.")
    assert read_key(entry_of(path, "a", "Body.")) == ((str(path), 0, WHOLE, 1), 0)


def test_the_split_stage_balances_with_a_changed_input(tmp_path):
    # Two kept entries, one whose file is gone: passage_split's in (2) = kept (1) + rejected (1).
    from transforms.record.curate import make_split_fn
    from transforms.record.entries import ReadKeptAndSplit

    spec = load_dataset_spec(RecordSpec, "record")
    lead, rest = " ".join(f"word{i}" for i in range(200)), "The rest of the story."
    kept = entry_of(story_file(tmp_path / "a.story", lead, rest), "a", lead, rest)
    gone = entry_of(tmp_path / "gone.story", "gone", lead, rest)
    with beam_test_pipeline() as p:
        splits, rejects, tallies = (p | beam.Create([kept, gone])
                                    | ReadKeptAndSplit(spec.input, make_split_fn(spec.passage)))
        assert_that(splits | "Ids" >> beam.Map(lambda s: s.article.id), equal_to(["a"]), label="Kept")
        assert_that(rejects | "Reasons" >> beam.Map(lambda r: (r.record_id, r.reason)),
                    equal_to([("gone", INPUT_CHANGED)]), label="Rejected")
        assert_that(tallies | "Sum" >> beam.CombinePerKey(sum),
                    equal_to([(("passage_split", "in"), 2), (("passage_split", "kept"), 1),
                              (("passage_split", "rejected.input_changed"), 1)]), label="Tallies")


def test_stored_signatures_sign_the_entries_they_match_and_the_others_are_read_again(tmp_path):
    # "a" has a stored signature for its content (made-up values: only a stored one can have
    # them); "b"'s stored signature is for other content, so "b" is read again and signed.
    from transforms.core.dedup import SIGNATURE_SIDE, MinHasher
    from transforms.record.entries import SignEntries

    hasher = MinHasher(0.8, 128, 7)
    text = "one two three four five six seven eight nine ten"
    a = entry_of(story_file(tmp_path / "a.story", text, "More."), "a", text, "More.")
    b = entry_of(story_file(tmp_path / "b.story", text, "Other."), "b", text, "Other.")
    made = [1] * 128
    stored = [("a", (SIGNATURE_SIDE, (a.content, made))), ("b", (SIGNATURE_SIDE, ("another content", made)))]
    expected_b = [int(v) for v in article_entry(b.unit, Article("b", (text, "Other."), ("A highlight",),
                                                                origin=b.origin), hasher).signature]
    with beam_test_pipeline() as p:
        signed = (p | "Entries" >> beam.Create([a, b])
                  | SignEntries(p | "Stored" >> beam.Create(stored), hasher, "", 5))
        assert_that(signed | beam.Map(lambda e: (e.id, [int(v) for v in e.signature])),
                    equal_to([("a", made), ("b", expected_b)]))


def test_a_run_from_annotations_carries_no_text_before_the_reuse_join(tmp_path):
    # `record annotate`, then `record generate --annotations`: the entries are signed with the
    # stored signatures; only the reuse join (which must meet each split with its stored
    # annotations: docs/runners.md) and the writers hold texts.
    from pipeline.graphs.record import run_annotate

    spec = load_dataset_spec(RecordSpec, "record")
    run_annotate(spec, INPUTS, str(tmp_path / "annotations"))
    p = beam_test_pipeline()
    p | GenerateRecord(spec, INPUTS, str(tmp_path / "out"), URL_LISTS, progress=False,
                       annotations=str(tmp_path / "annotations"), work=str(tmp_path / "work"))
    checked = assert_no_grouping_carries(p, " the ", skip=(*WRITERS, "Annotate/"))
    p.run().wait_until_finish()
    assert checked >= 9


def test_record_annotate_carries_no_text_in_a_grouping(tmp_path):
    # `record annotate`: the grouping by id carries entries, the kept articles are read again
    # from their files, and each annotation leaves the model with its article (no join).
    from pipeline.graphs.record import AnnotateRecordArticles

    spec = load_dataset_spec(RecordSpec, "record")
    p = beam_test_pipeline()
    p | AnnotateRecordArticles(spec, INPUTS, str(tmp_path / "annotations"), progress=False,
                               work=str(tmp_path / "work"))
    checked = assert_no_grouping_carries(p, " the ", skip=WRITERS)
    p.run().wait_until_finish()
    assert checked >= 2    # by id, by read unit
