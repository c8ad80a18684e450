"""`transforms.core.resume.memo`: model results kept in pieces, joined back to their elements by key."""
from __future__ import annotations

import pickle
from pathlib import Path

import apache_beam as beam
from apache_beam.metrics import MetricsFilter
from apache_beam.testing.util import assert_that, equal_to

from tests.conftest import beam_test_pipeline
from transforms.core.accounting import Reject
from transforms.core.resume.memo import (
    AttachStored,
    Memo,
    MemoizedModel,
    PieceWriter,
    count_stored,
    piece_count,
    write_piece,
)


def pieces(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.pieces"))


def counter(result, name: str) -> int:
    found = result.metrics().query(MetricsFilter().with_name(name))["counters"]
    return sum(c.committed for c in found)


def test_attach_stored_pairs_each_element_with_its_result_or_none(tmp_path):
    folder = str(tmp_path / "step")
    write_piece(folder, [("a", "A1"), ("b", "B")])
    write_piece(folder, [("a", "A2"), ("z", "Z")])    # "a" twice (a retried bundle): either is the result
    pipeline = beam_test_pipeline()
    paired = (pipeline | beam.Create(["a", "b", "c"])
              | AttachStored(Memo(folder), key_of=lambda word: word))
    first = paired | beam.Map(lambda pair: (pair[0], pair[1] if pair[0] != "a" else pair[1] in ("A1", "A2")))
    # "c" has no result; "z" is no element, so it pairs with nothing.
    assert_that(first, equal_to([("a", True), ("b", "B"), ("c", None)]))
    pipeline.run().wait_until_finish()


def test_attach_stored_without_a_folder_pairs_every_element_with_none(tmp_path):
    with beam_test_pipeline() as pipeline:
        paired = (pipeline | beam.Create([1, 2])
                  | AttachStored(Memo(str(tmp_path / "never-written")), key_of=str))
        assert_that(paired, equal_to([(1, None), (2, None)]))


def test_a_damaged_piece_is_skipped_and_counted(tmp_path):
    folder = tmp_path / "step"
    write_piece(str(folder), [("a", "A")])
    good = write_piece(str(folder), [("b", "B")])
    # Cut a piece short, as a disk that filled up might leave it.
    Path(good).write_bytes(Path(good).read_bytes()[:-3])
    (folder / f"{'0' * 32}-1.pieces").write_bytes(pickle.dumps([("c", "C"), ("d", "D")]))  # 2, not 1
    pipeline = beam_test_pipeline()
    paired = pipeline | beam.Create(["a", "b", "c"]) | AttachStored(Memo(str(folder)), key_of=str)
    assert_that(paired, equal_to([("a", "A"), ("b", None), ("c", None)]))
    result = pipeline.run()
    result.wait_until_finish()
    assert counter(result, "memo.damaged_pieces") == 2


def test_piece_writer_writes_a_piece_per_piece_size_results_and_the_rest_on_flush(tmp_path):
    folder = tmp_path / "step"
    writer = PieceWriter(Memo(str(folder), piece_size=3))
    for n in range(7):
        writer.add(f"k{n}", n)
    assert sorted(piece_count(p) for p in writer.written) == [3, 3]
    writer.flush()
    writer.flush()     # nothing left: no empty piece
    assert sorted(piece_count(str(p)) for p in pieces(folder)) == [1, 3, 3]
    stored = sorted(pair for p in pieces(folder) for pair in pickle.loads(p.read_bytes()))
    assert stored == [(f"k{n}", n) for n in range(7)]
    assert not [p for p in folder.iterdir() if not p.name.endswith(".pieces")]   # no temporary file left


def test_piece_writer_writes_once_the_oldest_result_waited_flush_seconds(tmp_path):
    now = [0.0]
    writer = PieceWriter(Memo(str(tmp_path), piece_size=100, flush_seconds=30), clock=lambda: now[0])
    writer.add("a", 1)
    now[0] = 29.0
    writer.add("b", 2)
    assert writer.written == []
    now[0] = 30.0
    writer.add("c", 3)     # 30 s after "a"
    assert [piece_count(p) for p in writer.written] == [3]


def test_count_stored_reads_the_counts_from_the_names_of_every_steps_pieces(tmp_path):
    write_piece(str(tmp_path / "annotate-spacy"), [("a", 1), ("b", 2), ("c", 3)])
    write_piece(str(tmp_path / "sentences"), [("d", 4)])
    write_piece(str(tmp_path / "sentences"), [("e", 5), ("f", 6)])
    (tmp_path / "sentences" / ".x.pieces.tmp").write_bytes(b"a write cut short")
    assert count_stored(str(tmp_path)) == (3, 6)
    assert count_stored(str(tmp_path / "nothing-yet")) == (0, 0)


def test_memoized_model_runs_the_model_on_the_missing_elements_only_and_stores_what_it_computed(tmp_path):
    memo = MemoizedModel(Memo(str(tmp_path), piece_size=1), key_of=str,
                         pack=lambda result: result.upper(), unpack=lambda element, stored: stored.lower())
    asked = []

    def model(elements):
        asked.append(list(elements))
        return [Reject("s", "model_error", str(e)) if e == 3 else f"r{e}" for e in elements]

    results = memo.results([(1, None), (2, "R2"), (3, None), (4, None)], model)
    assert asked == [[1, 3, 4]]
    assert results == ["r1", "r2", Reject("s", "model_error", "3"), "r4"]
    stored = sorted(pair for p in pieces(tmp_path) for pair in pickle.loads(p.read_bytes()))
    assert stored == [("1", "R1"), ("4", "R4")]     # the reject is not kept
    assert memo.results([(5, "R5")], model) == ["r5"] and len(asked) == 1   # all stored: no model call


def test_a_clean_run_attaches_without_a_grouping_that_would_carry_the_elements(tmp_path):
    # Nothing stored when the graph is built: no join, so no element (a story with its text)
    # waits in a grouping; with a piece stored, the pieces' spread and the join are built.
    from tests.groupings import assert_no_grouping_carries

    for stored, groupings in ((False, 0), (True, 2)):     # the pieces' spread and the join
        folder = str(tmp_path / f"step-{stored}")
        if stored:
            write_piece(folder, [("other", "O")])
        pipeline = beam_test_pipeline()
        paired = (pipeline | beam.Create(["MARKERTEXT a"])
                  | AttachStored(Memo(folder), key_of=lambda text: text[-1]))
        assert_that(paired, equal_to([("MARKERTEXT a", None)]))
        assert assert_no_grouping_carries(pipeline, "NEVER-IN-A-VALUE", skip=("Create", "assert_that")) == groupings
        pipeline.run().wait_until_finish()
