"""The documentation's reference pages (docs/reference/*.md) are what the code generates now, and
they say what the parsers, the spec models and the schemas say."""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs" / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _section(page: str, anchor: str) -> str:
    """The text of the heading with `{ #anchor }` up to the next heading of any level."""
    match = re.search(rf"^#+ .*\{{ #{re.escape(anchor)} \}}\n(.*?)(?=^#+ |\Z)", page, re.S | re.M)
    assert match, f"no heading with anchor #{anchor}"
    return match.group(1)


def test_the_checked_in_pages_are_what_the_code_generates(gen):
    assert gen.stale_pages() == [], "run `make docs` (python docs/gen_reference.py) and commit the pages"


def test_a_stale_page_is_named(gen, tmp_path):
    shutil.copytree(ROOT / "docs" / "reference", tmp_path / "reference")
    spec_page = tmp_path / "reference" / "spec.md"
    spec_page.write_text(spec_page.read_text().replace("`100`", "`120`", 1))
    (tmp_path / "reference" / "tables.md").unlink()
    assert gen.stale_pages(tmp_path) == ["reference/spec.md", "reference/tables.md"]


def test_check_exits_1_on_a_stale_page_and_0_otherwise(tmp_path):
    script = ROOT / "docs" / "gen_reference.py"
    ok = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    copy = tmp_path / "docs"
    copy.mkdir()
    shutil.copy(script, copy / "gen_reference.py")
    # The copy resolves the repository from its own place: give it the code beside it.
    for name in ("pipeline", "transforms", "filters", "data_specs"):
        (tmp_path / name).symlink_to(ROOT / name)
    stale = subprocess.run([sys.executable, str(copy / "gen_reference.py"), "--check"],
                           capture_output=True, text=True)
    assert stale.returncode == 1
    assert stale.stderr.splitlines() == [
        f"docs/reference/{name}.md is stale: run `make docs` (or python docs/gen_reference.py)"
        for name in ("cli", "spec", "tables")]


def _help_options(*command: str) -> set[str]:
    """The long options `csdata COMMAND --help` prints (argparse's own formatter, not ours)."""
    out = subprocess.run([sys.executable, "-m", "pipeline.cli.main", *command, "--help"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    # an option's own line starts with it: "  --spec SPEC", "  -q, --quiet"
    return set(re.findall(r"^ {2}(?:-\w[ ,A-Z_]*)?(--[a-z][a-z0-9-]*)", out, re.M)) - {"--help"}


@pytest.mark.parametrize("command", [
    ("record", "generate"), ("record", "filter"), ("cosmos", "hits", "import"),
    ("protoqa", "sheets", "adjudicate"), ("protoqa", "assign"), ("protoqa", "hits", "import"), ("diff",), ("report",)])
def test_every_option_of_a_command_is_on_the_cli_page(command):
    page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    section = _section(page, "-".join(("csdata",) + command))
    options = _help_options(*command)
    assert options, "the command has options"
    missing = sorted(o for o in options if f"`{o}" not in section and f", {o}" not in section)
    assert missing == []


def test_diff_release_is_a_required_option_on_the_cli_page():
    section = _section((ROOT / "docs" / "reference" / "cli.md").read_text(), "csdata-diff")
    assert "| `--release FILE` | yes |  | the published file to compare with |" in section


def _rows(section: str) -> dict[str, list[str]]:
    rows = {}
    for line in section.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_spec_rows_carry_type_default_constraint_and_description():
    page = (ROOT / "docs" / "reference" / "spec.md").read_text()
    # data_specs/record.yaml: passage.min_tokens: 100, a Count (integer >= 0)
    kind, default, allowed, description = _rows(_section(page, "record-passage"))["min_tokens"]
    assert (kind, default, allowed) == ("integer", "`100`", "an integer >= 0")
    assert description
    # data_specs/protoqa.yaml: coverage.invalid_in_denominator: false (the published selection)
    kind, default, allowed, _ = _rows(_section(page, "protoqa-coverage"))["invalid_in_denominator"]
    assert (kind, default, allowed) == ("boolean", "`false`", "true or false")
    # a hyphenated YAML key is listed under its YAML name
    assert "##### `filter.readers.cross-encoder` { #record-filter-readers-cross-encoder }" in page


def test_every_spec_field_has_a_row_with_a_description():
    from data_specs.models import CosmosSpec, ProtoqaSpec, RecordSpec, SpecModel

    def leaves(model: type[SpecModel]) -> int:
        count = 0
        for info in model.model_fields.values():
            nested = [a for a in (info.annotation, *getattr(info.annotation, "__args__", ()))
                      if isinstance(a, type) and issubclass(a, SpecModel)]
            count += leaves(nested[0]) if nested else 1
        return count

    page = (ROOT / "docs" / "reference" / "spec.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    assert len(rows) == sum(leaves(m) for m in (RecordSpec, CosmosSpec, ProtoqaSpec))
    undescribed = [row.split("|")[1] for row in rows if row.rstrip().endswith("|  |")]
    assert undescribed == []


def test_tables_page_lists_nested_columns_with_their_arrow_types():
    page = (ROOT / "docs" / "reference" / "tables.md").read_text()
    # data_specs/record_schema.yaml: passages.entities is a list of structs; `end` is int32
    rows = _rows(_section(page, "record-passages"))
    assert rows["entities"][0] == "`list<struct>`"
    assert rows["entities[].end"] == ["`int32`", "last character of the mention in text (inclusive)"]
    for anchor in ("record-filtered-queries", "cosmos-instances", "protoqa-release"):
        assert _rows(_section(page, anchor)), anchor
