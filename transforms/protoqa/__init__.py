"""ProtoQA (Boratko et al. 2020): question curation, answer clustering, release, scoring."""
