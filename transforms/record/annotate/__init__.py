"""ReCoRD annotation (§3.1): NER and coreference of each article, by the spec's backend."""

STAGE = "annotate"
