"""How the annotate stage keeps a model's results in a run's work folder
(`transforms.core.resume.memo`): under which key an item's result is kept, what of it is kept, and the
result built again from it.
"""
from __future__ import annotations

from typing import Optional

from transforms.core.resume.memo import MemoizedModel, WorkLike, step_memo
from transforms.record.annotate.store import text_hash
from transforms.record.annotation import AnnotatedArticle
from transforms.record.article import Article, PassageSplit


def split_key(split: PassageSplit) -> str:
    """What a split's annotation is kept under in a work folder: its article's id and text hash."""
    return f"{split.article.id}:{text_hash(split.article)}"


def article_key(article: Article) -> str:
    """What an article's annotations are kept under in a work folder: its id and text hash."""
    return f"{article.id}:{text_hash(article)}"


def annotated_parts(annotated: AnnotatedArticle) -> tuple:
    """What of an annotated split is kept in a work folder (the split is the element's own)."""
    return annotated.passage_entities, annotated.sentences


def with_split(split: PassageSplit, parts: tuple) -> AnnotatedArticle:
    """The annotated split again, from the split and its kept `annotated_parts`."""
    return AnnotatedArticle(split, *parts)


def annotation_memo(work: WorkLike, name: str, articles: bool = False) -> Optional[MemoizedModel]:
    """How backend `name` keeps its results under the work folder `work` (None without one):
    splits' annotations under `annotate-{name}`, whole articles' under `annotate-articles`."""
    if articles:
        memo = step_memo(work, "annotate-articles")
        return None if memo is None else MemoizedModel(memo, article_key)
    memo = step_memo(work, f"annotate-{name}")
    return None if memo is None else MemoizedModel(memo, split_key, annotated_parts, with_split)
