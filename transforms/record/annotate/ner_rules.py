"""Post-processing rules for systematic errors of spaCy's small English NER against ReCoRD's spans.

Each rule is a pure function `rule(text, entities) -> entities` over one annotated unit (a body
paragraph or a highlight): `entities` are (start, end, label) spans of `text` as the model gave
them (end exclusive), in order. The spec's `annotator.ner_rules` lists the rules to apply, in
the order of `NER_RULES`; they run after the model pass, so stored annotations serve every
choice of rules.

* `dateline`: the CNN dateline. `(CNN)` opening a unit is an ORG mention, and the place before
  it (`MEXICO CITY (CNN) --`, `Bellefonte, Pennsylvania (CNN)`) a GPE mention per comma part;
  an entity glued across the closing bracket (`CNN)The` tagged NORP) is dropped.
* `honorifics`: a leading `Mr`, `Mrs`, `Ms`, `Miss`, `Mx` or `Dr` (dot optional) is not part of
  the name ("Ms Stubbings" -> "Stubbings"): the release never includes them.
* `leading_the`: a leading lower-case "the" is not part of the name ("the Liberty Stadium" ->
  "Liberty Stadium"); a capitalised "The" stays ("The Hague", "The Duchess").
* `spaced_dash`: a span is cut at a spaced dash ("Tian Tian - whose" -> "Tian Tian").
* `bullets`: a span is split at list bullets ("Minnesota • Iceland • Nigeria").
* `apposition`: a PERSON, ORG or WORK_OF_ART span is split at ", " into its capitalised parts
  ("Camilla, Duchess of Cornwall"); place spans keep theirs ("Fargo, North Dakota").
* `inner_possessive`: a span is split at an inner possessive "'s " when both sides are
  capitalised ("North's National Defense Commission" -> "North", "National Defense
  Commission"), not after the plurals "Children", "Women", "Men", "People" ("Children's
  Mercy Hospital" is one name).
* `plural_possessive`: two mentions separated only by a plural possessive apostrophe are one
  name ("Reserve Officers" + "' " + "Training Corps" -> "Reserve Officers' Training Corps").
* `lowercase_gap`: a span is split at a lower-case word between capitalised words that is not
  a name connector ("Tottenham Hotspur convinced Ben Davies" -> two names; "Bank of England"
  stays).
* `named_dates`: a date or number span written as a name is kept as one (labels outside
  `annotator.labels` are dropped later): a DATE span whose words are all capitalised and none is
  a weekday, month or "Today" ("Christmas", "Halloween Eve", "Olympic") becomes EVENT, a number
  span whose every word has a capital letter and one a digit ("Q1", "40C") PRODUCT. The release
  lists these and never a date ("Friday", "March 2013") or a number ("Two").
* `capitalised_runs`: two or more capitalised words inside a sentence that no span touches
  ("their Premier League clash", "CNN affiliate TV Record") are an ORG mention (a guess: the
  coreferencer links exact matches across labels). Not at a sentence's start (after a final
  mark, colon, semicolon, dash or bullet); a capitalised stop word ("The", "You're"), a calendar
  word or an honorific ends a run, punctuation or a possessive after a word too; not upper-case
  text ("CLICK HERE", "VIDEO Wanted": a word of 4 letters or more in capitals), not a title (the
  last word an office or role noun: "Majority Leader"), not next to a span ("House" + "Majority
  Leader"). Names it adds are propagated like the model's, so "Y-chromosomal Adam" found once
  replaces "Adam" elsewhere (with `contained`).

Two more rules act on the whole article, with `annotator.propagate_names`
(`propagate.propagate_names`): `surnames` also propagates the surnames of PERSON names
("Marc Chivers" ... "Chivers"), and `contained` lets a propagated name replace mentions inside
it ("Duchess of Cornwall" over "Cornwall").
"""
from __future__ import annotations

import functools
import re
from typing import Callable, Optional, Sequence

Span = tuple[int, int, str]
Rule = Callable[[str, Sequence[Span]], list[Span]]

HONORIFICS = ("Mr", "Mrs", "Ms", "Miss", "Mx", "Dr")
# Lower-case words that occur inside names ("Bank of England", "Leonardo da Vinci").
NAME_CONNECTORS = frozenset({
    "of", "the", "and", "for", "on", "in", "at", "to", "de", "la", "le", "du", "des", "da", "di",
    "del", "della", "dos", "das", "van", "von", "der", "den", "ter", "bin", "ibn", "al", "el",
    "y", "e", "upon", "under", "&", "'n'", "an", "a",
})
PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})
APPOSITION_LABELS = frozenset({"PERSON", "ORG", "WORK_OF_ART"})

_DATELINE = re.compile(r"^(?:(?P<place>[A-Z][^\s(),]*(?:[ \-][A-Z][^\s(),]*)*"
                       r"(?:, [A-Z][^\s(),]*(?: [A-Z][^\s(),]*)*)?) )?\((?P<source>CNN)\)")
_HONORIFIC = re.compile(r"(?:" + "|".join(HONORIFICS) + r")\.?\s+(?=[A-Z])")
_LEADING_THE = re.compile(r"the\s+(?=\S)")
_SPACED_DASH = re.compile(r"\s+(?:-{1,2}|–|—)\s+")
_BULLET = re.compile(r"\s*[•·▪●]\s*")
_APPOSITION = re.compile(r",\s+")
# Not after a plural that takes "'s" ("Children's Mercy Hospital", "Women's World Cup").
_INNER_POSSESSIVE = re.compile(r"(?<!Children)(?<!Women)(?<!Men)(?<!People)['’]s\s+(?=[A-Z])")
_WORD = re.compile(r"\S+")
# Number and date labels: spaCy's small model tags a few names with them ("Q1", "Christmas").
NUMBER_LABELS = frozenset({"CARDINAL", "ORDINAL", "QUANTITY", "MONEY", "PERCENT", "TIME"})
# Words of dates that are not names: a DATE span holding one is a date.
CALENDAR_WORDS = frozenset({
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "today", "tonight", "tomorrow", "yesterday",
})
# Nouns of offices and roles: a capitalised run ending in one is a title ("Majority Leader",
# "Prime Minister"), which the release does not list as a name.
TITLE_NOUNS = frozenset({
    "leader", "whip", "minister", "secretary", "president", "chairman", "chairwoman", "chair",
    "spokesman", "spokeswoman", "spokesperson", "director", "manager", "coach", "governor",
    "senator", "mayor", "officer", "chief", "general", "commissioner", "ambassador", "editor",
    "reporter", "correspondent", "captain", "judge", "justice", "attorney", "adviser", "advisor",
    "executive", "founder", "head", "commander", "inspector", "sergeant", "constable",
    "prosecutor", "counsel", "treasurer", "speaker", "chancellor", "dean", "professor",
    "representative", "deputy", "assistant", "principal", "superintendent", "administrator",
})
# A word of a capitalised run, possessive and closing punctuation aside ("League's", "Wars,").
_RUN_WORD = re.compile(r"[A-Z][\w.&'’-]*?(?=(?:['’]s)?[,.;:!?\"”’')\]]*$)")
_WORD_END = re.compile(r"(?:['’]s)?[.,;:!?]*$")   # "Friday's," -> "Friday"
_CONTRACTION = re.compile(r"(?:'(?:re|m|ve|ll|d)|n't)$")
_HONORIFIC_WORDS = frozenset(h.lower() for h in HONORIFICS)
_OPENERS = "\"“‘'(["
_CAPITALISED_TOKENS = re.compile(r"(?<!\S)[\"“‘'(\[]*[A-Z]\S*(?:\s+[A-Z]\S*)+")
# What ends a sentence before a word: a final mark (closing quotes or brackets after it), a
# colon, semicolon, dash or bullet; opening quotes and brackets in between do not count.
_SENTENCE_END = re.compile(r"(?:[.!?…][\"”’')\]]*|[:;•|\-–—])\s*[\"“‘'(\[]*\s*$")


def _pieces(text: str, start: int, end: int, label: str, separator: re.Pattern) -> list[Span]:
    """The parts of text[start:end] between `separator` matches, stripped, as spans."""
    parts: list[Span] = []
    at = start
    for match in separator.finditer(text, start, end):
        parts.append((at, match.start(), label))
        at = match.end()
    parts.append((at, end, label))
    out = []
    for a, b, lab in parts:
        piece = text[a:b]
        lead = len(piece) - len(piece.lstrip())
        stripped = piece.strip()
        if stripped:
            out.append((a + lead, a + lead + len(stripped), lab))
    return out


def _capitalised(text: str, start: int, end: int) -> bool:
    return any(ch.isupper() for ch in text[start:end])


def dateline(text: str, entities: Sequence[Span]) -> list[Span]:
    """The `(CNN)` dateline as an ORG mention (and its place as GPE); no entity glued over it."""
    match = _DATELINE.match(text)
    if match is None:
        return list(entities)
    source = (match.start("source"), match.end("source"), "ORG")
    added = [source]
    if match.group("place"):
        added += _pieces(text, match.start("place"), match.end("place"), "GPE", _APPOSITION)
    close = match.end() - 1     # the ")" of "(CNN)"
    kept = [e for e in entities
            if not (e[0] <= close < e[1]) and all(e[1] <= a or e[0] >= b for a, b, _ in added)]
    return sorted(kept + added)


def _strip_leading(text: str, entities: Sequence[Span], lead: re.Pattern) -> list[Span]:
    """Each span without what `lead` matches at its start, unless that is the whole span."""
    out = []
    for start, end, label in entities:
        match = lead.match(text, start, end)
        out.append((match.end(), end, label) if match and match.end() < end else (start, end, label))
    return out


def honorifics(text: str, entities: Sequence[Span]) -> list[Span]:
    """Drop a leading Mr/Mrs/Ms/Miss/Mx/Dr from each span."""
    return _strip_leading(text, entities, _HONORIFIC)


def leading_the(text: str, entities: Sequence[Span]) -> list[Span]:
    """Drop a leading lower-case "the" from each span."""
    return _strip_leading(text, entities, _LEADING_THE)


def _split_each(text: str, entities: Sequence[Span], separator: re.Pattern,
                applies: Callable[[int, int, str], bool]) -> list[Span]:
    out: list[Span] = []
    for start, end, label in entities:
        if applies(start, end, label):
            out.extend(p for p in _pieces(text, start, end, label, separator)
                       if _capitalised(text, p[0], p[1]))
        else:
            out.append((start, end, label))
    return out


def spaced_dash(text: str, entities: Sequence[Span]) -> list[Span]:
    """Cut each span at its first spaced dash, keeping the part before it."""
    out = []
    for start, end, label in entities:
        match = _SPACED_DASH.search(text, start, end)
        out.append((start, match.start(), label) if match and match.start() > start else (start, end, label))
    return out


def bullets(text: str, entities: Sequence[Span]) -> list[Span]:
    """Split spans at list bullets (•, ·, ▪, ●)."""
    return _split_each(text, entities, _BULLET, lambda s, e, label: True)


def apposition(text: str, entities: Sequence[Span]) -> list[Span]:
    """Split PERSON/ORG/WORK_OF_ART spans at ", " (places keep "City, State")."""
    return _split_each(text, entities, _APPOSITION, lambda s, e, label: label in APPOSITION_LABELS)


def inner_possessive(text: str, entities: Sequence[Span]) -> list[Span]:
    """Split a span at an inner "'s " between capitalised words."""
    return _split_each(text, entities, _INNER_POSSESSIVE, lambda s, e, label: True)


def plural_possessive(text: str, entities: Sequence[Span]) -> list[Span]:
    """Join a mention ending in "s" to the next one when only "' " (or "’ ") separates them
    (the apostrophe inside the first span or not)."""
    out: list[Span] = []
    for start, end, label in entities:
        if out:
            p_start, p_end, _ = out[-1]
            if text[p_end - 1: p_end] in ("'", "’"):
                p_end -= 1
            joint = text[p_end - 1: start]   # the span's last character and the gap
            if joint in ("s' ", "s’ ") and text[start: start + 1].isupper():
                out[-1] = (p_start, end, label)
                continue
        out.append((start, end, label))
    return out


def lowercase_gap(text: str, entities: Sequence[Span]) -> list[Span]:
    """Split a span at lower-case words (not name connectors) between capitalised words."""
    out: list[Span] = []
    for start, end, label in entities:
        words = [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]
        gaps = [i for i, (a, b) in enumerate(words)
                if 0 < i < len(words) - 1 and text[a].islower() and text[a:b] not in NAME_CONNECTORS]
        if not gaps:
            out.append((start, end, label))
            continue
        run: list[tuple[int, int]] = []
        for i, word in enumerate(words + [(end, end)]):
            if i in gaps or i == len(words):
                if run and _capitalised(text, run[0][0], run[-1][1]):
                    out.append((run[0][0], run[-1][1], label))
                run = []
            else:
                run.append(word)
    return out


def _calendar_word(word: str) -> bool:
    """Whether `word` is a calendar word, plural, possessive or punctuation after it aside."""
    word = _WORD_END.sub("", word).lower()
    return word in CALENDAR_WORDS or word.endswith("s") and word[:-1] in CALENDAR_WORDS


def named_dates(text: str, entities: Sequence[Span]) -> list[Span]:
    """Relabel DATE spans written as names EVENT and number spans written as codes PRODUCT."""
    out = []
    for start, end, label in entities:
        words = text[start:end].split()
        if (label == "DATE" and words and all(w[0].isupper() for w in words)
                and not any(ch.isdigit() for ch in text[start:end])
                and not any(_calendar_word(w) for w in words)):
            label = "EVENT"
        elif (label in NUMBER_LABELS and words and all(any(ch.isupper() for ch in w) for w in words)
              and any(ch.isdigit() for ch in text[start:end])):
            label = "PRODUCT"
        out.append((start, end, label))
    return out


@functools.cache
def _stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS  # a word list only; no model is loaded
    return frozenset(STOP_WORDS)


def _run_word(text: str, start: int, end: int) -> Optional[tuple[int, int, bool]]:
    """The capitalised word of the token text[start:end] as (start, end, closed), or None;
    `closed`: punctuation or a possessive follows it in the token, so a run ends there."""
    match = _RUN_WORD.match(text, start, end)
    if match is None:
        return None
    word = match.group().lower().replace("’", "'")
    # A contraction is a stop word with its ending ("You're", "I'm"): spaCy lists them apart.
    head = _CONTRACTION.sub("", word)
    if head in _stop_words() or word.rstrip(".") in CALENDAR_WORDS or word.rstrip(".") in _HONORIFIC_WORDS:
        return None
    return match.start(), match.end(), match.end() < end


def capitalised_runs(text: str, entities: Sequence[Span]) -> list[Span]:
    """Add, as ORG, runs of two or more capitalised words inside a sentence, free of spans."""
    taken = [(s, e) for s, e, _ in entities]
    added: list[Span] = []

    def flush(run: list[tuple[int, int]]) -> None:
        if len(run) < 2:
            return
        start, end = run[0][0], run[-1][1]
        free = all(b < start - 1 or a > end + 1 for a, b in taken)   # not even next to a span
        words = [text[a:b] for a, b in run]
        # "CLICK HERE", "SCROLL DOWN FOR VIDEO Wanted": shouting, not names (acronyms are short).
        headline = any(len(w) > 3 and w.isupper() for w in words) or not any(
            ch.islower() for ch in text[start:end])
        title = words[-1].lower() in TITLE_NOUNS   # "Majority Leader", "Foreign Secretary"
        before = text[max(0, start - 12): start]
        initial = (_SENTENCE_END.search(before) is not None
                   or not before.strip(_OPENERS + " \t\n") and not text[:start].strip(_OPENERS + " \t\n"))
        if free and not headline and not title and not initial:
            added.append((start, end, "ORG"))

    # Only stretches of two or more capitalised tokens can hold a run: find those first.
    for stretch in _CAPITALISED_TOKENS.finditer(text):
        run: list[tuple[int, int]] = []
        for token in _WORD.finditer(text, stretch.start(), stretch.end()):
            lead = len(token.group()) - len(token.group().lstrip(_OPENERS))
            word = _run_word(text, token.start() + lead, token.end())
            if word is None or lead:
                flush(run)
                run = []
            if word is None:
                continue
            run.append(word[:2])
            if word[2]:
                flush(run)
                run = []
        flush(run)
    return sorted([*entities, *added])


NER_RULES: dict[str, Rule] = {
    "named_dates": named_dates,
    "dateline": dateline,
    "honorifics": honorifics,
    "leading_the": leading_the,
    "spaced_dash": spaced_dash,
    "bullets": bullets,
    "apposition": apposition,
    "inner_possessive": inner_possessive,
    "plural_possessive": plural_possessive,
    "lowercase_gap": lowercase_gap,
    "capitalised_runs": capitalised_runs,
}


# Rules applied by `propagate.propagate_names` over the whole article, not per unit.
PROPAGATION_RULES = ("surnames", "contained")
RULE_NAMES = (*NER_RULES, *PROPAGATION_RULES)


def apply_rules(text: str, entities: Sequence[Span], names: Sequence[str]) -> tuple[Span, ...]:
    """`entities` after the named per-unit rules, applied in `NER_RULES` order (the
    `PROPAGATION_RULES` are applied elsewhere); ValueError for an unknown name."""
    unknown = [name for name in names if name not in RULE_NAMES]
    if unknown:
        raise ValueError(f"unknown NER rule(s) {unknown}; known: {', '.join(RULE_NAMES)}")
    out = list(entities)
    for name, rule in NER_RULES.items():
        if name in names:
            out = rule(text, out)
    return tuple(out)
