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
    """Base of every spec model: strict keys, frozen, YAML key names as aliases."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

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
    """MinHash-LSH near-duplicate removal: ReCoRD §3.1 (news article curation) and ProtoQA's
    question curation (scraped questions)."""

    enabled: Flag
    threshold: Fraction
    num_perm: Positive
    shingle_size: Positive
    max_bucket: Positive


class OutputSection(SpecModel):
    """Parquet / JSONL output sharding (no paper section; 0 lets the runner decide)."""

    num_shards: Count


class LimitsSection(SpecModel):
    """Files other people made (crowd results, annotator sheets, protoqa-data JSONL): a field or
    a record beyond these is a reject with its reason (`field_too_large`, `record_too_large`) and
    the rest of the file is read; a file read whole beyond `max_file_bytes` is one error."""

    max_field_bytes: Positive
    max_record_bytes: Positive
    max_file_bytes: Positive

    @model_validator(mode="after")
    def _bounds(self) -> LimitsSection:
        _min_le_max(self, "max_field_bytes", "max_record_bytes")
        _min_le_max(self, "max_record_bytes", "max_file_bytes")
        return self


# ---- ReCoRD (Zhang et al., 2018) --------------------------------------------------------------
class RecordInputSection(SpecModel):
    """ReCoRD §3.1 (news article curation): reading CNN / Daily Mail stories."""

    default_source: Text
    encoding: EncodingPolicy
    control_chars: ControlPolicy
    max_chars: Positive


class RecordCurationSection(SpecModel):
    """ReCoRD §3.1 (news article curation): duplicate articles removed."""

    near_duplicates: NearDuplicatesSection


class PassageSection(SpecModel):
    """ReCoRD §3.2 (passage-query-answers generation): the passage of an article."""

    strategy: Literal["shortest_leading"]
    min_tokens: Count
    tokens: Literal["whitespace", "words"]
    min_entities: Count
    max_highlights: Count


class StanzaOptions(SpecModel):
    """ReCoRD §3.2: options of the stanza annotator backend."""

    resources_dir: Text


class AllennlpPredictionsOptions(SpecModel):
    """ReCoRD §3.2: files of `allennlp predict` (coreference and NER), paired line by line."""

    coref_input: Text
    coref_predictions: Text
    ner_input: Text
    ner_predictions: Text


class DeepmindMetadataOptions(SpecModel):
    """ReCoRD §3.2: the DeepMind rc-data metadata (tokens/ and entities/) as annotations."""

    root: Text
    questions: Text


# The NER post-processing rules of `transforms.record.annotate.ner_rules` (kept in step by a test).
NerRuleName = Literal["dateline", "honorifics", "leading_the", "spaced_dash", "bullets", "apposition",
                      "inner_possessive", "plural_possessive", "lowercase_gap", "named_dates",
                      "capitalised_runs", "surnames", "contained"]


class AnnotatorSection(SpecModel):
    """ReCoRD §3.2 (passage-query-answers generation): named entities and sentences."""

    name: AnnotatorName
    per_input: Dict[Text, AnnotatorName]
    model: Name
    sentences: Literal["corenlp", "senter", "parser"]
    batch_size: Positive
    min_articles_per_call: Positive
    max_articles_per_call: Positive
    labels: List[Name]
    propagate_names: Flag
    ner_rules: List[NerRuleName]
    stanza: StanzaOptions
    allennlp_predictions: AllennlpPredictionsOptions = Field(alias="allennlp-predictions")
    deepmind_metadata: DeepmindMetadataOptions = Field(alias="deepmind-metadata")

    @model_validator(mode="after")
    def _bounds(self) -> AnnotatorSection:
        _min_le_max(self, "min_articles_per_call", "max_articles_per_call")
        return self


# The optional rules of `transforms.record.annotate.coref` (kept in step by a test).
CorefRuleName = Literal["acronyms_any_label", "clipped_names", "partial_names_same_case"]


class CorefSection(SpecModel):
    """ReCoRD §3.2: the named-entity coreference linking a query's entity to passage mentions."""

    name: Literal["rules"]
    rules: List[CorefRuleName]


class QuerySection(SpecModel):
    """ReCoRD §3.2 (passage-query-answers generation): which sentences become cloze queries."""

    min_tokens: Count
    ngram: Positive
    ngram_skip_entities: Flag
    ngram_skip_stopwords: Flag
    reject_questions: Flag
    question_rule: Literal["final", "final_quoted", "any"]
    min_entities: Count
    require_entities_in_passage: Flag
    answers: Literal["chain", "chain_texts"]


class LexicalReaderOptions(SpecModel):
    """ReCoRD §3.3 (machine filtering): the lexical logistic-regression reader."""

    window: Positive
    C: PositiveNumber


class CrossEncoderOptions(SpecModel):
    """ReCoRD §3.3 (machine filtering): the fine-tuned cross-encoder reader."""

    max_steps: Positive
    batch_queries: Positive
    learning_rate: PositiveNumber
    max_length: Positive
    max_candidates: Positive
    window_chars: Count
    device: Device


class ReadersSection(SpecModel):
    """ReCoRD §3.3 (machine filtering): options of each reader."""

    lexical: LexicalReaderOptions
    cross_encoder: CrossEncoderOptions = Field(alias="cross-encoder")


class FilterSection(SpecModel):
    """ReCoRD §3.3 (machine filtering): k-fold filtering of triples a reader answers."""

    folds: Annotated[int, Strict(), Ge(2)]
    reader: ReaderChoice
    max_train_triples: Positive
    max_triples_per_call: Positive
    readers: ReadersSection


class RecordHitsSection(SpecModel):
    """ReCoRD §3.4 (human filtering): the crowd HITs and worker quality control."""

    placeholder_display: Name
    qc_every: Positive
    min_accuracy: Fraction
    min_judged: Count


class RecordSplitsSection(SpecModel):
    """ReCoRD §3.4 (human filtering) and Table 1: validation thresholds and the splits."""

    train_from: Name
    train_min_correct: Count
    eval_min_correct: Count
    dev_size: Count
    test_size: Count
    reference_total: Positive


class RecordPaperTable1(SpecModel):
    """ReCoRD Table 1 (training split statistics), printed beside a run's figures."""

    queries: Count
    unique_passages: Count
    passage_vocab: Count
    query_vocab: Count
    tokens_per_passage: NonNegative
    entities_per_passage: NonNegative
    tokens_per_query: NonNegative


class RecordSpec(SpecModel):
    """ReCoRD (Zhang et al., 2018, arXiv:1810.12885), §3 (data collection), stages 1-4."""

    dataset: Literal["record"]
    seed: Seed
    input: RecordInputSection
    curation: RecordCurationSection
    passage: PassageSection
    annotator: AnnotatorSection
    coref: CorefSection
    query: QuerySection
    filter: FilterSection
    hits: RecordHitsSection
    splits: RecordSplitsSection
    limits: LimitsSection
    output: OutputSection
    paper_table1: RecordPaperTable1


# ---- Cosmos QA (Huang et al., 2019) ---------------------------------------------------------
class CosmosInputSection(SpecModel):
    """Cosmos QA §2.1 (context paragraphs): reading and cleaning the blog posts."""

    drop_tokens: List[Text]
    unescape_html: Flag
    encoding: EncodingPolicy
    control_chars: ControlPolicy
    max_chars: Positive


class ParagraphSection(SpecModel):
    """Cosmos QA §2.1 and Appendix A: cutting stories into 30-150 word paragraphs."""

    min_words: Positive
    max_words: Positive
    long_sentence: Literal["reject", "split"]
    cut_baseline: Union[Literal["median"], Number]

    @model_validator(mode="after")
    def _bounds(self) -> ParagraphSection:
        _min_le_max(self, "min_words", "max_words")
        return self


class SentencesSection(SpecModel):
    """Cosmos QA §2.1 / Appendix A: sentence splitting before segmentation."""

    model: Name
    component: Literal["senter", "parser"]
    batch_size: Positive
    min_stories_per_call: Positive
    max_stories_per_call: Positive

    @model_validator(mode="after")
    def _bounds(self) -> SentencesSection:
        _min_le_max(self, "min_stories_per_call", "max_stories_per_call")
        return self


class CoherenceSection(SpecModel):
    """Cosmos QA §2.1 / Appendix A: the sentence-coherence scorer deciding where to cut."""

    name: ScorerName
    runtime: Literal["transformers", "torch", "int8"]
    threads: Count
    batch_size: Positive
    max_length: Positive
    model_path: Text
    device: Device
    min_stories_per_call: Positive
    max_stories_per_call: Positive

    @model_validator(mode="after")
    def _bounds(self) -> CoherenceSection:
        _min_le_max(self, "min_stories_per_call", "max_stories_per_call")
        return self


class SampleSection(SpecModel):
    """Cosmos QA §2.1: paragraphs kept per blog, and which stories are segmented to find them."""

    per_blog: Positive
    mode: Literal["before_scoring", "all"]
    rounds: Positive


class CosmosHitsSection(SpecModel):
    """Cosmos QA §2.2-2.3: question writing and the validation round trip."""

    max_questions: Positive
    max_correct: Positive
    incorrect: Positive
    question_types: List[Name]
    validators: Positive
    min_intended: Count

    @model_validator(mode="after")
    def _bounds(self) -> CosmosHitsSection:
        _min_le_max(self, "min_intended", "validators")
        return self


class NotaSection(SpecModel):
    """Cosmos QA §2.4: "None of the above" answers."""

    text: Name
    false_negative_rate: Fraction


class AnswerScorerSection(SpecModel):
    """Cosmos QA §2.4: the answer scorer s(A|P,Q) + s(A|P) + s(A|Q) choosing the NOTA negative."""

    name: ScorerName
    model_path: Text
    max_length: Positive
    batch_size: Positive
    device: Device


class CosmosSplitsSection(SpecModel):
    """Cosmos QA §2.4 and Table 1: the train / dev / test splits."""

    excellent_workers: List[Name]
    dev_size: Count
    test_size: Count
    reference_total: Positive


class CosmosPaperTable1(SpecModel):
    """Cosmos QA Table 1 (all splits), printed beside a run's figures."""

    questions: Count
    paragraphs: Count
    train_questions: Count
    dev_questions: Count
    test_questions: Count
    tokens_per_paragraph: NonNegative
    max_tokens_per_paragraph: Count
    tokens_per_question: NonNegative
    max_tokens_per_question: Count
    tokens_per_correct_answer: NonNegative
    max_tokens_per_correct_answer: Count
    tokens_per_incorrect_answer: NonNegative
    max_tokens_per_incorrect_answer: Count
    unanswerable_percent: Percent


class CosmosSpec(SpecModel):
    """Cosmos QA (Huang et al., 2019, arXiv:1909.00277), §2 (dataset) and Appendix A."""

    dataset: Literal["cosmos"]
    seed: Seed
    input: CosmosInputSection
    paragraph: ParagraphSection
    sentences: SentencesSection
    coherence: CoherenceSection
    sample: SampleSection
    hits: CosmosHitsSection
    nota: NotaSection
    answer_scorer: AnswerScorerSection
    splits: CosmosSplitsSection
    limits: LimitsSection
    output: OutputSection
    paper_table1: CosmosPaperTable1


# ---- ProtoQA (Boratko et al., 2020) ----------------------------------------------------------
class QuestionAnswersCheck(SpecModel):
    """ProtoQA question collection: sanity checks of a scraped question's answer counts."""

    min_answers: Count
    max_total: Optional[Positive]


class QuestionsSection(SpecModel):
    """ProtoQA question collection (scraped Family-Feud questions) and the data statement's
    exclusions and flags."""

    source_default: Text
    encoding: EncodingPolicy
    control_chars: ControlPolicy
    near_duplicates: NearDuplicatesSection
    answers: QuestionAnswersCheck
    excluded_classes: Dict[Name, List[Regex]]
    omitted_ids: List[Name]
    flag_patterns: Dict[Name, List[Regex]]


class LemmatizerOptions(SpecModel):
    """ProtoQA answer clustering: the lemmatizer normalising raw answers."""

    name: Literal["spacy", "none"]
    model: Name


class EmbedderOptions(SpecModel):
    """ProtoQA answer clustering: embedding-similarity cluster proposals."""

    name: Literal["minilm", "none"]
    threshold: Fraction
    batch_size: Positive


class MisspellingsOptions(SpecModel):
    """ProtoQA answer clustering: misspelling cluster proposals (character trigram MinHash)."""

    enabled: Flag
    threshold: Fraction
    num_perm: Positive
    min_chars: Count


class ProposalsOptions(SpecModel):
    """ProtoQA answer clustering: the cluster proposals shown to annotators."""

    wordnet: Flag
    wordnet_max_senses: Positive
    embedder: EmbedderOptions
    misspellings: MisspellingsOptions


class AnswersSection(SpecModel):
    """ProtoQA answer clustering preparation (`cluster-prep`): normalisation and proposals."""

    articles: List[Name]
    lemmatizer: LemmatizerOptions
    proposals: ProposalsOptions


class BlancOptions(SpecModel):
    """ProtoQA answer clustering: the BLANC agreement between annotators."""

    mentions: Literal["strings", "responses"]


class SheetsSection(SpecModel):
    """ProtoQA answer clustering: the annotator (spreadsheet) round trip."""

    invalid_labels: List[Name]
    blanc: BlancOptions
    paper_blanc: Percent


class CoverageSection(SpecModel):
    """ProtoQA dataset release: the coverage filter of crowdsourced questions."""

    top_k: Positive
    min_coverage: Percent
    invalid_in_denominator: Flag


class ReleaseSection(SpecModel):
    """ProtoQA dataset release: protoqa-data JSONL and the crowdsourced dev / test split."""

    source: Name
    dev_size: Count
    test_size: Count


class AssignWeights(SpecModel):
    """`protoqa assign`: a cluster's utility = sum of weight x signal (logit scale, each >= 0)."""

    wordnet: NonNegative
    embedding: NonNegative
    centroid: NonNegative
    context: NonNegative
    lemma: NonNegative
    spelling: NonNegative
    coverage: NonNegative
    head: NonNegative
    prior: NonNegative

    @model_validator(mode="after")
    def _not_all_zero(self) -> AssignWeights:
        if not any(self.model_dump().values()):
            raise PydanticCustomError("all_zero", "the weights must not all be 0", {})
        return self


class AssignNoneWeights(SpecModel):
    """`protoqa assign`: the utility of "none" (a new / invalid answer), from the answer alone."""

    bias: Number
    question_overlap: Number
    question_similarity: Number
    empty: Number
    tokens: Number


class AssignModel(SpecModel):
    """`protoqa assign`: one set of logit coefficients (clusters and "none")."""

    weights: AssignWeights
    none: AssignNoneWeights


class AssignSection(SpecModel):
    """`protoqa assign` (issues #5, #12): proposing a cluster for new answers by a multinomial
    logit over the clusters and "none", with the evaluation's WordNet similarity (ProtoQA
    Appendix A) among its signals."""

    weights: AssignWeights
    none: AssignNoneWeights
    without_embeddings: AssignModel
    threshold: Fraction
    max_partition_pairs: Positive


class ProtoqaPaper(SpecModel):
    """ProtoQA's dataset figures (question counts, expert BLANC), printed beside a run's."""

    train_questions: Count
    scraped_dev_questions: Count
    crowdsourced_dev_questions: Count
    crowdsourced_test_questions: Count
    blanc: Percent


class ProtoqaSpec(SpecModel):
    """ProtoQA (Boratko et al., 2020, arXiv:2005.00771): question curation, answer clustering,
    the annotator round trip, the release and `protoqa assign`."""

    dataset: Literal["protoqa"]
    seed: Seed
    questions: QuestionsSection
    answers: AnswersSection
    sheets: SheetsSection
    coverage: CoverageSection
    release: ReleaseSection
    assign: AssignSection
    limits: LimitsSection
    output: OutputSection
    paper: ProtoqaPaper


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
