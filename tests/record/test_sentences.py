"""The CoreNLP-like sentence splitter (`annotator.sentences: corenlp`), on hand-written news text."""
import pytest

from transforms.record.annotate.sentences import corenlp_sentences


def split(text: str) -> list[str]:
    return [text[a:b] for a, b in corenlp_sentences(text)]


@pytest.mark.parametrize("text, sentences", [
    # A plain boundary; whitespace around sentences is not part of them.
    ("The mayor spoke. Then she left.  ", ["The mayor spoke.", "Then she left."]),
    # Quoted speech stays together across inner "!" and "?" and an ellipsis.
    ('"We must wait ... the town needs a rest!" the mayor said. Nobody moved.',
     ['"We must wait ... the town needs a rest!" the mayor said.', "Nobody moved."]),
    ('"Stop! Go home," the officer said. They went.',
     ['"Stop! Go home," the officer said.', "They went."]),
    ('"Why now?" she asked. He shrugged.', ['"Why now?" she asked.', "He shrugged."]),
    # Brackets: nothing inside them ends a sentence.
    ("'I gave her [Ada. Lee] a kiss,' he said. It was late.",
     ["'I gave her [Ada. Lee] a kiss,' he said.", "It was late."]),
    ("He won (again! Finally.) on Sunday. Fans cheered.",
     ["He won (again! Finally.) on Sunday.", "Fans cheered."]),
    # A mark before the closing bracket ends the sentence when a capitalised word follows.
    ("(The firm denies it.) Shares fell. (Or rose!) Who knows.",
     ["(The firm denies it.)", "Shares fell.", "(Or rose!)", "Who knows."]),
    # A bracket that never closes on its line holds no boundary.
    ("He said (no. She left.\nThen rain.", ["He said (no.", "She left.", "Then rain."]),
    # Ellipses are not boundaries, whatever follows.
    ("She waited... Nothing came. Then rain.", ["She waited... Nothing came.", "Then rain."]),
    ("She waited … Nothing came.", ["She waited … Nothing came."]),
    # Abbreviations and initials.
    ("Mr. Lee met Dr. Roe on Jan. 5 in St. Ives. They talked.",
     ["Mr. Lee met Dr. Roe on Jan. 5 in St. Ives.", "They talked."]),
    ("J. K. Rowling spoke to U.S. officials. They listened.",
     ["J. K. Rowling spoke to U.S. officials.", "They listened."]),
    # A dotted acronym ends a sentence when a usual sentence opener follows.
    ("The firm moved to the U.S. The move cost millions.",
     ["The firm moved to the U.S.", "The move cost millions."]),
    ("Friends, check-ins, etc. If you see one, wave. Acme Inc. said so.",
     ["Friends, check-ins, etc.", "If you see one, wave.", "Acme Inc. said so."]),
    # A closing quote or bracket after the mark belongs to the sentence it closes.
    ("He said: \u201cIt is over.\u201d Then he left.", ["He said: \u201cIt is over.\u201d", "Then he left."]),
    # No gap after the mark: no boundary ("3.5", "Yahoo!'s").
    ("Growth was 3.5 per cent at Yahoo!'s unit. Shares fell.",
     ["Growth was 3.5 per cent at Yahoo!'s unit.", "Shares fell."]),
    # A period before a lower-case word still ends a sentence (CoreNLP ignores case after ".").
    ("It ended. and then it began again.", ["It ended.", "and then it began again."]),
    # Line breaks end sentences.
    ("First line without a stop\nSecond line.", ["First line without a stop", "Second line."]),
])
def test_corenlp_sentences(text, sentences):
    assert split(text) == sentences


def test_spans_index_the_original_text():
    text = "  One here.   Two there!  "
    assert corenlp_sentences(text) == [(2, 11), (14, 24)]
