"""`csdata DATASET release` and `reproduce` (no Beam: a release loads pyarrow and the spec models
only; `reproduce` loads what the commands it reruns load). Provenance is recorded by
`pipeline.cli.provenance`.

* `release_command(args, build)`: `csdata {record,cosmos} release RUN --output DIR`, the Hugging
  Face layout and dataset card of `transforms.core.reporting.release`.
* `reproduce_command(args)`: `csdata DATASET reproduce DIR --output NEW` reruns every recorded
  step from the recorded inputs (checked by sha256) and spec, writes NEW/release/ (the rerun
  release) and NEW/runs/ (the steps before it), and compares the rows of every config and split.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence

if TYPE_CHECKING:
    from transforms.core.reporting.release import Release

EXIT_DIFFERENT = 1


# ---- csdata DATASET release ------------------------------------------------------------------

def add_release_commands(sub: Any, dataset: str, what: str, release: bool = True) -> None:
    """Add `release RUN --output DIR` (unless the dataset has its own) and `reproduce DIR --output
    NEW` to a dataset's subcommands."""
    if release:
        command = sub.add_parser(
            "release", help=f"write {what} in the Hugging Face datasets layout with a dataset card",
            description="One Parquet file per config and split (CONFIG/SPLIT-00000-of-0000N.parquet "
                        "or data/SPLIT-...), README.md (the dataset card: YAML header with configs, "
                        "dataset_info, license, ...; how it was built, statistics beside the paper's, "
                        "the reject funnel, limitations, citation) and provenance.json. "
                        "`datasets.load_dataset(OUTPUT)` loads it.")
        command.add_argument("run_dir", help=f"output directory of the run to release ({what})")
        command.add_argument("--output", required=True, help="release directory to write")
        command.set_defaults(writes_output=True, command_parser=command)
    reproduce = sub.add_parser(
        "reproduce", help="rerun a release from its recorded inputs and spec and compare the rows",
        description="Reads DIR/provenance.json, checks that every recorded input still has its "
                    "sha256, reruns every step with the recorded spec (NEW/runs/, the release in "
                    "NEW/release/) and compares each config and split row by row: prints "
                    "`identical` or which tables differ (exit 1 when any differs).")
    reproduce.add_argument("release_dir", help="a release directory (with provenance.json)")
    reproduce.add_argument("--output", required=True, help="new directory for the rerun")
    reproduce.add_argument("--trust-recorded-options", action="store_true",
                           help="also apply the Beam and runner options recorded in provenance.json "
                                "(by default they are listed and ignored: they were chosen by whoever "
                                "made the release; your own Beam options on this line apply instead)")
    reproduce.set_defaults(command_parser=reproduce)


def default_specs() -> dict[str, dict]:
    """The shipped specs (the papers' defaults), by dataset, as JSON data."""
    from data_specs import load_spec
    from transforms.core.reporting.provenance import spec_data

    return {name: spec_data(load_spec(name)) for name in ("record", "cosmos", "protoqa")}


def run_card_sections(run_dir: str, provenance: Optional[Mapping[str, Any]], dataset: str,
                      table: str, limitations: str) -> list[tuple[str, str]]:
    """The dataset card sections of a run's release: how it was built, Table 1 (`table`, the
    text `csdata stats` prints), the reject funnel, `limitations` and the provenance."""
    from transforms.core.accounting import STAGE_UNITS
    from transforms.core.reporting.release import build_section, code_block

    return [
        ("How it was built", build_section(provenance, default_specs())),
        ("Statistics", "Table 1 of the paper beside this release (`csdata stats RUN`):\n\n" + code_block(table)),
        ("Reject funnel", funnel_section(provenance, read_run_summary(run_dir), STAGE_UNITS[dataset])),
        ("Limitations", limitations),
        ("Provenance", provenance_section(provenance, dataset)),
    ]


def funnel_section(provenance: Optional[Mapping[str, Any]], summary: Optional[Mapping[str, Any]],
                   units: Mapping[str, str]) -> str:
    """Every recorded step's stage table (in / kept / rejected by reason), or the run's own."""
    from transforms.core.accounting import format_summary
    from transforms.core.reporting.release import code_block

    parts = []
    for step in (provenance or {}).get("steps", []):
        if step.get("stages"):
            parts.append(f"`csdata {step['command']}`:\n\n"
                         + code_block(format_summary({"stages": step["stages"]}, units)))
    if not parts and summary and summary.get("stages"):
        parts.append(code_block(format_summary({"stages": summary["stages"]}, units)))
    if not parts:
        return "No stage tallies were recorded."
    return ("Every record a stage dropped is a row of that run's `rejects/` table with its reason; "
            "in = kept + rejected at every stage.\n\n" + "\n\n".join(parts))


def provenance_section(provenance: Optional[Mapping[str, Any]], dataset: str) -> str:
    """Versions and inputs of the recorded steps, and how to rerun them."""
    if not provenance:
        return "No provenance was recorded."
    last = provenance["steps"][-1]
    versions = ", ".join(f"{k} {v}" for k, v in sorted(last.get("versions", {}).items()))
    inputs = sum(len(s.get("inputs") or []) for s in provenance["steps"])
    return (f"`provenance.json` records every step (these {len(provenance['steps'])} and the release): "
            f"each command line, its input files ({inputs} in all: path, size, sha256), the "
            f"validated spec and the versions ({versions}). Rerun and compare with\n\n"
            f"```\ncsdata {dataset} reproduce THIS_DIR --output NEW\n```")


def read_run_summary(run_dir: str) -> Optional[dict]:
    path = Path(run_dir) / "summary.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None


def release_metadata(run_dir: str, provenance: Optional[Mapping[str, Any]]) -> dict[str, str]:
    """The file metadata of a release's Parquet files: the released run's spec (the last
    recorded step's, `{}` when none was recorded) and the run's files as the inputs."""
    from transforms.core.reporting.provenance import file_metadata

    specs = [s["spec"] for s in (provenance or {}).get("steps", []) if s.get("spec")]
    return file_metadata(specs[-1] if specs else {}, [run_dir])


def spec_of(provenance: Optional[Mapping[str, Any]], dataset: str) -> dict:
    """The last recorded spec of `dataset` in a run's provenance, else the shipped defaults."""
    for step in reversed((provenance or {}).get("steps", [])):
        if step.get("spec") and step["spec"].get("dataset") == dataset:
            return step["spec"]
    return default_specs()[dataset]


def release_command(args: argparse.Namespace, build: Callable[[str, Optional[dict]], Release]) -> int:
    """`csdata DATASET release RUN --output DIR` with the dataset's `build(run_dir, provenance)`."""
    from transforms.core.reporting.provenance import read_provenance
    from transforms.core.reporting.release import write_release

    release = build(args.run_dir, read_provenance(args.run_dir))
    counts = write_release(args.output, release, directory=args.final_output
                           if getattr(args, "final_output", None) else args.output)
    for config, splits in counts.items():
        print(f"{config}: " + ", ".join(f"{split} {n:,}" for split, n in splits.items()))
    return 0


# ---- csdata DATASET reproduce ----------------------------------------------------------------

def reproduce_command(args: argparse.Namespace, extra: Sequence[str] = ()) -> int:
    """Rerun a release's recorded steps into `args.output` and compare the rows (exit 1 when a
    table differs). A step keeps csdata's own recorded arguments (inputs, checked by hash; the
    recorded spec; upstream outputs) but never the Beam options recorded with them, which the
    release's author chose: `extra`, the user's own, apply instead, and the recorded ones only
    with `--trust-recorded-options`."""
    from pipeline.outputs.protocol import check_output, run_info, write_marker

    check_output(args.output)
    provenance, steps = read_steps(args.release_dir)
    trust = getattr(args, "trust_recorded_options", False)
    from pipeline.engine.runner import check_beam_args

    check_beam_args([*extra, *(option for _, recorded in steps for option in recorded if trust)])
    for index, (_, recorded) in enumerate(steps):
        if recorded:
            verdict = "applied (--trust-recorded-options)" if trust else "ignored"
            print(f"step {index + 1}: recorded options {verdict}: {' '.join(recorded)}")
    check_recorded_inputs(provenance)
    new = Path(args.output).resolve()
    runs = new / "runs"
    outputs: list[str] = []
    for index, step in enumerate(provenance["steps"]):
        last = index == len(provenance["steps"]) - 1
        target = new / "release" if last else runs / f"{index + 1:02d}-{step['command'].replace(' ', '-')}"
        parsed, recorded = steps[index]
        options = [*recorded, *extra] if trust else list(extra)
        code = rerun_step(step, parsed, options, str(target), outputs, runs / f"{index + 1:02d}.spec.yaml")
        if code != 0:
            print(f"csdata: step {index + 1} (csdata {step['command']}) exited with {code}")
            return code
        outputs.append(str(target))
    differences = compare_releases(args.release_dir, str(new / "release"))
    for table, verdict in differences:
        print(f"{table:<28} {verdict}")
    different = [t for t, v in differences if v != "identical"]
    (new / "reproduce.json").write_text(json.dumps(
        {"release": str(args.release_dir), "tables": dict(differences), "identical": not different},
        indent=1) + "\n", encoding="utf-8")
    print("identical" if not different else f"differ: {', '.join(different)}")
    write_marker(str(new), {**run_info(args.command, f"{args.command} reproduce"),   # reusable
                            "release": str(args.release_dir)})
    return EXIT_DIFFERENT if different else 0


def read_steps(release_dir: str) -> tuple[dict[str, Any], list[tuple[argparse.Namespace, list[str]]]]:
    """A release's provenance.json and each recorded step parsed by `parse_step`. A missing,
    damaged or oddly shaped file (a step without a command line, inputs that are not
    `{path, size, sha256}` records) is one UserError: the file came from whoever made the release."""
    from transforms.core.errors import UserError
    from transforms.core.reporting.provenance import PROVENANCE_FILE, read_provenance

    provenance = read_provenance(release_dir)
    if not (Path(release_dir) / PROVENANCE_FILE).is_file():
        raise UserError(f"{release_dir} has no {PROVENANCE_FILE} (release it with this csdata version)")
    if provenance is None or not provenance["steps"]:
        raise UserError(f"{release_dir}/{PROVENANCE_FILE} is damaged: not JSON, or no recorded steps")
    steps = [parse_step(step, index) for index, step in enumerate(provenance["steps"])]
    for index, step in enumerate(provenance["steps"]):
        inputs, cwd = step.get("inputs") or [], step.get("cwd")
        shaped = isinstance(inputs, list) and all(
            isinstance(i, dict) and isinstance(i.get("path"), str) and type(i.get("size")) is int
            and isinstance(i.get("sha256"), (str, type(None))) for i in inputs)
        upstreams = step.get("upstreams") or {}
        linked = isinstance(upstreams, dict) and all(
            hasattr(steps[index][0], name) and type(at) is int and 0 <= at < index for name, at in upstreams.items())
        if (not shaped or not linked or not isinstance(cwd, (str, type(None)))
                or not isinstance(step.get("command"), str)):
            raise UserError(f"{PROVENANCE_FILE} step {index + 1}: command, cwd, inputs or upstreams are not as "
                            "csdata records them (inputs: a list of {path, size, sha256}; upstreams: an "
                            "argument of the step -> the number of an earlier step)")
    return provenance, steps


def check_recorded_inputs(provenance: Mapping[str, Any]) -> None:
    """Every recorded input (checked by `read_steps`) is where it was, with the same bytes; else
    one UserError naming the step and the changed files."""
    from transforms.core.errors import UserError
    from transforms.core.reporting.provenance import changed_inputs

    for step in provenance["steps"]:
        cwd = step["cwd"] if step.get("cwd") and os.path.isdir(step["cwd"]) else "."
        changed = changed_inputs(step.get("inputs") or [], cwd)
        if changed:
            raise UserError(f"csdata {step['command']}: recorded inputs changed: {', '.join(changed[:5])}")


def parse_step(step: Mapping[str, Any], index: int) -> tuple[argparse.Namespace, list[str]]:
    """A recorded step's command line, parsed by csdata's parser: (csdata's arguments, the other
    options recorded with them). A command line csdata rejects, or that names no dataset
    command, is a UserError (one line)."""
    import contextlib
    import io

    from pipeline.cli.main import build_parser, dataset_modules
    from transforms.core.errors import UserError

    argv = step.get("argv") if isinstance(step, Mapping) else None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise UserError(f"provenance.json step {index + 1}: no recorded command line (argv)")
    try:
        with contextlib.redirect_stderr(io.StringIO()):   # argparse prints usage before it exits
            args, recorded = build_parser().parse_known_args(argv)
    except SystemExit:
        raise UserError(f"provenance.json step {index + 1}: csdata does not accept the recorded command "
                        f"line `csdata {' '.join(argv)[:200]}`") from None
    names = [m.__name__.rsplit(".", 1)[-1] for m in dataset_modules()]
    if args.command not in names or not getattr(args, "writes_output", False):
        raise UserError(f"provenance.json step {index + 1}: `csdata {' '.join(argv[:3])}` is not a "
                        "command that writes a dataset output")
    return args, recorded


def rerun_step(step: Mapping[str, Any], args: argparse.Namespace, options: Sequence[str], output: str,
               outputs: Sequence[str], spec_file: Path) -> int:
    """Run one recorded step again (`args`: its parsed command line) with Beam `options`: its
    `--output` replaced, the recorded spec (written to `spec_file`) instead of `--spec`/`--set`,
    and each upstream argument pointing at the rerun of its step; relative paths are read from
    the recorded working directory."""
    import yaml

    from pipeline.cli.main import dataset_modules
    from pipeline.cli.run import run_command

    args.argv = list(step["argv"])
    args.output = output
    if step.get("spec") is not None and hasattr(args, "spec"):
        spec_file.parent.mkdir(parents=True, exist_ok=True)
        spec_file.write_text(yaml.safe_dump(step["spec"], sort_keys=False), encoding="utf-8")
        args.spec, args.overrides = str(spec_file), []
    for name, index in (step.get("upstreams") or {}).items():
        setattr(args, name, outputs[index])
    module = next(m for m in dataset_modules() if m.__name__.rsplit(".", 1)[-1] == args.command)
    here = os.getcwd()
    cwd = step.get("cwd")
    os.chdir(cwd if cwd and os.path.isdir(cwd) else here)
    try:
        return run_command(module, args, options)
    finally:
        os.chdir(here)


def _config_tables(release_dir: str) -> dict[str, list[str]]:
    """`config/split` -> its Parquet files, from the card's `configs`."""
    from transforms.core.reporting.release import CARD, read_card_header

    root = Path(release_dir)
    header = read_card_header(root / CARD) if (root / CARD).is_file() else {}
    tables = {}
    for config in header.get("configs", []):
        for entry in config.get("data_files", []):
            files = sorted(str(p) for p in root.glob(entry["path"]))
            tables[f"{config['config_name']}/{entry['split']}"] = files
    return tables


def _rows(files: Sequence[str]) -> list[str]:
    import pyarrow.parquet as pq

    rows = [json.dumps(r, sort_keys=True, default=str) for f in files for r in pq.read_table(f).to_pylist()]
    return sorted(rows)


def compare_releases(original: str, new: str) -> list[tuple[str, str]]:
    """(config/split, `identical` or how it differs) for every table of either release."""
    before, after = _config_tables(original), _config_tables(new)
    verdicts = []
    for table in sorted(set(before) | set(after)):
        if table not in after:
            verdicts.append((table, "differs: missing from the rerun"))
            continue
        if table not in before:
            verdicts.append((table, "differs: only in the rerun"))
            continue
        old, fresh = _rows(before[table]), _rows(after[table])
        if old == fresh:
            verdicts.append((table, "identical"))
            continue
        only_old = len(set(old) - set(fresh))
        only_new = len(set(fresh) - set(old))
        verdicts.append((table, f"differs: {len(old)} rows vs {len(fresh)}; {only_old} only in the "
                                f"original, {only_new} only in the rerun"))
    return verdicts
