"""ReCoRD (Zhang et al. 2018): news articles to cloze queries; one module per paper stage."""
