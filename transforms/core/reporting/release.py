"""A release in the Hugging Face Hub / `datasets` layout, shared by the three datasets (Beam-free).

`write_release(output, release)` writes, for each config of `release.configs`, one Parquet file
per split (`{config dir}/{split}-00000-of-00001.parquet`, more shards above `shard_rows` rows)
with the schema's field descriptions and the run's file metadata, then `README.md`: the dataset
card, whose YAML header (`configs` with `data_files`, `dataset_info` with features and splits,
`license`, `task_categories`, `language`, `source_datasets`, `pretty_name`, `size_categories`)
follows the Hub's dataset card specification (huggingface/hub-docs `datasetcard.md`), so that
`datasets.load_dataset(output)` and `load_dataset(output, CONFIG)` give the splits with the
features of the schemas.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, Union

import yaml

from data_specs import RefusedYaml, load_yaml
from transforms.core.errors import UserError

if TYPE_CHECKING:
    import pyarrow as pa

CARD = "README.md"
SHARD_ROWS = 100_000
# The Hub's size_categories values, by the largest row count of a config.
SIZE_CATEGORIES = ("n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "10M<n<100M",
                   "100M<n<1B", "1B<n<10B", "10B<n<100B", "100B<n<1T", "n>1T")
# The split names the Hub and `datasets` know, first; others (unsplit) follow.
SPLIT_ORDER = ("train", "validation", "test")
_HF_DTYPES = {"string": "string", "int32": "int32", "int64": "int64", "double": "float64",
              "bool": "bool", "float": "float32"}


@dataclass(frozen=True)
class Config:
    """One config (subset) of a release: its rows per split, all of `schema`."""

    name: str
    schema: pa.Schema
    splits: Mapping[str, Sequence[Mapping[str, Any]]]
    folder: str = "data"           # where its files go, relative to the release directory


@dataclass(frozen=True)
class Release:
    """What a release holds and what its dataset card says."""

    pretty_name: str
    configs: Sequence[Config]
    license: str
    task_categories: Sequence[str]
    source_datasets: Sequence[str]
    summary: str                   # the card's opening paragraph
    sections: Sequence[tuple[str, str]]   # (title, markdown) after the structure section
    citation: str                  # BibTeX of the paper
    language: Sequence[str] = ("en",)
    task_ids: Sequence[str] = ()
    file_metadata: Mapping[str, str] = field(default_factory=dict)


def ordered_splits(names: Sequence[str]) -> list[str]:
    """train, validation, test first, then the other split names in sorted order."""
    known = [s for s in SPLIT_ORDER if s in names]
    return known + sorted(s for s in names if s not in SPLIT_ORDER)


def size_category(rows: int) -> str:
    """The Hub's size category of a dataset with `rows` rows (n<1K, 1K<n<10K, ...)."""
    if rows < 1000:
        return SIZE_CATEGORIES[0]
    index = min(int(math.log10(rows)) - 2, len(SIZE_CATEGORIES) - 1)
    return SIZE_CATEGORIES[index]


def hf_feature(arrow_type: pa.DataType) -> dict[str, Any]:
    """The YAML form of the `datasets` feature of an Arrow type (as `Features._to_yaml_list`)."""
    import pyarrow as pa

    if pa.types.is_struct(arrow_type):
        return {"struct": [{"name": f.name, **hf_feature(f.type)} for f in arrow_type]}
    if pa.types.is_list(arrow_type):
        inner = hf_feature(arrow_type.value_type)
        if list(inner) == ["dtype"]:          # list: string
            return {"list": inner["dtype"]}
        if list(inner) == ["struct"]:         # list: [- name: ..., dtype: ...]
            return {"list": inner["struct"]}
        return {"list": inner}                # a list of lists
    name = str(arrow_type)
    if name not in _HF_DTYPES:
        raise ValueError(f"no datasets feature for Arrow type {arrow_type}")
    return {"dtype": _HF_DTYPES[name]}


def hf_features(schema: pa.Schema) -> list[dict[str, Any]]:
    """The `dataset_info.features` list of a table schema."""
    return [{"name": f.name, **hf_feature(f.type)} for f in schema]


def shard_paths(folder: str, split: str, count: int) -> list[str]:
    """`{folder}/{split}-00000-of-0000N.parquet`, ..., relative to the release directory."""
    return [f"{folder}/{split}-{i:05d}-of-{count:05d}.parquet" for i in range(count)]


def _write_split(root: Path, config: Config, split: str, rows: Sequence[Mapping[str, Any]],
                 metadata: Mapping[str, str], shard_rows: int) -> tuple[int, int]:
    """Write one split's shards; returns (in-memory bytes, file bytes)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = config.schema.with_metadata(dict(metadata)) if metadata else config.schema
    count = max(1, math.ceil(len(rows) / shard_rows))
    memory = disk = 0
    for index, relative in enumerate(shard_paths(config.folder, split, count)):
        part = rows[index * shard_rows:(index + 1) * shard_rows]
        table = pa.Table.from_pylist([{f: r.get(f) for f in schema.names} for r in part], schema=schema)
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        memory += table.nbytes
        disk += path.stat().st_size
    return memory, disk


def card_header(release: Release, sizes: Mapping[str, Mapping[str, tuple[int, int, int]]]) -> dict[str, Any]:
    """The YAML header of the dataset card; `sizes[config][split]` = (rows, bytes, file bytes)."""
    configs, infos = [], []
    for index, config in enumerate(release.configs):
        splits = ordered_splits(list(config.splits))
        entry: dict[str, Any] = {"config_name": config.name, "data_files": [
            {"split": s, "path": f"{config.folder}/{s}-*.parquet"} for s in splits]}
        if index == 0 and len(release.configs) > 1:
            entry["default"] = True
        configs.append(entry)
        per_split = sizes[config.name]
        infos.append({
            "config_name": config.name,
            "features": hf_features(config.schema),
            "splits": [{"name": s, "num_bytes": per_split[s][1], "num_examples": per_split[s][0]}
                       for s in splits],
            "download_size": sum(v[2] for v in per_split.values()),
            "dataset_size": sum(v[1] for v in per_split.values()),
        })
    largest = max((sum(v[0] for v in per.values()) for per in sizes.values()), default=0)
    header: dict[str, Any] = {
        "pretty_name": release.pretty_name,
        "language": list(release.language),
        "license": release.license,
        "task_categories": list(release.task_categories),
    }
    if release.task_ids:
        header["task_ids"] = list(release.task_ids)
    header.update({"source_datasets": list(release.source_datasets),
                   "size_categories": [size_category(largest)],
                   "configs": configs, "dataset_info": infos})
    return header


def _field_lines(schema: pa.Schema) -> list[str]:
    """One markdown bullet per field (nested fields indented): name, type, description."""
    import pyarrow as pa

    lines: list[str] = []

    def visit(fields: Sequence[pa.Field], depth: int) -> None:
        for f in fields:
            meta = f.metadata or {}
            text = meta.get(b"description", b"").decode("utf-8")
            kind = f.type
            lines.append(f"{'  ' * depth}- `{f.name}` ({_type_name(kind)}): {text}".rstrip(": "))
            while pa.types.is_list(kind):
                kind = kind.value_type
            if pa.types.is_struct(kind):
                visit(list(kind), depth + 1)

    visit(list(schema), 0)
    return lines


def _type_name(kind: pa.DataType) -> str:
    import pyarrow as pa

    if pa.types.is_list(kind):
        return f"list of {_type_name(kind.value_type)}"
    if pa.types.is_struct(kind):
        return "struct"
    return str(kind)


def structure_section(release: Release, sizes: Mapping[str, Mapping[str, tuple[int, int, int]]],
                      directory: str) -> str:
    """The card's "Dataset structure" section: configs, splits and rows, fields, loading."""
    lines = ["```python", "from datasets import load_dataset", "",
             f'ds = load_dataset("{directory}")' + ("   # config " + release.configs[0].name
                                                    if len(release.configs) > 1 else "")]
    for config in release.configs[1:]:
        lines.append(f'{config.name} = load_dataset("{directory}", "{config.name}")')
    lines += ["```", "", "| config | split | rows | files |", "|---|---|---|---|"]
    for config in release.configs:
        for split in ordered_splits(list(config.splits)):
            lines.append(f"| {config.name} | {split} | {sizes[config.name][split][0]:,} | "
                         f"`{config.folder}/{split}-*.parquet` |")
    for config in release.configs:
        lines += ["", f"Fields of `{config.name}` (also in each Parquet file's field metadata, "
                      "`csdata describe FILE`):", ""]
        lines += _field_lines(config.schema)
    return "\n".join(lines)


def render_card(header: Mapping[str, Any], title: str, summary: str,
                sections: Sequence[tuple[str, str]], citation: str) -> str:
    """The dataset card: `---` YAML header `---`, then the markdown sections."""
    head = yaml.safe_dump(dict(header), sort_keys=False, allow_unicode=True, width=100)
    parts = [f"---\n{head}---", f"# {title}", summary.strip()]
    for name, body in sections:
        parts.append(f"## {name}\n\n{body.strip()}")
    parts.append(f"## Citation\n\n```bibtex\n{citation.strip()}\n```")
    return "\n\n".join(parts) + "\n"


def read_card_header(path: Union[str, Path]) -> dict[str, Any]:
    """The YAML header of a dataset card (an empty dict when it has none); a header whose aliases
    would expand it without bound is refused at once (`UserError`), as a spec is."""
    text = Path(path).read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        return {}
    end = text.index("\n---", 4)
    try:
        return load_yaml(text[4:end]) or {}
    except RefusedYaml as error:
        raise UserError(f"the dataset card {path} is refused: {error}") from None


def write_release(output: Union[str, Path], release: Release, shard_rows: int = SHARD_ROWS,
                  directory: Optional[str] = None) -> dict[str, dict[str, int]]:
    """Write the release's Parquet files and dataset card into `output`; returns the rows per
    config and split. `directory` is the path the card's loading example shows (default: output)."""
    root = Path(output)
    root.mkdir(parents=True, exist_ok=True)
    for config in release.configs:   # an earlier release's shards of the same config
        for old in (root / config.folder).glob("*.parquet") if (root / config.folder).is_dir() else []:
            old.unlink()
    sizes: dict[str, dict[str, tuple[int, int, int]]] = {}
    for config in release.configs:
        sizes[config.name] = {}
        for split in ordered_splits(list(config.splits)):
            rows = config.splits[split]
            memory, disk = _write_split(root, config, split, rows, release.file_metadata, shard_rows)
            sizes[config.name][split] = (len(rows), memory, disk)
    header = card_header(release, sizes)
    sections = [("Dataset structure", structure_section(release, sizes, directory or str(output))),
                *release.sections]
    card = render_card(header, release.pretty_name, release.summary, sections, release.citation)
    (root / CARD).write_text(card, encoding="utf-8")
    return {name: {split: v[0] for split, v in per.items()} for name, per in sizes.items()}


# ---- the "how it was built" section ---------------------------------------------------------

def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """`{"a": {"b": 1}}` -> `{"a.b": 1}`; lists and scalars are leaves."""
    if not isinstance(data, Mapping) or not data:
        return {prefix: data} if prefix else {}
    flat: dict[str, Any] = {}
    for key, value in data.items():
        flat.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def spec_differences(spec: Mapping[str, Any], defaults: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(key, value, paper default) of every spec value that differs from the shipped defaults
    (`data_specs/<dataset>.yaml`), in key order; a key the defaults lack has default None."""
    ours, theirs = flatten(spec), flatten(defaults)
    return [(key, ours.get(key), theirs.get(key)) for key in sorted(set(ours) | set(theirs))
            if ours.get(key) != theirs.get(key)]


def differences_table(differences: Sequence[tuple[str, Any, Any]]) -> str:
    """A markdown table of `spec_differences`, or a line saying there are none."""
    if not differences:
        return "Every spec value is the paper's default."
    lines = ["| spec key | this release | paper default |", "|---|---|---|"]
    for key, value, default in differences:
        lines.append(f"| `{key}` | `{_short(value)}` | `{_short(default)}` |")
    return "\n".join(lines)


def _short(value: Any, limit: int = 80) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    text = text[:-4].strip() if text.endswith("\n...") or text.endswith(" ...") else text
    text = text.replace("|", "\\|")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def build_section(provenance: Optional[Mapping[str, Any]], defaults: Mapping[str, Mapping[str, Any]]) -> str:
    """The card's "How it was built" section: every recorded command, its inputs, and each spec
    value that differs from the paper's defaults (`defaults`: dataset -> the shipped spec)."""
    if not provenance:
        return ("This run recorded no provenance (`provenance.json`), so its commands and spec are "
                "unknown; rerun it with this csdata version to record them.")
    parts = []
    for index, step in enumerate(provenance["steps"], 1):
        inputs = step.get("inputs") or []
        size = sum(i.get("size") or 0 for i in inputs)
        lines = [f"{index}. `csdata {' '.join(step.get('argv', [step.get('command', '?')]))}` "
                 f"({step.get('finished', '?')}, csdata {step.get('versions', {}).get('csdata', '?')}): "
                 f"input files: {len(inputs)}, {size:,} bytes."]
        spec = step.get("spec")
        if spec:
            dataset = spec.get("dataset", "")
            lines.append("")
            lines.append(f"   Spec sha256 `{step.get('spec_sha256', '')[:16]}…`; values that differ from "
                         f"`data_specs/{dataset}.yaml` (the paper's defaults):")
            lines.append("")
            table = differences_table(spec_differences(spec, defaults.get(dataset, {})))
            lines += ["   " + line for line in table.splitlines()]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def code_block(text: str) -> str:
    """`text` as a fenced block (the stats and funnel tables are fixed-width text)."""
    return f"```\n{text.rstrip()}\n```"
