"""ReadArticles: files, directories, globs, .tgz archives and JSONL; unreadable records rejected."""
import io
import tarfile

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from data_specs import load_spec
from tests.conftest import DATA, beam_test_pipeline
from transforms.core.io.files import expand_local_inputs
from transforms.record.raw_records import SUPPORTED_SUFFIXES
from transforms.record.read import ReadArticles

STORY = "First paragraph.\n\nSecond paragraph.\n\n@highlight\n\nA highlight\n"


def make_tgz(path, names):
    with tarfile.open(path, "w:gz") as archive:
        for name in names:
            data = STORY.encode("utf-8")
            info = tarfile.TarInfo(f"cnn/stories/{name}.story")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def test_tgz_archives_directories_and_globs(tmp_path):
    make_tgz(tmp_path / "cnn_stories.tgz", ["aaa", "bbb"])
    stories = sorted(p.stem for p in (DATA / "cnn" / "stories").glob("*.story"))
    with beam_test_pipeline() as p:
        articles, rejects, _ = p | ReadArticles([str(tmp_path / "cnn_stories.tgz"),
                                                 str(DATA / "cnn"),
                                                 str(DATA / "dailymail" / "stories" / "05b*.story")])
        assert_that(articles | beam.Map(lambda a: (a.id, a.source)),
                    equal_to([("aaa", "CNN"), ("bbb", "CNN")] + [(s, "CNN") for s in stories]
                             + [("05b41006a8bb0fbfbd20e7b371d901ef7f09f904", "Daily mail")]))
        assert_that(rejects, equal_to([]), label="no rejects")


def test_unreadable_records_become_named_rejects(tmp_path):
    (tmp_path / "rows.jsonl").write_text(
        '{"id": "ok", "article": "One. Two.", "highlights": "h"}\n'
        'not json\n'
        '{"id": "empty", "article": "", "highlights": "h"}\n'
        '["a list"]\n', encoding="utf-8")
    (tmp_path / "latin1.story").write_bytes("Caf\xe9 story.".encode("latin-1"))
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    inputs = [str(tmp_path / "rows.jsonl"), str(tmp_path / "latin1.story"), str(tmp_path / "notes.txt")]
    with beam_test_pipeline() as p:
        articles, rejects, _ = p | ReadArticles(inputs)
        # lenient decoding (the default): the Latin-1 story is read, its encoding kept
        assert_that(articles | beam.Map(lambda a: (a.id, a.paragraphs, a.encoding)),
                    equal_to([("ok", ("One.", "Two."), "utf-8"), ("latin1", ("Caf\xe9 story.",), "cp1252")]))
        assert_that(rejects | beam.Map(lambda r: (r.stage, r.reason)),
                    equal_to([("read", "malformed_json"), ("read", "empty_article"),
                              ("read", "malformed_json"), ("read", "unsupported_file")]), label="rejects")
    with beam_test_pipeline() as p:
        strict = load_spec("record", ["input.encoding=strict"]).input
        articles, rejects, _ = p | ReadArticles(inputs, strict)
        assert_that(articles | beam.Map(lambda a: a.id), equal_to(["ok"]))
        assert_that(rejects | beam.Map(lambda r: (r.stage, r.reason)),
                    equal_to([("read", "malformed_json"), ("read", "empty_article"),
                              ("read", "malformed_json"), ("read", "not_utf8"),
                              ("read", "unsupported_file")]), label="rejects")


def test_directories_expand_to_supported_files_only(tmp_path):
    (tmp_path / "a.story").write_text(STORY)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.jsonl").write_text('{"id": "b", "article": "B one.", "highlights": "h"}\n')
    (tmp_path / "readme.md").write_text("x")
    assert expand_local_inputs([str(tmp_path), "gs://bucket/*.story"], SUPPORTED_SUFFIXES) == [
        str(tmp_path / "a.story"), str(tmp_path / "sub" / "b.jsonl"), "gs://bucket/*.story"]
    with beam_test_pipeline() as p:       # the pipeline reads the same files (readme.md is not one)
        articles, rejects, _ = p | ReadArticles([str(tmp_path)])
        assert_that(articles | beam.Map(lambda a: (a.id, a.origin)),
                    equal_to([("a", str(tmp_path / "a.story")), ("b", f"{tmp_path / 'sub' / 'b.jsonl'}:1")]))
        assert_that(rejects, equal_to([]), label="no rejects")
