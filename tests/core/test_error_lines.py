"""Errors stay one line and end at once: a spec of nested YAML aliases (a "billion laughs" file)
is refused before any value is built, and an error's text is made of each exception's own
message, never of a rendering of the values it carries (a pydantic error's input, a KeyError's
key), so no error path spins on a huge value.

The huge values here are nested lists sharing their members: cheap to hold, 10**10 items to
render. A test that rendered one would not end; the subprocess tests' timeouts only guard
against such a hang."""
from __future__ import annotations

import subprocess
import sys

import pytest
from apache_beam.io.filesystem import BeamIOError
from pydantic import BaseModel, ValidationError

import data_specs
from data_specs import SpecError, load_raw_spec, load_spec, load_yaml
from pipeline.cli.main import EXIT_JOB_FAILED, EXIT_USER_ERROR, _fail
from pipeline.engine import stores as runs
from tests.conftest import DATA, ROOT
from transforms.core.errors import UserError

HANG_GUARD = 120   # seconds: far above the second the command needs; it only stops a hang

# Nine levels of nine aliases: 9**9 (387,420,489) strings once expanded, from 100 nodes.
BOMB = "dataset: record\n" + 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{name}: &{name} [{','.join([f'*{below}'] * 9)}]\n" for below, name in zip("abcdefgh", "bcdefghi"))


def huge_value() -> list:
    """Ten levels of ten references to the level below: 10**10 strings to render."""
    value: list = ["lol"] * 10
    for _ in range(9):
        value = [value] * 10
    return value


def csdata(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipeline.cli.main", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=HANG_GUARD)


# ---- the spec loader ------------------------------------------------------------------------
def test_a_billion_laughs_spec_exits_2_with_one_line(tmp_path):
    spec = tmp_path / "bomb.yaml"
    spec.write_text(BOMB, encoding="utf-8")
    result = csdata("record", "generate", "--input", str(DATA / "cnn"), "--output", str(tmp_path / "out"),
                    "--spec", str(spec))
    # By hand: a list of a level holds 1 + 9 * (the level below) nodes: a 10, b 91, c 820, d 7,381,
    # e 66,430, f 597,871, the first to exceed by 100,000 the 15 nodes written below it (a's nine
    # strings and six lists); f is line 7, its anchor at column 4.
    assert result.returncode == EXIT_USER_ERROR
    assert result.stderr.splitlines() == [
        f"csdata: error: spec {spec} is refused: its aliases expand it by more than 100000 values "
        "(the value at line 7, column 4)"], result.stderr


def test_a_billion_laughs_set_value_exits_2_with_one_line(tmp_path):
    levels = ["&a [" + ",".join(["1"] * 10) + "]"]
    for below, name in zip("abcde", "bcdef"):
        levels.append(f"&{name} [" + ",".join([f"*{below}"] * 10) + "]")
    value = "[" + ", ".join(levels) + "]"
    result = csdata("record", "generate", "--input", str(DATA / "cnn"), "--output", str(tmp_path / "out"),
                    "--set", f"seed={value}")
    # a 11 nodes, b 111, c 1,111, d 11,111, e 111,111: e is the first past the limit.
    column = value.index("&e") + 1
    assert result.returncode == EXIT_USER_ERROR
    assert result.stderr.splitlines() == [
        f"csdata: error: override seed is refused: its aliases expand it by more than 100000 values "
        f"(the value at line 1, column {column})"], result.stderr


def test_a_value_that_holds_itself_is_refused(tmp_path):
    spec = tmp_path / "loop.yaml"
    spec.write_text("dataset: record\nseed: &s [1, *s]\n", encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_raw_spec(str(spec))
    assert str(caught.value) == (f"spec {spec} is refused: the value at line 2, column 7 contains "
                                 "itself through an alias")


def test_values_nested_too_deeply_are_refused(tmp_path):
    spec = tmp_path / "deep.yaml"
    spec.write_text("dataset: record\nseed: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_raw_spec(str(spec))
    assert str(caught.value) == f"spec {spec} is refused: its values nest too deeply"


def test_aliases_that_add_few_values_load_as_yaml_says():
    assert load_yaml("a: &x [1, 2]\nb: *x\nc: {<<: &m {k: 1}, j: 2}\nd: *m") == {
        "a": [1, 2], "b": [1, 2], "c": {"k": 1, "j": 2}, "d": {"k": 1}}
    spec = load_spec("record", ["query.min_tokens=&n 3"])
    assert spec.query.min_tokens == 3


def test_the_limit_counts_the_values_aliases_add_not_those_written(monkeypatch):
    monkeypatch.setattr(data_specs, "MAX_ALIAS_VALUES", 100)
    written = "[" + ",".join(["1"] * 110) + "]"
    assert len(load_yaml(written)) == 110
    assert load_yaml("[&a [1, 2], *a, *a]") == [[1, 2]] * 3
    # The outer list expands to 1 + 2 * 111 = 223 nodes against 112 written: 111 added.
    with pytest.raises(SpecError, match=r"^override seed is refused: its aliases expand it by more "
                                        r"than 100 values \(the value at line 1, column 1\)$"):
        load_spec("record", [f"seed=[&a {written}, *a]"])


# ---- error texts ----------------------------------------------------------------------------
def test_error_text_never_renders_a_carried_value():
    value = huge_value()
    assert runs.error_text(KeyError(value)) == "KeyError"
    assert runs.describe_storage_error(KeyError(value)) == "KeyError"
    assert not runs.is_no_space(KeyError(value))


def test_a_spec_error_over_a_pydantic_error_is_its_own_message():
    class Seeded(BaseModel):
        seed: int

    try:
        try:
            Seeded.model_validate({"seed": huge_value()})
        except ValidationError:
            raise SpecError("spec value seed=[[...]] is invalid") from None
    except SpecError as error:
        assert runs.error_text(error) == "SpecError: spec value seed=[[...]] is invalid | ValidationError"
        assert runs.storage_reason(error) is None


def test_a_long_message_keeps_its_start_and_end():
    error = RuntimeError("Traceback (most recent call last):\n" + "  frame\n" * 1_000_000
                         + "OSError: [Errno 28] No space left on device [while running 'WriteTables']")
    text = runs.error_text(error)
    assert len(text) <= len("RuntimeError: ") + runs.MAX_MESSAGE
    assert text.startswith("RuntimeError: Traceback (most recent call last):")
    assert text.endswith("No space left on device [while running 'WriteTables']")
    assert runs.is_no_space(error)


def test_a_chain_is_read_up_to_its_bound():
    error: BaseException = OSError(28, "No space left on device")
    for depth in range(1000):
        try:
            raise RuntimeError(f"level {depth}") from error
        except RuntimeError as outer:
            error = outer
    assert runs.error_text(error).count(" | ") == runs.MAX_CHAIN - 1


def test_beam_io_error_details_are_read_but_not_rendered():
    error = BeamIOError("Delete operation failed", {})   # its own message renders what it is given
    error.exception_details = {f"s3://b/k{i}": huge_value() for i in range(3)}
    error.exception_details["s3://b/full"] = Exception("XMinioStorageFull: bucket full")
    assert runs.error_text(error) == ("BeamIOError: Delete operation failed with exceptions {} | "
                                      "Exception: XMinioStorageFull: bucket full")
    assert runs.storage_reason(error) == "no space left (the disk or bucket is full)"


def test_an_os_error_says_its_code_reason_and_file():
    assert runs.error_message(OSError(28, "No space left on device", "/out/a.parquet")) == \
        "[Errno 28] No space left on device: '/out/a.parquet'"
    assert runs.error_message(OSError(18, "Invalid cross-device link", "/a", None, "/b")) == \
        "[Errno 18] Invalid cross-device link: '/a' -> '/b'"
    assert runs.is_no_space(OSError(122, "Disk quota exceeded"))


# ---- the CLI's line -------------------------------------------------------------------------
def test_a_full_disk_anywhere_is_one_line(capsys):
    try:
        raise OSError(28, "No space left on device")   # where no caller names the output
    except OSError as error:
        assert _fail(error, debug=False) == EXIT_JOB_FAILED
    assert capsys.readouterr().err.splitlines() == [
        "csdata: error: no space left (the disk or bucket is full); previous output kept"]


def test_any_other_error_is_a_bug_with_its_traceback():
    with pytest.raises(ZeroDivisionError):
        _fail(ZeroDivisionError("division by zero"), debug=False)


def test_an_error_message_prints_its_first_line_bounded(capsys):
    assert _fail(UserError("first line\nsecond line"), debug=False) == EXIT_USER_ERROR
    assert _fail(UserError("x" * 100_000), debug=False) == EXIT_USER_ERROR
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "csdata: error: first line"
    assert lines[1] == "csdata: error: " + "x" * 1997 + "..."
    assert len(lines) == 2



def test_a_dataset_card_of_nested_aliases_is_refused_at_once(tmp_path):
    from transforms.core.reporting.release import read_card_header

    card = tmp_path / "README.md"
    card.write_text(f"---\n{BOMB}---\n# a card\n", encoding="utf-8")
    with pytest.raises(UserError, match=rf"^the dataset card {card} is refused: its aliases expand it by more than"):
        read_card_header(card)
