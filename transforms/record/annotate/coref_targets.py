"""The longer mentions a short form may stand for (step 3 of `transforms.record.annotate.coref`):
a PERSON's surname, name variant or first name; acronyms, partial names and bare surnames of the
other labels; and the optional rules of spec `coref.rules` (extra targets, vetoes of links).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence

from transforms.record.annotate.coref_forms import (
    CONNECTORS,
    GENERIC,
    GEO,
    GEO_WORDS,
    PARTIAL_LABELS,
    PERSON,
    PLACE_ORG,
    STOPWORDS,
    MentionForm,
    PlaceTable,
    plain_word,
)


@dataclass(frozen=True)
class Targets:
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


class FormIndex:
    """The distinct forms of an article's mentions, where they occur, and lookups by token, so
    that a short form meets only the forms that can be its targets (each form tested once)."""

    def __init__(self, forms: Sequence[MentionForm]) -> None:
        self.positions: dict[MentionForm, list[int]] = {}
        for index, form in enumerate(forms):
            self.positions.setdefault(form, []).append(index)
        self.initials = {form: _initials(form) if form.label in PLACE_ORG else frozenset()
                         for form in self.positions}
        self._first: dict[str, list[MentionForm]] = {}
        self._last: dict[str, list[MentionForm]] = {}
        self._acronym: dict[str, list[MentionForm]] = {}
        self._surname: dict[str, list[MentionForm]] = {}
        for form in self.positions:
            if form.key:
                self._first.setdefault(form.key[0], []).append(form)
                self._last.setdefault(form.key[-1], []).append(form)
            for acronym in self.initials[form]:
                self._acronym.setdefault(acronym, []).append(form)
            if form.label == PERSON and len(form.words) > 1:
                self._surname.setdefault(plain_word(form.words[-1]), []).append(form)

    def first(self, token: str) -> list[MentionForm]:
        """Forms whose first key token is `token`."""
        return self._first.get(token, [])

    def last(self, token: str) -> list[MentionForm]:
        """Forms whose last key token is `token`."""
        return self._last.get(token, [])

    def with_acronym(self, acronym: str) -> list[MentionForm]:
        """ORG/GPE/LOC/FAC forms whose initials spell `acronym`."""
        return self._acronym.get(acronym, [])

    def with_surname(self, surname: str) -> list[MentionForm]:
        """PERSON forms of two words or more ending in `surname` (case kept, dots removed)."""
        return self._surname.get(surname, [])

    def indexes(self, candidates: Iterable[MentionForm], keep: Callable[[MentionForm], bool]) -> tuple[int, ...]:
        """The mention indexes, ascending, of the candidate forms `keep` accepts."""
        return tuple(sorted({j for form in candidates if keep(form) for j in self.positions[form]}))


def _person_targets(short: MentionForm, index: FormIndex) -> Optional[Targets]:
    def full(form: MentionForm) -> bool:
        return form.label == PERSON and len(form.key) > len(short.key) and len(form.key) > 1

    if len(short.key) > 1:
        # A name variant ends with the short form's last token.
        variants = index.indexes(index.last(short.key[-1]),
                                 lambda f: full(f) and _is_name_variant(short.key, f.key))
        return Targets(variants, False) if variants else None
    surnames = index.indexes(index.last(short.key[0]), full)
    if surnames:
        return Targets(surnames, False)
    if short.titled:
        return None
    firsts = index.indexes(index.first(short.key[0]), full)
    return Targets(firsts, True) if firsts else None


def _can_shorten(form: MentionForm) -> bool:
    """Whether a mention is specific enough to stand for a longer name."""
    if not form.key or len(form.text.replace(" ", "")) < 2:
        return False
    if not any(ch.isalpha() for ch in form.text) or all(t in STOPWORDS for t in form.key):
        return False
    return form.key[0] not in CONNECTORS and form.key[-1] not in CONNECTORS


def _acronym(form: MentionForm) -> Optional[str]:
    if len(form.words) != 1:
        return None
    letters = plain_word(form.words[0])
    return letters if 2 <= len(letters) <= 8 and letters.isalpha() and letters.isupper() else None


def _initials(form: MentionForm) -> frozenset[str]:
    """Acronyms a multi-word name may go by, with connector words skipped or kept."""
    parts = [part for word in form.words for part in plain_word(word).split("-") if part]
    content = [part for part in parts if part.casefold() not in CONNECTORS]
    if len(content) < 2 or not all(part[0].isupper() for part in content):
        return frozenset()
    return frozenset({"".join(p[0] for p in content).upper(), "".join(p[0] for p in parts).upper()})


def _is_partial(short: MentionForm, full: MentionForm) -> bool:
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


def _other_targets(short: MentionForm, index: FormIndex, places: PlaceTable) -> Optional[Targets]:
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
        return Targets(own, len(short.key) == 1 and short.key[0] in GENERIC)
    if len(short.words) != 1 or places.known(short.text):
        return None
    people = index.indexes(index.with_surname(plain_word(short.words[0])), lambda f: True)
    return Targets(people, False) if people else None


def find_targets(form: MentionForm, index: FormIndex, places: PlaceTable) -> Optional[Targets]:
    """The longer mentions `form` may stand for; they depend on the form alone."""
    if not form.key or form.place is not None:
        return None
    if form.label == PERSON:
        return _person_targets(form, index)
    return _other_targets(form, index, places)


def _acronym_any_label(form: MentionForm, index: FormIndex) -> Optional[Targets]:
    """Targets of an acronym whatever its own label (rule `acronyms_any_label`)."""
    acronym = _acronym(form) if form.label not in PLACE_ORG else None
    if acronym is None or form.place is not None:
        return None
    own = index.indexes(index.with_acronym(acronym),
                        lambda f: f.label in PLACE_ORG and acronym in index.initials[f])
    return Targets(own, False) if own else None


def _clipped_name(form: MentionForm, index: FormIndex) -> Optional[Targets]:
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

    def clipped(full: MentionForm) -> bool:
        return (full.label in PLACE_ORG and len(full.key) >= size and full.key[:size - 1] == head
                and len(full.key[size - 1]) >= len(last) + 3 and full.key[size - 1].startswith(last))

    found = index.indexes(index.first(form.key[0]), clipped)
    return Targets(found, False) if found else None


def _partial_case_differs(short: MentionForm, full: MentionForm) -> bool:
    """Veto of rule `partial_names_same_case`: a non-PERSON short form that is a leading or
    trailing part of `full` only case-insensitively ("CNN Student News" in the transcript
    caption "CNN STUDENT NEWS ANCHOR") does not stand for it."""
    size = len(short.key)
    if short.label == PERSON or size >= len(full.key):
        return False
    words = tuple(plain_word(word) for word in short.words)
    for key, full_words in ((full.key[:size], full.words[:size]), (full.key[-size:], full.words[-size:])):
        if key == short.key:
            return tuple(plain_word(word) for word in full_words) != words
    return False


TargetRule = Callable[[MentionForm, FormIndex], Optional[Targets]]
LinkVeto = Callable[[MentionForm, MentionForm], bool]

# Optional rules (spec `coref.rules`). Target rules are tried before the base rules of the
# mention's label; a veto removes a target (short form, target form) the rules found.
TARGET_RULES: dict[str, TargetRule] = {
    "acronyms_any_label": _acronym_any_label,
    "clipped_names": _clipped_name,
}
LINK_VETOES: dict[str, LinkVeto] = {
    "partial_names_same_case": _partial_case_differs,
}
