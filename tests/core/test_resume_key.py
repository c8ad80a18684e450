"""What the resume key covers (`pipeline.outputs.resume.run_key`): an input edited in place at the
same size, an edited URL list and another spec value each give another key; `--verify-inputs`
keys by content, so a file only touched keeps its key."""
from __future__ import annotations

import os
from pathlib import Path

from pipeline.cli.main import build_parser
from pipeline.outputs.resume import run_key


def key(*argv: str) -> str:
    return run_key(build_parser().parse_args(["record", "generate", *argv, "--output", "/tmp/unused"]))


def corpus(tmp_path: Path) -> tuple[Path, Path]:
    stories = tmp_path / "cnn"
    stories.mkdir()
    (stories / "a.story").write_text("One story.\n\n@highlight\n\nIts highlight.\n")
    urls = tmp_path / "urls.txt"
    urls.write_text("http://www.cnn.com/a\n")
    return stories, urls


def test_an_input_edited_in_place_at_the_same_size_changes_the_key(tmp_path):
    stories, _ = corpus(tmp_path)
    story = stories / "a.story"
    before = key("--input", str(stories))
    stat = story.stat()
    story.write_text(story.read_text().replace("One", "Two"))   # same size
    os.utime(story, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert story.stat().st_size == stat.st_size
    assert key("--input", str(stories)) != before


def test_an_edited_in_place_input_with_its_old_time_changes_the_key_only_with_verify_inputs(tmp_path):
    stories, _ = corpus(tmp_path)
    story = stories / "a.story"
    before = key("--input", str(stories))
    before_verified = key("--input", str(stories), "--verify-inputs")
    stat = story.stat()
    story.write_text(story.read_text().replace("One", "Two"))
    os.utime(story, ns=(stat.st_atime_ns, stat.st_mtime_ns))   # a copy tool that keeps times
    assert key("--input", str(stories)) == before
    assert key("--input", str(stories), "--verify-inputs") != before_verified


def test_verify_inputs_keeps_the_key_of_a_file_only_touched(tmp_path):
    stories, _ = corpus(tmp_path)
    before = key("--input", str(stories), "--verify-inputs")
    os.utime(stories / "a.story", ns=(1, 2))
    assert key("--input", str(stories), "--verify-inputs") == before


def test_an_edited_url_list_changes_the_key(tmp_path):
    stories, urls = corpus(tmp_path)
    before = key("--input", str(stories), "--url-list", str(urls))
    stat = urls.stat()
    urls.write_text("http://www.cnn.com/b\n")                  # same size, same time
    os.utime(urls, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert key("--input", str(stories), "--url-list", str(urls)) != before


def test_a_spec_value_changes_the_key_and_a_display_option_does_not(tmp_path):
    stories, _ = corpus(tmp_path)
    before = key("--input", str(stories))
    assert key("--input", str(stories), "--set", "passage.min_tokens=60") != before
    assert key("--input", str(stories), "--lease-timeout", "5") == before
