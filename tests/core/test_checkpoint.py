"""`transforms.core.resume.checkpoint`: a stage group's outputs kept in committed parts, `done.json`
last, and read back whole by a rerun."""
from __future__ import annotations

import hashlib
import json
import os
import pickle
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tests.conftest import beam_test_pipeline
from transforms.core.accounting import Reject
from transforms.core.resume.checkpoint import Checkpoint, commit_part, read_done, write_part

KEPT = [f"article-{i}" for i in range(2500)]       # three parts of PART_SIZE (1,000) or fewer
REJECTS = [Reject("dedup_near", "near_duplicate", "article-x", "like article-1")]
TALLIES = [(("read", "in"), 2501), (("dedup_near", "near_duplicate"), 1)]


def keep(work: Path) -> None:
    with beam_test_pipeline() as pipeline:
        checkpoint = Checkpoint(str(work), "curated")
        assert checkpoint.restored(pipeline) is None       # nothing kept yet
        kept = pipeline | "Kept" >> beam.Create(KEPT)
        rejects = [pipeline | "Rejects" >> beam.Create(REJECTS)]
        tallies = [pipeline | "Tallies1" >> beam.Create(TALLIES[:1]),
                   pipeline | "Tallies2" >> beam.Create(TALLIES[1:])]
        after = checkpoint.keep(kept, rejects, tallies)
        # What goes on from the kept elements runs once the checkpoint is done: a later kill keeps it.
        done = str(work / "curated" / "done.json")
        seen = after | beam.Map(lambda element: (element, os.path.exists(done)))
        assert_that(seen, equal_to([(element, True) for element in KEPT]), label="AfterDone")


def restore(work: Path) -> None:
    with beam_test_pipeline() as pipeline:
        kept, rejects, tallies = Checkpoint(str(work), "curated").restored(pipeline)
        assert_that(kept, equal_to(KEPT), label="SameKept")
        assert_that(rejects | beam.Map(Reject.row), equal_to([r.row() for r in REJECTS]), label="SameRejects")
        assert_that(tallies, equal_to(TALLIES), label="SameTallies")


def test_kept_outputs_are_read_back_whole_and_done_json_counts_them(tmp_path):
    keep(tmp_path)
    done = read_done(str(tmp_path / "curated"))
    # Counted by hand: 2,500 kept, 1 reject, 2 tallies.
    assert done["stage"] == "curated"
    assert done["elements"] == {"kept": 2500, "rejects": 1, "tallies": 2}
    parts = sorted((tmp_path / "curated" / "kept").glob("*.part"))
    assert sum(int(p.name.split("-")[1].split(".")[0]) for p in parts) == 2500
    assert all(Path(f"{p}.ok").exists() for p in parts)
    # The committed parts by number, elements and an XOR of the sha256 of their names.
    digest = 0
    for part in parts:
        digest ^= int.from_bytes(hashlib.sha256(part.name.encode()).digest()[:16], "big")
    assert done["parts"]["kept"] == {"parts": len(parts), "elements": 2500, "digest": f"{digest:032x}"}
    assert done["parts"]["rejects"]["parts"] == len(list((tmp_path / "curated" / "rejects").glob("*.part.ok")))
    restore(tmp_path)


def test_an_extra_commit_record_stops_the_restore_in_one_line(tmp_path):
    keep(tmp_path)
    # What a bundle of a cancelled job that wrote on after the take-over would leave.
    commit_part(write_part(str(tmp_path / "curated" / "kept"), ["article-0"]))
    with pytest.raises(Exception, match=r"checkpoint .*curated does not hold what its done.json committed "
                                        r"\(kept: 4 parts of 2501 elements found, 3 parts of 2500"):
        restore(tmp_path)


def test_a_part_missing_from_the_folder_stops_the_restore_in_one_line(tmp_path):
    keep(tmp_path)
    record = sorted((tmp_path / "curated" / "kept").glob("*.part.ok"))[0]
    record.unlink()
    with pytest.raises(Exception, match=r"does not hold what its done.json committed \(kept: 2 parts"):
        restore(tmp_path)


def test_a_part_with_fewer_elements_than_its_name_says_stops_the_restore(tmp_path):
    keep(tmp_path)
    part = sorted((tmp_path / "curated" / "kept").glob("*.part"))[0]
    part.write_bytes(pickle.dumps(["article-0"]))
    with pytest.raises(Exception, match=rf"part .*{part.name} holds 1 elements, not the"):
        restore(tmp_path)


def test_a_part_without_its_commit_record_is_never_read(tmp_path):
    keep(tmp_path)
    # What a bundle that failed after writing its part leaves: the part, no `.ok`.
    write_part(str(tmp_path / "curated" / "kept"), ["article-0", "a retried bundle's copy"])
    restore(tmp_path)


def test_a_checkpoint_without_done_json_is_not_restored(tmp_path):
    keep(tmp_path)
    (tmp_path / "curated" / "done.json").unlink()      # killed before the last step
    with beam_test_pipeline() as pipeline:
        assert Checkpoint(str(tmp_path), "curated").restored(pipeline) is None


def test_a_rerun_after_a_kill_before_done_json_keeps_only_its_own_parts(tmp_path):
    keep(tmp_path)
    (tmp_path / "curated" / "done.json").unlink()      # killed after committing its parts
    with beam_test_pipeline() as pipeline:             # the rerun keeps its own outputs
        Checkpoint(str(tmp_path), "curated").keep(
            pipeline | "Kept" >> beam.Create(KEPT[:10]), [pipeline | "Rejects" >> beam.Create(REJECTS)],
            [pipeline | "Tallies" >> beam.Create(TALLIES)])
    assert read_done(str(tmp_path / "curated"))["elements"]["kept"] == 10
    with beam_test_pipeline() as pipeline:
        kept, _, _ = Checkpoint(str(tmp_path), "curated").restored(pipeline)
        assert_that(kept, equal_to(KEPT[:10]))          # not the killed run's 2,500 as well


def test_without_a_work_folder_nothing_is_kept(tmp_path):
    checkpoint = Checkpoint(None, "curated")
    with beam_test_pipeline() as pipeline:
        assert checkpoint.restored(pipeline) is None
        one = pipeline | beam.Create([1])
        assert checkpoint.keep(one, [], []) is one
        names = [t.unique_name for t in pipeline.to_runner_api().components.transforms.values()]
        assert not [name for name in names if "Keep" in name or "Flatten" in name]
    assert not list(tmp_path.iterdir())


def test_a_damaged_committed_part_stops_the_run_naming_it(tmp_path):
    keep(tmp_path)
    part = sorted((tmp_path / "curated" / "kept").glob("*.part"))[0]
    part.write_bytes(part.read_bytes()[:-5])
    with pytest.raises(Exception, match=rf"checkpoint part .*{part.name} cannot be read.*remove .*curated"):
        restore(tmp_path)


def test_empty_outputs_give_a_done_checkpoint_of_nothing(tmp_path):
    with beam_test_pipeline() as pipeline:
        empty = pipeline | beam.Create([])
        Checkpoint(str(tmp_path), "curated").keep(empty, [empty], [empty])
    assert json.loads((tmp_path / "curated" / "done.json").read_text())["elements"] == {
        "kept": 0, "rejects": 0, "tallies": 0}


def test_keep_then_read_goes_on_with_the_parts_this_run_committed(tmp_path):
    # A committed part that appears in the folder while the run goes on (as a part written
    # again by a re-run region of a cluster job would) is not read: the run reads back the
    # parts it settled, once done.json is there, and no others.
    from transforms.core.resume.checkpoint import commit_part

    with beam_test_pipeline() as pipeline:
        checkpoint = Checkpoint(str(tmp_path), "curated", part_size=300)
        kept = pipeline | "Kept" >> beam.Create(KEPT)
        after = checkpoint.keep_then_read(kept, [pipeline | "Rejects" >> beam.Create(REJECTS)],
                                          [pipeline | "Tallies" >> beam.Create(TALLIES)])
        done = str(tmp_path / "curated" / "done.json")
        seen = after | beam.Map(lambda element: (element, os.path.exists(done)))
        assert_that(seen, equal_to([(element, True) for element in KEPT]), label="OwnPartsAfterDone")
        commit_part(write_part(str(tmp_path / "curated" / "kept"), ["stray-1", "stray-2"]))
    assert read_done(str(tmp_path / "curated"))["elements"]["kept"] == 2500
