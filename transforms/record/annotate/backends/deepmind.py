"""DeepMind's CNN/Daily Mail metadata (google-deepmind/rc-data) as `DocumentAnnotation`s.

For each story (`<hash>` = sha1 of the URL) the release has:

- `tokens/<hash>.txt`: one line `start,length;start,length;...`. A token is
  `story[start : start + length + 1]` (`generate_questions.LoadTokenMapping`: the end
  `start + length` is inclusive); the list is sorted by end.
- `entities/<hash>.txt`: one line `entity_index,start_token,end_token;...` with inclusive indexes
  into that sorted token list. One entity index is one coreference chain.
- `questions/<split>/<sha1>.question`: `url\\n\\ncontext\\n\\nquestion\\n\\nanswer\\n\\n@entity0:Name\\n...`.

The story string is `Story.ToString()`, which is `transforms.article.article_document`.
`generate_questions.py` runs on Python 2 byte strings, so offsets count UTF-8 bytes; they are
turned into character offsets here (`unit="chars"` reads offsets that already count characters).
"""
from __future__ import annotations

from typing import Optional

from apache_beam.io.filesystems import FileSystems

from transforms.record.annotate.backends import renumber
from transforms.record.annotation import AnnotationError, DocumentAnnotation

LABEL = "ENTITY"


def _triples(line: str, width: int, what: str) -> list[tuple[int, ...]]:
    items = []
    for item in line.strip().split(";"):
        if not item.strip():
            continue
        parts = item.split(",")
        if len(parts) != width:
            raise AnnotationError(f"bad_{what}", f"{item!r} is not {width} comma-separated numbers")
        try:
            items.append(tuple(int(p) for p in parts))
        except ValueError:
            raise AnnotationError(f"bad_{what}", f"{item!r} is not numeric") from None
    return items


def parse_token_mapping(line: str) -> list[tuple[int, int]]:
    """(start, end inclusive) offsets of each token, sorted by end, as `LoadTokenMapping` does."""
    mapping = [(start, start + length) for start, length in _triples(line, 2, "token_offsets")]
    mapping.sort(key=lambda span: span[1])
    return mapping


def parse_entity_mapping(line: str) -> list[tuple[int, int, int]]:
    """(entity index, first token, last token inclusive), sorted by last token, as
    `LoadEntityMapping` does."""
    mapping = [(e, s, t) for e, s, t in _triples(line, 3, "entity_tokens")]
    mapping.sort(key=lambda item: item[2])
    return mapping


def parse_question_file(text: str) -> tuple[str, str, str, str, dict[str, str]]:
    """(url, context, question, answer, {"@entity0": name, ...}) of a `.question` file."""
    parts = text.split("\n\n", 4)
    if len(parts) < 4:
        raise AnnotationError("bad_question_file", f"{len(parts)} blocks, expected 5")
    url, context, question, answer = parts[:4]
    names: dict[str, str] = {}
    for line in (parts[4] if len(parts) == 5 else "").splitlines():
        if line.strip():
            key, sep, name = line.partition(":")
            if not sep:
                raise AnnotationError("bad_question_file", f"entity line {line!r} has no ':'")
            names[key] = name
    return url, context, question, answer, names


def _char_offsets(story: str) -> list[Optional[int]]:
    """Character index of each UTF-8 byte offset (None inside a character), plus the end."""
    table: list[Optional[int]] = []
    for i, char in enumerate(story):
        width = len(char.encode("utf-8"))
        table.append(i)
        table.extend([None] * (width - 1))
    table.append(len(story))
    return table


def document_annotation(story_text: str, tokens_line: str, entities_line: str,
                        unit: str = "bytes") -> DocumentAnnotation:
    """Entity mentions (label "ENTITY") and chains (entity index, renumbered 0.. by first
    appearance) of a story from its token and entity mapping lines.

    Raises AnnotationError("bad_token_offsets") for a token outside the story (or inside a
    UTF-8 character), ("bad_entity_tokens") for an entity over a missing token,
    ("misaligned_tokens") for an entity that starts or ends on whitespace (another story text).
    """
    if unit not in ("bytes", "chars"):
        raise ValueError(f"unit must be 'bytes' or 'chars', got {unit!r}")
    entities = parse_entity_mapping(entities_line)
    if not entities:
        return DocumentAnnotation(mentions=(), chains=())
    tokens = parse_token_mapping(tokens_line)
    table = _char_offsets(story_text) if unit == "bytes" else list(range(len(story_text) + 1))
    mentions: dict[tuple[int, int], int] = {}
    for index, first, last in entities:
        if not 0 <= first <= last < len(tokens):
            raise AnnotationError("bad_entity_tokens",
                                  f"entity {index} tokens {first}-{last} of {len(tokens)}")
        start, end = tokens[first][0], tokens[last][1] + 1
        if not 0 <= start < end < len(table) or table[start] is None or table[end] is None:
            raise AnnotationError("bad_token_offsets",
                                  f"entity {index} at {unit} {start}-{end} of a "
                                  f"{len(table) - 1}-{unit[:-1]} story")
        span = story_text[table[start]:table[end]]
        if span != span.strip():  # a token edge on whitespace: not the story these offsets index
            raise AnnotationError("misaligned_tokens", f"entity {index} is {span!r}")
        mentions.setdefault((table[start], table[end]), index)
    spans = sorted(mentions)
    return DocumentAnnotation(mentions=tuple((s, e, LABEL) for s, e in spans),
                              chains=renumber([mentions[span] for span in spans]))


def check_entity_names(story_text: str, tokens_line: str, entities_line: str,
                       names: dict[str, str]) -> None:
    """Check each entity's token text against the `@entityN:Name` lines of its `.question` files.

    DeepMind names an entity by its first mention's tokens joined by spaces (" - " -> "-"), on
    the story's UTF-8 bytes; a mismatch means the story is not the one the metadata indexes.
    Raises AnnotationError("entity_name_mismatch").
    """
    data = story_text.encode("utf-8")
    tokens = parse_token_mapping(tokens_line)
    seen: set[int] = set()
    for index, first, last in sorted(parse_entity_mapping(entities_line), key=lambda e: e[1]):
        name = names.get(f"@entity{index}")
        if name is None or index in seen or not 0 <= first <= last < len(tokens):
            continue
        seen.add(index)
        text = " ".join(data[s:e + 1].decode("utf-8", "replace") for s, e in tokens[first:last + 1])
        if text.replace(" - ", "-") != name:
            raise AnnotationError("entity_name_mismatch", f"@entity{index}: {text!r} != {name!r}")


def _read(path: str) -> str:
    try:
        with FileSystems.open(path) as handle:
            return handle.read().decode("utf-8")
    except OSError as error:  # Beam raises BeamIOError (an IOError, i.e. OSError) for missing files
        raise AnnotationError("annotation_missing", path) from error


def read_article_metadata(root: str, article_id: str) -> tuple[str, str]:
    """(tokens line, entities line) from `{root}/tokens/{id}.txt` and `{root}/entities/{id}.txt`.

    Raises AnnotationError("annotation_missing", path) when either file cannot be read.
    """
    root = root.rstrip("/")
    tokens = _read(f"{root}/tokens/{article_id}.txt")
    entities = _read(f"{root}/entities/{article_id}.txt")
    return tokens.split("\n", 1)[0], entities.split("\n", 1)[0]
