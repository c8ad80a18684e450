"""RuleCoreferencer: chains over hand-built named-entity mentions."""
from __future__ import annotations

import time

import pytest

from transforms.record.annotate.coref import COREF_RULES, COREFERENCERS, RuleCoreferencer, make_coreferencer
from transforms.record.annotate.coref_forms import clean_words, load_place_table, parse_place_table
from transforms.record.annotation import Mention


def mentions(*pairs: tuple[str, str]) -> list[Mention]:
    """One mention per (text, label), each in its own segment, in reading order."""
    return [Mention(index, 0, len(text), text, label) for index, (text, label) in enumerate(pairs)]


def chains(*pairs: tuple[str, str]) -> list[int]:
    return RuleCoreferencer().resolve(mentions(*pairs))


# --- normalisation and exact matches -------------------------------------------------------

def test_empty_article() -> None:
    assert chains() == []


def test_chain_ids_follow_first_appearance() -> None:
    got = chains(("Google", "ORG"), ("Paris", "GPE"), ("Google", "ORG"), ("Lyon", "GPE"))
    assert got == [0, 1, 0, 2]


def test_exact_match_ignores_possessive_quotes_and_the() -> None:
    got = chains(
        ("The Pentagon", "ORG"), ("Pentagon's", "ORG"), ("the Pentagon’s", "ORG"),
        ('"Pentagon"', "ORG"), ("Pentagon,", "ORG"),
        ("Jones'", "ORG"), ("Jones’", "ORG"), ("Jones", "ORG"),
    )
    assert got == [0, 0, 0, 0, 0, 1, 1, 1]


def test_exact_match_ignores_dots_and_hyphens() -> None:
    got = chains(("Wal-Mart", "ORG"), ("Walmart", "ORG"), ("U.S.A.", "ORG"), ("USA", "ORG"))
    assert got == [0, 0, 1, 1]


def test_clean_words() -> None:
    assert clean_words("  “the  Morgan’s”, ") == ("Morgan",)
    assert clean_words("The") == ("The",)


def test_place_and_org_labels_match_exactly_across_types() -> None:
    got = chains(("Chelsea", "GPE"), ("Chelsea", "ORG"), ("Chelsea", "FAC"), ("Chelsea", "LOC"))
    assert len(set(got)) == 1


def test_same_name_links_across_labels_but_not_to_a_shared_token() -> None:
    # spaCy's small model labels one name PERSON here and ORG there; the name is what counts.
    got = chains(("Paris Hilton", "PERSON"), ("Paris Hilton", "ORG"), ("Paris", "GPE"))
    assert got[0] == got[1] and got[0] != got[2]


def test_exact_names_link_across_non_norp_labels_only() -> None:
    got = chains(("Titanic", "WORK_OF_ART"), ("Titanic", "PRODUCT"), ("Titanic", "WORK_OF_ART"),
                 ("Greens", "NORP"), ("Greens", "ORG"))
    assert got == [0, 0, 0, 1, 2]


# --- people --------------------------------------------------------------------------------

def test_surname_and_possessive_link_to_full_name() -> None:
    got = chains(("Tracy Morgan", "PERSON"), ("Morgan", "PERSON"), ("Morgan's", "PERSON"))
    assert got == [0, 0, 0]


def test_titled_surname_links_to_full_name_before_or_after() -> None:
    got = chains(("Mr Siegrist", "PERSON"), ("Stephan Siegrist", "PERSON"),
                 ("Mr. Siegrist", "PERSON"))
    assert got == [0, 0, 0]


def test_title_inside_full_name_is_dropped() -> None:
    got = chains(("President Barack Obama", "PERSON"), ("Barack Obama", "PERSON"),
                 ("Sen. Obama", "PERSON"))
    assert got == [0, 0, 0]


def test_name_without_middle_name_links() -> None:
    got = chains(("Barack Hussein Obama", "PERSON"), ("Obama", "PERSON"),
                 ("Barack Obama", "PERSON"))
    assert got == [0, 0, 0]


def test_unambiguous_first_name_links() -> None:
    got = chains(("Stephan Siegrist", "PERSON"), ("Stephan", "PERSON"), ("Ueli Steck", "PERSON"))
    assert got == [0, 0, 1]


def test_shared_first_name_stays_apart() -> None:
    got = chains(("John Smith", "PERSON"), ("John Doe", "PERSON"), ("John", "PERSON"))
    assert len(set(got)) == 3


def test_titled_single_name_does_not_link_as_first_name() -> None:
    got = chains(("Elizabeth Hurley", "PERSON"), ("Queen Elizabeth", "PERSON"))
    assert got[0] != got[1]


def test_ambiguous_surname_takes_closest_preceding_full_name() -> None:
    got = chains(
        ("Smith", "PERSON"),          # nothing precedes: the first following full name
        ("John Smith", "PERSON"),
        ("Smith", "PERSON"),
        ("Mary Smith", "PERSON"),
        ("Smith", "PERSON"),
        ("Mr Smith", "PERSON"),
    )
    john, mary = got[1], got[3]
    assert john != mary
    assert got == [john, john, john, mary, mary, mary]


def test_family_members_are_different_people() -> None:
    got = chains(("George Bush", "PERSON"), ("Laura Bush", "PERSON"), ("Laura", "PERSON"))
    assert got[0] != got[1]
    assert got[2] == got[1]


def test_surname_labelled_org_links_to_person() -> None:
    got = chains(("Tracy Morgan", "PERSON"), ("Morgan", "ORG"), ("Morgan", "GPE"))
    assert got == [0, 0, 0]


def test_non_person_surname_needs_exact_case_and_no_known_place() -> None:
    got = chains(("Tracy Morgan", "PERSON"), ("MORGAN", "ORG"),
                 ("Michael Jordan", "PERSON"), ("Jordan", "GPE"))
    assert len(set(got)) == 4


def test_non_person_prefers_a_target_of_its_own_type() -> None:
    got = chains(("Harrison Ford", "PERSON"), ("Ford Motor", "ORG"), ("Ford", "ORG"))
    assert got[2] == got[1] != got[0]


# --- acronyms ------------------------------------------------------------------------------

@pytest.mark.parametrize(("acronym", "full"), [
    ("NBC", "National Broadcasting Company"),
    ("WHO", "World Health Organization"),
    ("the FBI", "Federal Bureau of Investigation"),
    ("DOJ", "Department of Justice"),
    ("U.N.", "United Nations"),
    ("UN", "United Nations"),
    ("NYPD", "New York Police Department"),
])
def test_acronym_links_to_its_expansion(acronym: str, full: str) -> None:
    assert chains((full, "ORG"), ("Fox", "ORG"), (acronym, "ORG")) == [0, 1, 0]


def test_dotted_and_plain_acronyms_link_without_expansion() -> None:
    assert chains(("U.N.", "ORG"), ("UN", "ORG"), ("UN's", "ORG")) == [0, 0, 0]


def test_acronym_must_match_initials() -> None:
    got = chains(("National Basketball Association", "ORG"), ("NBC", "ORG"), ("who", "ORG"),
                 ("World Health Organization", "ORG"))
    assert len(set(got)) == 4


def test_acronyms_any_label_links_a_mislabelled_acronym() -> None:
    # R-O-T-C are the initials of the ORG; spaCy tagged the acronym PERSON.
    pairs = (("Reserve Officers' Training Corps", "ORG"), ("Air Force", "ORG"), ("ROTC", "PERSON"))
    assert chains(*pairs) == [0, 1, 2]                       # base rules: the label must be ORG-like
    linked = RuleCoreferencer(rules=["acronyms_any_label"]).resolve(mentions(*pairs))
    assert linked == [0, 1, 0]
    # Still the initials of capitalised words, still only to ORG/GPE/LOC/FAC names.
    strict = RuleCoreferencer(rules=["acronyms_any_label"])
    assert strict.resolve(mentions(("Anna Belle Cole", "PERSON"), ("ABC", "PERSON"))) == [0, 1]
    assert strict.resolve(mentions(("Royal Oak Teachers Club", "ORG"), ("ROTC", "NORP"),
                                   ("ROTX", "PERSON"))) == [0, 0, 1]
    assert chains(("United States", "GPE"), ("US", "NORP")) == [0, 1]
    assert strict.resolve(mentions(("United States", "GPE"), ("US", "NORP"))) == [0, 0]


def test_clipped_names_link_a_cut_last_word() -> None:
    # A football club's short name: "Brom" is "Bromwich" cut by four letters; spaCy tagged the
    # two mentions GPE and FAC.
    pairs = (("West Bromwich Albion", "FAC"), ("Swansea City", "ORG"), ("West Brom", "GPE"))
    assert chains(*pairs) == [0, 1, 2]                       # base rules: no shared whole word
    clipped = RuleCoreferencer(rules=["clipped_names"])
    assert clipped.resolve(mentions(*pairs)) == [0, 1, 0]
    # Not a plural ending (cut by under three letters), not a one-word form, not a person, not a
    # clipped word other than the last, not a cut under three letters.
    assert clipped.resolve(mentions(("Air Forces Command", "ORG"), ("Air Force", "ORG"))) == [0, 1]
    assert clipped.resolve(mentions(("Bromwich Albion", "ORG"), ("Brom", "ORG"))) == [0, 1]
    assert clipped.resolve(mentions(("West Bromwich", "PERSON"), ("West Brom", "PERSON"))) == [0, 1]
    assert clipped.resolve(mentions(("Western Bromwich", "ORG"), ("West Brom", "ORG"))) == [0, 1]
    assert clipped.resolve(mentions(("New Yorkshire Trust", "ORG"), ("New Yo", "ORG"))) == [0, 1]


def test_partial_names_same_case_keeps_a_caption_apart() -> None:
    # A transcript caption in capitals holds the show's name; the release keeps them apart.
    pairs = (("CNN Student News", "ORG"), ("CNN STUDENT NEWS ANCHOR", "ORG"))
    assert chains(*pairs) == [0, 0]                          # base rules: a partial name
    same_case = RuleCoreferencer(rules=["partial_names_same_case"])
    assert same_case.resolve(mentions(*pairs)) == [0, 1]
    # The same case still links a partial name (prefix or suffix); an exact match, whatever the
    # case, is not a partial name; people are left to the name rules.
    assert same_case.resolve(mentions(("Real Madrid", "ORG"), ("Real", "ORG"),
                                      ("Manchester United", "ORG"), ("United", "ORG"),
                                      ("MANCHESTER UNITED", "ORG"))) == [0, 0, 1, 1, 1]
    assert same_case.resolve(mentions(("REAL MADRID", "ORG"), ("Madrid", "ORG"))) == [0, 1]
    assert same_case.resolve(mentions(("TRACY MORGAN", "PERSON"), ("Morgan", "PERSON"))) == [0, 0]


def test_unknown_optional_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="acronyms_any_label"):
        RuleCoreferencer(rules=["no_such_rule"])


# --- places and demonyms -------------------------------------------------------------------

def test_demonyms_link_to_their_country() -> None:
    got = chains(("Venezuelans", "NORP"), ("Venezuela", "GPE"),
                 ("Venezuelan", "NORP"), ("Colombia", "GPE"))
    assert got == [0, 0, 0, 1]


def test_british_and_the_aliases_of_the_uk() -> None:
    got = chains(("British", "NORP"), ("Britain", "GPE"), ("UK", "GPE"), ("Briton", "NORP"),
                 ("United Kingdom", "GPE"), ("Britons", "NORP"))
    assert len(set(got)) == 1


def test_french_and_france() -> None:
    got = chains(("French", "NORP"), ("France", "GPE"), ("Germans", "NORP"), ("Germany", "GPE"))
    assert got == [0, 0, 1, 1]


def test_americans_and_the_united_states() -> None:
    got = chains(("Americans", "NORP"), ("America", "GPE"), ("United States", "GPE"),
                 ("U.S.", "GPE"), ("American", "NORP"), ("US", "GPE"))
    assert len(set(got)) == 1


def test_demonym_needs_norp_and_place_labels() -> None:
    got = chains(("French", "LANGUAGE"), ("France", "GPE"),
                 ("Venezuela", "ORG"), ("Venezuelans", "NORP"))
    assert got[0] != got[1]
    assert got[2] != got[3]


def test_demonym_suffix_rule_for_places_missing_from_table() -> None:
    got = chains(("Cascadians", "NORP"), ("Cascadia", "GPE"),
                 ("Zubrowkan", "NORP"), ("Zubrowka", "LOC"))
    assert got == [0, 0, 1, 1]


def test_us_states_and_regions() -> None:
    got = chains(("Texans", "NORP"), ("Texas", "GPE"), ("Europeans", "NORP"), ("Europe", "LOC"))
    assert got == [0, 0, 1, 1]


def test_place_table_is_large_and_consistent() -> None:
    table = load_place_table()
    assert len(set(table.aliases.values())) >= 150
    assert table.demonyms["venezuelans"] == table.aliases["venezuela"]
    assert table.aliases["us"] == table.aliases["united states"] == table.demonyms["american"]


def test_place_table_rejects_a_demonym_on_two_lines() -> None:
    with pytest.raises(ValueError, match="dominican"):
        parse_place_table(["Dominica\tDominican\n", "Dominican Republic\tDominican\n"])


# --- partial names -------------------------------------------------------------------------

def test_partial_org_names_link() -> None:
    got = chains(("Real Madrid", "ORG"), ("Real's", "ORG"), ("Manchester United", "ORG"),
                 ("Real", "ORG"), ("United", "ORG"))
    assert got == [0, 0, 1, 0, 1]


def test_partial_name_needs_the_same_type() -> None:
    got = chains(("Real Madrid", "ORG"), ("Madrid", "GPE"),
                 ("Manchester United", "ORG"), ("Manchester", "GPE"))
    assert len(set(got)) == 4


def test_generic_short_form_links_only_when_unique() -> None:
    assert chains(("Harvard University", "ORG"), ("University", "ORG")) == [0, 0]
    got = chains(("Harvard University", "ORG"), ("Yale University", "ORG"), ("University", "ORG"))
    assert len(set(got)) == 3


def test_specific_short_form_with_two_targets_takes_the_closest() -> None:
    got = chains(("Manchester United", "ORG"), ("Newcastle United", "ORG"), ("United", "ORG"))
    assert got == [0, 1, 1]


def test_stopword_or_single_character_never_shortens() -> None:
    got = chains(("X Games", "EVENT"), ("X", "EVENT"), ("Of Montreal", "ORG"), ("Of", "ORG"))
    assert len(set(got)) == 4


def test_places_sharing_a_token_stay_apart() -> None:
    got = chains(("New York", "GPE"), ("New Jersey", "GPE"), ("York", "GPE"),
                 ("Kansas City", "GPE"), ("Kansas", "GPE"), ("South Africa", "GPE"),
                 ("Africa", "LOC"))
    assert len(set(got)) == len(got)


def test_geographic_feature_words_may_drop() -> None:
    got = chains(("Mount Everest", "LOC"), ("Everest", "LOC"),
                 ("Pacific Ocean", "LOC"), ("Pacific", "LOC"))
    assert got == [0, 0, 1, 1]
    # "Gap", "Beach", "Hill": feature words too (a Norfolk beach "Horsey Gap" ... "Horsey").
    got = chains(("Horsey Gap", "GPE"), ("Horsey", "GPE"), ("Bondi Beach", "LOC"), ("Bondi", "GPE"),
                 ("Kansas City", "GPE"), ("Kansas", "GPE"))
    assert got == [0, 0, 1, 1, 2, 3]


def test_a_group_noun_and_its_adjective_link() -> None:
    got = chains(("Democrats", "NORP"), ("Democratic", "NORP"), ("Republican", "NORP"),
                 ("Republicans", "NORP"), ("Arabic", "NORP"), ("Arabs", "NORP"), ("Democrat", "NORP"))
    assert got == [0, 0, 1, 1, 2, 2, 0]
    # Only NORP mentions: an ORG named "Democratic" stays apart from NORP "Democrats".
    assert chains(("Democrats", "NORP"), ("Democratic", "ORG")) == [0, 1]


# --- registry and speed --------------------------------------------------------------------

def test_spec_rule_names_match_the_coref_rules() -> None:
    from typing import get_args

    from data_specs.models import CorefRuleName

    assert set(get_args(CorefRuleName)) == set(COREF_RULES)


def test_registry() -> None:
    assert isinstance(make_coreferencer("rules"), RuleCoreferencer)
    assert make_coreferencer("rules", ["acronyms_any_label"]).rules == (COREF_RULES["acronyms_any_label"],)
    both = RuleCoreferencer(rules=["partial_names_same_case", "clipped_names"])
    assert both.rules == (COREF_RULES["clipped_names"],)
    assert both.vetoes == (COREF_RULES["partial_names_same_case"],)
    assert set(COREFERENCERS) == {"rules"}
    with pytest.raises(ValueError, match="rules"):
        make_coreferencer("neural")


def test_three_hundred_mentions_resolve_quickly() -> None:
    pairs = []
    for index in range(60):
        pairs += [(f"Person{index} Surname{index}", "PERSON"), (f"Surname{index}", "PERSON"),
                  (f"Acme{index} Holdings", "ORG"), (f"Acme{index}", "ORG"),
                  ("Venezuelans", "NORP")]
    started = time.perf_counter()
    got = chains(*pairs)
    assert time.perf_counter() - started < 2.0
    assert len(set(got)) == 121


def test_honorific_makes_a_mislabelled_mention_a_person() -> None:
    got = chains(("Priya Raman", "PERSON"), ("Dr Raman", "ORG"), ("Raman Institute", "ORG"))
    assert got == [0, 0, 1]
