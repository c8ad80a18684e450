"""Rule-based coreference over the named-entity mentions of one news article (no pronouns).

ReCoRD lists every mention of the answer entity in the passage as a correct answer, so a wrong
merge turns a distractor into an answer and a missed one drops a valid answer. The rules below
favour precision: when a short form could belong to several entities it is attached to one of
them, never used to merge them.

`RuleCoreferencer` applies, in order:

1. Normalisation. Whitespace is collapsed; surrounding quotes, brackets and punctuation, a
   possessive ending ('s, ’s, a trailing ' or ’) and a leading "the" are stripped. Keys compare
   case-insensitively with dots and hyphens removed ("U.S." == "US", "Wal-Mart" == "Walmart").
   PERSON mentions also lose leading titles ("Mr.", "Sen.", "Prime Minister", ...) and trailing
   "Jr."/"III"-style suffixes. A mention of any label that starts with an honorific only people
   carry ("Dr Raman" tagged ORG) is treated as PERSON.
2. Places and demonyms (resources/demonyms.tsv). GPE/LOC mentions naming the same place through
   any alias ("UK", "Britain", "United Kingdom") share a chain, and NORP mentions join the place
   their demonym names ("Venezuelans" -> "Venezuela"). A NORP missing from the table links to a
   GPE/LOC of the article by suffix rule: drop a plural "s", then "-an" -> "-a" (which covers
   "-ian" -> "-ia"): "Cascadians" -> "Cascadia". NORP and GPE/LOC never link otherwise.
3. Short forms, attached to a longer "target" mention:
   - PERSON: a surname ("Morgan" -> "Tracy Morgan", "Mr Siegrist" -> "Stephan Siegrist"); a name
     without middle names ("Barack Obama" -> "Barack Hussein Obama") or a trailing part of at
     least two tokens ("van Persie" -> "Robin van Persie"); failing a surname, a first name
     ("Tracy"), but never for a titled mention, since "Queen Elizabeth" or "Pope Francis" use
     the first name as a name of its own.
   - acronyms: an upper-case single token (dots allowed) equal to the initials of a longer
     ORG/GPE/LOC/FAC mention, capitalised words only, of/the/and/for/& skipped or kept
     ("FBI" -> "Federal Bureau of Investigation", "DOJ" -> "Department of Justice"). With the
     optional rule `acronyms_any_label`, the acronym itself may carry any label: spaCy's small
     model often tags an acronym PERSON or NORP ("ROTC" -> "Reserve Officers' Training Corps").
   - clipped names (optional rule `clipped_names`): the leading words of a longer
     ORG/GPE/LOC/FAC mention with the last one cut short ("West Brom" -> "West Bromwich
     Albion"), whatever the two labels.
   - partial names: a contiguous prefix or suffix of a longer mention with the same label
     ("Real" -> "Real Madrid", "United" -> "Manchester United"); with the optional rule
     `partial_names_same_case`, only when the shared words have the same case ("CNN Student
     News" is not the caption "CNN STUDENT NEWS ANCHOR"). Never for a form that is only
     stopwords, a single character, has no letter, or starts/ends with a connector ("of
     America"). For GPE/LOC, whose shared tokens usually name a different place ("York" / "New
     York", "Kansas" / "Kansas City"), only when the dropped tokens are geographic feature words
     ("Everest" -> "Mount Everest"). Type must match: "Madrid" (GPE) is not "Real Madrid" (ORG).
   - a single-token non-PERSON mention equal, case-sensitively, to the surname of a PERSON
     mention links to it: spaCy often labels a bare surname ORG or GPE ("Morgan" -> ORG). Only
     when the mention has no target of its own type and is not a known place or demonym
     ("Jordan", "Washington").
   A short form with targets in several chains (two people surnamed Smith) attaches to the
   closest preceding target, else to the first following one; the chains stay apart. First
   names and generic words ("City", "University", "Party", ...) attach only when all their
   targets are in one chain. Longer short forms attach first so "Obama" sees "Barack Obama"
   already joined to "Barack Hussein Obama".
4. Exact matches of the remaining mentions, whatever their labels except NORP: spaCy's small
   model labels the same name PERSON in one sentence and ORG in the next ("Olimpija Ljubljana"),
   and within one article the same name is almost always the same entity. NORP matches NORP
   only (plural "s" and an adjective's "-ic" ignored: "Democrats" / "Democratic"). Two different multi-token names never merge on a shared token
   ("New York" / "New Jersey").

Chain ids are renumbered 0.. by first appearance. Every step is O(n²) in the mention count at
worst, with n < 300 per article.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Callable, Iterable, Optional, Sequence

from transforms.record.annotation import Coreferencer, Mention

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


def _fold(word: str) -> str:
    """A token's comparison form: case-folded, without dots or hyphens ("Wal-Mart" == "Walmart")."""
    return word.replace(".", "").replace("-", "").replace("’", "'").casefold()


def _plain(word: str) -> str:
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
    return tuple(word for word in words if _fold(word))


def _key_text(text: str) -> str:
    return " ".join(_fold(word) for word in clean_words(text))


def _strip_person_affixes(words: tuple[str, ...]) -> tuple[tuple[str, ...], bool]:
    """Drop leading titles and trailing generational suffixes; also say whether a title went."""
    titled = False
    while len(words) > 1 and _fold(words[0]) in TITLES:
        words, titled = words[1:], True
    while len(words) > 1 and _fold(words[-1]) in NAME_SUFFIXES:
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
class _Form:
    """What the rules look at in one mention."""

    label: str
    words: tuple[str, ...]        # cleaned tokens (PERSON: without titles and suffixes)
    key: tuple[str, ...]          # folded `words`
    titled: bool                  # a PERSON mention that lost a title
    place: Optional[str]          # canonical place from the table (GPE/LOC alias, NORP demonym)

    @property
    def text(self) -> str:
        return " ".join(self.key)


# Honorifics that only people carry: spaCy's small model often labels "Dr Raman" ORG.
HONORIFICS = frozenset({"mr", "mrs", "ms", "miss", "dr", "sir", "dame", "prof", "professor"})


def _form(mention: Mention, places: PlaceTable) -> _Form:
    words = clean_words(mention.text)
    titled = False
    label = mention.label
    if label != PERSON and len(words) > 1 and _fold(words[0]) in HONORIFICS:
        label = PERSON
    if label == PERSON:
        words, titled = _strip_person_affixes(words)
    key = tuple(_fold(word) for word in words)
    text = " ".join(key)
    place = None
    if label in GEO:
        place = places.aliases.get(text)
    elif label == NORP:
        place = places.demonyms.get(text)
    return _Form(label, words, key, titled, place)


class _UnionFind:
    def __init__(self, size: int) -> None:
        self.parent = list(range(size))

    def find(self, item: int) -> int:
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, first: int, second: int) -> None:
        self.parent[self.find(second)] = self.find(first)


@dataclass(frozen=True)
class _Targets:
    """Longer mentions a short form may refer to."""

    indexes: tuple[int, ...]
    unique_only: bool             # attach only when all targets share one chain


def _is_name_variant(short: tuple[str, ...], full: tuple[str, ...]) -> bool:
    """`short` is `full` without middle names, or a trailing part of it of two tokens or more."""
    if full[-len(short):] == short:
        return True
    if short[0] != full[0] or short[-1] != full[-1]:
        return False
    rest = iter(full[1:-1])
    return all(token in rest for token in short[1:-1])


class _FormIndex:
    """The distinct forms of an article's mentions, where they occur, and lookups by token, so
    that a short form meets only the forms that can be its targets (each form tested once)."""

    def __init__(self, forms: Sequence[_Form]) -> None:
        self.positions: dict[_Form, list[int]] = {}
        for index, form in enumerate(forms):
            self.positions.setdefault(form, []).append(index)
        self.initials = {form: _initials(form) if form.label in PLACE_ORG else frozenset()
                         for form in self.positions}
        self._first: dict[str, list[_Form]] = {}
        self._last: dict[str, list[_Form]] = {}
        self._acronym: dict[str, list[_Form]] = {}
        self._surname: dict[str, list[_Form]] = {}
        for form in self.positions:
            if form.key:
                self._first.setdefault(form.key[0], []).append(form)
                self._last.setdefault(form.key[-1], []).append(form)
            for acronym in self.initials[form]:
                self._acronym.setdefault(acronym, []).append(form)
            if form.label == PERSON and len(form.words) > 1:
                self._surname.setdefault(_plain(form.words[-1]), []).append(form)

    def first(self, token: str) -> list[_Form]:
        """Forms whose first key token is `token`."""
        return self._first.get(token, [])

    def last(self, token: str) -> list[_Form]:
        """Forms whose last key token is `token`."""
        return self._last.get(token, [])

    def with_acronym(self, acronym: str) -> list[_Form]:
        """ORG/GPE/LOC/FAC forms whose initials spell `acronym`."""
        return self._acronym.get(acronym, [])

    def with_surname(self, surname: str) -> list[_Form]:
        """PERSON forms of two words or more ending in `surname` (case kept, dots removed)."""
        return self._surname.get(surname, [])

    def indexes(self, candidates: Iterable[_Form], keep: Callable[[_Form], bool]) -> tuple[int, ...]:
        """The mention indexes, ascending, of the candidate forms `keep` accepts."""
        return tuple(sorted({j for form in candidates if keep(form) for j in self.positions[form]}))


def _person_targets(short: _Form, index: _FormIndex) -> Optional[_Targets]:
    def full(form: _Form) -> bool:
        return form.label == PERSON and len(form.key) > len(short.key) and len(form.key) > 1

    if len(short.key) > 1:
        # A name variant ends with the short form's last token.
        variants = index.indexes(index.last(short.key[-1]),
                                 lambda f: full(f) and _is_name_variant(short.key, f.key))
        return _Targets(variants, False) if variants else None
    surnames = index.indexes(index.last(short.key[0]), full)
    if surnames:
        return _Targets(surnames, False)
    if short.titled:
        return None
    firsts = index.indexes(index.first(short.key[0]), full)
    return _Targets(firsts, True) if firsts else None


def _can_shorten(form: _Form) -> bool:
    """Whether a mention is specific enough to stand for a longer name."""
    if not form.key or len(form.text.replace(" ", "")) < 2:
        return False
    if not any(ch.isalpha() for ch in form.text) or all(t in STOPWORDS for t in form.key):
        return False
    return form.key[0] not in CONNECTORS and form.key[-1] not in CONNECTORS


def _acronym(form: _Form) -> Optional[str]:
    if len(form.words) != 1:
        return None
    letters = _plain(form.words[0])
    return letters if 2 <= len(letters) <= 8 and letters.isalpha() and letters.isupper() else None


def _initials(form: _Form) -> frozenset[str]:
    """Acronyms a multi-word name may go by, with connector words skipped or kept."""
    parts = [part for word in form.words for part in _plain(word).split("-") if part]
    content = [part for part in parts if part.casefold() not in CONNECTORS]
    if len(content) < 2 or not all(part[0].isupper() for part in content):
        return frozenset()
    return frozenset({"".join(p[0] for p in content).upper(), "".join(p[0] for p in parts).upper()})


def _is_partial(short: _Form, full: _Form) -> bool:
    """`short` is a prefix or suffix of `full`, of a compatible type."""
    size = len(short.key)
    if size >= len(full.key):
        return False
    if full.key[:size] == short.key:
        dropped = full.key[size:]
    elif full.key[-size:] == short.key:
        dropped = full.key[:-size]
    else:
        return False
    if short.label in GEO and full.label in GEO:
        return all(token in GEO_WORDS for token in dropped)
    return short.label == full.label


def _other_targets(short: _Form, index: _FormIndex, places: PlaceTable) -> Optional[_Targets]:
    if not _can_shorten(short):
        return None
    acronym = _acronym(short) if short.label in PLACE_ORG else None
    # A prefix shares the first token, a suffix the last.
    partial = ([*index.first(short.key[0]), *index.last(short.key[-1])]
               if short.label in PARTIAL_LABELS else [])
    own = index.indexes([*partial, *(index.with_acronym(acronym) if acronym else ())],
                        lambda f: (short.label in PARTIAL_LABELS and _is_partial(short, f))
                        or (acronym is not None and f.label in PLACE_ORG and acronym in index.initials[f]))
    if own:
        return _Targets(own, len(short.key) == 1 and short.key[0] in GENERIC)
    if len(short.words) != 1 or places.known(short.text):
        return None
    people = index.indexes(index.with_surname(_plain(short.words[0])), lambda f: True)
    return _Targets(people, False) if people else None


def _targets(form: _Form, index: _FormIndex, places: PlaceTable) -> Optional[_Targets]:
    """The longer mentions `form` may stand for; they depend on the form alone."""
    if not form.key or form.place is not None:
        return None
    if form.label == PERSON:
        return _person_targets(form, index)
    return _other_targets(form, index, places)


def _choose(index: int, targets: _Targets, chains: _UnionFind) -> Optional[int]:
    """The target a short form attaches to: closest preceding, else first following."""
    if targets.unique_only and len({chains.find(j) for j in targets.indexes}) > 1:
        return None
    before = [j for j in targets.indexes if j < index]
    return max(before) if before else min(targets.indexes)


def _demonym_stem(key: str) -> Optional[str]:
    """The place a demonym missing from the table suggests: "cascadians" -> "cascadia"."""
    word = key[:-1] if key.endswith("ns") else key
    return word[:-1] if word.endswith("an") and len(word) > 4 else None


def _link_places(forms: Sequence[_Form], places: PlaceTable, chains: _UnionFind) -> None:
    by_place: dict[str, int] = {}
    by_text: dict[str, int] = {}
    for index, form in enumerate(forms):
        if form.place is not None:
            chains.union(by_place.setdefault(form.place, index), index)
        elif form.label in GEO and form.key:
            by_text.setdefault(form.text, index)
    for index, form in enumerate(forms):
        if form.label == NORP and form.place is None:
            stem = _demonym_stem(form.text)
            if stem is None:
                continue
            target = by_text.get(stem, by_place.get(places.aliases.get(stem, "")))
            if target is not None:
                chains.union(target, index)


def _exact_key(form: _Form) -> Optional[tuple[str, str]]:
    if not form.key:
        return None
    if form.label == NORP:
        text = form.text
        plural = text.endswith("s") and not text.endswith("ss") and len(text) > 3
        text = text[:-1] if plural else text
        # The adjective and the noun of a group: "Democratic" / "Democrats", "Arabic" / "Arabs".
        return NORP, text[:-2] if text.endswith("ic") and len(text) > 5 else text
    return "NAME", form.text


def _link_exact(indexes: Iterable[int], forms: Sequence[_Form], chains: _UnionFind) -> None:
    first: dict[tuple[str, str], int] = {}
    for index in indexes:
        key = _exact_key(forms[index])
        if key is not None:
            chains.union(first.setdefault(key, index), index)


def _renumber(chains: _UnionFind, size: int) -> list[int]:
    ids: dict[int, int] = {}
    return [ids.setdefault(chains.find(index), len(ids)) for index in range(size)]


def _acronym_any_label(form: _Form, index: _FormIndex) -> Optional[_Targets]:
    """Targets of an acronym whatever its own label (rule `acronyms_any_label`)."""
    acronym = _acronym(form) if form.label not in PLACE_ORG else None
    if acronym is None or form.place is not None:
        return None
    own = index.indexes(index.with_acronym(acronym),
                        lambda f: f.label in PLACE_ORG and acronym in index.initials[f])
    return _Targets(own, False) if own else None


def _clipped_name(form: _Form, index: _FormIndex) -> Optional[_Targets]:
    """Targets of a name whose last word is clipped (rule `clipped_names`): the leading words of
    a longer ORG/GPE/LOC/FAC name, the last one cut by three letters or more to a prefix of
    three or more ("West Brom" -> "West Bromwich Albion"; "Air Force" is not "Air Forces"),
    whatever the two labels."""
    if form.label not in PLACE_ORG or len(form.key) < 2 or form.place is not None:
        return None
    head, last = form.key[:-1], form.key[-1]
    if len(last) < 3 or not _can_shorten(form):
        return None
    size = len(form.key)

    def clipped(full: _Form) -> bool:
        return (full.label in PLACE_ORG and len(full.key) >= size and full.key[:size - 1] == head
                and len(full.key[size - 1]) >= len(last) + 3 and full.key[size - 1].startswith(last))

    found = index.indexes(index.first(form.key[0]), clipped)
    return _Targets(found, False) if found else None


def _partial_case_differs(short: _Form, full: _Form) -> bool:
    """Veto of rule `partial_names_same_case`: a non-PERSON short form that is a leading or
    trailing part of `full` only case-insensitively ("CNN Student News" in the transcript
    caption "CNN STUDENT NEWS ANCHOR") does not stand for it."""
    size = len(short.key)
    if short.label == PERSON or size >= len(full.key):
        return False
    words = tuple(_plain(word) for word in short.words)
    for key, full_words in ((full.key[:size], full.words[:size]), (full.key[-size:], full.words[-size:])):
        if key == short.key:
            return tuple(_plain(word) for word in full_words) != words
    return False


TargetRule = Callable[[_Form, _FormIndex], Optional[_Targets]]
LinkVeto = Callable[[_Form, _Form], bool]

# Optional rules (spec `coref.rules`). Target rules are tried before the base rules of the
# mention's label; a veto removes a target (short form, target form) the rules found.
TARGET_RULES: dict[str, TargetRule] = {
    "acronyms_any_label": _acronym_any_label,
    "clipped_names": _clipped_name,
}
LINK_VETOES: dict[str, LinkVeto] = {
    "partial_names_same_case": _partial_case_differs,
}
COREF_RULES: dict[str, Callable[..., object]] = {**TARGET_RULES, **LINK_VETOES}


def _allowed(form: _Form, targets: Optional[_Targets], forms: Sequence[_Form],
             vetoes: Sequence[LinkVeto]) -> Optional[_Targets]:
    """`targets` without those a veto rejects for `form`; None when none is left."""
    if targets is None or not vetoes:
        return targets
    kept = tuple(j for j in targets.indexes if not any(veto(form, forms[j]) for veto in vetoes))
    return _Targets(kept, targets.unique_only) if kept else None


class RuleCoreferencer:
    """Deterministic coreference of named-entity mentions by string rules (see module docs);
    `rules` names optional rules of `COREF_RULES`."""

    def __init__(self, places: Optional[PlaceTable] = None, rules: Sequence[str] = ()) -> None:
        self.places = places if places is not None else load_place_table()
        unknown = sorted(set(rules) - set(COREF_RULES))
        if unknown:
            raise ValueError(f"unknown coreference rules {unknown}; known: {sorted(COREF_RULES)}")
        self.rules = tuple(TARGET_RULES[name] for name in TARGET_RULES if name in rules)
        self.vetoes = tuple(LINK_VETOES[name] for name in LINK_VETOES if name in rules)

    def resolve(self, mentions: Sequence[Mention]) -> list[int]:
        """Chain id per mention; ids are 0.. in order of first appearance."""
        made: dict[tuple[str, str], _Form] = {}
        forms = []
        for mention in mentions:
            key = (mention.text, mention.label)
            if key not in made:
                made[key] = _form(mention, self.places)
            forms.append(made[key])
        chains = _UnionFind(len(forms))
        _link_places(forms, self.places, chains)
        # Targets depend on forms alone: each distinct form is looked at once, whatever its count.
        form_index = _FormIndex(forms)
        shorts: dict[int, _Targets] = {}
        for form, at in form_index.positions.items():
            targets = next((found for rule in self.rules if (found := rule(form, form_index))), None)
            if targets is None:
                targets = _targets(form, form_index, self.places)
            targets = _allowed(form, targets, forms, self.vetoes)
            if targets is not None:
                for index in at:
                    shorts[index] = targets
        anchors = [index for index in range(len(forms)) if index not in shorts]
        _link_exact(anchors, forms, chains)
        unattached = []
        for index in sorted(shorts, key=lambda i: (-len(forms[i].key), i)):
            target = _choose(index, shorts[index], chains)
            if target is None:
                unattached.append(index)
            else:
                chains.union(target, index)
        _link_exact(sorted(anchors + unattached), forms, chains)
        return _renumber(chains, len(forms))


COREFERENCERS: dict[str, Callable[..., Coreferencer]] = {"rules": RuleCoreferencer}


def make_coreferencer(name: str, rules: Sequence[str] = ()) -> Coreferencer:
    """The coreferencer registered under `name`, with the optional `rules` (spec `coref.rules`);
    ValueError lists the known names otherwise."""
    try:
        factory = COREFERENCERS[name]
    except KeyError:
        known = ", ".join(sorted(COREFERENCERS))
        raise ValueError(f"unknown coreferencer {name!r}; known: {known}") from None
    return factory(rules=tuple(rules))
