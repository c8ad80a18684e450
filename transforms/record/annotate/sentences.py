"""A rule-based sentence splitter that cuts news text where Stanford CoreNLP's splitter does.

ReCoRD's authors split articles with CoreNLP (`ssplit` over PTB tokens), whose boundaries are a
`.`, `!` or `?` token, with closing quotes and brackets attached to the sentence they close.
spaCy's statistical `senter` also cuts inside quotations, at brackets and at ellipses
(`'I gave her [Ava] a kiss ...`), so sentences the release kept whole come out in pieces.
`corenlp_sentences` needs no model and no download; it reads the text alone:

* a sentence ends after a run of `.`, `!`, `?` followed by whitespace (closing quotes and
  brackets after the run belong to the sentence); after `!` or `?` only when the next word
  does not start with a lower-case letter (`"Help!" he said` stays one sentence);
* an ellipsis (`...`, `. . .`, `…`) never ends a sentence: CoreNLP tokenises it as one token that
  is not a boundary;
* inside an open double quotation, `!` and `?` do not end a sentence unless the quotation closes
  right after them and a new sentence begins (`"Stop! Go away," he said.` is one sentence);
* inside brackets (`[Ava]`, `(...)`, closed later on the line) nothing ends a sentence; a mark right before the closing
  bracket does when a capitalised word follows (`(... inversion.) Walgreen said`);
* a `.` ending an abbreviation (titles `Mr.`, `Dr.`, `Sen.`; months `Jan.`; `St.`, `No.`,
  `vs.`; single initials `J.`; dotted acronyms `U.S.`, `U.N.`) does not end a sentence, except a
  dotted acronym or `etc.`, `Inc.`, `Jr.` ... followed by a word that usually starts sentences
  (`in the U.S. The ...`).

Line breaks always end a sentence, as CoreNLP's `newlineIsSentenceBreak=two` does for blank
lines (a unit here is one paragraph or one highlight, so inner newlines are rare).
"""
from __future__ import annotations

import re

# Bumped whenever a rule below changes where a sentence ends: stored annotations made by
# `record annotate` with other rules are then annotated again instead of reused.
RULES_VERSION = 1

# Abbreviations whose final "." is not a sentence end (compared without the dot, case kept).
ABBREVIATIONS = frozenset({
    "Mr", "Mrs", "Ms", "Mx", "Dr", "Prof", "Sr", "Jr", "St", "Sen", "Rep", "Reps", "Gov", "Gen",
    "Lt", "Col", "Capt", "Sgt", "Cpl", "Maj", "Adm", "Cmdr", "Insp", "Det", "Supt", "Rev", "Fr",
    "Hon", "Pres", "Sens", "Messrs", "Mme", "Mlle", "Jan", "Feb", "Mar", "Apr", "Aug", "Sep",
    "Sept", "Oct", "Nov", "Dec", "No", "Nos", "vs", "v", "etc", "approx", "Inc", "Corp", "Ltd",
    "Co", "Bros", "Mt", "Ft", "Ave", "Blvd", "Rd", "Univ", "Dept", "Est", "Ph", "al", "cf",
    "e.g", "i.e", "a.m", "p.m", "Calif", "Fla", "Ga", "Ill", "Mass", "Mich", "Minn", "Pa", "Va",
    "Wash", "Tex", "Ariz", "Colo", "Conn", "Ky", "La", "Md", "Mo", "Nev", "Okla", "Ore", "Tenn",
    "Wis", "Ala", "Ark", "Del", "Kan", "Neb",
})
# Abbreviations that often end a sentence, like dotted acronyms ("... and so on, etc. The ...").
FINAL_ABBREVIATIONS = frozenset({"etc", "Inc", "Corp", "Ltd", "Co", "Jr", "Sr", "Bros"})
# Words that open a sentence after a dotted acronym ("... in the U.S. The plan ...").
SENTENCE_STARTERS = frozenset({
    "The", "A", "An", "It", "He", "She", "They", "We", "I", "But", "And", "In", "This", "That",
    "There", "His", "Her", "Their", "Its", "Our", "If", "When", "While", "After", "Before", "As",
    "At", "On", "For", "Now", "Then", "So", "Yet", "However", "Still", "Some", "Many", "Most",
})

_END = re.compile(r"[.!?]+|…")
_CLOSERS = "\"'”’»)]}"
_OPEN_BRACKETS = {"(": ")", "[": "]", "{": "}"}
_ACRONYM = re.compile(r"(?:[A-Za-z]\.){2,}$")
_WORD_BEFORE = re.compile(r"([\w.]+)$")
_NEXT_WORD = re.compile(r"\S+")


def _is_abbreviation(text: str, dot: int) -> bool:
    """Whether the "." at `dot` ends an abbreviation (and so, by itself, no sentence)."""
    match = _WORD_BEFORE.search(text, 0, dot + 1)
    if match is None:
        return False
    word = match.group(1)
    bare = word[:-1]
    if bare in ABBREVIATIONS or bare.rstrip(".") in ABBREVIATIONS:
        return True
    if len(bare) == 1 and bare.isupper():   # an initial: "J. K. Rowling"
        return True
    return bool(_ACRONYM.search(word))


def _quote_state(text: str, start: int, end: int, open_quote: bool) -> bool:
    """The double-quotation state after `text[start:end]`, starting from `open_quote`."""
    for ch in text[start:end]:
        if ch == "“":
            open_quote = True
        elif ch == "”":
            open_quote = False
        elif ch == '"':
            open_quote = not open_quote
    return open_quote


def corenlp_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans (start, end) of `text`, whitespace stripped, cut by the module's rules."""
    spans: list[tuple[int, int]] = []
    for start, end in _lines(text):
        spans.extend(_split_line(text, start, end))
    return spans


def _lines(text: str) -> list[tuple[int, int]]:
    lines = []
    at = 0
    for piece in text.split("\n"):
        lines.append((at, at + len(piece)))
        at += len(piece) + 1
    return lines


def _split_line(text: str, start: int, end: int) -> list[tuple[int, int]]:
    cuts = [start]
    depth: list[str] = []
    quoted = False
    scanned = start
    i = start
    while i < end:
        ch = text[i]
        if ch in _OPEN_BRACKETS and text.find(_OPEN_BRACKETS[ch], i + 1, end) != -1:
            depth.append(_OPEN_BRACKETS[ch])   # a bracket never closed on the line holds nothing
        elif depth and ch == depth[-1]:
            depth.pop()
        match = _END.match(text, i, end) if ch in ".!?…" else None
        if match is None:
            i += 1
            continue
        quoted = _quote_state(text, scanned, i, quoted)
        scanned = i
        run_end = match.end()
        after = run_end
        open_after = list(depth)
        while after < end and text[after] in _CLOSERS:
            if open_after and text[after] == open_after[-1]:
                open_after.pop()
            after += 1
        closes_quote = _quote_state(text, run_end, after, quoted) != quoted and quoted
        closed = len(open_after) < len(depth)
        if _boundary(text, i, run_end, after, end, open_after, quoted, closes_quote, closed):
            cuts.append(after)
            quoted = _quote_state(text, scanned, after, quoted)
            scanned = after
            depth = []
        i = max(run_end, i + 1)
    cuts.append(end)
    spans = []
    for a, b in zip(cuts, cuts[1:]):
        piece = text[a:b]
        stripped = piece.strip()
        if stripped:
            lead = a + len(piece) - len(piece.lstrip())
            spans.append((lead, lead + len(stripped)))
    return spans


def _boundary(text: str, at: int, run_end: int, after: int, end: int, depth: list[str],
              quoted: bool, closes_quote: bool, closed: bool = False) -> bool:
    """Whether the punctuation run text[at:run_end] (closers up to `after`) ends a sentence;
    `depth` are the brackets still open after the closers, `closed` whether they closed one."""
    run = text[at:run_end]
    if after >= end or not text[after].isspace():
        return False                      # "U.S.-based", "3.5", "Yahoo!'s": no gap, no end
    following = _NEXT_WORD.search(text, after, end)
    if following is None:
        return False
    nxt = following.group(0)
    if run in ("...", "…") or (len(run) >= 3 and set(run) == {"."}):
        return False                      # an ellipsis is not a boundary token
    if nxt[0] in ",;:" or (nxt[0].islower() and (run != "." or closed)):
        return False                      # "Help!" he said / (a remark.) and then: goes on
    if depth:
        return False                      # inside brackets: [Ava], (...)
    if quoted and not closes_quote and set(run) <= set("!?"):
        return False                      # "We must ... the nation needs a catharsis!" stays
    if run == "." and _is_abbreviation(text, at):
        word = _WORD_BEFORE.search(text, 0, at + 1)
        final = word is not None and (_ACRONYM.search(word.group(1)) is not None
                                      or word.group(1)[:-1] in FINAL_ABBREVIATIONS)
        return final and nxt.strip("\"'“‘") in SENTENCE_STARTERS
    return True
