"""NER post-processing rules (`annotator.ner_rules`): each rule on hand-written spans."""
import pytest

from transforms.record.annotate import ner_rules
from transforms.record.annotate.ner_rules import NER_RULES, RULE_NAMES, apply_rules
from transforms.record.annotate.propagate import person_surnames, propagate_names
from transforms.record.annotation import Mention


def spans(text: str, *pieces: tuple[str, str]) -> list[tuple[int, int, str]]:
    """(start, end, label) of each (piece, label), found left to right."""
    out, at = [], 0
    for piece, label in pieces:
        start = text.index(piece, at)
        out.append((start, start + len(piece), label))
        at = start + len(piece)
    return out


def texts(text, result):
    return [(text[a:b], label) for a, b, label in result]


def test_dateline_adds_the_source_and_drops_an_entity_glued_over_the_bracket():
    text = "(CNN)The mayor of Springfield spoke."
    result = ner_rules.dateline(text, spans(text, ("CNN)The", "NORP"), ("Springfield", "GPE")))
    assert texts(text, result) == [("CNN", "ORG"), ("Springfield", "GPE")]


def test_dateline_place_before_the_source_is_one_mention_per_comma_part():
    text = "SPRINGFIELD, Illinois (CNN) -- A fire broke out."
    result = ner_rules.dateline(text, spans(text, ("SPRINGFIELD, Illinois", "ORG")))
    assert texts(text, result) == [("SPRINGFIELD", "GPE"), ("Illinois", "GPE"), ("CNN", "ORG")]
    text = "MEXICO CITY (CNN) -- Rain."
    assert texts(text, ner_rules.dateline(text, [])) == [("MEXICO CITY", "GPE"), ("CNN", "ORG")]


def test_dateline_leaves_other_texts_alone():
    text = "A report by CNN (CNN) said so."
    found = spans(text, ("CNN", "ORG"))
    assert ner_rules.dateline(text, found) == found


def test_honorifics_are_dropped_from_the_front_only():
    text = "Ms Stubbings met Mr. Lee Dr and Miss."
    result = ner_rules.honorifics(text, spans(text, ("Ms Stubbings", "PERSON"), ("Mr. Lee", "PERSON"),
                                              ("Miss", "PERSON")))
    assert texts(text, result) == [("Stubbings", "PERSON"), ("Lee", "PERSON"), ("Miss", "PERSON")]


def test_leading_the_drops_a_lower_case_article_only():
    text = "Fans filled the Liberty Stadium. The Hague ruled; the Times."
    found = spans(text, ("the Liberty Stadium", "FAC"), ("The Hague", "GPE"), ("the", "ORG"))
    assert texts(text, ner_rules.leading_the(text, found)) == [
        ("Liberty Stadium", "FAC"), ("The Hague", "GPE"), ("the", "ORG")]  # a bare "the" stays


def test_spaced_dash_cuts_the_span():
    text = "Tian Tian - whose cub died - ate. Jean-Paul Sartre wrote."
    result = ner_rules.spaced_dash(text, spans(text, ("Tian Tian - whose", "PERSON"),
                                               ("Jean-Paul Sartre", "PERSON")))
    assert texts(text, result) == [("Tian Tian", "PERSON"), ("Jean-Paul Sartre", "PERSON")]


def test_bullets_split_a_list():
    text = "States: Ohio • Utah  • Iowa."
    result = ner_rules.bullets(text, spans(text, ("Ohio • Utah  • Iowa", "ORG")))
    assert texts(text, result) == [("Ohio", "ORG"), ("Utah", "ORG"), ("Iowa", "ORG")]


def test_apposition_splits_people_and_organisations_but_not_places():
    text = "Camilla, Duchess of Cornwall, visited Fargo, North Dakota."
    result = ner_rules.apposition(text, spans(text, ("Camilla, Duchess of Cornwall", "PERSON"),
                                              ("Fargo, North Dakota", "GPE")))
    assert texts(text, result) == [("Camilla", "PERSON"), ("Duchess of Cornwall", "PERSON"),
                                   ("Fargo, North Dakota", "GPE")]


def test_inner_possessive_splits_between_capitalised_names():
    text = "The North's National Defense Commission and Ben's diner."
    result = ner_rules.inner_possessive(text, spans(text, ("North's National Defense Commission", "ORG"),
                                                    ("Ben's diner", "ORG")))
    assert texts(text, result) == [("North", "ORG"), ("National Defense Commission", "ORG"),
                                   ("Ben's diner", "ORG")]
    text = "Children's Mercy Hospital"
    assert ner_rules.inner_possessive(text, [(0, len(text), "ORG")]) == [(0, len(text), "ORG")]


def test_plural_possessive_joins_the_two_halves_of_a_name():
    text = "She joined the Reserve Officers' Training Corps and the Veterans’ club."
    for first in ("Reserve Officers'", "Reserve Officers"):   # apostrophe inside the span or not
        found = spans(text, (first, "ORG"), ("Training Corps", "ORG"), ("Veterans", "NORP"))
        assert texts(text, ner_rules.plural_possessive(text, found)) == [
            ("Reserve Officers' Training Corps", "ORG"), ("Veterans", "NORP")]
    text = "the Officers' training"   # the next mention must start with a capital
    found = spans(text, ("Officers", "ORG"), ("training", "ORG"))
    assert ner_rules.plural_possessive(text, found) == found
    text = "Obama, Clinton"
    found = spans(text, ("Obama", "PERSON"), ("Clinton", "PERSON"))
    assert ner_rules.plural_possessive(text, found) == found


def test_lowercase_gap_splits_at_a_verb_but_keeps_connectors():
    text = "Tottenham Hotspur convinced Ben Davies at the Bank of England today."
    result = ner_rules.lowercase_gap(text, spans(text, ("Tottenham Hotspur convinced Ben Davies", "ORG"),
                                                 ("Bank of England", "ORG")))
    assert texts(text, result) == [("Tottenham Hotspur", "ORG"), ("Ben Davies", "ORG"),
                                   ("Bank of England", "ORG")]
    text = "Notimex news"   # a trailing lower-case word is not a gap between names
    assert ner_rules.lowercase_gap(text, [(0, 12, "ORG")]) == [(0, 12, "ORG")]


def test_named_dates_keeps_holidays_and_codes_but_not_dates_or_numbers():
    text = "On Christmas and Halloween Eve, not Friday or March 2013; Q1 at 40C, Two and 12:13 EST."
    found = spans(text, ("Christmas", "DATE"), ("Halloween Eve", "DATE"), ("Friday", "DATE"),
                  ("March 2013", "DATE"), ("Q1", "CARDINAL"), ("40C", "QUANTITY"), ("Two", "CARDINAL"),
                  ("12:13 EST", "TIME"))
    assert texts(text, ner_rules.named_dates(text, found)) == [
        ("Christmas", "EVENT"), ("Halloween Eve", "EVENT"), ("Friday", "DATE"), ("March 2013", "DATE"),
        ("Q1", "PRODUCT"), ("40C", "PRODUCT"), ("Two", "CARDINAL"), ("12:13 EST", "TIME")]
    text = "the Twitter Monday and Friday's game on Saturdays last weekend"   # calendar words, lower case
    found = spans(text, ("Twitter Monday", "DATE"), ("Friday's", "DATE"), ("Saturdays", "DATE"),
                  ("last weekend", "DATE"))
    assert ner_rules.named_dates(text, found) == found


def test_named_dates_names_reach_the_spec_labels_through_apply_rules():
    text = "over Christmas"
    assert apply_rules(text, [(5, 14, "DATE")], ["named_dates"]) == ((5, 14, "EVENT"),)


def test_capitalised_runs_adds_names_inside_a_sentence():
    text = 'Their Premier League clash, said CNN affiliate TV Record, was to "Star Wars" fans.'
    result = ner_rules.capitalised_runs(text, spans(text, ("CNN", "ORG")))
    assert texts(text, result) == [("Premier League", "ORG"), ("CNN", "ORG"), ("TV Record", "ORG"),
                                   ("Star Wars", "ORG")]


def test_capitalised_runs_end_at_punctuation_possessives_and_stop_words():
    text = "the Premier League's Golden Boot, and Aston Villa. Then a New Era The Big Apple"
    assert texts(text, ner_rules.capitalised_runs(text, [])) == [
        ("Premier League", "ORG"), ("Golden Boot", "ORG"), ("Aston Villa", "ORG"), ("New Era", "ORG"),
        ("Big Apple", "ORG")]
    text = "said You're Welcome, and on Monday Night Football, with Mr Big Man"
    assert texts(text, ner_rules.capitalised_runs(text, [])) == [("Night Football", "ORG"), ("Big Man", "ORG")]


def test_capitalised_runs_skips_sentence_starts_headlines_titles_and_neighbours_of_spans():
    for text in ("Premier League clubs agreed.", "It ended. Premier League clubs agreed.",
                 'He said: "Premier League clubs agreed."', "NEW: Overpass Construction stalled",
                 "fans - Premier League clubs - agreed", "SCROLL DOWN FOR VIDEO Wanted for fraud",
                 "press CLICK HERE now", "the Majority Leader and the Foreign Secretary spoke"):
        assert ner_rules.capitalised_runs(text, []) == [], text
    text = "the next House Majority Leader and Dominic King's Player Ratings"
    found = spans(text, ("House", "ORG"), ("Dominic King's", "PERSON"))
    assert ner_rules.capitalised_runs(text, found) == found
    text = "fans of Premier League"   # a span over the run: nothing added
    found = spans(text, ("fans of Premier", "ORG"))
    assert ner_rules.capitalised_runs(text, found) == found


def test_apply_rules_runs_only_the_named_rules_and_refuses_unknown_names():
    text = "Ms Stubbings - whose"
    found = [(0, len(text), "PERSON")]
    assert texts(text, apply_rules(text, found, ["spaced_dash"])) == [("Ms Stubbings", "PERSON")]
    assert texts(text, apply_rules(text, found, ["spaced_dash", "honorifics"])) == [("Stubbings", "PERSON")]
    assert apply_rules(text, found, []) == tuple(found)
    assert apply_rules(text, found, ["surnames"]) == tuple(found)   # applied at propagation
    with pytest.raises(ValueError, match="unknown NER rule"):
        apply_rules(text, found, ["nope"])


def test_spec_rule_names_are_the_modules():
    from typing import get_args

    from data_specs.models import NerRuleName

    assert set(get_args(NerRuleName)) == set(RULE_NAMES) and set(NER_RULES) < set(RULE_NAMES)


def test_surnames_are_propagated_unless_the_word_is_also_a_plain_word():
    segments = ["Marc Chivers and Tom Young met.", "Chivers left; Young stayed.", "the young ones"]
    found = [Mention(0, 0, 12, "Marc Chivers", "PERSON"), Mention(0, 17, 26, "Tom Young", "PERSON")]
    assert person_surnames(found, segments) == ["Chivers"]
    result = propagate_names(found, segments, surnames=True)
    assert [(m.segment, m.text, m.label) for m in result] == [
        (0, "Marc Chivers", "PERSON"), (0, "Tom Young", "PERSON"), (1, "Chivers", "PERSON")]
    assert len(propagate_names(found, segments)) == 2   # off: no surnames


def test_contained_lets_a_longer_name_replace_a_mention_inside_it():
    segments = ["Camilla, Duchess of Cornwall, came.", "The Duchess of Cornwall and Cornwall Council."]
    found = [Mention(0, 9, 28, "Duchess of Cornwall", "PERSON"), Mention(1, 15, 23, "Cornwall", "GPE"),
             Mention(1, 28, 44, "Cornwall Council", "ORG")]
    assert [segments[m.segment][m.start:m.end] for m in found] == [m.text for m in found]
    result = propagate_names(found, segments, contained=True)
    assert [(m.segment, m.text) for m in result] == [
        (0, "Duchess of Cornwall"), (1, "Duchess of Cornwall"), (1, "Cornwall Council")]
    # Off, the mention inside stays and the longer name is not placed over it.
    assert [(m.segment, m.text) for m in propagate_names(found, segments)] == [
        (0, "Duchess of Cornwall"), (1, "Cornwall"), (1, "Cornwall Council")]


def test_a_longer_name_over_a_person_stays_a_person():
    segments = ["Grace Wambui Njoroge won.", "Coach Grace Wambui Njoroge smiled."]
    found = [Mention(0, 0, 20, "Grace Wambui Njoroge", "ORG"), Mention(1, 12, 26, "Wambui Njoroge", "PERSON")]
    assert [segments[m.segment][m.start:m.end] for m in found] == [m.text for m in found]
    result = propagate_names(found, segments, contained=True)
    assert [(m.segment, m.text, m.label) for m in result] == [
        (0, "Grace Wambui Njoroge", "ORG"), (1, "Grace Wambui Njoroge", "PERSON")]
