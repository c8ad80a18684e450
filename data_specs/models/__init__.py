"""Typed, strictly validated dataset specs: one pydantic model per spec and per section.

Every model forbids unknown keys, is frozen, and takes (and dumps, with `by_alias=True`) the
YAML's own key names: hyphenated keys such as `allennlp-predictions` are snake_case attributes
with the YAML key as alias, so `RecordSpec.model_validate(yaml_dict).model_dump(by_alias=True)`
gives the YAML dict back.

The models live by concern: `base` (`SpecModel` and the value types), `shared` (the sections
every dataset uses), `record`, `cosmos` and `protoqa` (each dataset's sections and spec model),
`allowed` (`expected(annotation, metadata)`: what a field allows, in words, for `SpecError`).
This package names them all in one place, with `SPEC_MODELS`, the spec model of each `dataset`
key; a new section is added to its dataset's module and named here.
"""
from __future__ import annotations

from typing import Dict, Union

from data_specs.models.allowed import expected, is_union, unwrap
from data_specs.models.base import SpecModel
from data_specs.models.cosmos import (
    AnswerScorerSection,
    CoherenceSection,
    CosmosHitsSection,
    CosmosInputSection,
    CosmosPaperTable1,
    CosmosSpec,
    CosmosSplitsSection,
    NotaSection,
    ParagraphSection,
    SampleSection,
    SentencesSection,
)
from data_specs.models.protoqa import (
    AnswersSection,
    AssignModel,
    AssignNoneWeights,
    AssignSection,
    AssignWeights,
    BlancOptions,
    CoverageSection,
    EmbedderOptions,
    LemmatizerOptions,
    MisspellingsOptions,
    ProposalsOptions,
    ProtoqaPaper,
    ProtoqaSpec,
    QuestionAnswersCheck,
    QuestionsSection,
    ReleaseSection,
    SheetsSection,
)
from data_specs.models.record import (
    AllennlpPredictionsOptions,
    AnnotatorSection,
    CorefRuleName,
    CorefSection,
    CrossEncoderOptions,
    DeepmindMetadataOptions,
    FilterSection,
    LexicalReaderOptions,
    NerRuleName,
    PassageSection,
    QuerySection,
    ReadersSection,
    RecordCurationSection,
    RecordHitsSection,
    RecordInputSection,
    RecordPaperTable1,
    RecordSpec,
    RecordSplitsSection,
    StanzaOptions,
)
from data_specs.models.shared import LimitsSection, NearDuplicatesSection, OutputSection

Spec = Union[RecordSpec, CosmosSpec, ProtoqaSpec]
SPEC_MODELS: Dict[str, type[SpecModel]] = {"record": RecordSpec, "cosmos": CosmosSpec, "protoqa": ProtoqaSpec}

__all__ = [
    "SPEC_MODELS", "Spec", "SpecModel", "expected", "is_union", "unwrap",
    # shared
    "LimitsSection", "NearDuplicatesSection", "OutputSection",
    # ReCoRD
    "RecordSpec", "AllennlpPredictionsOptions", "AnnotatorSection", "CorefRuleName", "CorefSection",
    "CrossEncoderOptions", "DeepmindMetadataOptions", "FilterSection", "LexicalReaderOptions",
    "NerRuleName", "PassageSection", "QuerySection", "ReadersSection", "RecordCurationSection",
    "RecordHitsSection", "RecordInputSection", "RecordPaperTable1", "RecordSplitsSection",
    "StanzaOptions",
    # Cosmos QA
    "CosmosSpec", "AnswerScorerSection", "CoherenceSection", "CosmosHitsSection", "CosmosInputSection",
    "CosmosPaperTable1", "CosmosSplitsSection", "NotaSection", "ParagraphSection", "SampleSection",
    "SentencesSection",
    # ProtoQA
    "ProtoqaSpec", "AnswersSection", "AssignModel", "AssignNoneWeights", "AssignSection",
    "AssignWeights", "BlancOptions", "CoverageSection", "EmbedderOptions", "LemmatizerOptions",
    "MisspellingsOptions", "ProposalsOptions", "ProtoqaPaper", "QuestionAnswersCheck",
    "QuestionsSection", "ReleaseSection", "SheetsSection",
]
