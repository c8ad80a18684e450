"""ReadRawRecords: patterns matched inside the pipeline, one element per file, folders read as
`DIR/**` with the dataset's file rule, big line files read in byte ranges with the line numbers
of a whole read; the before-the-run check of `--input` (pipeline.engine.runner.check_inputs)."""
from __future__ import annotations

import io
from pathlib import Path
from typing import IO, Iterator

import apache_beam as beam
import pytest
from apache_beam.io.filesystem import BeamIOError, FileMetadata, MatchResult
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.util import assert_that, equal_to

from pipeline.engine.runner import check_inputs
from tests.conftest import beam_test_pipeline
from transforms.core.errors import UserError
from transforms.core.io import files
from transforms.core.io.files import (
    FolderFiles,
    LineRange,
    ReadRawRecords,
    expand_local_inputs,
    file_ranges,
    folder_pattern,
    match_files,
)
from transforms.core.progress.steps import ProgressLine


def whole(path: str, handle: IO[bytes]) -> Iterator[tuple[str, bytes]]:
    yield path, handle.read()


def numbered_lines(path: str, handle: IO[bytes], first_line: int = 0) -> Iterator[tuple[str, bytes, bool]]:
    """What the datasets' JSONL splitters do, `path:line` of every non-blank line, and whether
    the handle was a range (called with `first_line`)."""
    for number, line in enumerate(handle, start=first_line or 1):
        if line.strip():
            yield f"{path}:{number}", line, first_line > 0


def jsonl_only(path: str) -> bool:
    return path.endswith(".jsonl")


def read_counters(result) -> dict[str, int]:
    counters: dict[str, int] = {}
    for counter in result.metrics().query(MetricsFilter().with_namespace("csdata"))["counters"]:
        name = counter.key.metric.name
        if name.startswith("read."):
            counters[name] = counters.get(name, 0) + counter.committed
    return counters


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A folder laid out like CNN/DM's: nested stories, a JSONL file, a note, a dot file."""
    root = tmp_path / "corpus"
    (root / "cnn" / "stories").mkdir(parents=True)
    (root / "cnn" / "stories" / "a.story").write_bytes(b"story a")
    (root / "cnn" / "stories" / "b.STORY").write_bytes(b"story b")
    (root / "rows.jsonl").write_bytes(b'{"id": 1}\n')
    (root / "notes.md").write_bytes(b"notes")
    (root / ".c.story").write_bytes(b"dot story")
    return root


def test_a_local_folder_is_one_recursive_pattern_and_other_patterns_stay(corpus):
    assert folder_pattern(str(corpus), FolderFiles()) == (f"{corpus}/**", True)
    assert folder_pattern(f"{corpus}/", FolderFiles()) == (f"{corpus}/**", True)
    assert folder_pattern(str(corpus), None) == (str(corpus), False)
    assert folder_pattern(f"{corpus}/*.md", FolderFiles()) == (f"{corpus}/*.md", False)
    assert folder_pattern("s3://bucket/cnn", FolderFiles()) == ("s3://bucket/cnn", False)


def test_folder_rules_by_file_name():
    assert FolderFiles((".story", ".jsonl"))("B.STORY")
    assert FolderFiles((".story",))(".c.story")             # a suffix rule keeps dot files
    assert not FolderFiles((".story",))("notes.md")
    assert FolderFiles()("notes.md")
    assert not FolderFiles()(".c.story")                     # every visible file


def test_match_gives_one_element_per_file_of_a_folder(corpus):
    pattern = folder_pattern(str(corpus), FolderFiles((".story", ".jsonl")))
    assert sorted(match_files(pattern, FolderFiles((".story", ".jsonl")))) == [
        (f"{corpus}/.c.story", 9), (f"{corpus}/cnn/stories/a.story", 7),
        (f"{corpus}/cnn/stories/b.STORY", 7), (f"{corpus}/rows.jsonl", 10)]
    visible = folder_pattern(str(corpus), FolderFiles())
    assert sorted(path for path, _ in match_files(visible, FolderFiles())) == [
        f"{corpus}/cnn/stories/a.story", f"{corpus}/cnn/stories/b.STORY", f"{corpus}/notes.md",
        f"{corpus}/rows.jsonl"]


def test_a_missing_file_is_an_error_but_an_empty_glob_is_not(tmp_path):
    assert list(match_files((str(tmp_path / "*.none"), False))) == []
    with pytest.raises(BeamIOError, match=f"Empty match for pattern {tmp_path / 'missing.txt'}"):
        list(match_files((str(tmp_path / "missing.txt"), False)))


def test_directory_entries_of_a_store_are_skipped(monkeypatch):
    listed = [FileMetadata("s3://b/d/", 0), FileMetadata("s3://b/d/x.story", 3)]
    monkeypatch.setattr(files.FileSystems, "match", lambda patterns: [MatchResult(patterns[0], listed)])
    assert list(match_files(("s3://b/d/*", False))) == [("s3://b/d/x.story", 3)]


def test_reading_a_folder_gives_the_records_of_its_files_as_before(corpus):
    rule = FolderFiles((".story", ".jsonl"))
    # what the graph held before: the folder's files, listed on the driver
    before = expand_local_inputs([str(corpus)], rule.suffixes)
    assert sorted(before) == [f"{corpus}/.c.story", f"{corpus}/cnn/stories/a.story",
                              f"{corpus}/cnn/stories/b.STORY", f"{corpus}/rows.jsonl"]
    p = beam_test_pipeline()
    matched = (p | "Patterns" >> beam.Create([folder_pattern(str(corpus), rule)])
               | "Match" >> beam.FlatMap(match_files, rule))
    assert_that(matched | beam.Map(lambda m: m[0]), equal_to(before), label="one element per file")
    records = p | ReadRawRecords([str(corpus)], whole, folder_files=rule)
    assert_that(records, equal_to([
        (f"{corpus}/.c.story", b"dot story"), (f"{corpus}/cnn/stories/a.story", b"story a"),
        (f"{corpus}/cnn/stories/b.STORY", b"story b"), (f"{corpus}/rows.jsonl", b'{"id": 1}\n')]),
        label="records")
    result = p.run()
    result.wait_until_finish()
    assert read_counters(result) == {"read.files_matched": 8, "read.bytes_matched": 66,
                                     "read.files_read": 4, "read.bytes_read": 33}


def test_files_globs_and_no_patterns(corpus):
    with beam_test_pipeline() as p:
        records = p | ReadRawRecords([str(corpus / "notes.md"), str(corpus / "cnn" / "*" / "*.story")], whole)
        assert_that(records, equal_to([(f"{corpus}/notes.md", b"notes"),
                                       (f"{corpus}/cnn/stories/a.story", b"story a")]))
        nothing = p | "Nothing" >> ReadRawRecords([], whole)
        assert_that(nothing, equal_to([]), label="no patterns")


@pytest.mark.parametrize("size, pieces", [
    (3, [b"ab\n", b"cd\n", b"\nef"]),
    (4, [b"ab\ncd\n", b"\nef", b""]),        # [4, 8) starts inside "cd\n"; [8, 9) inside "ef"
    (9, [b"ab\ncd\n\nef"]),
])
def test_a_range_reads_the_whole_lines_that_start_in_it(size, pieces):
    data = b"ab\ncd\n\nef"
    got = [LineRange(io.BytesIO(data), start, min(start + size, len(data))).read()
           for start in range(0, len(data), size)]
    assert got == pieces


def test_a_line_longer_than_a_range_is_read_once():
    data = b"x" * 25 + b"\nshort\n"
    got = [LineRange(io.BytesIO(data), start, min(start + 10, len(data))).read() for start in range(0, 32, 10)]
    assert got == [b"x" * 25 + b"\n", b"", b"short\n", b""]


def test_a_big_line_file_is_read_in_ranges_with_the_line_numbers_of_a_whole_read(tmp_path):
    rows = tmp_path / "rows.jsonl"
    # 10 lines, 87 bytes: blank lines 3 and 7, a 22-byte line 5, no line end after line 10
    rows.write_bytes(b'{"n": 1}\n{"n": 2}\n\n{"n": 4}\n' + b'{"n": 5, "pad": "xx"}\n'
                     + b'{"n": 6}\n\n{"n": 8}\n{"n": 9}\n{"n": 10}')
    small = tmp_path / "small.jsonl"
    small.write_bytes(b'{"n": 1}\n')
    expected = [(f"{rows}:1", b'{"n": 1}\n'), (f"{rows}:2", b'{"n": 2}\n'), (f"{rows}:4", b'{"n": 4}\n'),
                (f"{rows}:5", b'{"n": 5, "pad": "xx"}\n'), (f"{rows}:6", b'{"n": 6}\n'),
                (f"{rows}:8", b'{"n": 8}\n'), (f"{rows}:9", b'{"n": 9}\n'), (f"{rows}:10", b'{"n": 10}'),
                (f"{small}:1", b'{"n": 1}\n')]
    assert list(file_ranges((str(small), 9), jsonl_only, 7)) == [(str(small), 0, 0, 7), (str(small), 1, 7, 9)]
    assert list(file_ranges((str(small), 9), jsonl_only, 9)) == []         # not bigger than a range
    p = beam_test_pipeline()
    records = p | ReadRawRecords([str(tmp_path / "*.jsonl")], numbered_lines, line_files=jsonl_only,
                                 range_bytes=7)
    assert_that(records, equal_to([(*record, True) for record in expected]))
    whole_files = p | "Whole" >> ReadRawRecords([str(tmp_path / "*.jsonl")], numbered_lines, line_files=jsonl_only)
    assert_that(whole_files, equal_to([(*record, False) for record in expected]), label="whole")
    result = p.run()
    result.wait_until_finish()
    # read twice (in ranges, then whole): rows.jsonl 87 bytes, small.jsonl 9
    assert read_counters(result) == {"read.files_matched": 4, "read.bytes_matched": 192,
                                     "read.files_read": 4, "read.bytes_read": 192}


def test_the_datasets_line_readers_number_ranges_as_whole_files(tmp_path):
    from transforms.protoqa.read import Oversized, iter_question_lines
    from transforms.record.raw_records import iter_raw_records

    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(b'{"id": "a"}\n\n' + b'{"id": "' + b"b" * 40 + b'"}\n{"id": "c"}\n')
    with beam_test_pipeline() as p:
        record = p | "Record" >> ReadRawRecords([str(rows)], iter_raw_records, line_files=jsonl_only,
                                                range_bytes=5)
        assert_that(record, equal_to([("json", f"{rows}:1", b'{"id": "a"}\n'),
                                      ("json", f"{rows}:3", b'{"id": "' + b"b" * 40 + b'"}\n'),
                                      ("json", f"{rows}:4", b'{"id": "c"}\n')]), label="record")
        limited = p | "ProtoQA" >> ReadRawRecords(
            [str(rows)], lambda path, handle, first_line=1: iter_question_lines(path, handle, 20, first_line),
            line_files=jsonl_only, range_bytes=5)
        assert_that(limited, equal_to([(f"{rows}:1", b'{"id": "a"}\n'), (f"{rows}:3", Oversized(51)),
                                       (f"{rows}:4", b'{"id": "c"}\n')]), label="protoqa")


def test_the_input_check_wants_one_file_per_pattern(corpus, tmp_path):
    check_inputs([str(corpus), str(corpus / "cnn" / "**" / "*.story"), str(corpus / "notes.md")])
    (tmp_path / "empty").mkdir()
    (tmp_path / "only-dirs" / "sub").mkdir(parents=True)
    for pattern, message in [(str(tmp_path / "empty"), "the directory holds no file"),
                             (str(tmp_path / "only-dirs" / "*"), "matches no file"),
                             (str(tmp_path / "missing.story"), "matches no file")]:
        with pytest.raises(UserError, match=message):
            check_inputs([str(corpus), pattern])


def test_the_progress_line_counts_the_files_matched_and_read(corpus):
    p = beam_test_pipeline()
    line = ProgressLine(enabled=False)     # the steps and their counters, no printing
    _ = p | ReadRawRecords([str(corpus)], whole, folder_files=FolderFiles((".story",)), progress=line)
    result = p.run()
    result.wait_until_finish()
    counters = {c.key.metric.name: c.committed
                for c in result.metrics().query(MetricsFilter().with_namespace("csdata"))["counters"]
                if c.key.metric.name.startswith("progress.")}
    # .c.story, a.story and b.STORY
    assert counters == {"progress.files.matched": 3, "progress.files.read": 3}


class _Flattens(beam.pipeline.PipelineVisitor):
    def __init__(self) -> None:
        self.inputs: list[int] = []

    def visit_transform(self, node) -> None:
        if isinstance(node.transform, beam.Flatten):
            self.inputs.append(len(node.inputs))


def test_reading_is_one_chain_without_a_flatten_of_two_branches(tmp_path):
    # Beam's in-process runner with two workers lost records (618,307 of 681,288 posts of the
    # Blog Authorship Corpus) where the records of whole files and of ranges were flattened into
    # the rebalancing grouping: reading must not build that shape, with ranges or without.
    (tmp_path / "rows.jsonl").write_bytes(b'{"n": 1}\n{"n": 2}\n')
    p = beam_test_pipeline()
    _ = p | ReadRawRecords([str(tmp_path / "*.jsonl")], numbered_lines, line_files=jsonl_only, range_bytes=7)
    _ = p | "Plain" >> ReadRawRecords([str(tmp_path / "*.jsonl")], numbered_lines)
    flattens = _Flattens()
    p.visit(flattens)
    assert [n for n in flattens.inputs if n > 1] == []


def test_records_read_without_rebalance_cross_no_grouping(tmp_path):
    from tests.groupings import assert_no_grouping_carries

    (tmp_path / "rows.jsonl").write_bytes(b'{"n": "MARKERTEXT 1"}\n{"n": "MARKERTEXT 2"}\n' * 5)
    p = beam_test_pipeline()
    records = p | ReadRawRecords([str(tmp_path / "*.jsonl")], numbered_lines, line_files=jsonl_only,
                                 range_bytes=16, rebalance=False)
    assert_that(records | beam.Map(lambda r: r[0].rsplit(":", 1)[1]), equal_to([str(n) for n in range(1, 11)]))
    # the patterns' Create, SpreadUnits, GroupUnits and SpreadFiles: paths, offsets and counts only
    assert assert_no_grouping_carries(p, "MARKERTEXT") == 4
    p.run().wait_until_finish()
