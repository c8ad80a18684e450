"""Every filter keeps what it should and names its reason for what it rejects."""
from filters import KEEP
from filters import record as passage
from filters import record as sentence
from filters.text import count_tokens, ngrams, tokenize, word_ngrams


def test_tokenize_words_and_punctuation():
    assert tokenize("Don't stop, well-known U.S. star!") == [
        "Don't", "stop", ",", "well-known", "U", ".", "S", ".", "star", "!"]
    assert count_tokens("Two words.") == 3


def test_ngrams_are_lowercased():
    assert ngrams(["The", "Big", "Dog"], 2) == {("the", "big"), ("big", "dog")}


def test_passage_min_body_tokens():
    assert passage.min_body_tokens(100, 100) is KEEP
    assert passage.min_body_tokens(99, 100) == "passage_too_short"


def test_passage_min_distinct_entities_counts_chains():
    assert passage.min_distinct_entities([0, 1, 2, 3], 4) is KEEP
    assert passage.min_distinct_entities([0, 0, 1, 2, 2, 2], 4) == "too_few_entities"


def test_sentence_min_tokens():
    assert sentence.min_tokens(["a"] * 10, 10) is KEEP
    assert sentence.min_tokens(["a"] * 9, 10) == "too_short"


def test_sentence_not_question():
    assert sentence.not_question("He asked where Paris was.") is KEEP
    assert sentence.not_question("Where is Paris?") == "question"
    assert sentence.not_question("'Where is Paris?' ") == "question"
    assert sentence.not_question("He said: “Why not?”") == "question"


def test_word_ngrams_skip_punctuation():
    assert word_ngrams("Cyrus, followed by Amy.", 3) == {("cyrus", "followed", "by"),
                                                        ("followed", "by", "amy")}


def test_sentence_no_shared_ngram():
    passage_grams = word_ngrams("The mayor of Springfield opened a bridge, followed by a parade.", 3)
    assert sentence.no_shared_ngram("The Mayor of Shelbyville came too.", passage_grams, 3) \
        == "shares_ngram"
    assert sentence.no_shared_ngram("Mayor Quimby of Springfield came too.", passage_grams, 3) is KEEP
    # Shared punctuated trigrams (", followed by") do not count; word trigrams do.
    assert sentence.no_shared_ngram("It rained, followed by snow in Ohio.", passage_grams, 3) is KEEP


def test_sentence_min_entities():
    assert sentence.min_entities([3], 1) is KEEP
    assert sentence.min_entities([], 1) == "no_entity"


def test_sentence_entities_in_passage():
    assert sentence.entities_in_passage([1, 2], {1, 2, 5}) is KEEP
    assert sentence.entities_in_passage([1, 7], {1, 2, 5}) == "entity_not_in_passage"
