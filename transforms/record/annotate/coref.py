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

from typing import Callable, Iterable, Optional, Sequence

from transforms.record.annotate.coref_forms import (
    GEO,
    NORP,
    MentionForm,
    PlaceTable,
    load_place_table,
    mention_form,
)
from transforms.record.annotate.coref_targets import (
    LINK_VETOES,
    TARGET_RULES,
    FormIndex,
    LinkVeto,
    Targets,
    find_targets,
)
from transforms.record.annotation import Coreferencer, Mention


class _UnionFind:
    """The chains: disjoint sets of mention indexes."""

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


def _choose(index: int, targets: Targets, chains: _UnionFind) -> Optional[int]:
    """The target a short form attaches to: closest preceding, else first following."""
    if targets.unique_only and len({chains.find(j) for j in targets.indexes}) > 1:
        return None
    before = [j for j in targets.indexes if j < index]
    return max(before) if before else min(targets.indexes)


def _demonym_stem(key: str) -> Optional[str]:
    """The place a demonym missing from the table suggests: "cascadians" -> "cascadia"."""
    word = key[:-1] if key.endswith("ns") else key
    return word[:-1] if word.endswith("an") and len(word) > 4 else None


def _link_places(forms: Sequence[MentionForm], places: PlaceTable, chains: _UnionFind) -> None:
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


def _exact_key(form: MentionForm) -> Optional[tuple[str, str]]:
    if not form.key:
        return None
    if form.label == NORP:
        text = form.text
        plural = text.endswith("s") and not text.endswith("ss") and len(text) > 3
        text = text[:-1] if plural else text
        # The adjective and the noun of a group: "Democratic" / "Democrats", "Arabic" / "Arabs".
        return NORP, text[:-2] if text.endswith("ic") and len(text) > 5 else text
    return "NAME", form.text


def _link_exact(indexes: Iterable[int], forms: Sequence[MentionForm], chains: _UnionFind) -> None:
    first: dict[tuple[str, str], int] = {}
    for index in indexes:
        key = _exact_key(forms[index])
        if key is not None:
            chains.union(first.setdefault(key, index), index)


def _renumber(chains: _UnionFind, size: int) -> list[int]:
    ids: dict[int, int] = {}
    return [ids.setdefault(chains.find(index), len(ids)) for index in range(size)]


# Every optional rule of spec `coref.rules`: the target rules and the vetoes of `coref_targets`.
COREF_RULES: dict[str, Callable[..., object]] = {**TARGET_RULES, **LINK_VETOES}


def _allowed(form: MentionForm, targets: Optional[Targets], forms: Sequence[MentionForm],
             vetoes: Sequence[LinkVeto]) -> Optional[Targets]:
    """`targets` without those a veto rejects for `form`; None when none is left."""
    if targets is None or not vetoes:
        return targets
    kept = tuple(j for j in targets.indexes if not any(veto(form, forms[j]) for veto in vetoes))
    return Targets(kept, targets.unique_only) if kept else None


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
        made: dict[tuple[str, str], MentionForm] = {}
        forms = []
        for mention in mentions:
            key = (mention.text, mention.label)
            if key not in made:
                made[key] = mention_form(mention, self.places)
            forms.append(made[key])
        chains = _UnionFind(len(forms))
        _link_places(forms, self.places, chains)
        # Targets depend on forms alone: each distinct form is looked at once, whatever its count.
        form_index = FormIndex(forms)
        shorts: dict[int, Targets] = {}
        for form, at in form_index.positions.items():
            targets = next((found for rule in self.rules if (found := rule(form, form_index))), None)
            if targets is None:
                targets = find_targets(form, form_index, self.places)
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
