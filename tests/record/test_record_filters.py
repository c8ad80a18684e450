"""Every filter keeps what it should and names its reason for what it rejects."""
import pytest

from filters import KEEP
from filters import record as passage
from filters import record as sentence
from filters.text import count_tokens, tokenize, word_ngrams


def test_tokenize_words_and_punctuation():
    assert tokenize("Don't stop, well-known U.S. star!") == [
        "Don't", "stop", ",", "well-known", "U", ".", "S", ".", "star", "!"]
    assert count_tokens("Two words.") == 3


def test_word_ngrams_are_lowercased():
    assert word_ngrams("The Big Dog", 2) == {("the", "big"), ("big", "dog")}


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
    # The default spec rule, `final`: only a sentence whose last character is "?".
    assert sentence.not_question("Where is Paris?", "final") == "question"
    assert sentence.not_question("Where is Paris? ", "final") == "question"
    assert sentence.not_question("He said: “Why not?”", "final") is KEEP
    assert sentence.not_question('"Why not?" he asked, and left.', "final") is KEEP
    # `final_quoted`: closing quotes and brackets after the "?" aside.
    assert sentence.not_question("He asked where Paris was.", "final_quoted") is KEEP
    assert sentence.not_question("Where is Paris?", "final_quoted") == "question"
    assert sentence.not_question("'Where is Paris?' ", "final_quoted") == "question"
    assert sentence.not_question("He said: “Why not?”", "final_quoted") == "question"
    assert sentence.not_question('"Why not?" he asked, and left.', "final_quoted") is KEEP
    # `any`: a "?" anywhere.
    assert sentence.not_question('"Why not?" he asked, and left.', "any") == "question"
    assert sentence.not_question("He asked where Paris was.", "any") is KEEP
    with pytest.raises(ValueError, match="question rule"):
        sentence.not_question("Why?", "sometimes")


def test_the_spec_default_question_rule_is_final():
    from data_specs import load_spec

    assert load_spec("record").query.question_rule == "final"


def test_word_ngrams_skip_punctuation():
    assert word_ngrams("Cyrus, followed by Amy.", 3) == {("cyrus", "followed", "by"),
                                                        ("followed", "by", "amy")}


def test_word_ngrams_are_of_the_tokenizers_words_and_never_span_a_gap():
    text = "Don't stop: well-known Café_2 opens—O’Neil said."
    # tokenize: Don't | stop | : | well-known | Café_2 | opens | — | O’Neil | said | .
    assert word_ngrams(text, 2) == {("don't", "stop"), ("stop", "well-known"), ("well-known", "café_2"),
                                    ("café_2", "opens"), ("opens", "o’neil"), ("o’neil", "said")}
    cafe = text.index("Café_2")
    assert word_ngrams(text, 2, gaps=[(cafe, cafe + len("Café_2"))]) == {
        ("don't", "stop"), ("stop", "well-known"), ("opens", "o’neil"), ("o’neil", "said")}
    assert word_ngrams(text, 2, stopwords={"stop", "said"}) == {
        ("don't", "well-known"), ("well-known", "café_2"), ("café_2", "opens"), ("opens", "o’neil")}
    assert word_ngrams(text, 1) == {(t.lower(),) for t in tokenize(text) if t[0].isalnum() or t[0] == "_"}
    assert word_ngrams("Too short", 3) == set()


def test_sentence_no_shared_ngram():
    passage_grams = word_ngrams("The mayor of Springfield opened a bridge, followed by a parade.", 3)
    assert sentence.no_shared_ngram("The Mayor of Shelbyville came too.", passage_grams, 3) \
        == "shares_ngram"
    assert sentence.no_shared_ngram("Mayor Quimby of Springfield came too.", passage_grams, 3) is KEEP
    # Shared punctuated trigrams (", followed by") do not count; word trigrams do.
    assert sentence.no_shared_ngram("It rained, followed by snow in Ohio.", passage_grams, 3) is KEEP


def test_sentence_no_shared_ngram_of_content_words():
    stop = frozenset({"the", "of", "a", "her", "by", "same"})
    passage = "Doctors said it was the same virus, and she told friends of her pregnancy."
    content = word_ngrams(passage, 3, stopwords=stop)
    # "the same virus" / "of her pregnancy" are shared word trigrams, but not of content words.
    for text in ("Hospitals now test whether it is the same virus in Ohio.",
                 "She was scared to tell others of her pregnancy at first."):
        assert sentence.no_shared_ngram(text, word_ngrams(passage, 3), 3) == "shares_ngram"
        assert sentence.no_shared_ngram(text, content, 3, stopwords=stop) is KEEP
    # Content-word trigrams still count across the stop words between them.
    assert sentence.no_shared_ngram("Doctors said it was a bad week.", content, 3, stopwords=stop) \
        == "shares_ngram"


def test_sentence_min_entities():
    assert sentence.min_entities([3], 1) is KEEP
    assert sentence.min_entities([], 1) == "no_entity"


def test_sentence_entities_in_passage():
    assert sentence.entities_in_passage([1, 2], {1, 2, 5}) is KEEP
    assert sentence.entities_in_passage([1, 7], {1, 2, 5}) == "entity_not_in_passage"
