"""What the coreference rules compare in a named-entity mention: its comparison form (cleaned
words, folded key, a PERSON's titles and suffixes dropped, the place it names), the word lists the
rules consult, and the packaged table of place aliases and demonyms (resources/demonyms.tsv).

The rules themselves are `transforms.record.annotate.coref`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Iterable, Optional

from transforms.record.annotation import Mention

PERSON = "PERSON"
NORP = "NORP"
PLACE_ORG = frozenset({"ORG", "GPE", "LOC", "FAC"})
GEO = frozenset({"GPE", "LOC"})
PARTIAL_LABELS = frozenset({"ORG", "FAC", "GPE", "LOC", "EVENT", "PRODUCT", "WORK_OF_ART", "LAW"})

TITLES = frozenset({
    "mr", "mrs", "ms", "miss", "mx", "mister", "madam", "madame", "mme", "mlle", "messrs",
    "dr", "doctor", "prof", "professor", "sir", "dame", "lord", "lady", "baron", "baroness",
    "duke", "duchess", "earl", "countess", "king", "queen", "prince", "princess", "pope",
    "emperor", "empress", "sultan", "sheikh", "sheik", "emir", "ayatollah", "president",
    "vice", "prime", "minister", "premier", "chancellor", "secretary", "ambassador", "mayor",
    "governor", "gov", "senator", "sen", "representative", "rep", "congressman",
    "congresswoman", "councillor", "councilman", "councilwoman", "judge", "justice", "chief",
    "officer", "detective", "det", "inspector", "insp", "superintendent", "supt", "constable",
    "pc", "sheriff", "deputy", "agent", "trooper", "sergeant", "sgt", "corporal", "cpl",
    "private", "pte", "pvt", "lieutenant", "lt", "captain", "capt", "commander", "cmdr",
    "colonel", "col", "major", "maj", "general", "gen", "admiral", "adm", "marshal", "coach",
    "rev", "reverend", "father", "fr", "pastor", "bishop", "archbishop", "cardinal", "rabbi",
    "imam",
})
NAME_SUFFIXES = frozenset({"jr", "sr", "ii", "iii", "iv", "v"})
CONNECTORS = frozenset({"of", "the", "and", "for", "&", "a", "an", "in", "on", "at", "to", "by"})
STOPWORDS = CONNECTORS | frozenset({"de", "la", "le", "el", "von", "van", "da", "du", "des"})
GENERIC = frozenset({
    "city", "town", "state", "county", "republic", "kingdom", "union", "university", "college",
    "school", "academy", "institute", "party", "council", "court", "club", "company", "corp",
    "corporation", "inc", "ltd", "group", "government", "department", "ministry", "agency",
    "office", "house", "senate", "congress", "parliament", "assembly", "committee", "commission",
    "association", "federation", "league", "foundation", "hospital", "church", "bank", "police",
    "army", "navy", "force", "forces", "service", "services", "board", "authority", "team",
    "airport", "station", "stadium", "street", "road", "bridge", "tower", "building", "hotel",
    "center", "centre", "square", "hall", "palace", "prison", "museum", "park", "news", "times",
    "post", "press", "media", "international", "national", "royal", "general", "world", "cup",
    "games", "open", "championship", "act", "bill", "law", "north", "south", "east", "west",
})
GEO_WORDS = frozenset({
    "mount", "mt", "mountain", "mountains", "ocean", "sea", "river", "lake", "lakes", "desert",
    "island", "islands", "isle", "isles", "valley", "bay", "gulf", "canyon", "peninsula",
    "strait", "straits", "channel", "forest", "glacier", "falls", "coast", "dc", "region",
    "province", "gap", "pass", "beach", "cove", "heath", "hill", "hills", "cape", "reef",
    "marsh", "moor", "dunes",
})

_EDGE = "\"'“”‘’«»„‟`´()[]{}<>,;:!?*–—-/\\|…"
_POSSESSIVE = re.compile(r"(?:['’][sS]|['’])$")
_NO_PLURAL = ("s", "sh", "ch", "x", "z", "ese")


def fold_word(word: str) -> str:
    """A token's comparison form: case-folded, without dots or hyphens ("Wal-Mart" == "Walmart")."""
    return word.replace(".", "").replace("-", "").replace("’", "'").casefold()


def plain_word(word: str) -> str:
    """A token with dots removed and its case kept, for case-sensitive comparisons."""
    return word.replace(".", "").replace("’", "'")


def clean_words(text: str) -> tuple[str, ...]:
    """The mention's tokens without quotes, possessive, leading "the" or edge punctuation."""
    cleaned = " ".join(text.split())
    previous = None
    while cleaned != previous:
        previous = cleaned
        cleaned = _POSSESSIVE.sub("", cleaned.strip(_EDGE)).strip()
        if cleaned[:4].casefold() == "the " and len(cleaned) > 4:
            cleaned = cleaned[4:]
    words = (word.strip(",;:") for word in cleaned.split())
    return tuple(word for word in words if fold_word(word))


def _key_text(text: str) -> str:
    return " ".join(fold_word(word) for word in clean_words(text))


def _strip_person_affixes(words: tuple[str, ...]) -> tuple[tuple[str, ...], bool]:
    """Drop leading titles and trailing generational suffixes; also say whether a title went."""
    titled = False
    while len(words) > 1 and fold_word(words[0]) in TITLES:
        words, titled = words[1:], True
    while len(words) > 1 and fold_word(words[-1]) in NAME_SUFFIXES:
        words = words[:-1]
    return words, titled


@dataclass(frozen=True)
class PlaceTable:
    """Place aliases and demonyms, each mapped to the place's canonical key."""

    aliases: dict[str, str]
    demonyms: dict[str, str]

    def known(self, key: str) -> bool:
        """Whether `key` names a place or a people in the table."""
        return key in self.aliases or key in self.demonyms


def _plurals(demonym: str) -> Iterable[str]:
    yield demonym
    if not demonym.casefold().endswith(_NO_PLURAL):
        yield demonym + "s"


def parse_place_table(lines: Iterable[str]) -> PlaceTable:
    """Parse demonyms.tsv lines; raise ValueError for a name or demonym on two lines."""
    aliases: dict[str, str] = {}
    demonyms: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.startswith("#"):
            continue
        names, _, people = line.rstrip("\n").partition("\t")
        places = [_key_text(name) for name in names.split("|") if name.strip()]
        forms = {_key_text(p) for d in people.split(",") if d.strip() for p in _plurals(d.strip())}
        canonical = places[0]
        for table, keys in ((aliases, places), (demonyms, forms)):
            for key in keys:
                if table.get(key, canonical) != canonical:
                    raise ValueError(
                        f"demonyms.tsv line {number}: {key!r} already names {table[key]!r}")
                table[key] = canonical
    return PlaceTable(aliases, demonyms)


@lru_cache(maxsize=1)
def load_place_table() -> PlaceTable:
    """The packaged place table, read once per process."""
    path = resources.files("transforms.record.annotate") / "resources" / "demonyms.tsv"
    return parse_place_table(path.read_text(encoding="utf-8").splitlines())


@dataclass(frozen=True)
class MentionForm:
    """What the rules look at in one mention."""

    label: str
    words: tuple[str, ...]        # cleaned tokens (PERSON: without titles and suffixes)
    key: tuple[str, ...]          # folded `words`
    titled: bool                  # a PERSON mention that lost a title
    place: Optional[str]          # canonical place from the table (GPE/LOC alias, NORP demonym)

    @property
    def text(self) -> str:
        """The folded key as one string."""
        return " ".join(self.key)


# Honorifics that only people carry: spaCy's small model often labels "Dr Raman" ORG.
HONORIFICS = frozenset({"mr", "mrs", "ms", "miss", "dr", "sir", "dame", "prof", "professor"})


def mention_form(mention: Mention, places: PlaceTable) -> MentionForm:
    """The comparison form of `mention`; one that starts with an honorific is a PERSON's."""
    words = clean_words(mention.text)
    titled = False
    label = mention.label
    if label != PERSON and len(words) > 1 and fold_word(words[0]) in HONORIFICS:
        label = PERSON
    if label == PERSON:
        words, titled = _strip_person_affixes(words)
    key = tuple(fold_word(word) for word in words)
    text = " ".join(key)
    place = None
    if label in GEO:
        place = places.aliases.get(text)
    elif label == NORP:
        place = places.demonyms.get(text)
    return MentionForm(label, words, key, titled, place)
